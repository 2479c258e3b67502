package selftest

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios/hookcerttest"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// libraryProcs is how many worker processes the library-mode run starts.
const libraryProcs = 2

// Library mode reaches every guarantee the CLI reaches: a Go test certifies
// the inbox reference — its workers in processes of their own, its downstream
// calls to the harness's sink — through hookcerttest and gets the INBOX and
// OUTBOX verdicts, passed, and for the same seed the same verdict on every
// guarantee as `hookcert demo --mode inbox --worker-processes 2`.
func TestLibraryModeMatchesTheCLI(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: certifies the inbox reference twice")
	}
	bin := build(t)
	seed := time.Now().UnixNano()%1_000_000 + 500_000
	t.Logf("seed %d (replay: hookcert demo --mode inbox --worker-processes %d --seed %d)", seed, libraryProcs, seed)

	// Both runs at once, each on a database of its own: the comparison costs
	// one certification's time.
	cli := &run{seed: seed}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		demo(t, bin, pgtest.ServerURL(), cli, "--mode", reference.ModeInbox, "--worker-processes", strconv.Itoa(libraryProcs))
	}()
	var lib *reports.Results
	t.Run("library", func(t *testing.T) {
		hookcerttest.Run(t, inboxReference(t, bin), hookcerttest.WithSeed(seed),
			hookcerttest.OnResults(func(r *reports.Results) { lib = r }))
	})
	wg.Wait()
	if cli.res == nil {
		t.Fatalf("the CLI run wrote no results (exit %d):\n%s", cli.code, tail(cli.out, 40))
	}
	if lib == nil {
		t.Fatal("library mode produced no results")
	}

	got := map[string]reports.Status{}
	for _, g := range lib.Guarantees {
		got[g.ID] = g.Status
	}
	inboxPassed := 0
	for _, g := range cli.res.Guarantees {
		if got[g.ID] != g.Status {
			t.Errorf("%s: library mode %s, CLI %s (%s)", g.ID, got[g.ID], g.Status, g.Reason)
		}
		if (g.Family == "INBOX" || g.Family == "OUTBOX") && got[g.ID] == reports.StatusPassed {
			inboxPassed++
		}
	}
	if len(lib.Guarantees) != len(cli.res.Guarantees) {
		t.Errorf("library mode judged %d guarantees, the CLI %d", len(lib.Guarantees), len(cli.res.Guarantees))
	}
	if inboxPassed != 11 {
		t.Errorf("%d INBOX and OUTBOX guarantees passed in library mode, want all 11", inboxPassed)
	}
	t.Logf("library mode: %d passed, %d not applicable; the CLI: %d passed, %d not applicable",
		lib.Summary.Passed, lib.Summary.NotApplicable, cli.res.Summary.Passed, cli.res.Summary.NotApplicable)
}

// inboxReference describes the reference in inbox mode, its workers in
// libraryProcs processes of the hookcert binary, as a Go test would: the
// same receiver `hookcert demo --mode inbox --worker-processes 2` runs.
func inboxReference(t *testing.T, bin string) hookcerttest.Target {
	t.Helper()
	var cfg reference.Config
	tg := hookcerttest.Target{
		Name:        "reference receiver (inbox mode, library)",
		BaseURL:     "http://{{.ListenAddr}}",
		DatabaseURL: pgtest.Database(t),
		EventTable:  reference.EventTable,
		EffectTable: reference.EffectTable,
		Queries: hookcerttest.Queries{
			EventRows: reference.EventRowsQuery, Effects: reference.EffectsQuery, ObjectEffects: reference.ObjectEffectsQuery,
			Object: reference.ObjectQuery, Payment: reference.PaymentQuery, PayloadPresent: reference.PayloadPresentQuery,
			Quiescent: reference.QuiescentQuery,
		},
		Capabilities: []string{"crash", "lock-gating", "connection-loss", "ordering", "state-machine", "domain-constraint",
			"deletion", "retention", "inbox", "outbox"},
		Acceptance: vocab.Acceptance{Async: true, Settle: 3 * time.Second},
		Retention:  &hookcerttest.Retention{PurgeHTTPPath: reference.AdminPurgePath},
		Inbox:      &hookcerttest.Inbox{Lease: time.Second, MaxAttempts: 5, State: reference.InboxStateQuery},
		Outbox:     &hookcerttest.Outbox{MaxAttempts: 5, State: reference.OutboxStateQuery},
	}
	for _, e := range []struct{ profile, account string }{
		{"stripe", "acct_A"}, {"stripe", "acct_B"}, {"standard-webhooks", "acct_A"},
		{"github", "acct_A"}, {"shopify", "acct_A"}, {"svix", "acct_A"}, {"slack", "acct_A"},
	} {
		sec, err := profiles.GenerateSecret(e.profile, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		ep := reference.Endpoint{Profile: e.profile, Account: e.account, Path: "/webhooks/" + e.profile + "/" + e.account, Secret: sec}
		cfg.Endpoints = append(cfg.Endpoints, ep)
		r := ep.Retention()
		tg.Endpoints = append(tg.Endpoints, hookcerttest.Endpoint{Profile: e.profile, Account: e.account, Path: ep.Path, Secret: sec,
			KeyTTL: r.KeyTTL, PayloadTTL: r.PayloadTTL})
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "endpoints.yaml")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	queue := []string{"--lease", "1s", "--max-attempts", "5", "--backoff", "250ms", "--backoff-max", "1s", "--sink-url", "{{.SinkURL}}"}
	tg.Lifecycle = &hookcerttest.Lifecycle{
		Command: append([]string{bin, "reference", "serve", "--listen", "{{.ListenAddr}}", "--config", cfgPath, "--enable-failpoints",
			"--max-conns", "12", "--mode", reference.ModeInbox, "--workers", "0"}, queue...),
		// The database URL goes in the environment, not the command line (ps).
		Env:       map[string]string{pgprovision.EnvDatabaseURL: "{{.DatabaseURL}}"},
		ReadyPath: "/healthz", ReadyTimeout: 30 * time.Second, StopGrace: 5 * time.Second,
		Worker: &hookcerttest.Worker{
			Command:   append([]string{bin, "reference", "worker", "--workers", fmt.Sprint(2), "--poll-interval", "100ms"}, queue...),
			Processes: libraryProcs,
		},
	}
	return tg
}
