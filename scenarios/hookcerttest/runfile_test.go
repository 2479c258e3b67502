package hookcerttest_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios/hookcerttest"
)

const referenceFile = "testdata/reference.yaml"

// inProcessReference builds the reference receiver for testdata/reference.yaml
// in the test process, with the secrets the file's secret_env names.
func inProcessReference(dbURL string, defects ...string) hookcerttest.Factory {
	return func(ctx context.Context, inc *hookcerttest.Incarnation) (http.Handler, error) {
		cfg, err := pgxpool.ParseConfig(dbURL)
		if err != nil {
			return nil, err
		}
		cfg.MaxConns = 6
		pool, err := inc.PoolWithConfig(ctx, cfg)
		if err != nil {
			return nil, err
		}
		app, err := reference.New(ctx, pool, reference.Options{Defects: defects, Endpoints: []reference.Endpoint{
			{Profile: "stripe", Account: "acct_A", Path: "/webhooks/stripe/acct_A", Secret: os.Getenv("HOOKCERTTEST_STRIPE_A")},
			{Profile: "stripe", Account: "acct_B", Path: "/webhooks/stripe/acct_B", Secret: os.Getenv("HOOKCERTTEST_STRIPE_B")},
		}})
		if err != nil {
			return nil, err
		}
		return app.Handler(), nil
	}
}

// TestRunFileCertifiesInProcess: the team's target file, its lifecycle
// replaced by the receiver in the test process, its secrets generated, its
// database the test's: the crash guarantees kill and restart the receiver
// and pass, and a receiver that forgets what it saw at a restart fails ACK-1.
func TestRunFileCertifiesInProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper process")
	}
	const filter = "ATOMIC-1 || ACK-1 || ORDER-1"
	var res *reports.Results
	t.Run("clean", func(t *testing.T) {
		db := hookcerttest.Database(t, "")
		hookcerttest.RunFile(t, referenceFile, hookcerttest.WithDatabaseURL(db), hookcerttest.WithGeneratedSecrets(),
			hookcerttest.WithReceiver(inProcessReference(db)), hookcerttest.WithLabelFilter(filter), hookcerttest.WithSeed(3),
			hookcerttest.OnResults(func(r *reports.Results) { res = r }))
	})
	if res == nil {
		t.Fatal("no results")
	}
	want := map[string]reports.Status{"ATOMIC-1": reports.StatusPassed, "ACK-1": reports.StatusPassed,
		"ORDER-1": reports.StatusNotApplicable}
	for _, g := range res.Guarantees {
		if g.Status != want[g.ID] {
			t.Errorf("%s: %s, want %s (%s)", g.ID, g.Status, want[g.ID], g.Reason)
		}
	}
	if res.Target.Name != "reference (target file)" || res.Environment["target_file"] != referenceFile {
		t.Errorf("results name the target %q, file %q", res.Target.Name, res.Environment["target_file"])
	}

	// In-memory deduplication survives a restart only if the restart is not one.
	db := hookcerttest.Database(t, "")
	r := runFileOn(t, referenceFile, hookcerttest.WithDatabaseURL(db), hookcerttest.WithGeneratedSecrets(),
		hookcerttest.WithReceiver(inProcessReference(db, reference.DefectMemoryDedup)), hookcerttest.WithLabelFilter("ACK-1"))
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "ACK-1 broken") || !strings.Contains(r.errors[0], "[ack.effects]") {
		t.Errorf("memory-dedup: errors %q, want ACK-1 broken with ack.effects", r.errors)
	}
}

// runFileOn runs RunFile on a recorder (see record).
func runFileOn(t *testing.T, path string, opts ...hookcerttest.Option) *recorder {
	return record(t, func(r testing.TB) { hookcerttest.RunFile(r, path, opts...) })
}

