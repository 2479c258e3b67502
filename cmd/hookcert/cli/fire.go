package cli

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// fireMaxRows bounds the attempt table; the full record goes to --history.
const fireMaxRows = 40

type fireFlags struct {
	profile, url, secret, account                  string
	profileFile, config                            string
	eventType, eventID, objectID, currency, status string
	amount, version, seed                          int64
	copies, maxAttempts, oversize, padTo           int
	lostAck, history, plan, object, created        string
	retry, tamper, wrongSecret, missingSig         bool
	missingID, malformed, dryRun, deterministicIDs bool
	timeScale                                      float64
	timeout, stale, ahead                          time.Duration
	retryDelays                                    []time.Duration
}

// firePlanFlags are the flags that shape the plan; --plan says all of that itself.
var firePlanFlags = []string{"event-type", "event-id", "object-id", "amount", "currency", "status", "version",
	"object", "created", "copies", "lost-ack", "retry", "time-scale", "timeout", "retry-delays", "max-attempts",
	"tamper", "wrong-secret", "missing-signature", "missing-id", "malformed-json", "oversize", "stale-timestamp",
	"ahead-timestamp", "pad-to"}

// dryRunBodyLimit bounds the body --dry-run prints; a longer one is shown by
// its head and tail (padding and oversize bodies run to megabytes).
const dryRunBodyLimit = 64 << 10

