package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/simulator/profiles"
)

func init() { register(newDemoCmd) }

// demoEndpoints are the reference receiver's endpoints in a demo: two accounts of one
// profile (account scope), several profiles (source scope), header-carried and
// body-carried event IDs, signed timestamps and not.
var demoEndpoints = []struct{ profile, account string }{
	{"stripe", "acct_A"}, {"stripe", "acct_B"}, {"standard-webhooks", "acct_A"},
	{"github", "acct_A"}, {"shopify", "acct_A"}, {"svix", "acct_A"},
}

func newDemoCmd() *cobra.Command {
	var f suiteFlags
	var defects, caps []string
	var mode string
	var workerProcs int
	cmd := &cobra.Command{
		Use:   "demo [--mode sync|inbox|both] [--worker-processes N] [--defect NAME]...",
		Short: "Start the reference receiver on a throwaway PostgreSQL and certify it",
		Long: `Demo provisions PostgreSQL (--database-url, $HOOKCERT_DATABASE_URL, a container, or
local binaries), starts the reference receiver with fresh random secrets (and the
named defects, which break it on purpose), certifies it and writes the reports.
With --mode inbox the reference stores each event and answers 202, 4 workers apply
it later, and credits and refunds reach a downstream sink the harness runs through
an outbox; the target declares asynchronous acceptance, its inbox and its outbox,
and the INBOX and OUTBOX guarantees apply. --worker-processes N runs those workers in
N "hookcert reference worker" processes instead, declared as lifecycle.worker, so
the INBOX crash checks kill the workers alone. --mode both runs sync, then inbox, with
reports in <report-dir>/sync and <report-dir>/inbox and a summary.md over both.
Defects belong to one design (hookcert reference serve --help). Exit status as
for certify; with both, the worse of the two.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validDemoMode(mode, defects); err != nil {
				return err
			}
			switch {
			case workerProcs < 0 || workerProcs > targetfile.MaxWorkerProcesses:
				return usageErr("--worker-processes: must be between 0 and %d, got %d", targetfile.MaxWorkerProcesses, workerProcs)
			case workerProcs > 0 && mode == reference.ModeSync:
				return usageErr("--worker-processes: needs --mode inbox or both (a synchronous receiver has no workers)")
			}
			if err := reference.ValidateDefects(defects); err != nil {
				return usageErr("--defect: %v", err)
			}
			if err := f.validate(); err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return &ExitError{Code: ExitFailed, Err: fmt.Errorf("locating the hookcert binary: %w", err)}
			}
			if err := validDemoCapabilities(caps); err != nil {
				return usageErr("--capabilities: %v", err)
			}
			out := cmd.OutOrStdout()
			if n := removeStaleDemoDirs(os.TempDir()); n > 0 {
				fmt.Fprintf(out, "removed %d stale demo %s left by a killed run\n", n, plural(n, "directory", "directories"))
			}
			if mode != demoModeBoth {
				return runDemo(cmd.Context(), out, exe, mode, workerProcs, f, defects, caps)
			}
			// Both designs, one after the other, reported side by side.
			var worst error
			base := f.reportDir
			var lines []string
			for _, m := range []string{reference.ModeSync, reference.ModeInbox} {
				fmt.Fprintf(out, "\n== reference receiver, %s mode ==\n", m)
				mf := f
				if base != "" {
					mf.reportDir = filepath.Join(base, m)
				}
				procs := 0
				if m == reference.ModeInbox {
					procs = workerProcs
				}
				err := runDemo(cmd.Context(), out, exe, m, procs, mf, defects, caps)
				lines = append(lines, fmt.Sprintf("%s mode: %s", m, demoOutcome(err, mf.reportDir)))
				worst = worseExit(worst, err)
				if cmd.Context().Err() != nil {
					break
				}
			}
			fmt.Fprintln(out, "\n== both designs ==")
			for _, l := range lines {
				fmt.Fprintln(out, l)
			}
			if base != "" {
				if err := writeBothSummary(base, lines); err != nil {
					return worseExit(worst, &ExitError{Code: ExitFailed, Err: err})
				}
			}
			return worst
		},
	}
	cmd.Flags().StringVar(&mode, "mode", reference.ModeSync, "reference receiver design: sync (apply, then 200), inbox (store, 202, workers apply, outbox) or both")
	cmd.Flags().IntVar(&workerProcs, "worker-processes", 0, "inbox mode: run the workers in this many separate worker processes (0: inside the receiver)")
	cmd.Flags().StringSliceVar(&caps, "capabilities", demoCapabilities,
		"capabilities the demo target declares (a subset, to see the verdicts a receiver without test hooks gets; \"none\" for none)")
	cmd.Flags().StringArrayVar(&defects, "defect", nil, "start the reference with this defect (repeatable; see `hookcert reference serve --help`)")
	f.add(cmd)
	return cmd
}

// demoTarget writes the reference receiver's endpoint file into dir and returns a
// target file that starts, observes and certifies it, and the secrets it holds.
// In inbox mode the receiver runs inbox workers and the target declares
// asynchronous acceptance; caps lose what the inbox design does not offer.
// demoShape is how the demo runs the reference beyond its design.
type demoShape struct {
	// workerProcs > 0 (inbox mode) runs the workers in that many "hookcert
	// reference worker" processes the target declares as lifecycle.worker, and
	// the receiver's process only accepts.
	workerProcs int
	// maxConns is the reference's pool size (0: its default, for soak's load).
	maxConns int
}

// demoMaxConns is the reference's pool in a certification run: ACK-2's 64
// concurrent deliveries queue for it briefly, and several demos fit one
// PostgreSQL's 100 connections (the self-test runs them side by side).
const demoMaxConns = 12

func demoTarget(exe, dir, mode string, shape demoShape, defects, caps []string) ([]byte, []string, error) {
	workerProcs := shape.workerProcs
	var cfg reference.Config
	var secrets []string
	type tEndpoint struct {
		Profile string `yaml:"profile"`
		Account string `yaml:"account"`
		Path    string `yaml:"path"`
		Secret  string `yaml:"secret"`
		// The reference's retention for this endpoint (its profile's defaults, or
		// the short TTLs the no-ttl-floor defect lets through).
		KeyTTL     string `yaml:"key_ttl"`
		PayloadTTL string `yaml:"payload_ttl"`
	}
	var teps []tEndpoint
	shortTTLs := demoHasDefect(defects, reference.DefectNoTTLFloor)
	for _, e := range demoEndpoints {
		sec, err := profiles.GenerateSecret(e.profile, rand.Reader)
		if err != nil {
			return nil, nil, fmt.Errorf("secret for %s: %w", e.profile, err)
		}
		path := "/webhooks/" + e.profile + "/" + e.account
		rep := reference.Endpoint{Profile: e.profile, Account: e.account, Path: path, Secret: sec}
		if shortTTLs {
			// Below every profile's redelivery horizon; only the defect starts with it.
			rep.KeyTTL, rep.PayloadTTL = demoShortTTLs()
		}
		cfg.Endpoints = append(cfg.Endpoints, rep)
		r := rep.Retention()
		teps = append(teps, tEndpoint{e.profile, e.account, path, sec, r.KeyTTL.String(), r.PayloadTTL.String()})
		secrets = append(secrets, sec)
	}
	cfgBytes, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	cfgPath := filepath.Join(dir, "endpoints.yaml")
	if err := os.WriteFile(cfgPath, cfgBytes, 0o600); err != nil {
		return nil, nil, err
	}
	// The database URL goes in the receiver's environment, not its command line,
	// which every user of the machine can read (ps); the secrets are in cfgPath.
	command := []string{exe, "reference", "serve", "--listen", "{{.ListenAddr}}",
		"--config", cfgPath, "--enable-failpoints"}
	for _, d := range defects {
		command = append(command, "--defect", d)
	}
	if shape.maxConns > 0 {
		command = append(command, "--max-conns", strconv.Itoa(shape.maxConns))
	}
	inbox := mode == reference.ModeInbox
	var worker []string
	if inbox {
		queue := []string{"--lease", demoInboxLease.String(), "--max-attempts", strconv.Itoa(demoMaxAttempts),
			"--backoff", "250ms", "--backoff-max", "1s", "--sink-url", "{{.SinkURL}}"}
		inProcess := demoInboxWorkers
		if workerProcs > 0 {
			inProcess = 0
			// The same number of workers in all, split over the processes; they
			// poll more often, as no handler in their process wakes them.
			each := max(1, (demoInboxWorkers+workerProcs-1)/workerProcs)
			worker = append([]string{exe, "reference", "worker", "--workers", strconv.Itoa(each), "--poll-interval", "100ms"}, queue...)
			for _, d := range defects {
				worker = append(worker, "--defect", d)
			}
		}
		command = append(command, "--mode", reference.ModeInbox, "--workers", strconv.Itoa(inProcess))
		command = append(command, queue...)
		caps = demoInboxCapabilities(caps)
	}
	name := "hookcert reference receiver"
	switch {
	case inbox && workerProcs > 0:
		name += fmt.Sprintf(" (inbox mode, %d worker %s)", workerProcs, plural(workerProcs, "process", "processes"))
	case inbox:
		name += " (inbox mode)"
	}
	if len(defects) > 0 {
		name += " (defects: " + strings.Join(defects, ", ") + ")"
	}
	doc := map[string]any{"target": map[string]any{
		"name":      name,
		"base_url":  "http://{{.ListenAddr}}",
		"endpoints": teps,
		"lifecycle": map[string]any{
			"command":    command,
			"env":        map[string]string{pgprovision.EnvDatabaseURL: "{{.DatabaseURL}}"},
			"ready":      map[string]any{"http": "/healthz", "timeout": "30s"},
			"stop_grace": "5s",
		},
		"observe": map[string]any{"postgres": map[string]any{
			"url":          "{{.DatabaseURL}}",
			"event_table":  "processed_webhook_events",
			"effect_table": "ledger_entries",
			"queries": map[string]string{
				"event_rows":      "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
				"effects":         "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
				"object_effects":  "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND object_id=$4",
				"object":          "SELECT version, status FROM subscriptions WHERE source=$1 AND account_id=$2 AND object_id=$4",
				"payment":         "SELECT status FROM payments WHERE source=$1 AND account_id=$2 AND payment_id=$4",
				"payload_present": reference.PayloadPresentQuery, // key row or the orphan-payloads archive
			},
		}},
		"failpoints": map[string]any{"path": "/_hookcert/failpoints"},
		// The admin purge is mounted with --enable-failpoints; the running receiver
		// applies its own config and defects, as its periodic purger does.
		"retention":    map[string]any{"purge": map[string]any{"http": map[string]any{"method": "POST", "path": reference.AdminPurgePath}}},
		"capabilities": slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return c == "none" }),
	}}
	if !slices.Contains(caps, "failpoints") {
		delete(doc["target"].(map[string]any), "failpoints")
	}
	if len(worker) > 0 {
		// The worker reads the database URL from the receiver's environment.
		doc["target"].(map[string]any)["lifecycle"].(map[string]any)["worker"] = map[string]any{"command": worker, "processes": workerProcs}
	}
	if inbox {
		t := doc["target"].(map[string]any)
		t["acceptance"] = map[string]any{"mode": "async", "settle": "3s", "quiescent": demoInboxQuiescent}
		t["inbox"] = map[string]any{"lease": demoInboxLease.String(), "max_attempts": demoMaxAttempts, "state": demoInboxState}
		t["outbox"] = map[string]any{"max_attempts": demoMaxAttempts, "state": demoOutboxState}
	}
	out, err := yaml.Marshal(doc)
	return out, secrets, err
}

// demoShortTTLs are the key and payload TTLs the no-ttl-floor defect runs the demo
// with, configured in the reference and declared in the target alike.
func demoShortTTLs() (key, payload reference.Duration) {
	key, _ = reference.ParseDuration("1h") // constants: cannot fail
	payload, _ = reference.ParseDuration("30m")
	return key, payload
}

func demoHasDefect(defects []string, name string) bool {
	for _, d := range defects {
		if d == name {
			return true
		}
	}
	return false
}

// demoCapabilities is everything the reference receiver offers the harness.
var demoCapabilities = []string{"crash", "lock-gating", "connection-loss", "failpoints", "ordering", "state-machine", "domain-constraint", "deletion", "retention"}

// demoInboxWorkers is how many in-process workers the inbox demo runs.
const demoInboxWorkers = 4

// demoInboxLease is the inbox workers' lease. An event whose worker was killed
// stays claimed until its lease runs out and the reconciler (every half lease)
// re-offers it: the reference's 30s default would outlast the 3s settle the
// target declares, so the demo's lease keeps re-offer plus apply inside it.
const demoInboxLease = time.Second

// demoInboxQuiescent is true when no accepted event waits for a worker: none is
// claimed and none pending is due. An event backing off after a failed attempt
// (an event before its object) is waiting for the world, not for a worker;
// dead-lettered events are finished work.
const demoInboxQuiescent = "SELECT count(*) = 0 FROM processed_webhook_events WHERE inbox_state = 'claimed' OR (inbox_state = 'pending' AND next_attempt_at <= now())"

// demoMaxAttempts is how many attempts an inbox event or outbox message gets.
const demoMaxAttempts = 5

// demoInboxState and demoOutboxState map the reference's inbox and outbox
// columns onto the states the harness reads (claimed is processing).
const (
	demoInboxState = "SELECT CASE inbox_state WHEN 'claimed' THEN 'processing' ELSE inbox_state END, attempts " +
		"FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3"
	demoOutboxState = "SELECT CASE state WHEN 'claimed' THEN 'processing' ELSE state END, attempts " +
		"FROM outbox_messages WHERE source=$1 AND account_id=$2 AND event_id=$3 AND kind='credit'"
)

// demoInboxCapabilities is caps without what the reference's inbox mode lacks.
func demoInboxCapabilities(caps []string) []string {
	out := slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return slices.Contains(demoInboxUnsupported, c) })
	if slices.Equal(caps, demoCapabilities) {
		// The full demo: the inbox design adds its workers and its outbox.
		out = append(out, "inbox", "outbox")
	}
	return out
}

// demoInboxUnsupported are the capabilities the inbox design does not offer. The
// reference's failpoints sit in the accept transaction, which writes no business
// change (docs/failpoints.md places after-insert-before-commit after it) and its
// workers' apply transaction has none; the crash guarantees then stop the
// workers inside that transaction by locking the effect table and SIGKILL.
var demoInboxUnsupported = []string{"failpoints"}

// validDemoMode checks --mode and, as the reference does, that each defect
// belongs to that design, before anything starts.
func validDemoMode(mode string, defects []string) error {
	switch mode {
	case reference.ModeSync, reference.ModeInbox:
		if err := reference.ValidateDefectsFor(defects, mode, mode == reference.ModeInbox); err != nil {
			return usageErr("--defect: %v", err)
		}
	case demoModeBoth:
		if len(defects) > 0 {
			return usageErr("--defect: defects belong to one design; with --mode both give none, or choose --mode sync or inbox")
		}
	default:
		return usageErr("--mode: must be %s, %s or %s, got %q", reference.ModeSync, reference.ModeInbox, demoModeBoth, mode)
	}
	return nil
}

func validDemoCapabilities(caps []string) error {
	for _, c := range caps {
		if c != "none" && !slices.Contains(demoCapabilities, c) {
			return fmt.Errorf("%q is not one of %s, none", c, strings.Join(demoCapabilities, ", "))
		}
	}
	return nil
}

// demoDirPrefix names the demo's temporary directories, demoPIDFile the file in
// each that says which process owns it.
const (
	demoDirPrefix = "hookcert-demo-"
	demoPIDFile   = "owner.pid"
	// A directory without a pid file is being created right now, or was left by
	// a hookcert that wrote none; after this long it is the latter.
	demoOrphanAge = 10 * time.Minute
)

// newDemoDir creates the demo's private directory (0700) and records the owner in
// it: the pid and, where /proc tells it, the process's start time, so a pid
// reused by another process does not keep a dead run's directory alive.
func newDemoDir() (string, error) {
	dir, err := os.MkdirTemp("", demoDirPrefix)
	if err != nil {
		return "", err
	}
	owner := strconv.Itoa(os.Getpid()) + " " + procStartTime(os.Getpid()) + "\n"
	if err := os.WriteFile(filepath.Join(dir, demoPIDFile), []byte(owner), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// removeStaleDemoDirs removes the demo directories in tmp whose owner is no longer
// running (a demo killed by SIGKILL cannot remove its own) and returns how many.
// Directories of other users and of live runs are left alone.
func removeStaleDemoDirs(tmp string) int {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), demoDirPrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		info, err := e.Info()
		if err != nil {
			continue
		}
		if ownedByOther(info) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, demoPIDFile))
		if errors.Is(err, os.ErrNotExist) {
			if time.Since(info.ModTime()) < demoOrphanAge {
				continue
			}
		} else if err != nil {
			continue
		} else if ownerAlive(b) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			n++
		}
	}
	return n
}

// ownerAlive reads a pid file ("PID STARTTIME") and reports whether that process
// still runs. An unreadable file counts as alive: only a known-dead owner's
// directory is removed.
func ownerAlive(pidFile []byte) bool {
	f := strings.Fields(string(pidFile))
	if len(f) == 0 {
		return true
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return true
	}
	if processGone(pid) {
		return false
	}
	if len(f) > 1 {
		if now := procStartTime(pid); now != "" && now != f[1] {
			return false // the pid now belongs to another process
		}
	}
	return !procZombie(pid)
}

// procStartTime is the process's start time in clock ticks since boot
// (/proc/PID/stat field 22), "" where /proc does not say.
func procStartTime(pid int) string {
	f := procStatFields(pid)
	if len(f) < 20 {
		return ""
	}
	return f[19] // fields after "(comm)": state is [0], starttime (22nd overall) is [19]
}

// procZombie reports whether pid has exited and waits for its parent to reap it
// (a killed demo's parent may never do so).
func procZombie(pid int) bool {
	f := procStatFields(pid)
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// procStatFields are the fields of /proc/PID/stat after the command name, which
// may hold spaces and parentheses; nil without /proc.
func procStatFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// demoModeBoth runs the demo in sync mode, then in inbox mode (with the outbox).
const demoModeBoth = "both"

// runDemo certifies the reference receiver in one mode.
func runDemo(ctx context.Context, out io.Writer, exe, mode string, workerProcs int, f suiteFlags, defects, caps []string) error {
	// The directory holds the endpoints file with the run's secrets. It is
	// removed on return, which SIGINT and SIGTERM reach (they cancel the
	// run's context); after SIGKILL its pid file lets the next demo remove it.
	dir, err := newDemoDir()
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	defer os.RemoveAll(dir)
	targetYAML, secrets, err := demoTarget(exe, dir, mode, demoShape{workerProcs: workerProcs, maxConns: demoMaxConns}, defects, caps)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	// The database password is a secret of the run too: a driver error
	// or the receiver's output may quote it without its URL.
	dbURL := f.databaseURL
	if dbURL == "" {
		dbURL = pgprovision.URLFromEnv()
	}
	secrets = append(secrets, scrub.Password(dbURL))
	if len(defects) > 0 {
		fmt.Fprintf(out, "reference receiver with defect(s): %s\n", strings.Join(defects, ", "))
	}
	opts := f.options(out, func(id string) string {
		if mode == reference.ModeInbox {
			// repro knows no --mode; the demo filtered to the guarantee is the same run.
			c := fmt.Sprintf("hookcert demo --mode inbox --label-filter %s --seed %d", id, f.seed)
			if workerProcs > 0 {
				c += fmt.Sprintf(" --worker-processes %d", workerProcs)
			}
			for _, d := range defects {
				c += " --defect " + d
			}
			return c
		}
		c := fmt.Sprintf("hookcert repro %s --seed %d --demo", id, f.seed)
		for _, d := range defects {
			c += " --defect " + d
		}
		return c
	})
	opts.ConfigPath = "demo target"
	opts.ConfigData = targetYAML
	opts.Secrets = secrets
	err = runCertify(ctx, out, opts)
	var ee *ExitError
	if errors.As(err, &ee) {
		// Printed by Main: scrubbed like everything else the run prints.
		ee.Err = scrub.New(secrets...).Error(ee.Err)
	}
	return err
}

// demoOutcome is one line on how a mode's run ended.
func demoOutcome(err error, reportDir string) string {
	where := ""
	if reportDir != "" {
		where = " (reports in " + reportDir + ")"
	}
	var ee *ExitError
	switch {
	case err == nil:
		return "every guarantee judged passed or not applicable" + where
	case errors.As(err, &ee) && ee.Code == ExitFailed:
		return "FAILED" + where
	default:
		return "ERROR: " + err.Error() + where
	}
}

// worseExit keeps the more serious of two outcomes: a harness or usage error
// over a failed verdict, a failed verdict over a pass.
func worseExit(a, b error) error {
	code := func(err error) int {
		var ee *ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee) && ee.Code == ExitFailed:
			return 1
		default:
			return 2
		}
	}
	if code(b) > code(a) {
		return b
	}
	return a
}

// writeBothSummary writes summary.md over the two modes' reports.
func writeBothSummary(dir string, lines []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# hookcert demo: the reference receiver in both designs\n\n")
	for _, l := range lines {
		b.WriteString("- " + l + "\n")
	}
	b.WriteString("\nEach mode has its own results.json, junit.xml, summary.md, index.html and history.jsonl in sync/ and inbox/.\n")
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(b.String()), 0o644)
}
