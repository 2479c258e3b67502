package selftest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
)

// quickStartFile is the file docs/target.md's quick start shows; quickStartAddr
// is the address it names, `hookcert reference serve`'s default.
const (
	quickStartFile = "../../examples/quickstart/target.yaml"
	quickStartAddr = "127.0.0.1:8080"
)

// TestQuickStart does what the quick start of docs/target.md says: it starts
// `hookcert reference serve` on a database of its own, certifies it with the
// quick start's file (on a free port instead of 8080) and holds the verdicts to
// the list the section prints: exactly those pass, the rest are not
// applicable, and the run reads only what the guarantees declare.
func TestQuickStart(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: starts the reference receiver and certifies it")
	}
	want := quickStartClaim(t)
	bin := build(t)
	db := pgtest.Database(t)
	addr := serveReference(t, bin, db)

	data, err := os.ReadFile(quickStartFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte(quickStartAddr)); n != 1 {
		t.Fatalf("%s names %s %d times, want once (its base_url)", quickStartFile, quickStartAddr, n)
	}
	cfg := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(cfg, bytes.Replace(data, []byte(quickStartAddr), []byte(addr), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seed := time.Now().UnixNano() % 1_000_000
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "certify", "--config", cfg, "--report-dir", dir, "--seed", fmt.Sprint(seed))
	c.Env = append(os.Environ(), "STRIPE_WEBHOOK_SECRET=whsec_test_secret", "DATABASE_URL="+db)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("seed %d: certify: %v\n%s", seed, err, tail(string(out), 40))
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var passed []string
	for _, g := range res.Guarantees {
		switch g.Status {
		case reports.StatusPassed:
			passed = append(passed, g.ID)
		case reports.StatusNotApplicable:
		default:
			t.Errorf("seed %d: %s is %s: %s", seed, g.ID, g.Status, g.Reason)
		}
	}
	if !slices.Equal(passed, want) {
		t.Errorf("seed %d: the quick start passes %v; docs/target.md says %v", seed, passed, want)
	}
	seen := newReadsSeen()
	seen.add(t, "quick start", readHistory(t, dir))
}

// quickStartClaim is the list of guarantees docs/target.md says the quick
// start passes, in report order.
func quickStartClaim(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/target.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<!-- checked:quickstart-passed -->([^<]*)<!-- /checked -->`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/target.md has no <!-- checked:quickstart-passed --> list")
	}
	var ids []string
	for _, id := range strings.Split(string(m[1]), ",") {
		ids = append(ids, strings.TrimSpace(id))
	}
	return ids
}

// serveReference starts `hookcert reference serve` on db at a free port, as
// the quick start does, and returns its address once it listens; it is
// stopped with SIGTERM when t ends.
func serveReference(t *testing.T, bin, db string) string {
	t.Helper()
	c := exec.Command(bin, "reference", "serve", "--listen", "127.0.0.1:0")
	// The URL goes through the environment, as the quick start passes it:
	// never on a command line.
	c.Env = append(os.Environ(), "HOOKCERT_DATABASE_URL="+db)
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	})
	addr := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(io.TeeReader(stderr, &logs))
		re := regexp.MustCompile(`msg=listening addr=(\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_ = c.Wait()
	}()
	select {
	case a := <-addr:
		return a
	case <-done:
		t.Fatalf("hookcert reference serve exited before it listened:\n%s", logs.String())
	case <-time.After(60 * time.Second):
		_ = c.Process.Kill()
		<-done // the output is read to its end before it is shown
		t.Fatalf("hookcert reference serve did not listen within 60 s:\n%s", logs.String())
	}
	return ""
}
