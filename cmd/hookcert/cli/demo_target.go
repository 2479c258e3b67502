package cli

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// demoEndpoints are the reference receiver's endpoints in a demo: two accounts of one
// profile (account scope), several profiles (source scope), header-carried and
// body-carried event IDs, signed timestamps and not, and a provider that
// verifies its endpoint with a handshake (Slack).
var demoEndpoints = []struct{ profile, account string }{
	{"stripe", "acct_A"}, {"stripe", "acct_B"}, {"standard-webhooks", "acct_A"},
	{"github", "acct_A"}, {"shopify", "acct_A"}, {"svix", "acct_A"}, {"slack", "acct_A"},
}

// demoShape is how the demo runs the reference beyond its design.
type demoShape struct {
	// workerProcs > 0 (inbox mode) runs the workers in that many "hookcert
	// reference worker" processes the target declares as lifecycle.worker, and
	// the receiver's process only accepts.
	workerProcs int
	// maxConns is the reference's pool size (0: its default, for soak's load).
	maxConns int
}

// demoMaxConns is the reference's pool in a certification run: ACK-2's 64
// concurrent deliveries queue for it briefly, and several demos fit one
// PostgreSQL's 100 connections (the self-test runs them side by side).
const demoMaxConns = 12

// demoTarget writes the reference receiver's endpoint file into dir and returns a
// target file that starts, observes and certifies it, and the secrets it holds.
// In inbox mode the receiver runs inbox workers and the target declares
// asynchronous acceptance; caps lose what the inbox design does not offer.
func demoTarget(exe, dir, mode string, shape demoShape, defects, caps []string) ([]byte, []string, error) {
	workerProcs := shape.workerProcs
	cfgPath, teps, secrets, err := writeDemoEndpoints(dir, defects)
	if err != nil {
		return nil, nil, err
	}
	inbox := mode == reference.ModeInbox
	command, worker := demoCommands(exe, cfgPath, inbox, shape, defects)
	if inbox {
		caps = demoInboxCapabilities(caps)
	}
	name := demoTargetName(inbox, workerProcs, defects)
	doc := map[string]any{"target": map[string]any{
		"name":      name,
		"base_url":  "http://{{.ListenAddr}}",
		"endpoints": teps,
		"lifecycle": map[string]any{
			"command":    command,
			"env":        map[string]string{pgprovision.EnvDatabaseURL: "{{.DatabaseURL}}"},
			"ready":      map[string]any{"http": "/healthz", "timeout": "30s"},
			"stop_grace": "5s",
		},
		"observe": map[string]any{"postgres": map[string]any{
			"url":          "{{.DatabaseURL}}",
			"event_table":  "processed_webhook_events",
			"effect_table": "ledger_entries",
			"queries": map[string]string{
				"event_rows":      "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
				"effects":         "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
				"object_effects":  "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND object_id=$4",
				"object":          "SELECT version, status FROM subscriptions WHERE source=$1 AND account_id=$2 AND object_id=$4",
				"payment":         "SELECT status FROM payments WHERE source=$1 AND account_id=$2 AND payment_id=$4",
				"payload_present": reference.PayloadPresentQuery, // key row or the orphan-payloads archive
			},
		}},
		"failpoints": map[string]any{"path": "/_hookcert/failpoints"},
		// The admin purge is mounted with --enable-failpoints; the running receiver
		// applies its own config and defects, as its periodic purger does.
		"retention":    map[string]any{"purge": map[string]any{"http": map[string]any{"method": "POST", "path": reference.AdminPurgePath}}},
		"capabilities": slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return c == "none" }),
	}}
	if !slices.Contains(caps, "failpoints") {
		delete(doc["target"].(map[string]any), "failpoints")
	}
	if len(worker) > 0 {
		// The worker reads the database URL from the receiver's environment.
		doc["target"].(map[string]any)["lifecycle"].(map[string]any)["worker"] = map[string]any{"command": worker, "processes": workerProcs}
	}
	if inbox {
		t := doc["target"].(map[string]any)
		t["acceptance"] = map[string]any{"mode": "async", "settle": "3s", "quiescent": demoInboxQuiescent}
		t["inbox"] = map[string]any{"lease": demoInboxLease.String(), "max_attempts": demoMaxAttempts, "state": demoInboxState}
		t["outbox"] = map[string]any{"max_attempts": demoMaxAttempts, "state": demoOutboxState}
	}
	out, err := yaml.Marshal(doc)
	return out, secrets, err
}

