package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Every delivery that is not signed with the secret, not a JSON object, or
// lacks its delivery GUID or event name is refused with a 4xx and stores nothing.
func TestAcceptanceRules(t *testing.T) {
	gw := startGateway(t, DefectNone, 0, nil)
	body := issuesBody(1)
	good := func() map[string]string {
		return map[string]string{"X-GitHub-Event": "issues", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
			"X-Hub-Signature-256": sign(testSecret, body)}
	}
	with := func(k, v string) map[string]string { h := good(); h[k] = v; return h }
	otherSig := sign("another secret", body)
	cases := []struct {
		name    string
		body    []byte
		headers map[string]string
		want    int
	}{
		{"no signature", body, with("X-Hub-Signature-256", ""), 400},
		{"signed with another secret", body, with("X-Hub-Signature-256", otherSig), 400},
		{"body changed after signing", append(bytes.Clone(body[:len(body)-1]), ' ', '}'), good(), 400},
		{"legacy sha1 scheme only", body, with("X-Hub-Signature-256", "sha1="+strings.TrimPrefix(sign(testSecret, body), "sha256=")[:40]), 400},
		{"no scheme prefix", body, with("X-Hub-Signature-256", strings.TrimPrefix(sign(testSecret, body), "sha256=")), 400},
		{"truncated signature", body, with("X-Hub-Signature-256", sign(testSecret, body)[:40]), 400},
		{"not hex", body, with("X-Hub-Signature-256", "sha256="+strings.Repeat("zz", 32)), 400},
		{"missing delivery GUID", body, with("X-GitHub-Delivery", ""), 400},
		{"missing event name", body, with("X-GitHub-Event", ""), 400},
	}
	for _, c := range []struct{ name, body string }{
		{"malformed JSON", `{"action":"opened","issue":{"id":1}`},
		{"a JSON array", `[{"action":"opened"}]`},
		{"empty body", ``},
		{"a NUL character jsonb refuses", `{"action":"opened","title":"a\u0000b"}`},
	} {
		b := []byte(c.body)
		cases = append(cases, struct {
			name    string
			body    []byte
			headers map[string]string
			want    int
		}{c.name, b, map[string]string{"X-GitHub-Event": "issues", "X-GitHub-Delivery": "d-" + c.name, "X-Hub-Signature-256": sign(testSecret, b)}, 400})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := postWith(t, gw.url, c.body, c.headers); got != c.want {
				t.Errorf("status %d, want %d", got, c.want)
			}
		})
	}
	for _, size := range []int{maxPayloadBytes + 1, 2 * maxPayloadBytes} {
		t.Run(fmt.Sprintf("%d bytes", size), func(t *testing.T) {
			if got := post(t, gw.url, "issues", "d-big", jsonOfSize(size)); got != http.StatusRequestEntityTooLarge {
				t.Errorf("status %d, want 413", got)
			}
		})
	}
	if n := count(t, gw.db, `SELECT count(*) FROM inbox`); n != 0 {
		t.Fatalf("refused deliveries left %d inbox rows", n)
	}
	t.Run("exactly 25 MB is accepted", func(t *testing.T) {
		big := jsonOfSize(maxPayloadBytes)
		if got := post(t, gw.url, "issues", "d-25mb", big); got != http.StatusAccepted {
			t.Errorf("status %d, want 202", got)
		}
	})
	if got := postWith(t, gw.url, body, good()); got != http.StatusAccepted {
		t.Fatalf("a valid delivery: status %d, want 202", got)
	}
}

// A 202 means the delivery is committed to the inbox: another session reads it
// right after the answer, before any worker ran. Redeliveries are queued too.
func TestAcceptedMeansCommitted(t *testing.T) {
	gw := startGateway(t, DefectNone, 0, nil)
	body := issuesBody(1347)
	for i := 0; i < 2; i++ {
		if got := post(t, gw.url, "issues", "guid-1", body); got != http.StatusAccepted {
			t.Fatalf("status %d, want 202", got)
		}
		if n := count(t, gw.db, `SELECT count(*) FROM inbox WHERE delivery_id = 'guid-1' AND event = 'issues'
			AND payload = $1::jsonb AND done_at IS NULL`, string(body)); n != i+1 {
			t.Fatalf("after delivery %d the inbox holds %d rows for it, want %d", i+1, n, i+1)
		}
	}
}

