package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
	"go.yaml.in/yaml/v3"
)

// buildHookcert builds the real binary: the demo starts the reference receiver
// as a child process of os.Executable(), which must be hookcert, not a test.
func buildHookcert(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hookcert")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/hookcert/hookcert/cmd/hookcert").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// plantedRole creates a superuser role with a password on the test server and
// returns a URL for it over TCP. The server trusts local connections, so the
// password is never checked, but it is in the URL for anything to leak.
func plantedRole(t *testing.T) (dbURL, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server := pgtest.ServerURL()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("test server: %v", err)
	}
	defer conn.Close(ctx)
	suffix := randomHex(t)
	role, password := "hc_planted_"+suffix, "planted-pw-"+suffix
	if _, err := conn.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN SUPERUSER PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("dropping role %s: %v", role, err)
			return
		}
		defer conn.Close(ctx)
		id := pgx.Identifier{role}.Sanitize()
		for _, q := range []string{"REASSIGN OWNED BY " + id + " TO CURRENT_USER", "DROP OWNED BY " + id, "DROP ROLE " + id} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	u.User = url.UserPassword(role, password)
	u.Host = "127.0.0.1:" + port
	return u.String(), password
}

// demoEnv is the environment of a demo under test: its own TMPDIR, so the test
// sees (and owns) the demo's directories, and the database URL in the variable.
func demoEnv(tmp, dbURL string) []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "HOOKCERT_DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	return append(env, "TMPDIR="+tmp, "HOOKCERT_DATABASE_URL="+dbURL)
}

// The demo started with a database URL carrying a password, and fresh endpoint
// secrets: no process's command line (ps), no report file, no line on stdout or
// stderr carries the password or a secret.
func TestDemoLeaksNoSecret(t *testing.T) {
	besideOthers(t)
	if testing.Short() {
		t.Skip("-short: runs the demo")
	}
	bin := buildHookcert(t)
	dbURL, password := plantedRole(t)
	tmp, reportDir := t.TempDir(), filepath.Join(t.TempDir(), "report")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "demo", "--report-dir", reportDir, "--seed", "11")
	c.Env = demoEnv(tmp, dbURL)
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()

	// Every distinct command line seen while the demo runs, and the endpoint
	// secrets, read from the demo's endpoints file once it exists.
	psSeen := map[string]bool{}
	var secrets []string
	var runErr error