func newFireCmd() *cobra.Command {
	var f fireFlags
	cmd := &cobra.Command{
		Use:   "fire",
		Short: "Deliver one event to a receiver the way a provider would, with faults",
		Long: `fire delivers one event to a webhook receiver as the chosen provider profile
would: signed, optionally as N concurrent copies released together, with faults
(lost acknowledgement, tampered body, wrong secret, stale timestamp, …), and
optionally followed through the provider's retry schedule on a compressed clock
(--time-scale 3600 = one provider hour per real second; signatures always carry
the real send time).

--plan FILE runs a YAML plan (its format: docs/plans.md) instead of the one
event the flags describe; the plan then says everything about events, steps and
faults, and only --profile, --url, --secret, --account, --seed,
--deterministic-ids, --history and --dry-run combine with it. --object gives the
target's own business object (JSON, or @file), placed where the profile's
envelope carries the object; --pad-to pads the legitimate body to an exact size.

--dry-run prints, for each step, the request its first attempt would send
(method, URL, every header, body) and sends nothing.

A provider hookcert has no built-in profile for is declared in a YAML file's
top-level profiles: list (docs/target.md, "Declaring a provider"): a file of
profiles (--profile-file) or a target file (--config, whose other sections are
not read); --profile then names it.

Event and object IDs the flags or the plan leave empty are new on every
invocation: a fresh nonce is mixed into them, so two runs with one --seed (or
one plan file) never deliver the same event twice by accident. --seed still
fixes every other choice (copies, jitter, order); --deterministic-ids derives
the IDs from the seed alone, as the plan with that seed would, to resend the
same events on purpose (a dry run then shows the IDs a later run sends).

The body of every answer that is not 2xx is printed (its first 512 bytes, with
the secret and well-known secret patterns removed) below the attempt table.

The secret comes from --secret or the HOOKCERT_SECRET environment variable (so
it stays out of shell history); it is never printed.

Exit status: 0 when every delivery ended acknowledged (or after --dry-run), 1
otherwise, 2 on usage errors, 3 when the receiver could not be reached at all.`,
		Example: `  HOOKCERT_SECRET=whsec_... hookcert fire --profile stripe \
    --url http://127.0.0.1:8080/webhooks/stripe/acct_A \
    --event-type payment_intent.succeeded --copies 16 --lost-ack --retry --time-scale 3600
  HOOKCERT_SECRET=acme_sk_... hookcert fire --profile acme --profile-file acme.yaml \
    --url http://127.0.0.1:8080/acme/acct_alpha/events --event-type credit.granted`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFire(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", "", "provider profile ("+strings.Join(profiles.IDs(), ", ")+", or one --profile-file or --config declares)")
	fl.StringVar(&f.profileFile, "profile-file", "", "a YAML file whose top-level profiles: list declares --profile (docs/target.md, \"Declaring a provider\")")
	fl.StringVar(&f.config, "config", "", "a target file whose profiles: list declares --profile")
	fl.StringVar(&f.url, "url", "", "receiver endpoint URL for this profile and account")
	fl.StringVar(&f.secret, "secret", "", "signing secret (default: env HOOKCERT_SECRET)")
	fl.StringVar(&f.account, "account", "acct_A", "account scope of the endpoint")
	fl.StringVar(&f.eventType, "event-type", "payment_intent.succeeded", "event type")
	fl.StringVar(&f.eventID, "event-id", "", "event ID (default: a fresh one in the provider's format; from --seed with --deterministic-ids)")
	fl.StringVar(&f.objectID, "object-id", "", "business object ID (default: a fresh one; from --seed with --deterministic-ids)")
	fl.Int64Var(&f.amount, "amount", 1000, "object amount in minor units")
	fl.StringVar(&f.currency, "currency", "usd", "object currency")
	fl.StringVar(&f.status, "status", "", "object status")
	fl.Int64Var(&f.version, "version", 0, "object version (versioned updates)")
	fl.Int64Var(&f.seed, "seed", 0, "seed for retry jitter and, with --deterministic-ids, the IDs (default: from the clock, printed)")
	fl.IntVar(&f.copies, "copies", 1, "concurrent copies released together over pre-opened connections (1-1024)")
	fl.StringVar(&f.lostAck, "lost-ack", "", "lose the acknowledgement: close (default when given bare) or discard")
	fl.Lookup("lost-ack").NoOptDefVal = simulator.LostAckClose
	fl.BoolVar(&f.retry, "retry", false, "follow the profile's retry schedule until acknowledged, stopped or exhausted")
	fl.Float64Var(&f.timeScale, "time-scale", 3600, "provider seconds per real second for retry waits")
	fl.DurationVar(&f.timeout, "timeout", 0, "per-attempt response timeout (default: the profile's, else 15s)")
	fl.DurationSliceVar(&f.retryDelays, "retry-delays", nil, "retry delays in provider time, e.g. 5s,5m,30m (default: the profile's)")
	// pflag would add "(default [])" after the usage's own default.
	fl.Lookup("retry-delays").DefValue = ""
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "cap on attempts per delivery, first included (default: the schedule's)")
	fl.StringVar(&f.history, "history", "", "write the history as JSON Lines to this file")
	fl.BoolVar(&f.tamper, "tamper", false, "send a body that differs from the signed one")
	fl.BoolVar(&f.wrongSecret, "wrong-secret", false, "sign with a secret the receiver does not hold")
	fl.BoolVar(&f.missingSig, "missing-signature", false, "drop the signature")
	fl.BoolVar(&f.missingID, "missing-id", false, "drop the event ID")
	fl.BoolVar(&f.malformed, "malformed-json", false, "send truncated JSON, signed correctly")
	fl.IntVar(&f.oversize, "oversize", 0, "pad the body to this many bytes, signed correctly")
	fl.DurationVar(&f.stale, "stale-timestamp", 0, "sign with a timestamp this far in the past")
	fl.DurationVar(&f.ahead, "ahead-timestamp", 0, "sign with a timestamp this far in the future")
	fl.IntVar(&f.padTo, "pad-to", 0, "pad the valid body to exactly this many bytes with JSON whitespace (not a fault)")
	fl.StringVar(&f.object, "object", "", "the target's own business object as JSON, or @FILE (replaces the built-in object fields)")
	fl.StringVar(&f.created, "created", "", "event creation time, RFC 3339 (default: now)")
	fl.StringVar(&f.plan, "plan", "", "run this YAML plan instead of the one event the flags describe")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print each step's first request (method, URL, headers, body) and send nothing")
	fl.BoolVar(&f.deterministicIDs, "deterministic-ids", false, "derive event and object IDs from --seed alone (default: fresh IDs on every invocation)")
	return cmd
}

func (f *fireFlags) validate() error {
	switch {
	case f.profile == "":
		return usageErr("--profile is required (one of %s, or one --profile-file or --config declares)", strings.Join(profiles.IDs(), ", "))
	case f.url == "":
		return usageErr("--url is required")
	case f.copies < 1 || f.copies > simulator.MaxCopies:
		return usageErr("--copies must be between 1 and %d, got %d", simulator.MaxCopies, f.copies)
	case f.lostAck != "" && f.lostAck != simulator.LostAckClose && f.lostAck != simulator.LostAckDiscard:
		return usageErr("--lost-ack must be close or discard, got %q", f.lostAck)
	case f.timeScale <= 0:
		return usageErr("--time-scale must be greater than 0, got %g", f.timeScale)
	case f.timeout < 0:
		return usageErr("--timeout must not be negative")
	case f.stale < 0:
		return usageErr("--stale-timestamp must not be negative")
	case f.ahead < 0:
		return usageErr("--ahead-timestamp must not be negative")
	case f.stale > 0 && f.ahead > 0:
		return usageErr("--stale-timestamp and --ahead-timestamp must not both be given")
	case f.padTo < 0:
		return usageErr("--pad-to must not be negative")
	case f.oversize < 0:
		return usageErr("--oversize must not be negative")
	case f.maxAttempts < 0:
		return usageErr("--max-attempts must not be negative")
	case f.eventType == "":
		return usageErr("--event-type must not be empty")
	}
	return nil
}

func runFire(cmd *cobra.Command, f *fireFlags) error {
	if err := f.validate(); err != nil {
		return err
	}
	d, err := readDeclared(f.profileFile, f.config)
	if err != nil {
		return err
	}
	p, err := d.lookup(f.profile)
	if err != nil {
		return err
	}
	if f.secret == "" {
		f.secret = os.Getenv("HOOKCERT_SECRET")
	}
	if f.secret == "" {
		return usageErr("--secret or env HOOKCERT_SECRET is required")
	}
	plan, err := f.buildPlan(cmd)
	if err != nil {
		return err
	}
	if !f.deterministicIDs {
		if err := freshIDs(plan, p, f.account); err != nil {
			return usageErr("%v", err)
		}
	}
	r, err := simulator.NewRunner(simulator.Target{URL: f.url, Profile: p, Secrets: []string{f.secret}, Account: f.account},
		simulator.Options{})
	if err != nil {
		return usageErr("--url: %v", err)
	}
	defer r.Close()
	if f.dryRun {
		reqs, err := r.Preview(plan)
		if err != nil {
			return usageErr("%v", err)
		}
		printDryRun(cmd.OutOrStdout(), p.ID(), plan.Seed, reqs, f.secret)
		return nil
	}
	h, runErr := r.Run(cmd.Context(), plan)
	if h == nil {
		return usageErr("%v", runErr)
	}
	printFire(cmd.OutOrStdout(), h, scrub.New(f.secret))
	if f.history != "" {
		if err := writeHistory(f.history, h, scrub.New(f.secret)); err != nil {
			return &ExitError{Code: ExitFailed, Err: err}
		}
		fmt.Fprintf(cmd.OutOrStdout(), "history: %s\n", f.history)
	}
	if runErr != nil {
		return &ExitError{Code: ExitFailed, Err: runErr}
	}
	if unreachable(h) {
		return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("receiver %s unreachable: every attempt failed to connect", h.Meta.TargetURL)}
	}
	if !h.AllAcknowledged() {
		bad := 0
		for _, d := range h.Deliveries() {
			if d.Final != history.OutcomeAcknowledged {
				bad++
			}
		}
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d of %d deliveries did not end acknowledged", bad, len(h.Deliveries()))}
	}
	return nil
}

