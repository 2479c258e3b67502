package targetfile

import (
	"fmt"
	"sort"
	"strings"
)

// Summary is a target description safe to print in reports: no secret values,
// database passwords replaced by "xxxxx", lifecycle env given by names only.
type Summary struct {
	Name      string            `json:"name"`
	Source    string            `json:"source,omitempty"`
	BaseURL   string            `json:"base_url"`
	Endpoints []EndpointSummary `json:"endpoints"`
	Command   []string          `json:"command,omitempty"`
	EnvNames  []string          `json:"env_names,omitempty"`
	// WorkerCommand and WorkerProcesses describe lifecycle.worker.
	WorkerCommand   []string          `json:"worker_command,omitempty"`
	WorkerProcesses int               `json:"worker_processes,omitempty"`
	DatabaseURL     string            `json:"database_url"`
	EventTable      string            `json:"event_table,omitempty"`
	Queries         map[string]string `json:"queries"`
	Failpoints      string            `json:"failpoints,omitempty"`
	Capabilities    []Capability      `json:"capabilities"`
	// Setup names the setup hook (its script's path or its program).
	Setup string `json:"setup,omitempty"`
}

// EndpointSummary describes an endpoint without its secret.
type EndpointSummary struct {
	Profile string `json:"profile"`
	Source  string `json:"source"`
	Account string `json:"account"`
	URL     string `json:"url"`
	// SecretFrom is "inline" or "env:NAME".
	SecretFrom string `json:"secret_from"`
}

// Summary returns the redacted description of t.
func (t *Target) Summary() Summary {
	s := Summary{Name: t.Name, Source: t.Source, BaseURL: t.BaseURL, DatabaseURL: redactURL(t.Store.URL.Reveal()),
		EventTable: t.Store.EventTable, Queries: map[string]string{}, Failpoints: t.FailpointsPath,
		Capabilities: t.Capabilities}
	if t.Setup != nil {
		s.Setup = t.Setup.String()
	}
	// A declared query is named by its own field (events.lifecycle.state), not
	// by the observer slot it fills.
	q := t.Store.Queries
	for name, sql := range q.Named() {
		if from := q.From[name]; from != "" {
			name = strings.TrimPrefix(from, "target.")
		}
		s.Queries[name] = sql
	}
	for _, e := range t.Endpoints {
		from := "inline"
		if e.SecretEnv != "" {
			from = "env:" + e.SecretEnv
		}
		s.Endpoints = append(s.Endpoints, EndpointSummary{Profile: e.Profile, Source: e.Source, Account: e.Account, URL: t.URL(e.Path), SecretFrom: from})
	}
	if t.Lifecycle != nil {
		for _, a := range t.Lifecycle.Command {
			// An argument may embed a URL ("--db=postgres://u:pw@h/db").
			s.Command = append(s.Command, redactText(redactURL(a), t.Store.URL.Reveal()))
		}
		for k := range t.Lifecycle.Env {
			s.EnvNames = append(s.EnvNames, k)
		}
		sort.Strings(s.EnvNames)
		if w := t.Lifecycle.Worker; w != nil {
			for _, a := range w.Command {
				s.WorkerCommand = append(s.WorkerCommand, redactText(redactURL(a), t.Store.URL.Reveal()))
			}
			s.WorkerProcesses = w.Processes
		}
	}
	return s
}

// String renders the summary on one line per field, for logs.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "target %s at %s\n", s.Name, s.BaseURL)
	for _, e := range s.Endpoints {
		fmt.Fprintf(&b, "  endpoint %s/%s %s (secret %s)\n", e.Profile, e.Account, e.URL, e.SecretFrom)
	}
	if len(s.Command) > 0 {
		fmt.Fprintf(&b, "  command %s (env: %s)\n", strings.Join(s.Command, " "), strings.Join(s.EnvNames, ", "))
	}
	if len(s.WorkerCommand) > 0 {
		fmt.Fprintf(&b, "  worker %s (%d %s)\n", strings.Join(s.WorkerCommand, " "), s.WorkerProcesses, map[bool]string{true: "process", false: "processes"}[s.WorkerProcesses == 1])
	}
	fmt.Fprintf(&b, "  postgres %s", s.DatabaseURL)
	if s.EventTable != "" {
		fmt.Fprintf(&b, " event_table=%s", s.EventTable)
	}
	b.WriteString("\n")
	caps := make([]string, len(s.Capabilities))
	for i, c := range s.Capabilities {
		caps[i] = string(c)
	}
	fmt.Fprintf(&b, "  capabilities %s\n", strings.Join(caps, ", "))
	if s.Setup != "" {
		fmt.Fprintf(&b, "  setup %s\n", s.Setup)
	}
	return b.String()
}
