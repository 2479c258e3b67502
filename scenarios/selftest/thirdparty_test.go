package selftest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
)

// startReceiver starts `hookcert reference serve` as a receiver the harness did
// not start and cannot control — as a third-party receiver runs — and returns
// its base URL, the target file describing it and the environment that carries
// its secrets.
func startReceiver(t *testing.T, bin string) (base, targetFile string, env []string) {
	base, targetFile, env, _ = startKillableReceiver(t, bin)
	return base, targetFile, env
}

// startKillableReceiver is startReceiver that also returns a function that
// SIGKILLs the receiver.
func startKillableReceiver(t *testing.T, bin string) (base, targetFile string, env []string, kill func()) {
	t.Helper()
	dbURL := pgtest.Database(t)
	dir := t.TempDir()
	eps := []struct{ profile, account, env string }{{"stripe", "acct_A", "HC_SECRET_A"}, {"stripe", "acct_B", "HC_SECRET_B"}, {"github", "acct_A", "HC_SECRET_GH"}}
	var cfg reference.Config
	type tep struct {
		Profile   string `yaml:"profile"`
		Account   string `yaml:"account"`
		Path      string `yaml:"path"`
		SecretEnv string `yaml:"secret_env"`
	}
	var teps []tep
	for i, e := range eps {
		secret := fmt.Sprintf("whsec_selftestThirdPartySecret%02dxxxxxxxxxxxx", i)
		if e.profile == "github" {
			secret = fmt.Sprintf("selftest-github-secret-%02d", i)
		}
		path := "/hooks/" + e.profile + "/" + e.account
		cfg.Endpoints = append(cfg.Endpoints, reference.Endpoint{Profile: e.profile, Account: e.account, Path: path, Secret: secret})
		teps = append(teps, tep{e.profile, e.account, path, e.env})
		env = append(env, e.env+"="+secret)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "endpoints.yaml")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "reference", "serve", "--listen", addr, "--config", cfgFile)
	cmd.Env = append(os.Environ(), "HOOKCERT_DATABASE_URL="+dbURL)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	base = "http://" + addr
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reference receiver did not become healthy:\n%s", logs.String())
		}
	}
	doc := map[string]any{"target": map[string]any{
		"name": "a receiver the harness did not start", "base_url": base, "endpoints": teps,
		"observe": map[string]any{"postgres": map[string]any{"url": dbURL, "queries": map[string]string{
			"event_rows": "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
			"effects":    "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
		}}},
	}}
	tb, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	targetFile = filepath.Join(dir, "target.yaml")
	if err := os.WriteFile(targetFile, tb, 0o600); err != nil {
		t.Fatal(err)
	}
	return base, targetFile, env, func() { _ = cmd.Process.Signal(syscall.SIGKILL) }
}

// A receiver with no lifecycle and no capabilities, certified by `hookcert
// certify`: what it can be judged on passes, the rest is not applicable with the
// capability it lacks named.
func TestCertifyAReceiverTheHarnessDidNotStart(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: starts a receiver and certifies it")
	}
	bin := build(t)
	_, targetFile, env := startReceiver(t, bin)
	dir := t.TempDir()
	c := exec.Command(bin, "certify", "--config", targetFile, "--report-dir", dir, "--seed", "31")
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("certify: %v\n%s", err, out)
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"DEDUP-1": "passed", "DEDUP-2": "passed", "DEDUP-3": "passed", "DEDUP-4": "passed",
		"DEDUP-5": "passed", "ACK-1": "not_applicable", "ACK-2": "passed", "ACK-3": "passed", "ACK-4": "passed", "ACK-5": "passed",
		"ACK-6": "passed", "ATOMIC-3": "not_applicable", "ORDER-1": "not_applicable", "RETENTION-1": "not_applicable"}
	for _, g := range res.Guarantees {
		if w, ok := want[g.ID]; ok && string(g.Status) != w {
			t.Errorf("%s is %s (%s), want %s", g.ID, g.Status, g.Reason, w)
		}
		if g.Status == reports.StatusNotApplicable && !strings.Contains(g.Reason, "capability") && !strings.Contains(g.Reason, "endpoints") {
			t.Errorf("%s not applicable without naming what is missing: %q", g.ID, g.Reason)
		}
	}
}

