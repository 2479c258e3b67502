package cmdobserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/observe"
)

const python = "/usr/bin/python3"

func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skipf("needs %s (Debian's python3) to run a query program: %v", python, err)
	}
}

// TestCommandArgumentsAndStdin: $n is substituted inside words, a value with
// spaces stays one argument, the program runs in Dir with Env, and it reads
// the query's JSON object on stdin.
func TestCommandArgumentsAndStdin(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe.py")
	if err := os.WriteFile(probe, []byte(`import json, os, sys
req = json.load(sys.stdin)
print(json.dumps(json.dumps({"argv": sys.argv[1:], "stdin": req, "cwd": os.getcwd(), "env": os.environ.get("OBSERVE_MODE")})))
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenCommand(context.Background(), CommandConfig{
		Dir: dir, Env: map[string]string{"OBSERVE_MODE": "read-only"},
		Queries: map[string]string{"payment": python + " probe.py payment evt-$3 $1/$4 $2 $$ $x"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Params("payment"); !reflect.DeepEqual(got, []int{3, 1, 4, 2}) {
		t.Errorf("Params = %v, want [3 1 4 2] (order of first use)", got)
	}
	if got, want := r.Describe("payment"), python+" probe.py payment evt-$3 $1/$4 $2 $$ $x"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	k := observe.Key{Source: "stripe", Account: "acct 1", EventID: "evt 1 ; rm -rf /", ObjectID: "pi_9"}
	rows, err := r.Read(context.Background(), "payment", k)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Argv  []string          `json:"argv"`
		Stdin map[string]string `json:"stdin"`
		Cwd   string            `json:"cwd"`
		Env   string            `json:"env"`
	}
	if err := json.Unmarshal([]byte(rows.Values[0][0].(string)), &got); err != nil {
		t.Fatal(err)
	}
	wantArgv := []string{"payment", "evt-evt 1 ; rm -rf /", "stripe/pi_9", "acct 1", "$$", "$x"}
	if !reflect.DeepEqual(got.Argv, wantArgv) {
		t.Errorf("argv = %q, want %q", got.Argv, wantArgv)
	}
	wantStdin := map[string]string{"query": "payment", "source": "stripe", "account": "acct 1", "event_id": "evt 1 ; rm -rf /", "object_id": "pi_9"}
	if !reflect.DeepEqual(got.Stdin, wantStdin) {
		t.Errorf("stdin = %v, want %v", got.Stdin, wantStdin)
	}
	if real, _ := filepath.EvalSymlinks(dir); got.Cwd != real && got.Cwd != dir {
		t.Errorf("cwd = %s, want %s", got.Cwd, dir)
	}
	if got.Env != "read-only" {
		t.Errorf("OBSERVE_MODE = %q, want the configured env", got.Env)
	}
}

func TestCommandOpenChecks(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "ok.sh", "echo 0")
	if err := os.WriteFile(filepath.Join(dir, "plain.sh"), []byte("echo 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	script(t, bin, "only-here", "echo 5")
	cases := []struct {
		name, line string
		env        map[string]string
		class      error
		want       string
	}{
		{"missing bare", "hookcert-no-such-program $3", nil, observe.ErrUnreachable, "program hookcert-no-such-program: not found in PATH"},
		{"missing relative", "./gone.sh $3", nil, observe.ErrUnreachable, "program ./gone.sh: no such file (looked for " + filepath.Join(dir, "gone.sh") + ")"},
		{"not executable", "./plain.sh $3", nil, observe.ErrUnreachable, "program ./plain.sh: " + filepath.Join(dir, "plain.sh") + " is not executable"},
		{"not in env PATH", "ok.sh $3", map[string]string{"PATH": bin}, observe.ErrUnreachable, "not found in the PATH target.observe.command.env sets"},
		{"parameter past $4", "./ok.sh $5", nil, observe.ErrInvalidQuery, "$5: hookcert's parameters are $1 (source), $2 (account), $3 (event ID) and $4 (object ID)"},
		{"parameter $12", "./ok.sh $12", nil, observe.ErrInvalidQuery, "$12: hookcert's parameters"},
		{"parameter in program", "./ok$3.sh", nil, observe.ErrInvalidQuery, "the first word names the program"},
		{"empty", "   ", nil, observe.ErrInvalidQuery, "empty: a query is a command line"},
	}
	for _, c := range cases {
		_, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, Env: c.env, Queries: map[string]string{"effects": c.line}})
		if !errors.Is(err, c.class) || !strings.Contains(err.Error(), "target.observe.command.queries.effects: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: OpenCommand error %v, want %v naming the field and saying %q", c.name, err, c.class, c.want)
		}
	}

	// Every bad query is reported at once, each by its own field.
	_, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, Queries: map[string]string{
		"effects": "./ok.sh", "event_rows": "./gone.sh $3", "object": "./ok.sh $9",
	}, FieldPath: func(n string) string { return "target.events.x." + n }})
	for _, want := range []string{"target.events.x.event_rows", "target.events.x.object"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenCommand error %v, want it to name %s", err, want)
		}
	}

	// A bare program is found in the PATH env sets.
	r, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, Env: map[string]string{"PATH": bin + ":/usr/bin:/bin"}, Queries: map[string]string{"effects": "only-here"}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := r.Read(context.Background(), "effects", observe.Key{})
	if err != nil || rows.Values[0][0] != int64(5) {
		t.Fatalf("Read = %v, %v; want 5 from the program on env's PATH", rows, err)
	}
	if _, err := r.Read(context.Background(), "event_rows", observe.Key{}); !errors.Is(err, observe.ErrNotConfigured) {
		t.Errorf("Read of an unconfigured query: %v, want ErrNotConfigured", err)
	}
	if r.Has("event_rows") || !r.Has("effects") {
		t.Errorf("Has(event_rows) = %v, Has(effects) = %v; want false, true", r.Has("event_rows"), r.Has("effects"))
	}
}

// TestCommandExitStatus: a failing program is the store's state, reported
// with the end of its stderr, scrubbed.
func TestCommandExitStatus(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "fail.sh", `i=1
while [ $i -le 30 ]; do echo "trace line $i" >&2; i=$((i+1)); done
echo "cannot open shop.db: password=hunter22 with key whsec_abcdefghijklmnop and token sekrit-value" >&2
exit 3`)
	script(t, dir, "killed.sh", `kill -9 $$`)
	r, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, Secrets: []string{"sekrit-value"},
		Queries: map[string]string{"effects": "./fail.sh $3", "event_rows": "./killed.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Read(context.Background(), "effects", observe.Key{EventID: "evt_7"})
	if !errors.Is(err, observe.ErrUnreachable) {
		t.Fatalf("error %v, want ErrUnreachable", err)
	}
	msg := err.Error()
	for _, want := range []string{"target.observe.command.queries.effects: ./fail.sh evt_7 exited with status 3", "trace line 30", "cannot open shop.db", "[REDACTED]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	for _, leak := range []string{"hunter22", "abcdefghijklmnop", "sekrit-value", "trace line 1\n", "trace line 20"} {
		if strings.Contains(msg+"\n", leak) {
			t.Errorf("error %q holds %q (a secret, or stderr beyond its last lines)", msg, leak)
		}
	}
	_, err = r.Read(context.Background(), "event_rows", observe.Key{EventID: "evt_7"})
	if !errors.Is(err, observe.ErrUnreachable) || !strings.Contains(err.Error(), "was killed by signal killed") {
		t.Errorf("error %v, want ErrUnreachable saying it was killed by a signal", err)
	}
}

// TestCommandTimeoutKillsGroup: a program past the timeout is killed with
// everything it started.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script(t, dir, "hang.sh", `sleep 60 &
echo $! > `+pidFile+`
echo "waiting on the store" >&2
wait`)
	r, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, Timeout: 300 * time.Millisecond, Queries: map[string]string{"effects": "./hang.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = r.Read(context.Background(), "effects", observe.Key{})
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("Read took %s with a 300ms timeout", elapsed)
	}
	if !errors.Is(err, observe.ErrTimeout) || !strings.Contains(err.Error(), "target.observe.command.queries.effects: ./hang.sh gave no answer within 300ms (target.observe.command.timeout); its process group was killed") ||
		!strings.Contains(err.Error(), "waiting on the store") {
		t.Fatalf("error %v, want ErrTimeout naming the field and the timeout, with stderr", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("child pid %q", b)
	}
	waitGone(t, pid)
}

// waitGone waits for pid to be dead (gone or a zombie awaiting its reaper).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("pid %d, started by the query program, still runs after the timeout", pid)
}

func TestCommandCallerCancel(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "hang.sh", "exec sleep 60")
	r, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, Queries: map[string]string{"effects": "./hang.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = r.Read(ctx, "effects", observe.Key{})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, observe.ErrTimeout) {
		t.Errorf("error %v: the caller's deadline is not the observer's timeout", err)
	}
}

func TestCommandOutputBound(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "big.sh", `i=0; while [ $i -lt 200 ]; do printf '%050d\n' 0; i=$((i+1)); done`)
	script(t, dir, "endless.sh", "exec yes 1")
	r, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, MaxOutput: 1024, Timeout: 20 * time.Second,
		Queries: map[string]string{"effects": "./big.sh", "event_rows": "./endless.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"effects", "event_rows"} {
		start := time.Now()
		_, err := r.Read(context.Background(), q, observe.Key{})
		if !errors.Is(err, observe.ErrInvalidQuery) || !strings.Contains(err.Error(), "printed more than 1024 bytes (target.observe.command.max_output_bytes)") {
			t.Errorf("%s: error %v, want ErrInvalidQuery for output past the bound", q, err)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("%s: took %s: a program printing without end must be killed at the bound, not at the timeout", q, elapsed)
		}
	}
}

func TestCommandCapabilities(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "obs.sh", `case "$1" in
capabilities) echo '{"queries": ["event_rows", "effects", "quiescent"]}';;
*) echo 1;;
esac`)
	script(t, dir, "badcaps.sh", `echo '["event_rows"]'`)
	script(t, dir, "failcaps.sh", `echo "no database file" >&2; exit 1`)
	queries := map[string]string{"event_rows": "./obs.sh event_rows $3", "effects": "./obs.sh effects $3", "key_ttl": "./obs.sh key_ttl $1 $3"}
	r, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, Capabilities: "./obs.sh capabilities", Queries: queries})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Has("event_rows") || !r.Has("effects") || r.Has("key_ttl") || r.Has("quiescent") {
		t.Errorf("Has: event_rows %v effects %v key_ttl %v quiescent %v; want true true false false",
			r.Has("event_rows"), r.Has("effects"), r.Has("key_ttl"), r.Has("quiescent"))
	}
	want := map[string]string{"key_ttl": "the command observer's capabilities (./obs.sh capabilities) do not list key_ttl"}
	if got := r.Unsupported(); !reflect.DeepEqual(got, want) {
		t.Errorf("Unsupported = %v, want %v", got, want)
	}
	if _, err := r.Read(context.Background(), "key_ttl", observe.Key{}); !errors.Is(err, observe.ErrNotConfigured) || !strings.Contains(err.Error(), "do not list key_ttl") {
		t.Errorf("Read(key_ttl): %v, want ErrNotConfigured with the reason", err)
	}
	if rows, err := r.Read(context.Background(), "effects", observe.Key{}); err != nil || rows.Values[0][0] != int64(1) {
		t.Errorf("Read(effects) = %v, %v", rows, err)
	}

	_, err = OpenCommand(context.Background(), CommandConfig{Dir: dir, Capabilities: "./badcaps.sh", Queries: queries})
	if !errors.Is(err, observe.ErrInvalidQuery) || !strings.Contains(err.Error(), `target.observe.command.capabilities: answered an array ["event_rows"] (the capabilities command answers {"queries": [query names]})`) {
		t.Errorf("bad capabilities: %v", err)
	}
	_, err = OpenCommand(context.Background(), CommandConfig{Dir: dir, Capabilities: "./failcaps.sh", Queries: queries})
	if !errors.Is(err, observe.ErrUnreachable) || !strings.Contains(err.Error(), "target.observe.command.capabilities: ./failcaps.sh exited with status 1") || !strings.Contains(err.Error(), "no database file") {
		t.Errorf("failing capabilities: %v", err)
	}
	_, err = OpenCommand(context.Background(), CommandConfig{Dir: dir, Capabilities: "./nocaps.sh", Queries: queries})
	if !errors.Is(err, observe.ErrUnreachable) || !strings.Contains(err.Error(), "target.observe.command.capabilities: program ./nocaps.sh: no such file") {
		t.Errorf("missing capabilities program: %v", err)
	}
}

// TestCommandConcurrent: the observer is read from several goroutines at once.
func TestCommandConcurrent(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "echo.sh", `echo "$1"`)
	r, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, Queries: map[string]string{"effects": "./echo.sh $3"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows, err := r.Read(context.Background(), "effects", observe.Key{EventID: strconv.Itoa(i)})
			if err != nil || rows.Values[0][0] != int64(i) {
				t.Errorf("Read %d = %v, %v", i, rows, err)
			}
		}()
	}
	wg.Wait()
}
