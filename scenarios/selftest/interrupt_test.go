package selftest

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
)

// An interrupted run is never a pass: SIGINT in the middle of a demo stops it,
// the reports say interrupted, every guarantee not judged is an error naming the
// interruption, and the exit status is not 0.
func TestInterruptedRunIsNeverAPass(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the demo")
	}
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "demo", "--database-url", pgtest.ServerURL(), "--report-dir", dir, "--seed", "9")
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = c.Stdout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "[5/23]") {
			if err := c.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	err = c.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() == 0 {
		t.Fatalf("interrupted demo: %v, want a non-zero exit\n%s", err, out.String())
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatalf("no results after the interruption: %v\n%s", err, out.String())
	}
	if !res.Interrupted || res.Summary.Error == 0 || res.Summary.Total != 23 {
		t.Fatalf("results: interrupted=%v summary %+v", res.Interrupted, res.Summary)
	}
	for _, g := range res.Guarantees {
		if g.Status == reports.StatusError && !strings.Contains(g.Reason, "interrupted") {
			t.Errorf("%s is an error for another reason: %s", g.ID, g.Reason)
		}
	}
	if strings.Contains(out.String(), "PASSED") {
		t.Errorf("an interrupted run printed PASSED:\n%s", out.String())
	}
}
