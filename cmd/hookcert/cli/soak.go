package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios/certify"
	"github.com/hookcert/hookcert/scenarios/soak"
)

type soakFlags struct {
	config, reportDir, databaseURL, nemesis string
	shard, startAt                          string
	spec                                    string
	thresholds                              []string
	warmup, drain                           time.Duration
	mode                                    string
	demo, keepDatabase, settleBoundSet      bool
	defects                                 []string
	duration, pauseFor, settleBound         time.Duration
	concurrency, workerProcs                int
	rate, dupRate, lostAckRate, timeScale   float64
	seed                                    int64
}

func newSoakCmd() *cobra.Command {
	var f soakFlags
	cmd := &cobra.Command{
		Use:   "soak (--config TARGET.yaml | --demo [--defect NAME]...)",
		Short: "Send provider traffic under faults for a while, then reconcile every event",
		Long: `Soak sends distinct events of the target's effect role for --duration at
--concurrency workers (at most --rate deliveries per second), a share of them as two
concurrent copies (--dup-rate) or with the acknowledgement lost (--lost-ack-rate), and
redelivers every unacknowledged event on its profile's retry schedule, compressed by
--time-scale. Meanwhile a nemesis applies faults on a seeded schedule, e.g.
--nemesis kill@ack=3s,kill@commit=7s,pg-terminate@commit=5s,pause@timeout=11s: SIGKILL
and restart of the receiver right after the n-th acknowledgement (n from the seed) or
while its sessions wait inside their transactions on a table the harness locked,
pg_terminate_backend of those sessions, SIGSTOP past the provider's timeout, or
(kill@downstream, where the receiver calls the harness's sink: capability outbox, as
--demo --mode inbox) SIGKILL right after the sink applied a downstream call whose
answer it withholds; plain
kill, pg-terminate and pause act on the timer alone (--pause-for). Without --nemesis
the default schedule runs every aimed fault the target supports and names those left
out; --nemesis none runs none. Kill and pause need a target lifecycle, @commit a
table the harness may lock.

When traffic stops, every event whose last outcome was not an acknowledgement is
redelivered until acknowledged or --settle-bound, the receiver is left to become
quiescent, and every key's event rows and effects are read. Each key is judged from
the history: lost (acknowledged, never stored), duplicated (more than one row or
effect, or an operation the downstream sink applied more than once), unknown and
recovered (unknown outcome, then stored once), never applied.

--shard I/N --start-at TIME sends one slice of the traffic (the workers numbered I
modulo N of --concurrency, at their share of --rate) from TIME on, so N processes on
N machines with the same --seed soak one receiver together; only shard 0 applies the
nemesis. hookcert check --from DIR0 DIR1 ... merges their report directories and
judges the whole soak.

Thresholds hold the receiver to figures of the measure phase, k6-style:
--threshold 'p99<250ms' --threshold 'rate>800/s' --threshold 'failed<1%' (p50, p90,
p95, p99, any pN, max, avg latency of acknowledged attempts; rate deliveries/s,
ack_rate acknowledgements/s; failed share of attempts not acknowledged). Traffic runs
--warmup, then --duration (the measure phase), then --drain; only the measure phase
is judged against thresholds. --spec FILE holds the same settings in YAML (flags
given on the command line win; see docs/soak.md).

Writes results.json (its soak section), soak.html and history.jsonl to --report-dir.
Exit status: 0 no key lost or duplicated, every key read and every threshold met,
1 some were lost or duplicated (their keys and the seed are printed), 2 usage or
configuration error, 3 the target could not be reached or started, 5 none lost or
duplicated but the soak could not judge (interrupted, keys left unread, a threshold
with nothing to judge it on), 6 none lost or duplicated but a threshold was breached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySoakSpec(cmd.Flags(), &f); err != nil {
				return err
			}
			f.settleBoundSet = cmd.Flags().Changed("settle-bound") || f.settleBoundSet
			return runSoak(cmd.Context(), cmd.OutOrStdout(), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "target file (YAML, see docs/target.md)")
	fl.BoolVar(&f.demo, "demo", false, "soak the reference receiver on a throwaway PostgreSQL instead of a target file")
	fl.StringArrayVar(&f.defects, "defect", nil, "with --demo: start the reference with defect `NAME` (repeatable; hookcert reference defects lists them)")
	fl.StringVar(&f.mode, "mode", reference.ModeSync, "with --demo: reference receiver design, sync or inbox (store, 202, workers apply)")
	fl.IntVar(&f.workerProcs, "worker-processes", 0, "with --demo --mode inbox: run the workers in this many separate worker processes (0: inside the receiver); kills take them with the receiver")
	fl.DurationVar(&f.duration, "duration", 30*time.Second, "how long to send traffic in the measure phase (after --warmup, before --drain)")
	fl.DurationVar(&f.warmup, "warmup", 0, "traffic before the measure phase, not judged against thresholds")
	fl.DurationVar(&f.drain, "drain", 0, "traffic after the measure phase, not judged against thresholds")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, "hold the measure phase to `METRIC<VALUE`, e.g. p99<250ms, rate>800/s, failed<1% (repeatable)")
	fl.StringVar(&f.spec, "spec", "", "soak spec file (YAML): duration, concurrency, rate, nemesis, phases, thresholds; flags given win")
	fl.IntVar(&f.concurrency, "concurrency", 8, "concurrent deliveries")
	fl.Float64Var(&f.rate, "rate", 0, "at most this many deliveries per second (0: as fast as the receiver answers)")
	fl.Float64Var(&f.dupRate, "dup-rate", 0.1, "share of events sent as two concurrent copies")
	fl.Float64Var(&f.lostAckRate, "lost-ack-rate", 0.05, "share of events whose first acknowledgement is lost")
	fl.StringVar(&f.nemesis, "nemesis", "", "faults, their aims and intervals, e.g. kill@ack=3s,kill@commit=7s,pg-terminate@commit=5s,pause@timeout=11s (none: no fault; unset: the default schedule of every aimed fault the target supports)")
	fl.DurationVar(&f.pauseFor, "pause-for", time.Second, "how long each pause lasts")
	fl.DurationVar(&f.settleBound, "settle-bound", 30*time.Second, "bound on redelivering unacknowledged events and waiting for quiescence after traffic (--demo --mode inbox: at least 10 x --duration unless given)")
	fl.Int64Var(&f.seed, "seed", 0, "seed for the generator's choices (0: random, printed)")
	fl.Float64Var(&f.timeScale, "time-scale", certify.DefaultTimeScale, "provider seconds per real second for retry schedules")
	fl.StringVar(&f.reportDir, "report-dir", "hookcert-soak", "where results.json, soak.html, history.jsonl and receiver.log go")
	fl.StringVar(&f.databaseURL, "database-url", "", "the database server for targets that use {{.DatabaseURL}}: PostgreSQL ($HOOKCERT_DATABASE_URL when unset, else provisioned), or a mysql:// server for observe.mysql ($HOOKCERT_MYSQL_URL when unset); the run gets a database of its own there")
	fl.BoolVar(&f.keepDatabase, "keep-database", false, "keep the run's database afterwards")
	fl.StringVar(&f.shard, "shard", "", "send slice `I/N` of the traffic (shard I from 0 of N; --concurrency and --rate are the whole soak's); merge the shards' report directories with hookcert check --from")
	fl.StringVar(&f.startAt, "start-at", "", "begin traffic at this RFC 3339 `time`, the same for every shard (needed with --shard I/N, N > 1)")
	return cmd
}

func runSoak(ctx context.Context, out io.Writer, f *soakFlags) error {
	switch {
	case f.demo == (f.config != ""):
		return usageErr("give exactly one of --config TARGET.yaml and --demo")
	case len(f.defects) > 0 && !f.demo:
		return usageErr("--defect needs --demo")
	case f.mode != reference.ModeSync && !f.demo:
		return usageErr("--mode needs --demo")
	case f.timeScale < 1:
		return usageErr("--time-scale must be at least 1 (got %g)", f.timeScale)
	case f.workerProcs < 0 || f.workerProcs > targetfile.MaxWorkerProcesses:
		return usageErr("--worker-processes: must be between 0 and %d, got %d", targetfile.MaxWorkerProcesses, f.workerProcs)
	case f.workerProcs > 0 && (!f.demo || f.mode != reference.ModeInbox):
		return usageErr("--worker-processes needs --demo --mode inbox")
	}
	if err := validDemoMode(f.mode, f.defects); err != nil {
		return err
	}
	if err := reference.ValidateDefects(f.defects); err != nil {
		return usageErr("--defect: %v", err)
	}
	ph := soak.Phases{Warmup: f.warmup, Measure: f.duration, Drain: f.drain}
	if err := ph.Validate(); err != nil {
		return usageErr("%v", err)
	}
	if _, err := soak.ParseThresholds(f.thresholds); err != nil {
		return usageErr("--threshold %v", err)
	}
	nem, err := soak.ParseNemesis(f.nemesis)
	if err != nil {
		return usageErr("--nemesis: %v", err)
	}
	shard, err := soakShard(f)
	if err != nil {
		return err
	}
	// --nemesis none: no fault; no --nemesis: the default schedule, fixed once
	// the target is open and known.
	noNemesis := strings.TrimSpace(f.nemesis) == "none"
	if f.seed == 0 {
		f.seed = time.Now().UnixNano() % 1_000_000
	}
	if f.mode == reference.ModeInbox && !f.settleBoundSet {
		// Workers share the machine with the traffic and fall behind while it
		// lasts; the backlog drains after it, taking up to several times the
		// traffic's duration. Keys judged before it has drained count as lost.
		f.settleBound = max(f.settleBound, demoInboxDrainFactor*f.duration)
	}
	so := soak.Options{Duration: ph.Traffic(), Concurrency: f.concurrency, Rate: f.rate, DupRate: f.dupRate, LostAckRate: f.lostAckRate,
		Nemesis: nem, NoNemesis: noNemesis, PauseFor: f.pauseFor, Seed: f.seed, SettleBound: f.settleBound, Shard: shard}
	if err := so.Validate(soak.Hooks{Controller: nopController{}, Pause: func(bool) error { return nil }, Terminate: func(context.Context) ([]int, error) { return nil, nil }}); err != nil {
		return usageErr("%v", err)
	}
	opts := certify.Options{ConfigPath: f.config, DatabaseURL: f.databaseURL, KeepDatabase: f.keepDatabase, ReportDir: f.reportDir,
		TimeScale: f.timeScale, Stdout: out, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if !shard.StartAt.IsZero() {
		// One namespace for every shard's events, new with each start time.
		opts.RunID = soak.ShardRunID(f.seed, shard.StartAt)
	}
	if shard.Sharded() && shard.Index != 0 && len(nem) > 0 {
		fmt.Fprintf(out, "shard %s: receiver-wide faults are shard 0's; this shard applies none\n", shard)
	}
	repro := soakRepro(f)
	if f.demo {
		exe, err := os.Executable()
		if err != nil {
			return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("locating the hookcert binary: %w", err)}
		}
		if n := removeStaleDemoDirs(os.TempDir()); n > 0 {
			fmt.Fprintf(out, "removed %d stale demo %s left by a killed run\n", n, plural(n, "directory", "directories"))
		}
		dir, err := newDemoDir()
		if err != nil {
			return &ExitError{Code: ExitUnjudged, Err: err}
		}
		defer os.RemoveAll(dir)
		targetYAML, secrets, err := demoTarget(exe, dir, f.mode, demoShape{workerProcs: f.workerProcs}, f.defects, demoCapabilities)
		if err != nil {
			return &ExitError{Code: ExitUnjudged, Err: err}
		}
		dbURL := f.databaseURL
		if dbURL == "" {
			dbURL = pgprovision.URLFromEnv()
		}
		opts.ConfigPath, opts.ConfigData = "demo target", targetYAML
		opts.Secrets = append(secrets, scrub.Password(dbURL))
		if len(f.defects) > 0 {
			fmt.Fprintf(out, "reference receiver with defect(s): %s\n", strings.Join(f.defects, ", "))
		}
	}
	err = soakTarget(ctx, out, opts, so, soakPlan{repro: repro, phases: ph, thresholds: f.thresholds})
	var ee *ExitError
	if errors.As(err, &ee) {
		ee.Err = scrub.New(opts.Secrets...).Error(ee.Err)
	}
	return err
}

// demoInboxDrainFactor bounds the inbox demo's post-traffic wait for its
// workers, in multiples of the traffic's duration.
const demoInboxDrainFactor = 10

// soakRepro is the command that reruns this soak with its seed.
func soakRepro(f *soakFlags) string {
	c := "hookcert soak"
	if f.demo {
		c += " --demo"
		if f.mode != reference.ModeSync {
			c += " --mode " + f.mode
		}
		if f.workerProcs > 0 {
			c += fmt.Sprintf(" --worker-processes %d", f.workerProcs)
		}
		for _, d := range f.defects {
			c += " --defect " + d
		}
	} else {
		c += " --config " + f.config
	}
	c += fmt.Sprintf(" --seed %d --duration %s --concurrency %d --dup-rate %g --lost-ack-rate %g", f.seed, f.duration, f.concurrency, f.dupRate, f.lostAckRate)
	if f.rate > 0 {
		c += fmt.Sprintf(" --rate %g", f.rate)
	}
	if f.nemesis != "" {
		c += " --nemesis " + f.nemesis
	}
	if f.shard != "" {
		c += " --shard " + f.shard
	}
	if f.startAt != "" {
		c += " --start-at " + f.startAt
	}
	return c + soakReproPhases(f)
}

func soakTarget(ctx context.Context, out io.Writer, opts certify.Options, so soak.Options, plan soakPlan) error {
	repro := plan.repro
	p := painterFor(out)
	fmt.Fprintf(out, "seed %d\n", so.Seed)
	started := time.Now()
	hs, err := certify.Open(ctx, opts)
	switch {
	case errors.Is(err, certify.ErrConfig):
		return &ExitError{Code: ExitUsage, Err: err}
	case err != nil:
		return &ExitError{Code: ExitUnreachable, Err: err}
	}
	defer hs.Close()
	if hs.Target().Ledgerless() {
		// A soak reconciles every event key against its event rows.
		return usageErr("target.idempotency is object-version: hookcert soak reconciles every event by its event rows (event_rows), which a receiver without an event ledger does not keep")
	}
	var hooks soak.Hooks
	if hs.Target().Store.SQL() {
		// Only a SQL store has sessions the harness can end.
		hooks.Terminate = hs.TerminateReceiverSessions
	}
	if c := hs.Env.Controller; c != nil && hs.Env.CrashUnavailable == "" {
		hooks.Controller = c
		hooks.Pause = soak.PauseGroup(hs.ReceiverPID)
	}
	var leftOut []string
	if so.Nemesis == nil && !so.NoNemesis {
		// No --nemesis: every aimed fault this target can take.
		so.Nemesis, leftOut = soak.DefaultSchedule(hs.Env, hooks, so)
		fmt.Fprintf(out, "nemesis (default schedule): %s\n", orNone(soak.FormatNemesis(so.Nemesis)))
		for _, l := range leftOut {
			fmt.Fprintf(out, "  left out %s\n", l)
		}
	}
	if err := so.Validate(hooks); err != nil {
		return usageErr("%v", err)
	}
	tty := isColor(out)
	so.Progress = func(pr soak.Progress) { fmt.Fprint(out, soakProgressLine(p, pr, tty)) }
	fmt.Fprintf(out, "soaking %s for %s at concurrency %d\n", hs.Target().Name, so.Duration, so.Concurrency)
	if sh := so.Shard; !sh.StartAt.IsZero() {
		fmt.Fprintf(out, "shard %s, traffic from %s\n", sh, sh.StartAt.Format(time.RFC3339Nano))
	}
	res, runErr := soak.Run(ctx, hs.Env, hooks, so)
	if tty {
		fmt.Fprint(out, "\r\x1b[K")
	}
	if res == nil {
		if errors.Is(runErr, context.Canceled) || ctx.Err() != nil {
			return &ExitError{Code: ExitUnjudged, Err: runErr}
		}
		return usageErr("%v", runErr)
	}
	// The verdict and the figures come from the history alone, its meta
	// holding what the soak did besides delivering (hookcert check --from
	// rebuilds the same results from it).
	tg := hs.Target()
	info := soak.RunInfo{
		Tool: reports.ToolInfo{Name: "hookcert", Version: certify.Version}, Profiles: tg.Profiles(),
		Target:      reports.TargetInfo{Name: tg.Name, BaseURL: tg.BaseURL, Capabilities: hs.Env.Capabilities, Observer: hs.Env.ObserverKind},
		Environment: map[string]string{"go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH, "time_scale": fmt.Sprint(hs.Env.TimeScale)},
		Options: reports.SoakRun{Duration: plan.phases.Measure.String(), Concurrency: so.Concurrency, Rate: so.Rate, DupRate: so.DupRate,
			LostAckRate: so.LostAckRate, Nemesis: soak.FormatNemesis(so.Nemesis), NemesisLeftOut: leftOut,
			Thresholds: plan.thresholds},
		TrafficNS: res.TrafficNS, Faults: res.Faults, Settle: res.Settle, Repro: repro,
		DurationMS: time.Since(started).Milliseconds(), Shard: so.Shard.Info(),
	}
	if so.Shard.Sharded() {
		info.Options.Shard = so.Shard.String()
	}
	if plan.phases.Warmup > 0 {
		info.Options.Warmup = plan.phases.Warmup.String()
	}
	if plan.phases.Drain > 0 {
		info.Options.Drain = plan.phases.Drain.String()
	}
	for _, ep := range tg.Endpoints {
		info.Target.Endpoints = append(info.Target.Endpoints, reports.EndpointInfo{Profile: ep.Profile, Account: ep.Account, Path: ep.Path})
	}
	if runErr != nil {
		info.Error = runErr.Error()
	}
	if res.History.Meta.Run, err = json.Marshal(info); err != nil {
		return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("recording the soak: %w", err)}
	}
	results, err := soak.Results(res.History)
	if err != nil {
		return &ExitError{Code: ExitUnjudged, Err: err}
	}
	sk := results.Soak
	printSoak(out, p, sk)
	if opts.ReportDir != "" {
		if err := writeSoakReports(opts.ReportDir, results, res, hs.Secrets()); err != nil {
			return &ExitError{Code: ExitUnjudged, Err: err}
		}
		fmt.Fprintf(out, "reports: %s/{results.json,soak.html,history.jsonl,receiver.log}\n", strings.TrimRight(opts.ReportDir, "/"))
	}
	return soakExit(sk, info.Error, so.Seed)
}

// soakExit is the soak's exit status: 1 when some key was lost or
// duplicated (whatever else happened), 6 when none was but a threshold was
// breached, 5 when the soak could not judge (runErr), read every key or
// judge every threshold.
func soakExit(sk *reports.Soak, runErr string, seed int64) error {
	if sk.Lost > 0 || sk.Duplicated > 0 {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("soak failed: %d lost, %d duplicated, %d unjudged of %d events (seed %d; rerun: %s)",
			sk.Lost, sk.Duplicated, sk.Unjudged, sk.Keys, seed, sk.Repro)}
	}
	if n := sk.Breached(); n > 0 {
		return &ExitError{Code: ExitThreshold, Err: fmt.Errorf("soak breached %d of %d %s: %s (seed %d; rerun: %s)",
			n, len(sk.Thresholds), plural(len(sk.Thresholds), "threshold", "thresholds"), breachedList(sk), seed, sk.Repro)}
	}
	if runErr != "" {
		return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("the soak could not judge: %s", runErr)}
	}
	if sk.Keys == 0 {
		return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("the soak sent no event: nothing to judge (seed %d)", seed)}
	}
	if sk.Unjudged > 0 {
		return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("the soak could not judge every event: %d of %d unread, none lost or duplicated (seed %d; rerun: %s)",
			sk.Unjudged, sk.Keys, seed, sk.Repro)}
	}
	for _, t := range sk.Thresholds {
		if t.Verdict == reports.ThresholdError {
			return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("the soak could not judge threshold %s: %s (seed %d)", t.Threshold, t.Reason, seed)}
		}
	}
	if !sk.Passed {
		return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("the soak could not judge (seed %d; rerun: %s)", seed, sk.Repro)}
	}
	return nil
}

func writeSoakReports(dir string, results *reports.Results, res *soak.Result, secrets []string) error {
	if _, err := reports.WriteSoak(dir, results, reports.Options{Secrets: secrets}); err != nil {
		return err
	}
	var b strings.Builder
	if err := res.History.WriteJSONL(&b); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, certify.HistoryFile), []byte(scrub.New(secrets...).String(b.String())), 0o644); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// isColor reports whether out is a terminal where the progress line may
// rewrite itself.
func isColor(out io.Writer) bool {
	_, ok := out.(colorWriter)
	return ok
}

// soakProgressLine is the once-a-second status: rewritten in place on a
// terminal, one line each second elsewhere (a CI log).
func soakProgressLine(p painter, pr soak.Progress, tty bool) string {
	elapsed := pr.Elapsed.Truncate(time.Second)
	when := fmt.Sprintf("%s/%s", elapsed, pr.Duration)
	if pr.Phase != "traffic" {
		when = elapsed.String()
	}
	// Lost acknowledgements the soak injects are its own doing, not errors.
	errs := fmt.Sprintf("errors %d", pr.Errors)
	if pr.Errors > 0 {
		errs = p.paint(ansiYellow, errs)
	}
	line := fmt.Sprintf("[%s] %-7s %5d deliveries/s  acknowledged %d  acks lost on purpose %d  %s  faults %d",
		when, pr.Phase, pr.Rate, pr.Acknowledged, pr.LostAcks, errs, pr.Faults)
	if pr.Down != "" {
		line += "  " + p.paint(ansiYellow, pr.Down+" now")
	}
	if tty {
		return "\r\x1b[K" + line
	}
	return line + "\n"
}

func printSoak(out io.Writer, p painter, s *reports.Soak) {
	verdict := "PASS"
	if !s.Passed {
		verdict = "FAIL"
	}
	fmt.Fprintf(out, "\n%s: %d events, %d acknowledged, %s lost, %s duplicated, %d unknown (%d recovered), %d never applied\n",
		p.status(verdict), s.Keys, s.Acknowledged, soakCount(p, s.Lost), soakCount(p, s.Duplicated), s.Unknown, s.Recovered, s.NeverApplied)
	if s.Unjudged > 0 {
		fmt.Fprintf(out, "  %s\n", p.status("ERROR")+fmt.Sprintf(": %d key(s) could not be read", s.Unjudged))
	}
	fmt.Fprintf(out, "  %.1f acks/s (%.1f deliveries/s), latency p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d attempts\n",
		s.AcksPerS, s.DeliveriesPerS, s.Latency.P50MS, s.Latency.P99MS, s.Latency.MaxMS, s.Attempts)
	kinds := map[string]int{}
	var order []string
	for _, f := range s.Faults {
		if kinds[f.Kind] == 0 {
			order = append(order, f.Kind)
		}
		kinds[f.Kind]++
		if f.Error != "" {
			fmt.Fprintf(out, "  %s %s at %.1fs: %s\n", p.status("ERROR"), f.Kind, float64(f.StartMS)/1000, f.Error)
		}
	}
	var fs []string
	for _, k := range order {
		fs = append(fs, fmt.Sprintf("%d %s", kinds[k], k))
	}
	if len(fs) > 0 {
		fmt.Fprintf(out, "  faults: %s\n", strings.Join(fs, ", "))
	}
	fmt.Fprintf(out, "  settled: %d redelivered, %d still unacknowledged, quiescent %v after %.1fs\n",
		s.Settle.Redelivered, s.Settle.StillUnacknowledged, s.Settle.Quiescent, float64(s.Settle.DurationMS)/1000)
	evidence := func(title string, n int, keys []string) {
		if n == 0 {
			return
		}
		fmt.Fprintf(out, "  %s (%d, first %d):\n", p.paint(ansiBold+ansiRed, title), n, len(keys))
		for _, k := range keys {
			fmt.Fprintf(out, "    %s\n", k)
		}
	}
	printSoakMeasure(out, p, s)
	evidence("lost: acknowledged, never stored", s.Lost, s.LostKeys)
	evidence("duplicated: more than one row, effect or downstream operation", s.Duplicated, s.DuplicatedKeys)
	if !s.Passed && s.Repro != "" {
		fmt.Fprintf(out, "  reproduce: %s\n", s.Repro)
	}
}

func soakCount(p painter, n int) string {
	if n == 0 {
		return "0"
	}
	return p.paint(ansiBold+ansiRed, fmt.Sprint(n))
}

// nopController stands in for the receiver's controller when the flags are
// checked before anything starts.
type nopController struct{}

func (nopController) Kill() error                    { return nil }
func (nopController) WaitExit(context.Context) error { return nil }
func (nopController) Restart(context.Context) error  { return nil }
func (nopController) Alive() (bool, string)          { return true, "" }

// soakShard reads --shard and --start-at. A sharded soak reaches a receiver
// every shard shares, so it takes a target file: --demo starts a receiver of
// its own in each process.
func soakShard(f *soakFlags) (soak.Shard, error) {
	var sh soak.Shard
	if f.shard != "" {
		var err error
		if sh, err = soak.ParseShard(f.shard); err != nil {
			return sh, usageErr("--shard: %v", err)
		}
	}
	if f.startAt != "" {
		t, err := soak.ParseStartAt(f.startAt)
		if err != nil {
			return sh, usageErr("--start-at: %v", err)
		}
		sh.StartAt = t
	}
	if sh.Sharded() && f.demo {
		return sh, usageErr("--shard %s needs --config: the shards must soak one receiver, and --demo starts one of its own in each process (start it once, e.g. hookcert reference serve, and point every shard's target file at it)", sh)
	}
	return sh, nil
}