// TestRunFileRefuses: a wrong file fails the test at once with the loader's
// errors, naming the file, its fields and lines as the CLI does; an option
// the file cannot use, or a file an option cannot run, is named with the
// option; nothing is started.
func TestRunFileRefuses(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper process")
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "target:\n  name: t\n  base_url: http://127.0.0.1:{{.Port}}\n  endpoints:\n    - {profile: stripe, account: a, path: /w, secret: whsec_abcdefgh}\n"
	const pg = "  observe:\n    postgres:\n      url: \"{{.DatabaseURL}}\"\n      queries: {event_rows: SELECT count(*) FROM e WHERE event_id = $3, effects: SELECT count(*) FROM l WHERE event_id = $3}\n"
	const ownDB = "  observe:\n    postgres:\n      url: postgres://x@127.0.0.1:1/x\n      queries: {event_rows: SELECT count(*) FROM e WHERE event_id = $3, effects: SELECT count(*) FROM l WHERE event_id = $3}\n"
	db := hookcerttest.WithDatabaseURL("postgres://u:pw-not-shown@127.0.0.1:1/x")
	recv := hookcerttest.WithReceiver(inProcessReference("postgres://x@127.0.0.1:1/x"))
	bad := write("bad.yaml", "target:\n  name: t\n  base_url: http://127.0.0.1:{{.Port}}\n  endpoints:\n    - {profile: strpe, account: a, path: /w, secret_env: HOOKCERTTEST_UNSET_VAR}\n"+pg)
	crash := write("crash.yaml", head+pg+"  capabilities: [crash]\n")
	workers := write("workers.yaml", head+pg+"  lifecycle:\n    command: [./recv]\n    ready: {http: /healthz}\n    worker: {command: [./work]}\n"+
		"  acceptance: {mode: async, quiescent: SELECT true}\n  inbox: {lease: 30s, state: \"SELECT 'done', 1 WHERE $3 <> ''\"}\n  capabilities: [inbox]\n")
	plain := write("plain.yaml", head+pg)
	remote := write("remote.yaml", strings.Replace(head, "127.0.0.1:{{.Port}}", "receiver.example:8080", 1)+pg)
	cases := []struct {
		name, path string
		opts       []hookcerttest.Option
		want       []string
	}{
		{"the loader's errors", bad, []hookcerttest.Option{db}, []string{bad + ": target.endpoints[0].profile (line 5): unknown profile \"strpe\"",
			"target.endpoints[0].secret_env (line 5): environment variable HOOKCERTTEST_UNSET_VAR is not set or empty"}},
		{"crash without a lifecycle", crash, []hookcerttest.Option{db}, []string{`capability "crash" needs target.lifecycle, which is missing (or, in a Go test, WithReceiver`}},
		{"no database", plain, nil, []string{"uses {{.DatabaseURL}}, and hookcerttest provisions no database", "pass WithDatabaseURL(url)"}},
		{"an unused database", write("own.yaml", head+ownDB), []hookcerttest.Option{db}, []string{"WithDatabaseURL: " + dir + "/own.yaml does not use {{.DatabaseURL}}"}},
		{"purge without retention", plain, []hookcerttest.Option{db, hookcerttest.WithPurge(func(context.Context, time.Time) error { return nil })},
			[]string{"WithPurge: " + dir + "/plain.yaml does not declare capability retention"}},
		{"worker processes in process", workers, []hookcerttest.Option{db, recv}, []string{"WithReceiver: target.lifecycle.worker declares worker processes"}},
		{"a receiver off this machine", remote, []hookcerttest.Option{db, recv}, []string{`WithReceiver: target.base_url is "http://receiver.example:8080": address "receiver.example:8080" is not on loopback`}},
		{"no such file", filepath.Join(dir, "nope.yaml"), nil, []string{"target file: open " + dir + "/nope.yaml: no such file"}},
		{"a filter that selects nothing", crash, []hookcerttest.Option{db, recv, hookcerttest.WithLabelFilter("NOPE-9")}, []string{`WithLabelFilter("NOPE-9") selects no guarantee`}},
		{"a bad variable name", crash, []hookcerttest.Option{hookcerttest.WithEnv("NOT A NAME", "x")}, []string{`WithEnv: "NOT A NAME" is not an environment variable name`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runFileOn(t, c.path, c.opts...)
			if len(r.errors) != 1 {
				t.Fatalf("errors = %q, want one", r.errors)
			}
			t.Log(r.errors[0])
			for _, w := range c.want {
				if !strings.Contains(r.errors[0], w) {
					t.Errorf("error %q\ndoes not say %q", r.errors[0], w)
				}
			}
			if strings.Contains(r.errors[0], "pw-not-shown") {
				t.Errorf("the error shows the database password: %q", r.errors[0])
			}
		})
	}
}

