package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
)

// netnsHost is one shard's test host: a network namespace joined to this one
// by a veth pair, 10.231.X.2 inside and 10.231.X.1 on this side.
type netnsHost struct {
	name, hostIP string
}

// newNetnsHost creates shard i's namespace and veth pair, removed when t ends
// (whatever the test did).
func newNetnsHost(t *testing.T, i int) netnsHost {
	t.Helper()
	x := (os.Getpid()%60)*4 + i // apart from another run of this test at once
	h := netnsHost{name: fmt.Sprintf("hcshard%d-%d", os.Getpid(), i), hostIP: fmt.Sprintf("10.231.%d.1", x)}
	veth := fmt.Sprintf("hcs%dh%d", os.Getpid()%100000, i)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", h.name)
	t.Cleanup(func() {
		// Deleting the namespace deletes its end of the pair, and so the pair.
		if out, err := exec.Command("ip", "netns", "del", h.name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", h.name, err, out)
		}
		_ = exec.Command("ip", "link", "del", veth).Run()
	})
	run("link", "add", veth, "type", "veth", "peer", "name", veth+"n")
	run("link", "set", veth+"n", "netns", h.name)
	run("addr", "add", h.hostIP+"/30", "dev", veth)
	run("link", "set", veth, "up")
	run("netns", "exec", h.name, "ip", "addr", "add", fmt.Sprintf("10.231.%d.2/30", x), "dev", veth+"n")
	run("netns", "exec", h.name, "ip", "link", "set", veth+"n", "up")
	run("netns", "exec", h.name, "ip", "link", "set", "lo", "up")
	return h
}

// forward relays TCP connections to addr on this host's side of the veth pair
// to target: PostgreSQL listens on loopback alone, and a shard's harness reads
// the receiver's tables from its namespace.
func forward(t *testing.T, addr, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{}, 2)
				go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				go func() { io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}

