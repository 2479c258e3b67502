package main

import (
	"bytes"
	"os"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v3"
)

// targetFile is the part of target.yaml these tests read: what the
// certification harness will do with the receiver, checked here against it.
type targetFile struct {
	Target struct {
		Endpoints []struct {
			Profile   string `yaml:"profile"`
			Source    string `yaml:"source"`
			Account   string `yaml:"account"`
			Path      string `yaml:"path"`
			SecretEnv string `yaml:"secret_env"`
		} `yaml:"endpoints"`
		Lifecycle struct {
			Command []string          `yaml:"command"`
			Env     map[string]string `yaml:"env"`
			Ready   struct {
				HTTP string `yaml:"http"`
			} `yaml:"ready"`
		} `yaml:"lifecycle"`
		Limits struct {
			MaxBodyBytes int64 `yaml:"max_body_bytes"`
		} `yaml:"limits"`
		Observe struct {
			Postgres struct {
				EventTable  string            `yaml:"event_table"`
				EffectTable string            `yaml:"effect_table"`
				Queries     map[string]string `yaml:"queries"`
			} `yaml:"postgres"`
		} `yaml:"observe"`
		Events struct {
			Effect struct {
				Type     string `yaml:"type"`
				IDPrefix string `yaml:"id_prefix"`
				Object   string `yaml:"object"`
				Effects  string `yaml:"effects"`
			} `yaml:"effect"`
			// The shop declares two lifecycle objects, a list.
			Lifecycles []lifecycleDoc `yaml:"lifecycle"`
			// Customers and products, a list.
			Ordered []struct {
				Name     string `yaml:"name"`
				Type     string `yaml:"type"`
				IDPrefix string `yaml:"id_prefix"`
				Key      string `yaml:"key"`
				Table    string `yaml:"table"`
				Object   string `yaml:"object"`
				State    string `yaml:"state"`
			} `yaml:"ordered"`
			Unhandled struct {
				Type     string `yaml:"type"`
				IDPrefix string `yaml:"id_prefix"`
				Object   string `yaml:"object"`
			} `yaml:"unhandled"`
		} `yaml:"events"`
		Fixtures map[string]struct {
			SQL string `yaml:"sql"`
		} `yaml:"fixtures"`
		Retention struct {
			KeyTTL     string `yaml:"key_ttl"`
			PayloadTTL string `yaml:"payload_ttl"`
			Purge      struct {
				Command []string `yaml:"command"`
			} `yaml:"purge"`
		} `yaml:"retention"`
		Capabilities []string `yaml:"capabilities"`
	} `yaml:"target"`
}

// lifecycleDoc is one object of target.events.lifecycle.
type lifecycleDoc struct {
	Object   string `yaml:"object"`
	IDPrefix string `yaml:"id_prefix"`
	Initial  string `yaml:"initial"`
	Parent   *struct {
		Object string `yaml:"object"`
		State  string `yaml:"state"`
	} `yaml:"parent"`
	Create struct {
		Fixture string `yaml:"fixture"`
	} `yaml:"create"`
	Missing     string          `yaml:"missing"`
	Transitions []transitionDoc `yaml:"transitions"`
	State       string          `yaml:"state"`
	Effects     string          `yaml:"effects"`
}

type transitionDoc = struct {
	Type   string   `yaml:"type"`
	From   []string `yaml:"from"`
	To     string   `yaml:"to"`
	Effect bool     `yaml:"effect"`
	Object string   `yaml:"object"`
}

func readTarget(t *testing.T) (*targetFile, []byte) {
	t.Helper()
	data, err := os.ReadFile("target.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tf targetFile
	if err := yaml.Unmarshal(data, &tf); err != nil {
		t.Fatal(err)
	}
	return &tf, data
}

// render fills a target-file template ({{.Port}}, {{.DatabaseURL}}, {{.AsOf}}).
func render(t *testing.T, s string, vars map[string]string) string {
	t.Helper()
	tpl, err := template.New("").Option("missingkey=error").Parse(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, vars); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b.String()
}

// endpointSecrets makes up a secret for each of the target's endpoints and
// sets the variables that carry them, for the harness and the receiver alike.
func endpointSecrets(t *testing.T, tf *targetFile) mapSecrets {
	t.Helper()
	m := mapSecrets{}
	for i, ep := range tf.Target.Endpoints {
		secret := "whsec_targettest" + string(rune('a'+i)) + "0123456789abcdef"
		t.Setenv(ep.SecretEnv, secret)
		m[modeOf(ep.Source)+"/"+ep.Account] = []string{secret}
	}
	return m
}

// modeOf is what the target's queries compute with replace($1, 'stripe-', ”).
func modeOf(source string) string {
	if len(source) > 7 && source[:7] == "stripe-" {
		return source[7:]
	}
	return source
}
