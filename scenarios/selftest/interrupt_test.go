package selftest

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
)

// An interrupted run is never a pass: SIGINT in the middle of a demo stops it,
// the reports say interrupted, every guarantee not judged is an error naming the
// interruption, and the exit status is not 0.
func TestInterruptedRunIsNeverAPass(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: runs the demo")
	}
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "demo", "--database-url", pgtest.ServerURL(), "--report-dir", dir, "--seed", "9")
	signalled := false
	out, err := watch(t, c, func(line string) {
		if !signalled && strings.HasPrefix(line, "[5/") {
			signalled = true
			if err := c.Process.Signal(syscall.SIGINT); err != nil {
				t.Error(err)
			}
		}
	})
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() == 0 {
		t.Fatalf("interrupted demo: %v, want a non-zero exit\n%s", err, out)
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatalf("no results after the interruption: %v\n%s", err, out)
	}
	if !res.Interrupted || res.Summary.Error == 0 || res.Summary.Total != len(scenarios.Catalogue()) {
		t.Fatalf("results: interrupted=%v summary %+v", res.Interrupted, res.Summary)
	}
	for _, g := range res.Guarantees {
		if g.Status == reports.StatusError && !strings.Contains(g.Reason, "interrupted") {
			t.Errorf("%s is an error for another reason: %s", g.ID, g.Reason)
		}
	}
	if strings.Contains(out, "PASSED") {
		t.Errorf("an interrupted run printed PASSED:\n%s", out)
	}
}

// A receiver that dies in the middle of a run is named: the scenario in progress
// is an error saying it exited, the harness restarts it (lifecycle) and the next
// scenario says its verdict follows a restart; the run does not pass.
func TestReceiverThatDiesIsNamed(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: runs the demo")
	}
	receiverGoesAway(t, "KILL", "the receiver exited during the scenario", "signal")
}

// A receiver that hangs (SIGSTOP: running, answering nothing) is named as such,
// killed and restarted for the next scenario.
func TestReceiverThatHangsIsNamed(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: runs the demo")
	}
	receiverGoesAway(t, "STOP", "the receiver stopped answering during the scenario", "readiness check")
}

func receiverGoesAway(t *testing.T, signal, reason, detail string) {
	bin := build(t)
	dir := t.TempDir()
	// Room for a loaded runner: a demo cut short by this bound has no verdict
	// to judge.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The signal goes once DEDUP-1 (the second scenario, seeded order; slow
	// under slow-ack) has committed its first delivery, so that it lands
	// inside DEDUP-1: a timer could land in ACK-2, which slow-ack fails
	// anyway, or, on a loaded machine, between the two scenarios, where the
	// harness's readiness check before DEDUP-1 would find the receiver hung
	// and restart it before the scenario began.
	c := exec.CommandContext(ctx, bin, "demo", "--database-url", pgtest.ServerURL(), "--report-dir", dir, "--seed", "9",
		"--defect", "slow-ack", "--label-filter", "ACK-2 || DEDUP-1 || ACK-6")
	killed := false
	dbURL := ""
	awaitErr := make(chan error, 1)
	out, _ := watch(t, c, func(line string) {
		if u, ok := strings.CutPrefix(line, "database: "); ok && dbURL == "" {
			dbURL, _, _ = strings.Cut(u, " ")
		}
		if !killed && strings.HasPrefix(line, "[1/") {
			killed = true
			go func() {
				// Signal the receiver (the demo's child) once DEDUP-1 is under way.
				if err := awaitEvent(ctx, dbURL, "%dedup1%"); err != nil {
					awaitErr <- err // reported with a failure (t.Logf may outlive the test)
				}
				pids, _ := exec.Command("pgrep", "-P", fmt.Sprint(c.Process.Pid)).Output()
				for _, p := range strings.Fields(string(pids)) {
					_ = exec.Command("kill", "-"+signal, p).Run()
				}
			}()
		}
	})
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatalf("no results: %v\n%s", err, out)
	}
	var exited, restarted bool
	for _, g := range res.Guarantees {
		if g.Status == reports.StatusError && strings.Contains(g.Reason, reason) && strings.Contains(g.Reason, detail) {
			exited = true
		}
		for _, s := range g.Scenarios {
			for _, n := range s.Notes {
				restarted = restarted || strings.Contains(n, "restarted before this scenario")
			}
		}
	}
	if !exited || !restarted || res.Summary.Verdict() == "PASSED" {
		select {
		case err := <-awaitErr:
			out = fmt.Sprintf("(signalled without waiting for DEDUP-1's first delivery: %v)\n%s", err, out)
		default:
		}
		t.Fatalf("exited named %v, restart noted %v, verdict %s\n%s", exited, restarted, res.Summary.Verdict(), out)
	}
}

// watch starts c with its output piped, hands every line to onLine as it comes,
// and returns the whole output and c's exit error.
func watch(t *testing.T, c *exec.Cmd, onLine func(line string)) (string, error) {
	t.Helper()
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = c.Stdout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		onLine(sc.Text())
	}
	return out.String(), c.Wait()
}

// awaitEvent polls the run's database (dbURL) until the reference has
// committed an event whose ID is like pattern, or a minute passes.
func awaitEvent(ctx context.Context, dbURL, pattern string) error {
	if dbURL == "" {
		return fmt.Errorf("the demo printed no database URL")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for {
		var n int
		// The table exists once the receiver has migrated; until then, wait.
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events WHERE event_id LIKE $1`, pattern).Scan(&n); err == nil && n > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
