package selftest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
)

// example is a receiver under examples/ written without hookcert in mind,
// certified black-box through its own target file and its own vocabulary.
type example struct {
	dir string
	// needs says what must be installed to run it, and checks it is: "" when
	// it is ready (a Go example needs nothing beyond the toolchain).
	needs func() string
	// env carries its secrets; defectEnv names the variable that plants a defect.
	env       []string
	defectEnv string
	// seeds is how many seeds the correct receiver is certified on (default
	// 1): each seed is another order of scenarios, IDs and kill points.
	seeds int
	// maxNA bounds how many guarantees may be not applicable to the correct
	// receiver; mustPass must pass (they judge what the example is for).
	maxNA    int
	mustPass []string
	// breaks maps each planted defect to the guarantees it must fail and the
	// codes among their evidence; every other applicable guarantee must pass.
	breaks map[string]map[string][]string
	// defectFilter narrows the planted defects' runs (a --label-filter);
	// unset, each defect's run is narrowed to the guarantees it breaks. The
	// correct receiver is certified in full on its seeds: a defect run need
	// only show the catch.
	defectFilter string
}

var examples = []example{
	{
		// Written the way Stripe receivers are: its own tables, Stripe's own
		// event types, payments that exist before their events, no failpoints.
		dir: "stripe-shop",
		env: []string{"SHOP_SECRET_LIVE_ACCT_SHOP_A=whsec_selftestShopLiveA0000000000000", "SHOP_SECRET_TEST_ACCT_SHOP_A=whsec_selftestShopTestA0000000000000",
			"SHOP_SECRET_LIVE_ACCT_SHOP_B=whsec_selftestShopLiveB0000000000000", "SHOP_SECRET_TEST_ACCT_SHOP_B=whsec_selftestShopTestB0000000000000"},
		defectEnv: "SHOP_DEFECT",
		// A synchronous receiver: no inbox, no outbox (11).
		maxNA:    20, // +3: no provider API (REFETCH)
		mustPass: []string{"DEDUP-1", "DEDUP-3", "DEDUP-4", "DEDUP-6", "ATOMIC-1", "ATOMIC-2", "ATOMIC-5", "ACK-1", "ACK-7", "ORDER-1", "ORDER-3", "ORDER-4"},
		breaks: map[string]map[string][]string{
			// A late payment_failed after succeeded overwrites the status.
			"late-overwrite": {"ORDER-3": {"order.transition-applied"}},
			// An event for a payment row not written yet is acknowledged and dropped.
			"missing-ack": {"ATOMIC-5": {"atomic.missing-lost"}},
			// A 64 KB cap refuses legitimate larger events.
			"small-body-cap": {"ACK-7": {"ack.boundary-rejected"}},
			// Deduplication in process memory: lost on restart, racy under copies.
			"memory-dedup": {"ACK-1": {"ack.effects"}, "DEDUP-1": {"dedup.effects"}},
			// customer.deleted deletes the row: a late older update recreates it.
			"hard-delete": {"ORDER-4": {"order.resurrected"}},
			// A late refund.failed overwrites a refund already confirmed
			// (the second lifecycle object, reached through its payment).
			"refund-late-failure": {"ORDER-3": {"order.transition-applied"}},
			// product.updated applied whatever its created (the second
			// ordered role, held at its own table).
			"product-unordered": {"ORDER-1": {"order.regressed"}, "ORDER-2": {"order.regressed"}},
		},
	},
	{
		// Node.js 20 and pg, Standard Webhooks signatures; its own invoices,
		// orders and versioned customers, one transaction per delivery.
		dir:       "node-receiver",
		needs:     nodeReady,
		env:       []string{"WEBHOOK_SECRET=whsec_c2VsZnRlc3Qtbm9kZS1yZWNlaXZlci1zZWNyZXQtMDE="},
		defectEnv: "NODE_RECEIVER_DEFECT",
		maxNA:     25, // +3: no provider API (REFETCH)
		mustPass: []string{"DEDUP-1", "DEDUP-2", "DEDUP-5", "DEDUP-6", "ATOMIC-1", "ATOMIC-2", "ATOMIC-3", "ATOMIC-5",
			"ACK-1", "ACK-3", "ACK-4", "ACK-5", "ACK-7", "ORDER-1", "ORDER-2", "ORDER-3", "ORDER-4"},
		breaks: map[string]map[string][]string{
			// The event row and the business change in separate autocommit
			// statements: a kill, a lost session or a 409 leaves the key without
			// its change.
			"no-transaction": {
				"ATOMIC-1": {"atomic.partial", "atomic.not-applied"},
				"ATOMIC-2": {"atomic.partial", "atomic.object-state"},
				"ATOMIC-3": {"atomic.partial", "atomic.not-applied"},
				"ATOMIC-5": {"atomic.partial", "atomic.object-state"},
				// Not ACK-1: its kill lands between the two statements only by
				// chance; ATOMIC-1 holds the receiver there.
			},
		},
	},
	{
		// Python's http.server and psycopg2: a deliveries row and the change in
		// one transaction, GitHub's own event names, an issue lifecycle.
		dir:       "python-receiver",
		needs:     pythonReady,
		env:       []string{"WEBHOOK_SECRET=selftest-python-secret-01"},
		defectEnv: "PY_RECEIVER_DEFECT",
		maxNA:     32, // +3: no provider API (REFETCH)
		mustPass:  []string{"DEDUP-1", "DEDUP-2", "DEDUP-5", "ATOMIC-1", "ATOMIC-3", "ATOMIC-5", "ACK-1", "ACK-5", "ACK-7"},
		breaks: map[string]map[string][]string{
			// Check, apply and commit, then record the delivery: copies held
			// together all apply it; held at the deliveries insert, after the
			// change's commit, a kill or a cut session leaves the change alone.
			// (ACK-1's kill lands between the commits only by chance.)
			"dedupe-after-commit": {"DEDUP-1": {"dedup.effects"}, "ATOMIC-1": {"atomic.partial"}, "ATOMIC-3": {"atomic.partial"}},
		},
	},
	{
		// Accepts into a queue table, answers 202, applies in worker goroutines.
		dir:       "github-gateway",
		env:       []string{"GATEWAY_WEBHOOK_SECRET=selftest-gateway-secret-01"},
		defectEnv: "GATEWAY_DEFECT",
		// It declares no ordering, retention or outbox, and has one endpoint.
		maxNA: 27, // RETENTION-5 among them: no key_ttl query; ACK-8: no handshake; +3: no provider API (REFETCH)
		// Its inbox is its own design (row locks, no lease, one row per
		// delivery): the INBOX checks judge it black-box.
		mustPass: []string{"DEDUP-1", "DEDUP-2", "ATOMIC-1", "ATOMIC-3", "ACK-1", "ACK-6", "ACK-7",
			"INBOX-1", "INBOX-2", "INBOX-3", "INBOX-4", "INBOX-5", "INBOX-6"},
		breaks: map[string]map[string][]string{
			// The worker's check-then-insert race: the lock gate holds the
			// workers' inserts, so every run sees it.
			"check-then-insert": {"DEDUP-1": {"dedup.rows", "dedup.effects"}},
			// 202 from an in-process buffer: a kill loses acknowledged events;
			// with the inbox table locked, its flush cannot have saved them.
			"memory-queue": {"ACK-1": {"ack.lost"}, "INBOX-1": {"inbox.lost"}},
		},
	},
	// Django and gunicorn, an inbox table and worker processes (django_test.go).
	djangoExample,
	// A provider declared in the target file (custom_provider_test.go).
	customProviderExample,
	// Twilio, Discord, Zoom and Clerk in one Node receiver (multi_provider_test.go).
	multiProviderExample,
}