// demoTargetEndpoint is one endpoint as the demo's target file declares it.
type demoTargetEndpoint struct {
	Profile string `yaml:"profile"`
	Account string `yaml:"account"`
	Path    string `yaml:"path"`
	Secret  string `yaml:"secret"`
	// The reference's retention for this endpoint (its profile's defaults, or
	// the short TTLs the no-ttl-floor defect lets through).
	KeyTTL     string `yaml:"key_ttl"`
	PayloadTTL string `yaml:"payload_ttl"`
}

// writeDemoEndpoints writes the reference's endpoints, with fresh secrets, to
// endpoints.yaml in dir and returns its path, the endpoints as the target
// declares them and their secrets.
func writeDemoEndpoints(dir string, defects []string) (string, []demoTargetEndpoint, []string, error) {
	var cfg reference.Config
	var secrets []string
	var teps []demoTargetEndpoint
	shortTTLs := demoHasDefect(defects, reference.DefectNoTTLFloor)
	for _, e := range demoEndpoints {
		sec, err := profiles.GenerateSecret(e.profile, rand.Reader)
		if err != nil {
			return "", nil, nil, fmt.Errorf("secret for %s: %w", e.profile, err)
		}
		path := "/webhooks/" + e.profile + "/" + e.account
		rep := reference.Endpoint{Profile: e.profile, Account: e.account, Path: path, Secret: sec}
		if shortTTLs {
			// Below every profile's redelivery horizon; only the defect starts with it.
			rep.KeyTTL, rep.PayloadTTL = demoShortTTLs()
		}
		cfg.Endpoints = append(cfg.Endpoints, rep)
		r := rep.Retention()
		teps = append(teps, demoTargetEndpoint{e.profile, e.account, path, sec, r.KeyTTL.String(), r.PayloadTTL.String()})
		secrets = append(secrets, sec)
	}
	cfgBytes, err := yaml.Marshal(cfg)
	if err != nil {
		return "", nil, nil, err
	}
	cfgPath := filepath.Join(dir, "endpoints.yaml")
	if err := os.WriteFile(cfgPath, cfgBytes, 0o600); err != nil {
		return "", nil, nil, err
	}
	return cfgPath, teps, secrets, nil
}

// demoCommands are the reference's command line and, with worker processes,
// the worker's (nil without).
func demoCommands(exe, cfgPath string, inbox bool, shape demoShape, defects []string) (command, worker []string) {
	workerProcs := shape.workerProcs
	// The database URL goes in the receiver's environment, not its command line,
	// which every user of the machine can read (ps); the secrets are in cfgPath.
	command = []string{exe, "reference", "serve", "--listen", "{{.ListenAddr}}",
		"--config", cfgPath, "--enable-failpoints"}
	for _, d := range defects {
		command = append(command, "--defect", d)
	}
	if shape.maxConns > 0 {
		command = append(command, "--max-conns", strconv.Itoa(shape.maxConns))
	}
	if inbox {
		queue := []string{"--lease", demoInboxLease.String(), "--max-attempts", strconv.Itoa(demoMaxAttempts),
			"--backoff", "250ms", "--backoff-max", "1s", "--sink-url", "{{.SinkURL}}"}
		inProcess := demoInboxWorkers
		if workerProcs > 0 {
			inProcess = 0
			// The same number of workers in all, split over the processes; they
			// poll more often, as no handler in their process wakes them.
			each := max(1, (demoInboxWorkers+workerProcs-1)/workerProcs)
			worker = append([]string{exe, "reference", "worker", "--workers", strconv.Itoa(each), "--poll-interval", "100ms"}, queue...)
			for _, d := range defects {
				worker = append(worker, "--defect", d)
			}
		}
		command = append(command, "--mode", reference.ModeInbox, "--workers", strconv.Itoa(inProcess))
		command = append(command, queue...)
	}
	return command, worker
}

