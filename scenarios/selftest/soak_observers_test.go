package selftest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/reports"
)

// TestSoakOnEveryObserverKind soaks one example receiver per observer kind
// that is not PostgreSQL — mysql (MariaDB), redis, command (SQLite through a
// program) — under the default schedule of faults, then re-judges each report
// directory with check --from: the soak reads the receiver's own store through
// the kind's queries, the history keeps those reads, and the verdict comes
// back alike from the history alone.
func TestSoakOnEveryObserverKind(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: three soaks of example receivers on MariaDB, Redis and SQLite")
	}
	bin := build(t)
	cases := []struct {
		kind  string
		ex    *example
		ready func() string
		args  func(t *testing.T) []string
	}{
		{"mysql", &mariadbExample, mariadbReady, func(t *testing.T) []string { return []string{"--database-url", mariadbServer(t)} }},
		{"redis", &redisExample, redisReady, func(*testing.T) []string { return nil }},
		// Every read is a python3 process: a slower rate keeps the final
		// reads to seconds.
		{"command", &sqliteExample, sqliteReady, func(*testing.T) []string { return []string{"--rate", "150"} }},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			if why := c.ready(); why != "" {
				t.Skipf("%s is not soaked here: %s", c.ex.dir, why)
			}
			dir := t.TempDir()
			args := append([]string{"soak", "--config", filepath.Join("..", "..", "examples", c.ex.dir, "target.yaml"),
				"--duration", "3s", "--concurrency", "4", "--seed", "7", "--report-dir", dir}, c.args(t)...)
			out, err := runFor(bin, c.ex.env, 4*time.Minute, args...)
			if c.kind == "redis" {
				// The run's keys, under its namespace, leave the shared server.
				if res, rerr := reports.ReadResults(filepath.Join(dir, reports.FileJSON)); rerr == nil {
					t.Cleanup(func() { redisForget(t, []*exampleRun{{res: res}}) })
				}
			}
			if err != nil {
				t.Fatalf("soak %s: %v\n%s", c.ex.dir, err, tail(out, 30))
			}
			soaked := soakVerdict(t, filepath.Join(dir, "results.json"))
			if !soaked.Passed || soaked.Acknowledged == 0 || soaked.Lost != 0 || soaked.Duplicated != 0 {
				t.Fatalf("soak %s: want a pass with acknowledged events, none lost or duplicated; got %+v\n%s", c.ex.dir, soaked, tail(out, 30))
			}
			if n := observations(t, filepath.Join(dir, "history.jsonl"), c.kind); n < soaked.Acknowledged {
				t.Errorf("history.jsonl of %s holds %d reads through the %s observer, want at least one per acknowledged event (%d)", c.ex.dir, n, c.kind, soaked.Acknowledged)
			}
			// Re-judged from the directory alone (the receiver is gone).
			out, err = runFor(bin, nil, time.Minute, "check", "--from", dir)
			if err != nil {
				t.Fatalf("check --from %s: %v\n%s", dir, err, tail(out, 30))
			}
			if again := soakVerdict(t, filepath.Join(dir, "results.json")); again != soaked {
				t.Errorf("check --from judged %+v, the soak %+v", again, soaked)
			}
			t.Logf("%s (%s): %d acknowledged, 0 lost, 0 duplicated; check --from agrees", c.ex.dir, c.kind, soaked.Acknowledged)
		})
	}
}

// soakFigures are the verdict figures of a soak's results.json.
type soakFigures struct {
	Passed                         bool
	Acknowledged, Lost, Duplicated int
}

func soakVerdict(t *testing.T, path string) soakFigures {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	var r struct {
		Soak *struct {
			Passed       bool `json:"passed"`
			Acknowledged int  `json:"acknowledged"`
			Lost         int  `json:"lost"`
			Duplicated   int  `json:"duplicated"`
		} `json:"soak"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Soak == nil {
		t.Fatalf("%s holds no soak verdict (%v)", path, err)
	}
	return soakFigures{r.Soak.Passed, r.Soak.Acknowledged, r.Soak.Lost, r.Soak.Duplicated}
}

// observations counts the reads in a history, after checking that its meta
// line names the observer kind.
func observations(t *testing.T, path, kind string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n, named := 0, false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, `{"kind":"observation"`):
			n++
		case strings.HasPrefix(line, `{"kind":"meta"`):
			named = strings.Contains(line, `"observer":"`+kind+`"`)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if !named {
		t.Errorf("%s: the meta line does not name the %s observer", path, kind)
	}
	return n
}

// runFor runs the hookcert binary with env added, bounded by timeout, and
// returns what it printed.
func runFor(bin string, env []string, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args...)
	c.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	return out.String(), err
}