// The suite's Ginkgo entry point, as a Go team runs it: `go test` with
// HOOKCERT_CONFIG and Ginkgo's own label filter.
func TestGinkgoEntryPoint(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: starts a receiver and runs go test")
	}
	bin := build(t)
	_, targetFile, env := startReceiver(t, bin)
	report := t.TempDir()
	c := exec.Command("go", "test", "-count=1", "-v", "github.com/hookcert/hookcert/scenarios/certify", "-run", "TestSuite",
		"-args", "-ginkgo.label-filter=DEDUP-1 || ACK-3 || ACK-1", "-ginkgo.seed=5", "-ginkgo.no-color")
	c.Env = append(os.Environ(), append(env, "HOOKCERT_CONFIG="+targetFile, "HOOKCERT_REPORT_DIR="+report)...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	// ACK-1 needs the crash capability: skipped at run time, not run.
	n := len(scenarios.Specs())
	for _, want := range []string{fmt.Sprintf("Will run 3 of %d specs", n), fmt.Sprintf("Ran 2 of %d Specs", n), "2 Passed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, tail(string(out), 30))
		}
	}
	res, err := reports.ReadResults(filepath.Join(report, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Passed != 2 || res.Summary.NotApplicable != 1 {
		t.Errorf("results: %+v", res.Summary)
	}
}

// Configuration errors are exit 2, found before anything is provisioned: a query
// that does not prepare, and a broken file aimed at a database that does not
// answer (the file's error, not the database's, is reported).
func TestConfigurationErrorsExitTwo(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: starts a receiver")
	}
	bin := build(t)
	_, targetFile, env := startReceiver(t, bin)
	good, err := os.ReadFile(targetFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, c := range map[string]struct{ from, to, want string }{
		"query does not prepare":     {"FROM ledger_entries", "FROM no_such_table", "queries.effects"},
		"broken file, dead database": {"base_url:", "base_ur1:", "base_ur1"},
	} {
		bad := strings.Replace(string(good), c.from, c.to, 1)
		if name == "broken file, dead database" {
			bad = strings.Replace(bad, "127.0.0.1:5432", "127.0.0.1:1", -1)
		}
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		if err := os.WriteFile(f, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "certify", "--config", f, "--report-dir", t.TempDir())
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %v, want exit 2 naming %s:\n%s", name, err, c.want, out)
		}
	}
}

// A receiver without lifecycle that stops answering is named, and every scenario
// after it is an error saying so: the harness cannot restart it.
func TestReceiverWithoutLifecycleThatStops(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: starts a receiver")
	}
	bin := build(t)
	_, targetFile, env, kill := startKillableReceiver(t, bin)
	dir := t.TempDir()
	c := exec.Command(bin, "certify", "--config", targetFile, "--report-dir", dir, "--seed", "8", "--label-filter", "DEDUP || ACK")
	c.Env = append(os.Environ(), env...)
	out, err := watch(t, c, func(line string) {
		if strings.HasPrefix(line, "[2/") {
			kill()
		}
	})
	// Nothing failed: the receiver went away, so the run could not judge (5).
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 {
		t.Fatalf("certify: %v, want exit 5\n%s", err, out)
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	stopped := 0
	for _, g := range res.Guarantees {
		if g.Status == reports.StatusFailed {
			t.Errorf("%s failed (%s): a receiver that is gone is no failure of the promise", g.ID, g.Reason)
		}
		if g.Status == reports.StatusError && strings.Contains(g.Reason, "stopped answering") {
			stopped++
		}
	}
	if stopped < 5 {
		t.Fatalf("%d guarantees name the receiver that stopped answering\n%s", stopped, out)
	}
}

// A receiver that acknowledges everything and stores nothing: the run fails with
// the lost events as evidence, in bounded time (every poll shares its scenario's
// settle deadline).
func TestReceiverThatStoresNothing(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: certifies a receiver")
	}
	bin := build(t)
	dbURL := emptyStore(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	target := fmt.Sprintf(`target:
  name: stores nothing
  base_url: %s
  endpoints:
    - {profile: stripe, account: acct_A, path: /a, secret: whsec_nothingStoredxxxxxxxxxxxxxxxx}
    - {profile: stripe, account: acct_B, path: /b, secret: whsec_nothingStoredyyyyyyyyyyyyyyyy}
    - {profile: github, account: acct_A, path: /g, secret: nothing-stored-github}
%s`, srv.URL, observeSection(dbURL))
	f := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(f, []byte(target), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	start := time.Now()
	out, err := exec.CommandContext(ctx, bin, "certify", "--config", f, "--report-dir", dir, "--seed", "3").CombinedOutput()
	took := time.Since(start)
	t.Logf("certify against a receiver that stores nothing took %s", took.Round(100*time.Millisecond))
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("certify: %v, want exit 1\n%s", err, out)
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"DEDUP-1", "DEDUP-2", "ACK-2"} {
		for _, g := range res.Guarantees {
			if g.ID == id && (g.Status != reports.StatusFailed || !slices.Contains(g.Codes, "reconcile.lost")) {
				t.Errorf("%s: %s %v, want failed with reconcile.lost", id, g.Status, g.Codes)
			}
		}
	}
}