// buildPlan reads --plan, or builds the one-event plan the flags describe.
func (f *fireFlags) buildPlan(cmd *cobra.Command) (*simulator.Plan, error) {
	if f.plan != "" {
		for _, name := range firePlanFlags {
			if cmd.Flags().Changed(name) {
				return nil, usageErr("--%s cannot be combined with --plan (the plan says it)", name)
			}
		}
		plan, err := simulator.LoadPlanFile(f.plan)
		if err != nil {
			return nil, usageErr("--plan: %v", err)
		}
		if cmd.Flags().Changed("seed") {
			plan.Seed = f.seed
		}
		return plan, nil
	}
	if !cmd.Flags().Changed("seed") {
		f.seed = time.Now().UnixNano()
	}
	ev := simulator.EventSpec{Name: "event", ID: f.eventID, Type: f.eventType, ObjectID: f.objectID,
		Amount: f.amount, Currency: f.currency, Status: f.status, Version: f.version}
	if f.object != "" {
		obj := []byte(f.object)
		if path, ok := strings.CutPrefix(f.object, "@"); ok {
			var err error
			if obj, err = os.ReadFile(path); err != nil {
				return nil, usageErr("--object: %v", err)
			}
		}
		ev.Object = json.RawMessage(obj)
	}
	if f.created != "" {
		t, err := time.Parse(time.RFC3339Nano, f.created)
		if err != nil {
			return nil, usageErr("--created must be an RFC 3339 time like 2025-06-01T12:30:00Z: %v", err)
		}
		ev.Created = t
	}
	plan := &simulator.Plan{
		Name: "fire", Seed: f.seed, TimeScale: f.timeScale, Timeout: simulator.Duration(f.timeout), MaxAttempts: f.maxAttempts,
		Events: []simulator.EventSpec{ev},
		Steps: []simulator.Step{{Event: "event", Copies: f.copies, Retry: f.retry, Shape: simulator.Shape{
			PadTo: f.padTo, Faults: simulator.Faults{
				LostAck: f.lostAck, Tamper: f.tamper, WrongSecret: f.wrongSecret, MissingSignature: f.missingSig,
				MissingID: f.missingID, MalformedJSON: f.malformed, OversizeBytes: f.oversize,
				StaleBy: simulator.Duration(f.stale), AheadBy: simulator.Duration(f.ahead)}}}},
	}
	for _, d := range f.retryDelays {
		plan.RetryDelays = append(plan.RetryDelays, simulator.Duration(d))
	}
	if err := plan.Validate(); err != nil {
		return nil, usageErr("%v", err)
	}
	return plan, nil
}