poll:
	for {
		select {
		case runErr = <-exited:
			break poll
		default:
		}
		out, err := exec.Command("ps", "-eo", "args").Output()
		if err != nil {
			t.Fatalf("ps: %v", err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			psSeen[l] = true
		}
		if secrets == nil {
			secrets = readDemoSecrets(t, tmp)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("demo: %v; %d distinct command lines seen", runErr, len(psSeen))
	if runErr != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", runErr, stdout.String(), stderr.String())
	}
	if len(secrets) == 0 {
		t.Fatal("never saw the demo's endpoints file: the secrets could not be checked")
	}
	sawReceiver := false
	for l := range psSeen {
		if strings.Contains(l, "reference serve") && strings.Contains(l, tmp) {
			sawReceiver = true
		}
	}
	if !sawReceiver {
		t.Fatal("ps never showed the receiver: the command line check saw nothing")
	}
	// The planted URL was the one used: its role is named in the output.
	if role := strings.SplitN(strings.TrimPrefix(dbURL, "postgres://"), ":", 2)[0]; !strings.Contains(stdout.String(), role) {
		t.Fatalf("stdout never names role %s: was the planted URL used?\n%s", role, stdout.String())
	}

	forbidden := []string{password, url.QueryEscape(password)}
	for _, s := range secrets {
		forbidden = append(forbidden, s)
		if rest, ok := strings.CutPrefix(s, "whsec_"); ok {
			forbidden = append(forbidden, rest)
		}
	}
	check := func(where, text string) {
		for _, f := range forbidden {
			if strings.Contains(text, f) {
				t.Errorf("%s carries a secret (%.12s…)", where, f)
			}
		}
	}
	for l := range psSeen {
		check("ps line "+strconv.Quote(scrubForLog(l, forbidden)), l)
	}
	check("stdout", stdout.String())
	check("stderr", stderr.String())
	files := 0
	err := filepath.WalkDir(reportDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		check(p, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(reportDir, "receiver.log"))
	if err != nil {
		t.Fatalf("no receiver.log: %v", err)
	}
	if !strings.Contains(string(log), "database from $HOOKCERT_DATABASE_URL") {
		t.Errorf("the receiver did not take its database from the environment:\n%.2000s", log)
	}
	if files < 5 {
		t.Errorf("only %d report files", files)
	}
	// Normal exit removes the directory holding the endpoints file.
	if left, _ := filepath.Glob(filepath.Join(tmp, "hookcert-demo-*")); len(left) != 0 {
		t.Errorf("demo directories left after a normal exit: %v", left)
	}
}

// readDemoSecrets returns the secrets of the demo's endpoints file in tmp (nil
// until it is written), checking it is readable by its owner only.
func readDemoSecrets(t *testing.T, tmp string) []string {
	paths, _ := filepath.Glob(filepath.Join(tmp, "hookcert-demo-*", "endpoints.yaml"))
	if len(paths) == 0 {
		return nil
	}
	st, err := os.Stat(paths[0])
	if err != nil {
		return nil
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("endpoints file mode %v, want 0600", st.Mode().Perm())
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		return nil
	}
	var cfg reference.Config
	if err := yaml.Unmarshal(b, &cfg); err != nil || len(cfg.Endpoints) == 0 {
		return nil // still being written
	}
	var out []string
	for _, e := range cfg.Endpoints {
		out = append(out, e.Secret)
	}
	return out
}

// scrubForLog keeps a failing test's message itself free of the secret.
func scrubForLog(s string, forbidden []string) string {
	for _, f := range forbidden {
		s = strings.ReplaceAll(s, f, "<SECRET>")
	}
	return s
}

var staleMsg = regexp.MustCompile(`(?m)^removed 1 stale demo directory left by a killed run$`)

// SIGKILL of a running demo: its receiver is gone within seconds, and the next
// demo removes the directory (with the endpoints file) the killed one left.
func TestKilledDemoLeavesNoReceiver(t *testing.T) {
	besideOthers(t)
	if testing.Short() {
		t.Skip("-short: runs the demo")
	}
	bin := buildHookcert(t)
	tmp := t.TempDir()
	env := demoEnv(tmp, pgtest.ServerURL())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	c := exec.CommandContext(ctx, bin, "demo", "--report-dir", filepath.Join(t.TempDir(), "r1"), "--seed", "12")
	c.Env = env
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = c.Stdout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killReceivers(tmp) }) // should the test fail with one left
	sc := bufio.NewScanner(out)
	var seen strings.Builder
	killed := false
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "[3/") {
			if len(receivers(tmp)) == 0 {
				continue // between a crash scenario's kill and restart; try the next line
			}
			if err := c.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
			break
		}
	}
	if !killed {
		_ = c.Wait()
		t.Fatalf("the demo ended before it could be killed with its receiver running:\n%s", seen.String())
	}
	_ = c.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := receivers(tmp)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver(s) %v still running 5s after the demo was SIGKILLed", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stale, _ := filepath.Glob(filepath.Join(tmp, "hookcert-demo-*"))
	if len(stale) != 1 {
		t.Fatalf("killed demo left %v, want its one directory (with the pid file)", stale)
	}
	if _, err := os.Stat(filepath.Join(stale[0], "endpoints.yaml")); err != nil {
		t.Fatalf("the stale directory lacks the endpoints file: %v", err)
	}

	// A live demo's directory must survive the next demo's sweep: a second,
	// decoy directory owned by this (running) test process.
	live := filepath.Join(tmp, "hookcert-demo-live")
	if err := os.Mkdir(live, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(live, "owner.pid"), []byte(strconv.Itoa(os.Getpid())+" "+procStartTime(os.Getpid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	c2 := exec.CommandContext(ctx, bin, "demo", "--report-dir", filepath.Join(t.TempDir(), "r2"), "--seed", "12")
	c2.Env = env
	b, err := c2.CombinedOutput()
	if err != nil {
		t.Fatalf("second demo: %v\n%s", err, b)
	}
	if !staleMsg.Match(b) {
		t.Errorf("second demo did not say it removed the stale directory:\n%s", b)
	}
	if _, err := os.Stat(stale[0]); !os.IsNotExist(err) {
		t.Errorf("stale directory %s still there (%v)", stale[0], err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the sweep removed a directory whose owner is alive: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "hookcert-demo-*")); len(left) != 1 {
		t.Errorf("after the second demo: %v, want only the live decoy", left)
	}

	// SIGTERM mid-run: the demo removes its own directory on the way out.
	c3 := exec.CommandContext(ctx, bin, "demo", "--report-dir", filepath.Join(t.TempDir(), "r3"), "--seed", "12")
	c3.Env = env
	out3, err := c3.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c3.Stderr = c3.Stdout
	if err := c3.Start(); err != nil {
		t.Fatal(err)
	}
	sc = bufio.NewScanner(out3)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "[2/") {
			if dirs, _ := filepath.Glob(filepath.Join(tmp, "hookcert-demo-*")); len(dirs) != 2 {
				t.Errorf("running demo: %v, want its own directory and the decoy", dirs)
			}
			if err := c3.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for sc.Scan() {
	}
	if err := c3.Wait(); err == nil {
		t.Error("a demo ended by SIGTERM mid-run exited 0")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "hookcert-demo-*")); len(left) != 1 || len(receivers(tmp)) != 0 {
		t.Errorf("after SIGTERM: directories %v (want only the decoy), receivers %v", left, receivers(tmp))
	}
}

// receivers are the pids of running processes whose command line names dir (the
// demo's --config lives there); zombies waiting for a reaper do not count.
func receivers(dir string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), dir) || !strings.Contains(string(b), "reference") {
			continue
		}
		if running(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// running reports whether any thread of pid has not exited.
func running(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, tk := range tasks {
		b, err := os.ReadFile(dir + "/" + tk.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X' {
			return true
		}
	}
	return false
}

func killReceivers(dir string) {
	for _, pid := range receivers(dir) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}

// Serve takes its database from $HOOKCERT_DATABASE_URL without any flag, and a
// password typed on --database-url still works but is warned about, never logged.
func TestReferenceServeDatabaseURLSources(t *testing.T) {
	db := pgtest.Database(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	const pw = "typed-pw-on-argv"
	u.User = url.UserPassword(u.User.Username(), pw) // trust auth: not checked
	withPW := u.String()

	addr := freeAddr(t)
	t.Setenv("HOOKCERT_DATABASE_URL", withPW) // inherited by the helper process
	cmd, out := startServe(t, "reference", "serve", "--listen", addr)
	waitHealthy(t, "http://"+addr, out)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if !strings.Contains(out.String(), "database from $HOOKCERT_DATABASE_URL") || strings.Contains(out.String(), "carries a password") {
		t.Errorf("from the environment:\n%s", out)
	}

	t.Setenv("HOOKCERT_DATABASE_URL", "")
	addr = freeAddr(t)
	cmd, out = startServe(t, "reference", "serve", "--listen", addr, "--database-url", withPW)
	waitHealthy(t, "http://"+addr, out)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if !strings.Contains(out.String(), "--database-url carries a password") {
		t.Errorf("no warning for a password on the command line:\n%s", out)
	}
	if strings.Contains(out.String(), pw) {
		t.Errorf("the password was logged:\n%s", out)
	}
}

// parseDemoTarget builds the demo target in mode and parses it as certify does.
func parseDemoTarget(t *testing.T, mode string, caps []string) *targetfile.Target {
	t.Helper()
	data, _, err := demoTarget("/bin/hookcert", t.TempDir(), mode, demoShape{}, nil, caps)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := targetfile.Parse(data, targetfile.Vars{DatabaseURL: "postgres://127.0.0.1/x", ListenAddr: "127.0.0.1:9", SinkURL: "http://127.0.0.1:10"})
	if err != nil {
		t.Fatalf("the demo target does not parse: %v\n%s", err, data)
	}
	return tg
}

// In inbox mode the demo target starts the reference with inbox workers and a
// lease that fits the declared settle, declares asynchronous acceptance with a
// quiescence query over the inbox states, and offers no failpoints: the
// reference has none in its workers' apply transaction.
func TestDemoTargetInboxMode(t *testing.T) {
	tg := parseDemoTarget(t, "inbox", demoCapabilities)
	cmd := strings.Join(tg.Lifecycle.Command, " ")
	for _, want := range []string{"--mode inbox", "--workers 4", "--lease 1s", "--max-attempts 5", "--sink-url http://127.0.0.1:10"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command %q lacks %q", cmd, want)
		}
	}
	if !tg.Acceptance.Async || tg.Acceptance.Settle != 3*time.Second {
		t.Errorf("acceptance %+v, want async with settle 3s", tg.Acceptance)
	}
	if q := tg.Store.Queries.Quiescent; !strings.Contains(q, "inbox_state = 'claimed' OR (inbox_state = 'pending' AND next_attempt_at <= now())") {
		t.Errorf("quiescent query %q", q)
	}
	// The inbox design declares its workers and its outbox.
	if !slices.Contains(tg.Capabilities, targetfile.Inbox) || !slices.Contains(tg.Capabilities, targetfile.Outbox) ||
		tg.Inbox == nil || tg.Inbox.Lease != time.Second || tg.Inbox.MaxAttempts != 5 || tg.Outbox == nil || tg.Outbox.MaxAttempts != 5 ||
		tg.Store.Queries.InboxState == "" || tg.Store.Queries.OutboxState == "" {
		t.Errorf("inbox target: capabilities %v, inbox %+v, outbox %+v", tg.Capabilities, tg.Inbox, tg.Outbox)
	}
	if slices.Contains(tg.Capabilities, targetfile.Failpoints) || tg.FailpointsPath != "" {
		t.Errorf("inbox target declares failpoints: %v, path %q", tg.Capabilities, tg.FailpointsPath)
	}
	if !slices.Contains(tg.Capabilities, targetfile.Crash) || !slices.Contains(tg.Capabilities, targetfile.LockGating) {
		t.Errorf("inbox target lost crash or lock-gating: %v", tg.Capabilities)
	}
	if demoInboxLease+demoInboxLease/2 >= tg.Acceptance.Settle {
		t.Errorf("lease %s plus its reconcile interval does not fit the settle %s", demoInboxLease, tg.Acceptance.Settle)
	}
}

// The default stays the synchronous design, failpoints included.
func TestDemoTargetSyncMode(t *testing.T) {
	tg := parseDemoTarget(t, "sync", demoCapabilities)
	if cmd := strings.Join(tg.Lifecycle.Command, " "); strings.Contains(cmd, "--mode") || strings.Contains(cmd, "--workers") {
		t.Errorf("sync command %q names inbox flags", cmd)
	}
	if tg.Acceptance.Async || tg.Store.Queries.Quiescent != "" {
		t.Errorf("sync acceptance %+v, quiescent %q", tg.Acceptance, tg.Store.Queries.Quiescent)
	}
	if !slices.Contains(tg.Capabilities, targetfile.Failpoints) || tg.FailpointsPath == "" {
		t.Errorf("sync target lacks failpoints: %v", tg.Capabilities)
	}
}

// Defects with --mode inbox, an unknown mode, and --mode without --demo are
// usage errors before anything starts, with a message that says why.
func TestDemoModeUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--mode", "inbox", "--defect", "check-then-insert"}, `defect "check-then-insert": breaks the synchronous design and runs only in sync mode`},
		{[]string{"demo", "--mode", "sync", "--defect", "poll-without-claim"}, `defect "poll-without-claim": breaks the inbox and runs only in inbox mode`},
		{[]string{"demo", "--mode", "sync", "--defect", "fresh-idempotency-key"}, `defect "fresh-idempotency-key": breaks the outbox and needs a sink URL`},
		{[]string{"demo", "--mode", "both", "--defect", "slow-ack"}, "with --mode both give none"},
		{[]string{"demo", "--mode", "queue"}, "--mode: must be sync, inbox or both"},
		{[]string{"soak", "--demo", "--mode", "inbox", "--defect", "ack-before-commit"}, `defect "ack-before-commit": breaks the synchronous design and runs only in sync mode`},
		{[]string{"soak", "--config", "x.yaml", "--mode", "inbox"}, "--mode needs --demo"},
		{[]string{"demo", "--worker-processes", "2"}, "--worker-processes: needs --mode inbox or both"},
		{[]string{"soak", "--demo", "--worker-processes", "2"}, "--worker-processes needs --demo --mode inbox"},
		{[]string{"demo", "--mode", "inbox", "--worker-processes", "9"}, "--worker-processes: must be between 0 and 8, got 9"},
	} {
		code, out := runChild(t, c.args...)
		if code != ExitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.args, code, ExitUsage, c.want, out)
		}
	}
}