type exampleRun struct {
	ex     *example
	defect string
	seed   int64
	code   int
	res    *reports.Results
	out    string
	dur    time.Duration
}

// TestExampleReceiversAreCertified certifies each example, one subtest per
// example (-run 'TestExampleReceiversAreCertified/django-receiver' runs one),
// its correct receiver on ex.seeds seeds and once per planted defect.
func TestExampleReceiversAreCertified(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: certifies every example receiver once per planted defect")
	}
	bin := build(t)
	base := time.Now().UnixNano() % 1_000_000
	t.Logf("example seeds start at %d", base)
	// Three certifications at once across the examples: the runs mostly wait
	// (settle periods, restarts), and three receivers with their harness pools
	// stay well under PostgreSQL's 100 connections.
	sem := make(chan struct{}, 3)
	next := base
	for i := range examples {
		ex := &examples[i]
		runs := exampleRuns(ex, next)
		next += int64(len(runs))
		t.Run(ex.dir, func(t *testing.T) {
			t.Parallel()
			certifyExampleRuns(t, bin, ex, runs, sem)
		})
	}
}

// exampleRuns are ex's certifications: its correct receiver on ex.seeds
// seeds, then each planted defect, numbered from seed.
func exampleRuns(ex *example, seed int64) []*exampleRun {
	var runs []*exampleRun
	for range max(1, ex.seeds) {
		runs = append(runs, &exampleRun{ex: ex, seed: seed + int64(len(runs))})
	}
	for _, d := range slices.Sorted(maps.Keys(ex.breaks)) {
		runs = append(runs, &exampleRun{ex: ex, defect: d, seed: seed + int64(len(runs))})
	}
	return runs
}

// certifyExampleRuns builds ex where it is Go, runs its certifications (each
// holding a place of sem) and judges them.
func certifyExampleRuns(t *testing.T, bin string, ex *example, runs []*exampleRun, sem chan struct{}) {
	if ex.needs != nil {
		if why := ex.needs(); why != "" {
			t.Skipf("%s is not certified here: %s", ex.dir, why)
		}
	} else {
		// A Go example's target starts ./bin/<name> beside the target file,
		// where its README builds it (bin/ is ignored by git).
		out, err := exec.Command("go", "build", "-o", filepath.Join("..", "..", "examples", ex.dir, "bin", ex.dir), "github.com/hookcert/hookcert/examples/"+ex.dir).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", ex.dir, err, out)
		}
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			certifyExample(t, bin, r)
		}()
	}
	wg.Wait()
	for _, r := range runs {
		judgeExampleRun(t, r)
	}
}