// demoTargetName is the receiver's name in the reports: its design and its defects.
func demoTargetName(inbox bool, workerProcs int, defects []string) string {
	name := "hookcert reference receiver"
	switch {
	case inbox && workerProcs > 0:
		name += fmt.Sprintf(" (inbox mode, %d worker %s)", workerProcs, plural(workerProcs, "process", "processes"))
	case inbox:
		name += " (inbox mode)"
	}
	if len(defects) > 0 {
		name += " (defects: " + strings.Join(defects, ", ") + ")"
	}
	return name
}

// demoShortTTLs are the key and payload TTLs the no-ttl-floor defect runs the demo
// with, configured in the reference and declared in the target alike.
func demoShortTTLs() (key, payload reference.Duration) {
	key, _ = reference.ParseDuration("1h") // constants: cannot fail
	payload, _ = reference.ParseDuration("30m")
	return key, payload
}

func demoHasDefect(defects []string, name string) bool {
	for _, d := range defects {
		if d == name {
			return true
		}
	}
	return false
}

// demoCapabilities is everything the reference receiver offers the harness.
var demoCapabilities = []string{"crash", "lock-gating", "connection-loss", "failpoints", "ordering", "state-machine", "domain-constraint", "deletion", "retention"}

// demoInboxWorkers is how many in-process workers the inbox demo runs.
const demoInboxWorkers = 4

// demoInboxLease is the inbox workers' lease. An event whose worker was killed
// stays claimed until its lease runs out and the reconciler (every half lease)
// re-offers it: the reference's 30s default would outlast the 3s settle the
// target declares, so the demo's lease keeps re-offer plus apply inside it.
const demoInboxLease = time.Second

// demoInboxQuiescent is true when no accepted event waits for a worker: none is
// claimed and none pending is due. An event backing off after a failed attempt
// (an event before its object) is waiting for the world, not for a worker;
// dead-lettered events are finished work.
const demoInboxQuiescent = "SELECT count(*) = 0 FROM processed_webhook_events WHERE inbox_state = 'claimed' OR (inbox_state = 'pending' AND next_attempt_at <= now())"

// demoMaxAttempts is how many attempts an inbox event or outbox message gets.
const demoMaxAttempts = 5

// demoInboxState and demoOutboxState map the reference's inbox and outbox
// columns onto the states the harness reads (claimed is processing).
const (
	demoInboxState = "SELECT CASE inbox_state WHEN 'claimed' THEN 'processing' ELSE inbox_state END, attempts " +
		"FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3"
	demoOutboxState = "SELECT CASE state WHEN 'claimed' THEN 'processing' ELSE state END, attempts " +
		"FROM outbox_messages WHERE source=$1 AND account_id=$2 AND event_id=$3 AND kind='credit'"
)

// demoInboxCapabilities is caps without what the reference's inbox mode lacks.
func demoInboxCapabilities(caps []string) []string {
	out := slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return slices.Contains(demoInboxUnsupported, c) })
	if slices.Equal(caps, demoCapabilities) {
		// The full demo: the inbox design adds its workers and its outbox.
		out = append(out, "inbox", "outbox")
	}
	return out
}

// demoInboxUnsupported are the capabilities the inbox design does not offer. The
// reference's failpoints sit in the accept transaction, which writes no business
// change (docs/failpoints.md places after-insert-before-commit after it) and its
// workers' apply transaction has none; the crash guarantees then stop the
// workers inside that transaction by locking the effect table and SIGKILL.
var demoInboxUnsupported = []string{"failpoints"}