// shardTarget is a target file for the reference receiver already serving at
// base, read through dbURL: no lifecycle, so every shard soaks the one receiver.
func shardTarget(t *testing.T, dir, name, base, dbURL string, teps []demoTargetEndpoint) string {
	t.Helper()
	doc := map[string]any{"target": map[string]any{
		"name": "reference (sharded)", "base_url": base, "endpoints": teps,
		"observe": map[string]any{"postgres": map[string]any{
			"url": dbURL, "event_table": "processed_webhook_events", "effect_table": "ledger_entries",
			"queries": map[string]string{
				"event_rows": "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
				"effects":    "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
			},
		}},
	}}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// exitOf runs cmd and returns its exit status and output.
func exitOf(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return 0, string(out)
}

// Two shards, each from a network namespace of its own, soak one reference
// receiver; their report directories merged by check --from give the verdict a
// one-process soak of the same seed, concurrency and rate gives: pass for the
// clean reference, duplicated events for check-then-insert.
func TestShardedSoakFromNetworkNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: soaks the reference receiver from two network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("creating network namespaces needs root")
	}
	if err := exec.Command("ip", "netns", "list").Run(); err != nil {
		t.Skipf("ip netns is unavailable: %v", err)
	}
	bin := hookcertBinary(t)
	hosts := []netnsHost{newNetnsHost(t, 0), newNetnsHost(t, 1)}
	pg, err := url.Parse(pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, defect string
		want         int
	}{{"clean", "", ExitOK}, {"check-then-insert", "check-then-insert", ExitFailed}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var defects []string
			if c.defect != "" {
				defects = []string{c.defect}
			}
			cfgPath, teps, _, err := writeDemoEndpoints(dir, defects)
			if err != nil {
				t.Fatal(err)
			}
			dbURL := pgtest.Database(t)
			port := freePort(t)
			args := []string{"reference", "serve", "--listen", fmt.Sprintf("0.0.0.0:%d", port), "--config", cfgPath}
			for _, d := range defects {
				args = append(args, "--defect", d)
			}
			ref := exec.Command(bin, args...)
			ref.Env = append(os.Environ(), "HOOKCERT_DATABASE_URL="+dbURL)
			log, _ := os.Create(filepath.Join(dir, "receiver.log"))
			ref.Stdout, ref.Stderr = log, log
			if err := ref.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ref.Process.Kill(); _ = ref.Wait() })
			waitAnswers(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", port), filepath.Join(dir, "receiver.log"))

			db, _ := url.Parse(dbURL)
			soakArgs := []string{"--seed", "17", "--duration", "4s", "--concurrency", "8", "--rate", "300", "--dup-rate", "0.3", "--no-color"}
			startAt := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
			type run struct {
				code int
				out  string
			}
			runs := make([]run, 3)
			var wg sync.WaitGroup
			for i, h := range hosts {
				hdb := *db
				hdb.Host = forward(t, h.hostIP+":0", pg.Host)
				target := shardTarget(t, dir, fmt.Sprintf("shard%d.yaml", i), fmt.Sprintf("http://%s:%d", h.hostIP, port), hdb.String(), teps)
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.Command("ip", append([]string{"netns", "exec", h.name, bin, "soak", "--config", target, "--shard", fmt.Sprintf("%d/2", i),
						"--start-at", startAt, "--report-dir", filepath.Join(dir, fmt.Sprint("shard", i))}, soakArgs...)...)
					runs[i].code, runs[i].out = exitOf(t, cmd)
				}()
			}
			// The one-process soak of the same traffic, from this host, at once.
			whole := shardTarget(t, dir, "whole.yaml", fmt.Sprintf("http://127.0.0.1:%d", port), dbURL, teps)
			wg.Add(1)
			go func() {
				defer wg.Done()
				runs[2].code, runs[2].out = exitOf(t, exec.Command(bin, append([]string{"soak", "--config", whole, "--report-dir", filepath.Join(dir, "whole")}, soakArgs...)...))
			}()
			wg.Wait()
			for i, r := range runs[:2] {
				if r.code != c.want && !(c.want == ExitFailed && r.code == ExitOK) {
					t.Errorf("shard %d/2: exit %d:\n%s", i, r.code, r.out)
				}
			}
			code, out := exitOf(t, exec.Command(bin, "check", "--from", filepath.Join(dir, "shard0"), filepath.Join(dir, "shard1"), "--out", filepath.Join(dir, "merged"), "--no-color"))
			if code != c.want || runs[2].code != c.want {
				t.Fatalf("merged shards exit %d, one process %d; want %d\nmerged:\n%s\none process:\n%s", code, runs[2].code, c.want, out, runs[2].out)
			}
			merged, err := reports.ReadResults(filepath.Join(dir, "merged", reports.FileJSON))
			if err != nil {
				t.Fatal(err)
			}
			one, err := reports.ReadResults(filepath.Join(dir, "whole", reports.FileJSON))
			if err != nil {
				t.Fatal(err)
			}
			m, w := merged.Soak, one.Soak
			keys := 0
			for i := range 2 {
				r, err := reports.ReadResults(filepath.Join(dir, fmt.Sprint("shard", i), reports.FileJSON))
				if err != nil {
					t.Fatal(err)
				}
				keys += r.Soak.Keys
			}
			t.Logf("merged: %d events, %d acknowledged, %d duplicated, %.1f acks/s; one process: %d events, %d duplicated, %.1f acks/s",
				m.Keys, m.Acknowledged, m.Duplicated, m.AcksPerS, w.Keys, w.Duplicated, w.AcksPerS)
			if m.Passed != w.Passed || m.Lost != 0 || w.Lost != 0 || (m.Duplicated > 0) != (w.Duplicated > 0) {
				t.Errorf("merged verdict passed=%v lost=%d duplicated=%d, one process passed=%v lost=%d duplicated=%d", m.Passed, m.Lost, m.Duplicated, w.Passed, w.Lost, w.Duplicated)
			}
			if !strings.Contains(out, "merged 2 shards of seed 17") {
				t.Errorf("check --from does not say it merged:\n%s", out)
			}
			if m.Keys != keys || m.Keys < 300 || m.Options.Shards != 2 || m.Options.Concurrency != 8 || m.Options.Rate != 300 {
				t.Errorf("merged %d events of the shards' %d, options %+v", m.Keys, keys, m.Options)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitAnswers(t *testing.T, u, logPath string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if r, err := http.Get(u); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(logPath)
	t.Fatalf("the reference did not answer %s:\n%s", u, b)
}
