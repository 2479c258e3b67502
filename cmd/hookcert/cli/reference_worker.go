package cli

import (
	"errors"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/reference"
)

// inboxFlags are the inbox worker flags shared by serve and worker.
type inboxFlags struct {
	workers, maxAttempts int
	lease, pollInterval  time.Duration
	backoffBase          time.Duration
	backoffMax           time.Duration
	sinkURL              string
}

func (f *inboxFlags) register(fl *pflag.FlagSet, workersHelp string) {
	fl.IntVar(&f.workers, "workers", reference.DefaultWorkers, workersHelp)
	fl.IntVar(&f.maxAttempts, "max-attempts", reference.DefaultMaxAttempts, "inbox and outbox: attempts of an event or message before it is dead-lettered")
	fl.DurationVar(&f.lease, "lease", reference.DefaultLease, "inbox: how long a worker's claim lasts; a claim whose worker died is re-offered after it")
	fl.DurationVar(&f.pollInterval, "poll-interval", reference.DefaultPollInterval, "inbox: how often an idle worker looks for work")
	fl.DurationVar(&f.backoffBase, "backoff", reference.DefaultBackoffBase, "inbox and outbox: delay before the first retry of a failed event or message, doubled per attempt")
	fl.DurationVar(&f.backoffMax, "backoff-max", reference.DefaultBackoffMax, "inbox and outbox: longest delay between retries")
	fl.StringVar(&f.sinkURL, "sink-url", "", "outbox: applied charge.refunded and customer_cash_balance_transaction.created events write a message sent here (POST, JSON with the event_id, Idempotency-Key from the event key); empty: no outbox")
}

// outbox returns the outbox options of the flags.
func (f inboxFlags) outbox() (reference.OutboxOptions, error) {
	o := reference.OutboxOptions{SinkURL: f.sinkURL}
	if err := o.Validate(); err != nil {
		return o, usageErr("--sink-url: %v", err)
	}
	return o, nil
}

// options checks the flags; zeroNone maps --workers 0 to no in-process worker.
func (f inboxFlags) options(zeroNone bool) (reference.InboxOptions, error) {
	switch {
	case f.workers < 0 || (!zeroNone && f.workers == 0):
		least := 0
		if !zeroNone {
			least = 1
		}
		return reference.InboxOptions{}, usageErr("--workers: must be at least %d, got %d", least, f.workers)
	case f.maxAttempts < 1:
		return reference.InboxOptions{}, usageErr("--max-attempts: must be at least 1, got %d", f.maxAttempts)
	case f.lease <= 0:
		return reference.InboxOptions{}, usageErr("--lease: must be positive, got %s", f.lease)
	case f.pollInterval <= 0:
		return reference.InboxOptions{}, usageErr("--poll-interval: must be positive, got %s", f.pollInterval)
	case f.backoffBase <= 0 || f.backoffMax < f.backoffBase:
		return reference.InboxOptions{}, usageErr("--backoff and --backoff-max: must be positive, --backoff-max at least --backoff")
	}
	o := reference.InboxOptions{Workers: f.workers, MaxAttempts: f.maxAttempts, Lease: f.lease,
		PollInterval: f.pollInterval, BackoffBase: f.backoffBase, BackoffMax: f.backoffMax}
	if o.Workers == 0 {
		o.Workers = -1 // InboxOptions: negative is none, 0 the default
	}
	return o, nil
}

type referenceWorkerFlags struct {
	databaseURL, config, logFormat string
	defects                        []string
	inbox                          inboxFlags
}

func newReferenceWorkerCmd() *cobra.Command {
	var f referenceWorkerFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run inbox workers without HTTP until SIGINT or SIGTERM",
		Long: `Worker runs the inbox workers of "hookcert reference serve --mode inbox" in a
process of their own, on the same database, so that a worker can crash alone. It
claims pending events (FOR UPDATE SKIP LOCKED, with a lease), applies each and marks
it done in one transaction, retries failures with backoff, dead-letters an event
after --max-attempts, and re-offers claims whose lease expired. Any number of worker
processes and in-process workers can share one database. With --sink-url, applied
refunds and credits write outbox messages and this process also dispatches them.
--defect takes the inbox and outbox defects (see "hookcert reference defects").

The database is --database-url, else $HOOKCERT_DATABASE_URL; it is never provisioned
(the worker must share the receiver's). --config is checked as serve checks it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReferenceWorker(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.databaseURL, "database-url", "", "PostgreSQL URL of the receiver (default $HOOKCERT_DATABASE_URL; a password here is visible in ps, prefer the variable)")
	fl.StringVar(&f.config, "config", "", "endpoints YAML file of the receiver (validated only; events carry their own key)")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format on stderr: text or json")
	fl.StringArrayVar(&f.defects, "defect", nil, "activate a named inbox or outbox defect in these workers (repeatable; see \"hookcert reference defects\")")
	f.inbox.register(fl, "workers in this process")
	return cmd
}

func runReferenceWorker(cmd *cobra.Command, f referenceWorkerFlags) error {
	opts, err := f.inbox.options(false)
	if err != nil {
		return err
	}
	var logHandler slog.Handler
	switch f.logFormat {
	case "text":
		logHandler = slog.NewTextHandler(cmd.ErrOrStderr(), nil)
	case "json":
		logHandler = slog.NewJSONHandler(cmd.ErrOrStderr(), nil)
	default:
		return usageErr("--log-format: must be text or json, got %q", f.logFormat)
	}
	log := slog.New(logHandler)
	if f.config != "" {
		if _, err := reference.LoadConfig(f.config); err != nil {
			return usageErr("--config: %v", err)
		}
	}
	dbURL := givenDatabaseURL(log, f.databaseURL)
	if dbURL == "" {
		return usageErr("--database-url: required (or $%s): a worker must share the receiver's database", pgprovision.EnvDatabaseURL)
	}
	outbox, err := f.inbox.outbox()
	if err != nil {
		return err
	}
	if err := reference.ValidateDefectsFor(f.defects, reference.ModeInbox, outbox.SinkURL != ""); err != nil {
		return usageErr("--defect: %v", err)
	}
	opts.Defects, outbox.Defects = f.defects, f.defects
	if err := reference.RunWorkers(cmd.Context(), dbURL, opts, outbox, log); err != nil {
		err = scrub.New(scrub.Password(dbURL)).Error(err)
		if errors.Is(err, reference.ErrUnreachable) {
			return &ExitError{Code: ExitUnreachable, Err: err}
		}
		return &ExitError{Code: ExitFailed, Err: err}
	}
	return nil
}
