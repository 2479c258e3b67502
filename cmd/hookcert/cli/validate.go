package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/certify"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

func newValidateCmd() *cobra.Command {
	var config, databaseURL string
	var noStart, strict bool
	cmd := &cobra.Command{
		Use:   "validate --config TARGET.yaml",
		Short: "Check a target file against its database and receiver, delivering nothing",
		Long: `Validate loads a target file (docs/target.md) and does everything certify does
before its first delivery: it provisions the run's database when the file uses
{{.DatabaseURL}} (and drops it afterwards), runs the setup hook, starts the receiver
when the file has a lifecycle (so a receiver that creates its own schema has done so),
and prepares every query, fixture and purge statement against the database. Then it
prints what the file declares: endpoints, capabilities, event roles, and which
guarantees would be not applicable and why where that is known without a run.

A provider the file declares (profiles:, docs/target.md "Declaring a provider") is
checked with the rest of the file, and one delivery of it is rendered and signed as
the harness would send it, and printed: its templates are proven before a run.

It also warns where a valid file would mislead a guarantee: an effects query that
does not bind the event ID ($3) while two events can share a body (DEDUP-5), a count
that does not bind the account ($2) or source ($1) while two are declared (DEDUP-3,
DEDUP-4), limits.max_body_bytes below what a declared provider documents it may send
(ACK-5, ACK-7), a query that uses a parameter its reads pass as an empty string ($4
in event_rows: the guarantees reading it are named). Warnings do not fail validate
unless --strict.

--no-start leaves the receiver alone: the schema must then exist already (a setup
hook, or a database that holds it). A receiver without lifecycle is never started:
validate says whether it answers, which is not an error of the file.

Exit status: 0 the file is valid (with or without warnings), 2 any error (the
file, a query that does not prepare, a setup that fails, a receiver that does not
start, an unreachable database), or a warning with --strict.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config == "" {
				return usageErr("--config is required (a target file, see docs/target.md)")
			}
			return runValidate(cmd.Context(), cmd.OutOrStdout(), config, databaseURL, noStart, strict)
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "target file (YAML, see docs/target.md)")
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "the database server for targets that use {{.DatabaseURL}}: PostgreSQL ($HOOKCERT_DATABASE_URL when unset, else provisioned), or a mysql:// server for observe.mysql ($HOOKCERT_MYSQL_URL when unset); the run gets a database of its own there")
	cmd.Flags().BoolVar(&noStart, "no-start", false, "do not start the receiver (its schema must already exist)")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 2 when the file draws a warning (a query or limit that would mislead a guarantee)")
	return cmd
}

func runValidate(ctx context.Context, out io.Writer, config, databaseURL string, noStart, strict bool) error {
	fail := func(err error) error { return &ExitError{Code: ExitUsage, Err: err} }
	data, err := targetfile.ReadFile(config)
	if err != nil {
		return fail(err)
	}
	dir, err := targetfile.BaseDir(config)
	if err != nil {
		return fail(err)
	}
	inspected, err := targetfile.Inspect(data, profiles.IDs(), targetfile.WithBaseDir(dir))
	if err != nil {
		return fail(fmt.Errorf("%s: %w", config, err))
	}
	hasLifecycle := inspected.Lifecycle != nil
	start := time.Now()
	hs, err := certify.Open(ctx, certify.Options{
		ConfigPath: config, DatabaseURL: databaseURL, Stdout: out,
		// A receiver without lifecycle is somebody else's to start.
		NoStart: noStart || !hasLifecycle,
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return fail(err)
	}
	defer hs.Close()
	tg := hs.Target()
	var reach error
	if !hasLifecycle {
		reach = certify.Reachable(ctx, tg.BaseURL)
	}
	printValidation(out, config, hs, noStart, hasLifecycle, reach)
	if err := sampleDeliveries(out, tg); err != nil {
		return fail(fmt.Errorf("%s: %w", config, err))
	}
	warnings := append(tg.Warnings(), unboundWarnings(tg)...)
	printWarnings(out, warnings)
	if strict && len(warnings) > 0 {
		return fail(fmt.Errorf("%s: %d warning(s), and --strict makes them errors", config, len(warnings)))
	}
	fmt.Fprintf(out, "valid (%s): nothing was delivered\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// printWarnings lists what in a valid target file would mislead a guarantee:
// the field, the guarantee and how, and the fix.
func printWarnings(out io.Writer, warnings []targetfile.Warning) {
	if len(warnings) == 0 {
		return
	}
	p := painterFor(out)
	fmt.Fprintf(out, "%s (%d): the file is valid, but would mislead these guarantees\n", p.paint(ansiYellow, "warnings"), len(warnings))
	for _, w := range warnings {
		fmt.Fprintf(out, "  %s: %s\n    %s\n    fix: %s\n", w.Field, w.Guarantee, w.Problem, w.Fix)
	}
}

// printFileWarnings prints the warnings of the target file at config before a
// certification starts. A file that does not load prints nothing here: the
// certification reports its errors.
func printFileWarnings(out io.Writer, config string) {
	data, err := targetfile.ReadFile(config)
	if err != nil {
		return
	}
	dir, err := targetfile.BaseDir(config)
	if err != nil {
		return
	}
	if t, err := targetfile.Inspect(data, profiles.IDs(), targetfile.WithBaseDir(dir)); err == nil {
		printWarnings(out, append(t.Warnings(), unboundWarnings(t)...))
	}
}

// printValidation is validate's summary of what the file declares and what was
// checked.
func printValidation(out io.Writer, config string, hs *certify.Harness, noStart, hasLifecycle bool, reach error) {
	tg := hs.Target()
	p := painterFor(out)
	fmt.Fprintf(out, "\n%s %s: target %q at %s\n", p.paint(ansiGreen, "valid"), config, tg.Name, tg.BaseURL)
	if tg.Dir != "" {
		fmt.Fprintf(out, "  paths relative to %s\n", tg.Dir)
	}
	if len(tg.DeclaredProfiles) > 0 {
		var ids []string
		for _, c := range tg.DeclaredProfiles {
			ids = append(ids, c.ID)
		}
		fmt.Fprintf(out, "profiles declared: %s (a sample delivery of each is below)\n", strings.Join(ids, ", "))
	}
	fmt.Fprintln(out, "endpoints:")
	for i, ep := range tg.Endpoints {
		from := "inline"
		if ep.SecretEnv != "" {
			from = "$" + ep.SecretEnv
		}
		ack := ""
		if i < len(hs.Env.Endpoints) {
			e := hs.Env.Endpoints[i]
			ack = e.AckTimeout.String()
			if e.AckTimeoutModel {
				ack += " (hookcert's model)"
			}
		}
		fmt.Fprintf(out, "  %-18s source %s, account %s: %s (secret %s, ack timeout %s)\n", ep.Profile, ep.Source, ep.Account, tg.URL(ep.Path), from, ack)
	}
	fmt.Fprintf(out, "observer: %s\n", tg.Store.Field())
	dbURL, method := hs.Database()
	switch {
	case method != "":
		fmt.Fprintf(out, "database: the run's own (%s), dropped when validate ends\n", method)
	case dbURL != "":
		fmt.Fprintf(out, "database: %s\n", dbURL)
	}
	if s := tg.Setup; s != nil {
		fmt.Fprintf(out, "setup: ran %s\n", s)
	}
	switch {
	case !hasLifecycle && reach == nil:
		fmt.Fprintf(out, "receiver: no lifecycle; something accepts connections at %s\n", tg.BaseURL)
	case !hasLifecycle:
		fmt.Fprintf(out, "receiver: no lifecycle; %v (certify needs it running, exit 3 otherwise)\n", reach)
	case noStart:
		fmt.Fprintln(out, "receiver: not started (--no-start)")
	default:
		fmt.Fprintf(out, "receiver: started and ready at %s, stopped again\n", tg.URL(tg.Lifecycle.ReadyPath))
	}
	names := make([]string, 0)
	for name := range tg.Store.Queries.Named() {
		if from := tg.Store.Queries.From[name]; from != "" {
			name = strings.TrimPrefix(from, "target.")
		}
		names = append(names, name)
	}
	sort.Strings(names)
	checked := "prepared" // on the server
	if !tg.Store.SQL() {
		checked = "checked"
	}
	fmt.Fprintf(out, "queries %s: %s\n", checked, strings.Join(names, ", "))
	for _, name := range slices.Sorted(maps.Keys(hs.Unanswered())) {
		fmt.Fprintf(out, "  %s is not asked: %s\n", name, hs.Unanswered()[name])
	}
	if len(tg.Fixtures) > 0 {
		var fx []string
		for name, f := range tg.Fixtures {
			fx = append(fx, name+" ("+f.Kind()+")")
		}
		sort.Strings(fx)
		fmt.Fprintf(out, "fixtures: %s\n", strings.Join(fx, ", "))
	}
	if r := tg.Retention; r != nil {
		fmt.Fprintf(out, "retention: purge by %s\n", r.Purge.Kind())
	}
	caps := make([]string, len(tg.Capabilities))
	for i, c := range tg.Capabilities {
		caps[i] = string(c)
	}
	if len(caps) == 0 {
		caps = []string{"none"}
	}
	fmt.Fprintf(out, "capabilities: %s\n", strings.Join(caps, ", "))
	printRoles(out, hs.Env.Vocab)
	printApplicability(out, hs.Env)
}

func printRoles(out io.Writer, v *vocab.Vocabulary) {
	if v == nil || !v.Declared {
		fmt.Fprintln(out, "events: the built-in conformance vocabulary (docs/conformance-domain.md)")
		return
	}
	fmt.Fprintln(out, "events (declared roles):")
	role := func(name string, set bool, desc string) {
		if set {
			fmt.Fprintf(out, "  %-10s %s\n", name, desc)
		} else {
			fmt.Fprintf(out, "  %-10s not declared: the guarantees that send it are not applicable\n", name)
		}
	}
	if r := v.Effect; r != nil {
		role("effect", true, r.Type)
	} else {
		role("effect", false, "")
	}
	if l := v.Lifecycle; l != nil {
		var types []string
		for _, t := range l.Transitions {
			types = append(types, t.Type)
		}
		created := "fixture " + l.Fixture
		if l.Create != nil {
			created = l.Create.Type
		}
		role("lifecycle", true, fmt.Sprintf("%s from %s (created by %s): %s", l.Object, l.Initial, created, strings.Join(types, ", ")))
	} else {
		role("lifecycle", false, "")
	}
	if o := v.Ordered; o != nil {
		desc := fmt.Sprintf("%s ordered by %s", o.Type, o.Key)
		if o.Delete != nil {
			desc += ", deleted by " + o.Delete.Type
		}
		role("ordered", true, desc)
	} else {
		role("ordered", false, "")
	}
	if r := v.Unhandled; r != nil {
		role("unhandled", true, r.Type)
	} else {
		role("unhandled", false, "")
	}
}

// capabilityChecker is the suite's own decision whether a target has a
// capability (declared or derived from its endpoints), where the scenarios
// package exports it.
type capabilityChecker interface {
	Has(c scenarios.Capability) (bool, string)
}

// printApplicability lists the guarantees that would be not applicable, by the
// suite's own capability logic when it is exported; without it, which ones
// apply is only known once certify runs them.
func printApplicability(out io.Writer, env *scenarios.Env) {
	hc, ok := any(env).(capabilityChecker)
	if !ok {
		fmt.Fprintln(out, "not applicable: decided by each scenario when certify runs; the guarantees' needs are in `hookcert guarantees`")
		return
	}
	var na []string
	for _, g := range scenarios.Catalogue() {
		why := ""
		for _, need := range g.Needs {
			if has, w := hc.Has(need); !has {
				why = w
				break
			}
		}
		if why == "" {
			why = env.LedgerReason(&g)
		}
		if why != "" {
			na = append(na, fmt.Sprintf("  %-11s %s", g.ID, why))
		}
	}
	if len(na) == 0 {
		fmt.Fprintln(out, "not applicable: none by capability (a scenario may still find a role it needs missing)")
		return
	}
	fmt.Fprintf(out, "not applicable (%d, by capability):\n%s\n", len(na), strings.Join(na, "\n"))
}