// --mode both certifies the reference in each design, one report directory per
// mode, and summarises the two; a failure in either fails the whole.
func TestDemoModeBoth(t *testing.T) {
	besideOthers(t)
	if testing.Short() {
		t.Skip("-short: starts the reference twice")
	}
	dir := t.TempDir()
	code, out := runChild(t, "demo", "--mode", "both", "--database-url", pgtest.ServerURL(), "--report-dir", dir,
		"--label-filter", "DEDUP-1 || INBOX-2 || OUTBOX-1", "--seed", "5")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"== reference receiver, sync mode ==", "== reference receiver, inbox mode ==", "== both designs ==",
		"sync mode: every guarantee judged passed or not applicable", "inbox mode: every guarantee judged passed or not applicable"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	sync, err := reports.ReadResults(filepath.Join(dir, "sync", reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := reports.ReadResults(filepath.Join(dir, "inbox", reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	status := func(r *reports.Results, id string) reports.Status {
		for _, g := range r.Guarantees {
			if g.ID == id {
				return g.Status
			}
		}
		return ""
	}
	if status(sync, "DEDUP-1") != reports.StatusPassed || status(sync, "INBOX-2") != reports.StatusNotApplicable ||
		status(inbox, "INBOX-2") != reports.StatusPassed || status(inbox, "OUTBOX-1") != reports.StatusPassed {
		t.Errorf("sync %v, inbox %v", sync.Summary, inbox.Summary)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "summary.md")); err != nil || !strings.Contains(string(b), "inbox mode:") {
		t.Errorf("summary.md: %v\n%s", err, b)
	}
	// A defect in one design fails the run.
	code, out = runChild(t, "demo", "--mode", "inbox", "--defect", "fresh-idempotency-key", "--database-url", pgtest.ServerURL(),
		"--report-dir", t.TempDir(), "--label-filter", "OUTBOX-1", "--seed", "5")
	if code != 1 || !strings.Contains(out, "outbox") {
		t.Errorf("fresh-idempotency-key: exit %d, want 1:\n%s", code, out)
	}
}

// With --worker-processes the receiver runs no worker of its own and the target
// declares the workers as lifecycle.worker, splitting the demo's 4 workers and
// passing the defects to both processes.
func TestDemoTargetWorkerProcesses(t *testing.T) {
	data, _, err := demoTarget("/bin/hookcert", t.TempDir(), "inbox", demoShape{workerProcs: 2, maxConns: 12}, []string{"requeue-on-boot"}, demoCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := targetfile.Parse(data, targetfile.Vars{DatabaseURL: "postgres://127.0.0.1/x", ListenAddr: "127.0.0.1:9", SinkURL: "http://127.0.0.1:10"})
	if err != nil {
		t.Fatalf("the demo target does not parse: %v\n%s", err, data)
	}
	cmd := strings.Join(tg.Lifecycle.Command, " ")
	w := tg.Lifecycle.Worker
	if w == nil {
		t.Fatalf("no lifecycle.worker:\n%s", data)
	}
	wcmd := strings.Join(w.Command, " ")
	for _, c := range []struct{ got, want string }{
		{cmd, "--workers 0"}, {cmd, "--defect requeue-on-boot"}, {cmd, "--max-conns 12"},
		{wcmd, "/bin/hookcert reference worker --workers 2"}, {wcmd, "--lease 1s"}, {wcmd, "--sink-url http://127.0.0.1:10"}, {wcmd, "--defect requeue-on-boot"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%q lacks %q", c.got, c.want)
		}
	}
	if w.Processes != 2 || w.Env["HOOKCERT_DATABASE_URL"] != "postgres://127.0.0.1/x" || !strings.Contains(tg.Name, "2 worker processes") {
		t.Errorf("worker %+v, name %q", w, tg.Name)
	}
}