// When the enqueue cannot commit in time the answer is not a 2xx, and nothing
// is stored.
func TestNoAcknowledgementWithoutCommit(t *testing.T) {
	gw := startGateway(t, DefectNone, 0, func(g *Gateway) { g.acceptTimeout = 300 * time.Millisecond })
	release := gate(t, gw.db, "inbox", "ACCESS EXCLUSIVE")
	got := post(t, gw.url, "issues", "guid-blocked", issuesBody(1))
	release()
	if got/100 == 2 {
		t.Fatalf("status %d while the inbox could not be written", got)
	}
	if n := count(t, gw.db, `SELECT count(*) FROM inbox`); n != 0 {
		t.Fatalf("%d inbox rows after a failed enqueue", n)
	}
}

// Sixteen copies of one delivery at once, over several rounds: sixteen tasks,
// one processed row, one issue_activity row per delivery.
func TestConcurrentCopiesProcessedOnce(t *testing.T) {
	gw := startGateway(t, DefectNone, 4, nil)
	const rounds, copies = 5, 16
	for r := range rounds {
		postCopies(t, gw.url, "issues", fmt.Sprintf("guid-%d", r), issuesBody(int64(100+r)), copies)
	}
	waitQuiescent(t, gw.db)
	for r := range rounds {
		id := fmt.Sprintf("guid-%d", r)
		if n := count(t, gw.db, `SELECT count(*) FROM inbox WHERE delivery_id = $1 AND done_at IS NOT NULL`, id); n != copies {
			t.Errorf("%s: %d tasks done, want %d", id, n, copies)
		}
		if n := count(t, gw.db, `SELECT count(*) FROM processed WHERE delivery_id = $1`, id); n != 1 {
			t.Errorf("%s: %d processed rows, want 1", id, n)
		}
		if n := count(t, gw.db, `SELECT count(*) FROM issue_activity WHERE delivery_id = $1 AND issue_id = $2
			AND action = 'opened' AND repo = 'octocat/Hello-World'`, id, 100+r); n != 1 {
			t.Errorf("%s: %d issue_activity rows, want 1", id, n)
		}
	}
}

// gatedCopies holds processed in SHARE mode until every worker holds a copy of
// one delivery and waits on its insert, then lets them all go: the race a
// check-then-insert loses, made certain.
func gatedCopies(t *testing.T, gw *testGateway, deliveryID string, copies, workers int) {
	t.Helper()
	release := gate(t, gw.db, "processed", "SHARE")
	postCopies(t, gw.url, "issues", deliveryID, issuesBody(7), copies)
	waitFor(t, 10*time.Second, "every worker to wait on processed", func() bool { return waiters(t, gw.db, "processed") == workers })
	release()
	waitQuiescent(t, gw.db)
}

func TestCopiesHeldAtTheInsertProcessedOnce(t *testing.T) {
	gw := startGateway(t, DefectNone, 4, nil)
	gatedCopies(t, gw, "guid-gated", 16, 4)
	if n := count(t, gw.db, `SELECT count(*) FROM processed WHERE delivery_id = 'guid-gated'`); n != 1 {
		t.Errorf("%d processed rows, want 1", n)
	}
	if n := count(t, gw.db, `SELECT count(*) FROM issue_activity WHERE delivery_id = 'guid-gated'`); n != 1 {
		t.Errorf("%d issue_activity rows, want 1", n)
	}
}

// Events the gateway does not act on are done, recorded, and change nothing.
func TestUnhandledEvents(t *testing.T) {
	gw := startGateway(t, DefectNone, 2, nil)
	if got := post(t, gw.url, "ping", "guid-ping", []byte(`{"zen":"Design for failure.","hook_id":1,"hook":{"type":"Repository","id":1,"active":true,"events":["issues"]}}`)); got != http.StatusAccepted {
		t.Fatalf("ping: status %d", got)
	}
	if got := post(t, gw.url, "watch", "guid-watch", []byte(`{"action":"started","repository":{"id":1,"full_name":"octocat/Hello-World"}}`)); got != http.StatusAccepted {
		t.Fatalf("watch: status %d", got)
	}
	waitQuiescent(t, gw.db)
	if n := count(t, gw.db, `SELECT count(*) FROM inbox WHERE done_at IS NOT NULL AND last_error IS NULL`); n != 2 {
		t.Errorf("%d tasks done cleanly, want 2", n)
	}
	if n := count(t, gw.db, `SELECT count(*) FROM processed WHERE delivery_id IN ('guid-ping', 'guid-watch')`); n != 2 {
		t.Errorf("%d processed rows, want 2", n)
	}
	if n := count(t, gw.db, `SELECT count(*) FROM issue_activity`); n != 0 {
		t.Errorf("%d issue_activity rows, want 0", n)
	}
}

