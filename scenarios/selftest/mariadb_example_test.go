package selftest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/mysqlstore/mysqltest"
	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/scenarios/harness"
)

// mariadbExample is a Stripe receiver on MariaDB in Node.js 20 and mysql2:
// the event key under a UNIQUE key in the transaction of the change,
// ER_DUP_ENTRY for duplicates, deadlocks run again, an order lifecycle and
// customers ordered by created. Kill points and orders come from the seed, so
// it is certified on three.
var mariadbExample = example{
	dir:   "mariadb-receiver",
	needs: mariadbReady,
	env: []string{"STRIPE_WEBHOOK_SECRET=whsec_selftestMariadbLive0000000000000000",
		"STRIPE_TEST_WEBHOOK_SECRET=whsec_selftestMariadbTest0000000000000000"},
	defectEnv: "MARIADB_RECEIVER_DEFECT",
	seeds:     3,
	// No failpoints (ATOMIC-4), one account (DEDUP-3), no event ID header
	// (DEDUP-5), no retention or key TTL (5), no inbox or outbox (11), no
	// handshake (ACK-8).
	maxNA: 25, // +3: no provider API (REFETCH)
	mustPass: []string{"DEDUP-1", "DEDUP-2", "DEDUP-4", "DEDUP-6", "DEDUP-7", "ATOMIC-1", "ATOMIC-2", "ATOMIC-3", "ATOMIC-5",
		"ACK-1", "ACK-2", "ACK-3", "ACK-4", "ACK-5", "ACK-6", "ACK-7", "ORDER-1", "ORDER-2", "ORDER-3", "ORDER-4"},
	breaks: map[string]map[string][]string{
		// No unique key; SELECT, then INSERT: the lock gate holds the copies'
		// inserts after their snapshot reads found nothing, so all commit.
		"check-then-insert": {"DEDUP-1": {"dedup.rows", "dedup.effects"}},
		// 200 first, transaction after: a kill right after an acknowledgement
		// loses the events still waiting for their COMMIT.
		"ack-before-commit": {"ACK-1": {"ack.lost"}},
	},
}

// mariadbDefectFilters narrow each planted defect's runs to the guarantee that
// must catch it (CI time): the three clean seeds certify the receiver in full.
var mariadbDefectFilters = map[string]string{
	"check-then-insert": "DEDUP-1",
	"ack-before-commit": "ACK-1",
}

// mariadbReady: the example needs node and its npm packages (the MariaDB
// server is checked by mysqltest.Server). It says in one line what is missing.
func mariadbReady() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not on PATH"
	}
	if _, err := os.Stat(filepath.Join("..", "..", "examples", "mariadb-receiver", "node_modules", "mysql2")); err != nil {
		return "its npm packages are not installed (run `npm ci` in examples/mariadb-receiver; .ci/run does)"
	}
	return ""
}

// mariadbServer is the MariaDB server the example is certified on: the test
// is skipped when the default one does not answer, and fails when
// HOOKCERT_TEST_MYSQL_URL names one that does not (mysqltest.Server), or one
// that answers but will not run a query for its user.
func mariadbServer(t *testing.T) string {
	t.Helper()
	server := mysqltest.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := mysqlstore.Open(ctx, server, sqlstore.Timeouts{Connect: 5 * time.Second})
	if err != nil {
		t.Fatalf("the MariaDB server of %s: %v", mysqltest.EnvURL, err)
	}
	defer db.Close()
	t.Logf("certifying on %s (%s)", db.Where(), db.Version())
	return server
}

// TestMariaDBExampleIsCertified certifies examples/mariadb-receiver with the
// hookcert binary on a MariaDB server: the correct receiver on three seeds
// (exit 0, nothing failed), and each planted defect on three seeds, narrowed
// to the family that catches it (exit 1, the guarantees it breaks failed with
// their codes). A lock-gated DEDUP-1 must show in history.jsonl that its gate
// held the copies together.
func TestMariaDBExampleIsCertified(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: certifies the MariaDB example receiver nine times")
	}
	ex := &mariadbExample
	if why := ex.needs(); why != "" {
		t.Skipf("%s is not certified here: %s", ex.dir, why)
	}
	server := mariadbServer(t)
	bin := build(t)
	base := time.Now().UnixNano() % 1_000_000
	t.Logf("mariadb example seeds start at %d", base)
	type mariadbRun struct {
		exampleRun
		dir string
	}
	var runs []*mariadbRun
	for i := range ex.seeds {
		runs = append(runs, &mariadbRun{exampleRun: exampleRun{ex: ex, seed: base + int64(i)}})
		for _, d := range slices.Sorted(maps.Keys(ex.breaks)) {
			runs = append(runs, &mariadbRun{exampleRun: exampleRun{ex: ex, defect: d, seed: base + int64(i)}})
		}
	}
	// Three certifications at once: they mostly wait (restarts, settle
	// periods), and three receivers with their harness sessions stay well
	// under MariaDB's default 151 connections.
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for _, r := range runs {
		r.dir = t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			filter := ""
			if r.defect != "" {
				filter = mariadbDefectFilters[r.defect]
			}
			certifyExampleWith(t, bin, &r.exampleRun, server, filter, r.dir, 6*time.Minute)
		}()
	}
	wg.Wait()
	for _, r := range runs {
		judgeExampleRun(t, &r.exampleRun)
		if r.res != nil {
			checkDedup1Gates(t, &r.exampleRun, r.dir)
		}
	}
}

// checkDedup1Gates reads the run's history: DEDUP-1 ran lock-gated at
// webhook_events on every endpoint, and each gate held at least two of the
// copies at once, so the race the defect loses was forced, not hoped for.
func checkDedup1Gates(t *testing.T, r *exampleRun, dir string) {
	t.Helper()
	label := fmt.Sprintf("%s + %q (seed %d)", r.ex.dir, r.defect, r.seed)
	f, err := os.Open(filepath.Join(dir, harness.HistoryFile))
	if err != nil {
		t.Errorf("%s: %v", label, err)
		return
	}
	defer f.Close()
	h, err := history.ReadJSONL(f)
	if err != nil {
		t.Errorf("%s: %s: %v", label, harness.HistoryFile, err)
		return
	}
	for _, sc := range h.Scenarios {
		if sc.Guarantee != "DEDUP-1" || sc.State != history.ScenarioRan {
			continue
		}
		gates := 0
		for _, g := range h.Gates {
			if g.Scenario != sc.Index {
				continue
			}
			gates++
			if g.Table != "webhook_events" {
				t.Errorf("%s: DEDUP-1's gate locked %q, want webhook_events", label, g.Table)
			}
			if g.Held() < 2 {
				t.Errorf("%s: DEDUP-1's gate held %d session(s) at once (at the lock %d, behind it %d, foreign %d, refused %v), want at least 2: the race was not forced",
					label, g.Held(), g.AtGate, g.Behind, g.Foreign, g.Refused)
			}
		}
		// One gate per endpoint: the live and the test-mode one.
		if gates != 2 {
			t.Errorf("%s: DEDUP-1 recorded %d gate(s), want 2 (one per endpoint)", label, gates)
		}
		return
	}
	if r.defect == "" || r.defect == "check-then-insert" {
		t.Errorf("%s: history.jsonl has no DEDUP-1 scenario that ran", label)
	}
}