// TestRunRefusesFileOptions: a Target says in its fields what the file's
// options say for a file; WithReceiver and a Target's own crash hooks are
// two ways to crash one receiver.
func TestRunRefusesFileOptions(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper process")
	}
	tg := hookcerttest.Target{BaseURL: "http://127.0.0.1:1", DatabaseURL: "postgres://x@127.0.0.1:1/x",
		Endpoints: []hookcerttest.Endpoint{{Profile: "stripe", Account: "a", Path: "/w", Secret: "whsec_abcdefgh"}},
		Queries:   hookcerttest.Queries{EventRows: "SELECT count(*) FROM e WHERE event_id = $3", Effects: "SELECT count(*) FROM l WHERE event_id = $3"}}
	for _, c := range []struct {
		opt  hookcerttest.Option
		want string
	}{
		{hookcerttest.WithDatabaseURL("postgres://x@127.0.0.1:1/y"), "WithDatabaseURL: a Target names its database in Target.DatabaseURL"},
		{hookcerttest.WithGeneratedSecrets(), "WithGeneratedSecrets: a Target's endpoints carry their Secret"},
		{hookcerttest.WithPurge(func(context.Context, time.Time) error { return nil }), "WithPurge: a Target purges through Target.Retention.Purge"},
	} {
		r := runOn(t, tg, c.opt)
		if len(r.errors) != 1 || !strings.Contains(r.errors[0], c.want) {
			t.Errorf("errors = %q, want %q", r.errors, c.want)
		}
	}
	crashable := tg
	crashable.Kill, crashable.Restart = func() error { return nil }, func(context.Context) error { return nil }
	r := runOn(t, crashable, hookcerttest.WithReceiver(inProcessReference(tg.DatabaseURL)))
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "WithReceiver: Target sets Kill and Restart, or Lifecycle") {
		t.Errorf("errors = %q", r.errors)
	}
	remote := tg
	remote.BaseURL = "https://127.0.0.1:8443"
	r = runOn(t, remote, hookcerttest.WithReceiver(inProcessReference(tg.DatabaseURL)))
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], `WithReceiver: Target.BaseURL is "https://127.0.0.1:8443": a receiver in the test process is served over plain http`) {
		t.Errorf("errors = %q", r.errors)
	}
}

// TestRunWithReceiver: a Target takes WithReceiver too, served at its
// templated BaseURL and crashed by ATOMIC-1.
func TestRunWithReceiver(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper process")
	}
	db := hookcerttest.Database(t, "")
	const secret = "whsec_hookcerttestRunWithReceiver00"
	tg := hookcerttest.Target{BaseURL: "http://127.0.0.1:{{.Port}}", DatabaseURL: db, EventTable: "processed_webhook_events", EffectTable: "ledger_entries",
		Endpoints: []hookcerttest.Endpoint{{Profile: "stripe", Account: "acct_A", Path: "/webhooks/stripe/acct_A", Secret: secret}},
		Queries: hookcerttest.Queries{
			EventRows: "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
			Effects:   "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
		},
		Capabilities: []string{"crash", "lock-gating"}}
	var res *reports.Results
	hookcerttest.Run(t, tg, hookcerttest.WithReceiver(inProcessReference(db)), hookcerttest.WithEnv("HOOKCERTTEST_STRIPE_A", secret), hookcerttest.WithEnv("HOOKCERTTEST_STRIPE_B", secret),
		hookcerttest.WithLabelFilter("ATOMIC-1"), hookcerttest.OnResults(func(r *reports.Results) { res = r }))
	if res == nil || res.Summary.Passed != 1 {
		t.Fatalf("results: %+v", res)
	}
}