// A worker whose session is killed while it waits to write the effect rolls
// back (key included); the attempt, counted when it was claimed, and its error
// stay recorded, and the task succeeds on retry after the claim's lease.
func TestConnectionLossRetried(t *testing.T) {
	gw := startGateway(t, DefectNone, 1, nil)
	release := gate(t, gw.db, "issue_activity", "SHARE")
	if got := post(t, gw.url, "issues", "guid-lost", issuesBody(9)); got != http.StatusAccepted {
		t.Fatalf("status %d", got)
	}
	waitFor(t, 10*time.Second, "the worker to wait on issue_activity", func() bool { return waiters(t, gw.db, "issue_activity") == 1 })
	if n := count(t, gw.db, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE relation = 'issue_activity'::regclass AND NOT granted) k`); n != 1 {
		t.Fatalf("terminated %d sessions, want 1", n)
	}
	release()
	waitQuiescent(t, gw.db)
	if n := count(t, gw.db, `SELECT count(*) FROM inbox WHERE delivery_id = 'guid-lost' AND attempts = 2
		AND last_error IS NOT NULL AND done_at IS NOT NULL`); n != 1 {
		t.Errorf("the task is not done after one recorded failure")
	}
	if n := count(t, gw.db, `SELECT count(*) FROM processed WHERE delivery_id = 'guid-lost'`); n != 1 {
		t.Errorf("%d processed rows, want 1", n)
	}
	if n := count(t, gw.db, `SELECT count(*) FROM issue_activity WHERE delivery_id = 'guid-lost'`); n != 1 {
		t.Errorf("%d issue_activity rows, want 1", n)
	}
}

// A task that keeps failing is tried five times and then left pending with its
// last error; its key is not recorded, and other work goes on.
func TestDeadLetter(t *testing.T) {
	gw := startGateway(t, DefectNone, 2, nil)
	if _, err := gw.db.Exec(context.Background(), `
		CREATE FUNCTION refuse_issue() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.issue_id = 666 THEN RAISE EXCEPTION 'issue 666 is refused'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_issue BEFORE INSERT ON issue_activity FOR EACH ROW EXECUTE FUNCTION refuse_issue();`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got := post(t, gw.url, "issues", "guid-poison", issuesBody(666)); got != http.StatusAccepted {
		t.Fatalf("status %d", got)
	}
	if got := post(t, gw.url, "issues", "guid-fine", issuesBody(1)); got != http.StatusAccepted {
		t.Fatalf("status %d", got)
	}
	waitQuiescent(t, gw.db)
	// 50+100+200+400 ms of backoff between the five attempts.
	if el := time.Since(start); el < 700*time.Millisecond {
		t.Errorf("five attempts in %v: no backoff", el)
	}
	if n := count(t, gw.db, `SELECT count(*) FROM inbox WHERE delivery_id = 'guid-poison' AND attempts = 5
		AND done_at IS NULL AND last_error LIKE '%issue 666 is refused%'`); n != 1 {
		t.Errorf("the poison task is not a visible dead letter")
	}
	if n := count(t, gw.db, `SELECT count(*) FROM processed WHERE delivery_id = 'guid-poison'`); n != 0 {
		t.Errorf("a failed task left its key")
	}
	if n := count(t, gw.db, `SELECT count(*) FROM issue_activity WHERE delivery_id = 'guid-fine'`); n != 1 {
		t.Errorf("the good delivery was not applied")
	}
}

// check-then-insert: held at the insert, every worker's copy passes the check,
// and each applies the effect.
func TestDefectCheckThenInsertDuplicatesUnderGate(t *testing.T) {
	gw := startGateway(t, DefectCheckThenInsert, 4, nil)
	gatedCopies(t, gw, "guid-gated", 16, 4)
	if n := count(t, gw.db, `SELECT count(*) FROM issue_activity WHERE delivery_id = 'guid-gated'`); n != 4 {
		t.Errorf("%d issue_activity rows, want 4 (one per worker that held a copy)", n)
	}
	if n := count(t, gw.db, `SELECT count(*) FROM processed WHERE delivery_id = 'guid-gated'`); n != 4 {
		t.Errorf("%d processed rows, want 4", n)
	}
}

// check-then-insert without a gate: a race, so it may take rounds to show;
// it is reported as soon as one round has a duplicate.
func TestDefectCheckThenInsertDuplicatesUnderLoad(t *testing.T) {
	gw := startGateway(t, DefectCheckThenInsert, 4, nil)
	const rounds, copies = 20, 16
	for r := range rounds {
		id := fmt.Sprintf("guid-%d", r)
		postCopies(t, gw.url, "issues", id, issuesBody(int64(r)), copies)
		waitQuiescent(t, gw.db)
		if n := count(t, gw.db, `SELECT count(*) FROM issue_activity WHERE delivery_id = $1`, id); n > 1 {
			t.Logf("round %d: %d copies of one delivery applied %d effects", r+1, copies, n)
			return
		}
	}
	t.Skipf("no duplicate in %d rounds of %d copies: the race did not show (the gated test makes it certain)", rounds, copies)
}

// memory-queue: deliveries acknowledged with 202 and then a crash: the
// buffered ones are gone. The same crash costs the real gateway nothing.
func TestDefectMemoryQueueLosesAcknowledgedOnCrash(t *testing.T) {
	for _, c := range []struct {
		defect  string
		wantAll bool
	}{{"", true}, {string(DefectMemoryQueue), false}} {
		name := c.defect
		if name == "" {
			name = "no defect"
		}
		t.Run(name, func(t *testing.T) {
			dbURL := newDatabase(t)
			p := startProcess(t, dbURL, "--workers", "2", "--defect", c.defect)
			const n = 20
			for i := range n {
				if got := post(t, p.base, "issues", fmt.Sprintf("guid-%d", i), issuesBody(int64(i))); got != http.StatusAccepted {
					t.Fatalf("delivery %d: status %d", i, got)
				}
			}
			p.kill(t)
			p2 := startProcess(t, dbURL, "--workers", "2")
			db := observer(t, dbURL)
			waitQuiescent(t, db)
			got := count(t, db, `SELECT count(DISTINCT delivery_id) FROM issue_activity`)
			if c.wantAll && got != n {
				t.Errorf("%d of %d acknowledged deliveries applied after a crash", got, n)
			}
			if !c.wantAll && got == n {
				t.Errorf("all %d acknowledged deliveries survived the crash: the defect did not show", n)
			}
			t.Logf("%d of %d acknowledged deliveries applied after the crash", got, n)
			if err := p2.term(t); err != nil {
				t.Errorf("SIGTERM: %v", err)
			}
		})
	}
}

// SIGTERM is a graceful stop: even the memory-queue buffer is written first.
func TestGracefulStop(t *testing.T) {
	dbURL := newDatabase(t)
	p := startProcess(t, dbURL, "--defect", string(DefectMemoryQueue))
	const n = 10
	for i := range n {
		if got := post(t, p.base, "issues", fmt.Sprintf("guid-%d", i), issuesBody(int64(i))); got != http.StatusAccepted {
			t.Fatalf("delivery %d: status %d", i, got)
		}
	}
	if err := p.term(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.logs.String())
	}
	db := observer(t, dbURL)
	if got := count(t, db, `SELECT count(*) FROM inbox`); got != n {
		t.Errorf("%d of %d buffered deliveries written at shutdown", got, n)
	}
}

// The command refuses to start without a secret, and never prints the
// secret or the database URL's password.
func TestCommandLine(t *testing.T) {
	var out, errb bytes.Buffer
	t.Setenv(envSecret, "")
	t.Setenv(envDatabaseURL, "postgres://u:hunter2@127.0.0.1:1/x")
	if code := run([]string{"serve"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), envSecret) {
		t.Errorf("no secret: exit %d, %q", code, errb.String())
	}
	for _, args := range [][]string{{"serve", "--help"}, {"serve", "--workers", "20"}, {"serve", "--defect", "nope"}, {}} {
		errb.Reset()
		t.Setenv(envSecret, "topsecret-value")
		code := run(args, &out, &errb)
		if s := errb.String(); strings.Contains(s, "hunter2") || strings.Contains(s, "topsecret-value") {
			t.Errorf("%v printed a secret: %q", args, s)
		}
		if code == 0 && !(len(args) > 1 && args[1] == "--help") {
			t.Errorf("%v: exit 0", args)
		}
	}
	// A database that does not answer: an error that does not quote the URL.
	errb.Reset()
	t.Setenv(envSecret, "topsecret-value")
	if code := run([]string{"serve", "--listen", "127.0.0.1:0"}, &out, &errb); code != 1 || strings.Contains(errb.String(), "hunter2") {
		t.Errorf("dead database: exit %d, %q", code, errb.String())
	}
}

// jsonOfSize is a JSON object of exactly n bytes.
func jsonOfSize(n int) []byte {
	b := bytes.Repeat([]byte{'x'}, n)
	copy(b, `{"pad":"`)
	copy(b[n-2:], `"}`)
	return b
}