// printDryRun writes each previewed request as it would go on the wire
// (headers sorted). The secret is never part of a request; it is replaced
// all the same should an event field carry it.
func printDryRun(w io.Writer, profile string, seed int64, reqs []simulator.Request, secret string) {
	var b strings.Builder
	fmt.Fprintf(&b, "dry run: nothing sent  profile %s  seed %d  steps %d\n", profile, seed, len(reqs))
	for _, q := range reqs {
		fmt.Fprintf(&b, "\n# step %d", q.Step)
		if q.StepName != "" {
			fmt.Fprintf(&b, " (%s)", q.StepName)
		}
		fmt.Fprintf(&b, ": event %q key %s, attempt %d, %d cop%s, signed at %s, body %d bytes",
			q.Event, q.Key.EventID, q.Attempt, q.Copies, map[bool]string{true: "y", false: "ies"}[q.Copies == 1],
			q.SignedAt.Format(time.RFC3339), len(q.Body))
		if len(q.Faults) > 0 {
			fmt.Fprintf(&b, ", faults %s", strings.Join(q.Faults, ","))
		}
		if q.PadTo > 0 {
			fmt.Fprintf(&b, ", padded to %d", q.PadTo)
		}
		fmt.Fprintf(&b, "\n%s %s\n", q.Method, q.URL)
		keys := make([]string, 0, len(q.Header))
		for k := range q.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			for _, v := range q.Header[k] {
				fmt.Fprintf(&b, "%s: %s\n", k, v)
			}
		}
		b.WriteString("\n")
		if body := q.Body; len(body) <= dryRunBodyLimit {
			b.Write(body)
		} else {
			half := dryRunBodyLimit / 2
			b.Write(body[:half])
			fmt.Fprintf(&b, "\n… %d bytes not shown …\n", len(body)-2*half)
			b.Write(body[len(body)-half:])
		}
		b.WriteString("\n")
	}
	out := b.String()
	if secret != "" {
		out = strings.ReplaceAll(out, secret, "[REDACTED]")
	}
	io.WriteString(w, out)
}

func unreachable(h *history.History) bool {
	for _, a := range h.Attempts {
		if a.ErrorClass != history.ErrClassRefused {
			return false
		}
	}
	return len(h.Attempts) > 0
}

// writeHistory writes h to path, scrubbed: a receiver's answer, which the
// history keeps an excerpt of, may quote the secret.
func writeHistory(path string, h *history.History, sc *scrub.Scrubber) error {
	var b strings.Builder
	if err := h.WriteJSONL(&b); err != nil {
		return fmt.Errorf("--history: %w", err)
	}
	if err := os.WriteFile(path, []byte(sc.String(b.String())), 0o644); err != nil {
		return fmt.Errorf("--history: %w", err)
	}
	return nil
}

// freshIDs fills the event and object IDs plan leaves empty from a random
// nonce instead of the plan's seed, in the provider's formats (Resolve's, or
// a declared profile's ids.event), so that no two invocations send the same
// event. A provider whose receivers derive the event key (no event ID sent)
// keeps an empty ID.
func freshIDs(plan *simulator.Plan, p profiles.Profile, account string) error {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("a nonce for fresh event IDs: %w", err)
	}
	nonced := *plan
	nonced.Seed = int64(binary.LittleEndian.Uint64(b[:]) >> 1)
	rp, err := nonced.Resolve(p.ID(), account, time.Now())
	if err != nil {
		return err
	}
	// A declared profile is not in the registry Resolve shapes IDs from: it
	// draws its own.
	maker, _ := p.(profiles.EventIDMaker)
	if _, registered := profiles.Lookup(p.ID()); registered == nil {
		maker = nil
	}
	for i, e := range plan.Events {
		if e.ID == "" {
			plan.Events[i].ID = rp.Events[e.Name].ID
			if maker != nil && rp.Events[e.Name].ID != "" {
				plan.Events[i].ID = maker.MakeEventID(mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(b[:]), uint64(i))))
			}
		}
		if e.ObjectID == "" {
			plan.Events[i].ObjectID = rp.Events[e.Name].ObjectID
		}
	}
	return nil
}