// judgeExampleRun checks one certification against what the example expects:
// the correct receiver passes all but at most maxNA guarantees (mustPass
// among them) and exits 0; a planted defect fails the guarantees it breaks,
// with their codes, passes the rest and exits 1.
func judgeExampleRun(t *testing.T, r *exampleRun) {
	t.Helper()
	label := r.ex.dir
	if r.defect != "" {
		label += " + " + r.defect
	}
	t.Logf("%s (seed %d): exit %d in %s", label, r.seed, r.code, r.dur.Round(100*time.Millisecond))
	if r.res == nil {
		t.Errorf("%s (seed %d): no results.json (exit %d)\n%s", label, r.seed, r.code, tail(r.out, 30))
		return
	}
	want := r.ex.breaks[r.defect]
	na := 0
	for _, g := range r.res.Guarantees {
		codes, broken := want[g.ID]
		switch {
		case broken:
			if g.Status != reports.StatusFailed {
				t.Errorf("%s (seed %d): %s is %s, want failed: the planted defect was not caught (%s)", label, r.seed, g.ID, g.Status, g.Reason)
				continue
			}
			for _, c := range codes {
				if !slices.Contains(g.Codes, c) {
					t.Errorf("%s (seed %d): %s failed without code %s (got %v)", label, r.seed, g.ID, c, g.Codes)
				}
			}
		case g.Status == reports.StatusNotApplicable:
			na++
			if slices.Contains(r.ex.mustPass, g.ID) {
				t.Errorf("%s (seed %d): %s is not applicable, want passed: %s", label, r.seed, g.ID, g.Reason)
			}
		case g.Status != reports.StatusPassed:
			t.Errorf("%s (seed %d): %s is %s, want passed: %s", label, r.seed, g.ID, g.Status, g.Reason)
		}
	}
	if r.defect == "" {
		checkExampleVerdicts(t, label, r)
		if r.code != 0 {
			t.Errorf("%s (seed %d): exit %d, want 0", label, r.seed, r.code)
		}
		if na > r.ex.maxNA {
			t.Errorf("%s (seed %d): %d guarantees not applicable, want at most %d", label, r.seed, na, r.ex.maxNA)
		}
	} else if r.code != 1 {
		t.Errorf("%s (seed %d): exit %d, want 1 (a guarantee failed)", label, r.seed, r.code)
	}
}

// nodeReady: the Node example needs node on PATH and its npm packages.
func nodeReady() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not on PATH"
	}
	if _, err := os.Stat(filepath.Join("..", "..", "examples", "node-receiver", "node_modules", "pg")); err != nil {
		return "its npm packages are not installed (run `npm ci` in examples/node-receiver; .ci/run does)"
	}
	return ""
}

// pythonReady: the Python example needs python3 with psycopg2 (Debian's
// python3-psycopg2), as its folder's interpreter sees it.
func pythonReady() string {
	c := exec.Command("python3", "-c", "import psycopg2")
	c.Dir = filepath.Join("..", "..", "examples", "python-receiver")
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Sprintf("python3 cannot import psycopg2 (install python3-psycopg2; .ci/run does): %v %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// certifyExample runs `hookcert certify` on an example's own target file.
func certifyExample(t *testing.T, bin string, r *exampleRun) {
	filter := ""
	if r.defect != "" {
		filter = r.ex.defectFilter
		if filter == "" {
			filter = strings.Join(slices.Sorted(maps.Keys(r.ex.breaks[r.defect])), " || ")
		}
	}
	certifyExampleWith(t, bin, r, pgtest.ServerURL(), filter, t.TempDir(), 4*time.Minute)
}

// certifyExampleWith runs `hookcert certify` on an example's own target file
// against the database server (PostgreSQL, or MySQL for observe.mysql),
// narrowed to filter when set, writing its reports to dir. It may run on a
// goroutine of its own: it reports with t.Error, never t.Fatal.
func certifyExampleWith(t *testing.T, bin string, r *exampleRun, server, filter, dir string, timeout time.Duration) {
	cfg, err := filepath.Abs(filepath.Join("..", "..", "examples", r.ex.dir, "target.yaml"))
	if err != nil {
		t.Error(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"certify", "--config", cfg, "--report-dir", dir, "--seed", fmt.Sprint(r.seed), "--database-url", server}
	if filter != "" {
		args = append(args, "--label-filter", filter)
	}
	c := exec.CommandContext(ctx, bin, args...)
	// Anywhere: the target file's paths are its own directory's.
	c.Dir = t.TempDir()
	c.Env = append(append(os.Environ(), r.ex.env...), r.ex.defectEnv+"="+r.defect)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err = c.Run()
	r.out, r.dur = out.String(), time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code = -1
		r.out += "\n" + err.Error()
	}
	if res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON)); err == nil {
		r.res = res
	}
	for _, kv := range r.ex.env {
		if secret := kv[strings.IndexByte(kv, '=')+1:]; strings.Contains(r.out, secret) {
			t.Errorf("%s: a secret appears in the harness's output", r.ex.dir)
		}
	}
}