func printFire(w io.Writer, h *history.History, sc *scrub.Scrubber) {
	key := ""
	if len(h.Attempts) > 0 {
		key = h.Attempts[0].Key.EventID + " (" + h.Attempts[0].EventType + ")"
	}
	fmt.Fprintf(w, "profile %s  target %s  seed %d  event %s\n", h.Meta.Profile, h.Meta.TargetURL, h.Meta.Seed, key)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COPY\tATTEMPT\tSTART\tTOOK\tSTATUS\tOUTCOME\tERROR\tFAULTS")
	for i, a := range h.Attempts {
		if i == fireMaxRows {
			fmt.Fprintf(tw, "… %d more attempts (see --history)\n", len(h.Attempts)-fireMaxRows)
			break
		}
		status := "-"
		if a.Status != 0 {
			status = fmt.Sprint(a.Status)
		}
		fmt.Fprintf(tw, "%d\t%d\t%v\t%v\t%s\t%s\t%s\t%s\n", a.Copy, a.Attempt,
			time.Duration(a.StartNS).Round(time.Microsecond), a.Duration().Round(time.Microsecond),
			status, a.Outcome, dash(a.ErrorClass), dash(strings.Join(a.Faults, ",")))
	}
	tw.Flush()
	c := h.OutcomeCounts()
	fmt.Fprintf(w, "attempts %d: acknowledged %d, failed %d, unknown %d\n", len(h.Attempts),
		c[history.OutcomeAcknowledged], c[history.OutcomeFailed], c[history.OutcomeUnknown])
	acked := 0
	for _, d := range h.Deliveries() {
		if d.Final == history.OutcomeAcknowledged {
			acked++
		}
	}
	fmt.Fprintf(w, "deliveries %d: %d ended acknowledged\n", len(h.Deliveries()), acked)
	for _, rel := range h.Releases {
		fmt.Fprintf(w, "release: %d of %d copies released, send spread %v\n", rel.Released, rel.Copies, time.Duration(rel.SpreadNS))
	}
	printAnswers(w, h.Attempts, sc)
}

// fireMaxBodies bounds the distinct non-2xx answers printed; a receiver
// usually answers every refused delivery alike.
const fireMaxBodies = 5

// printAnswers prints the body of each distinct non-2xx answer: why the
// receiver refused a delivery is usually in it. Bodies are the excerpts the
// history keeps (simulator.ExcerptLimit bytes), scrubbed, with control and
// invisible characters escaped so an answer cannot drive the terminal.
func printAnswers(w io.Writer, as []history.Attempt, sc *scrub.Scrubber) {
	type answer struct {
		first history.Attempt
		n     int
	}
	var order []string
	seen := map[string]*answer{}
	for _, a := range as {
		if a.Status == 0 || a.Status/100 == 2 {
			continue
		}
		k := fmt.Sprintf("%d\x00%s", a.Status, a.ResponseExcerpt)
		if seen[k] == nil {
			seen[k] = &answer{first: a}
			order = append(order, k)
		}
		seen[k].n++
	}
	for i, k := range order {
		if i == fireMaxBodies {
			fmt.Fprintf(w, "… %d more distinct answers (see --history)\n", len(order)-fireMaxBodies)
			break
		}
		a := seen[k]
		fmt.Fprintf(w, "answer %d (copy %d, attempt %d", a.first.Status, a.first.Copy, a.first.Attempt)
		if a.n > 1 {
			fmt.Fprintf(w, ", and %d more alike", a.n-1)
		}
		body := a.first.ResponseExcerpt
		switch {
		case body == "":
			fmt.Fprintln(w, "): empty body")
			continue
		case len(body) >= simulator.ExcerptLimit:
			fmt.Fprintf(w, ", first %d bytes", simulator.ExcerptLimit)
		}
		fmt.Fprintf(w, "): %s\n", reports.OneLine(strings.TrimRight(sc.String(body), "\r\n")))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
