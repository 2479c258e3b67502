package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/reference"
)

func newReferenceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reference",
		Short: "The reference webhook receiver (see docs/reference.md)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newReferenceServeCmd(), newReferenceDefectsCmd(), newReferencePurgeCmd(), newReferenceWorkerCmd())
	return cmd
}

func newReferenceDefectsCmd() *cobra.Command {
	var store string
	cmd := &cobra.Command{
		Use:   "defects [--store mysql]",
		Short: "List the defects the reference receiver can be started with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validStore(store); err != nil {
				return err
			}
			if store == storeMySQL {
				printMySQLDefects(cmd.OutOrStdout())
				return nil
			}
			for _, d := range reference.Defects() {
				fmt.Fprintf(cmd.OutOrStdout(), "%-22s %s\n", d.Name, d.Description)
			}
			return nil
		},
	}
	addStoreFlag(cmd, &store, "which reference's defects: postgres, or mysql (the MySQL/MariaDB reference)")
	return cmd
}

type referenceServeFlags struct {
	listen, databaseURL, config, logFormat string
	defects                                []string
	enableFailpoints, keepDatabase         bool
	enableAdmin                            bool
	maxBodyBytes                           int64
	maxConns                               int
	tolerance, purgeInterval               time.Duration
	mode                                   string
	inbox                                  inboxFlags
	// store is postgres (the reference) or mysql (reference/mysqlref).
	store string
}

func newReferenceServeCmd() *cobra.Command {
	var f referenceServeFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference receiver until SIGINT or SIGTERM",
		Long: `Serve runs the reference receiver: the endpoints from --config (or the documented
default set, printed with its public TEST secrets), /healthz, /metrics and, with
--enable-failpoints, /_hookcert/failpoints. PostgreSQL comes from --database-url,
else $HOOKCERT_DATABASE_URL (use it for a URL with a password: a command line is
visible to every user of the machine), else is provisioned automatically (a
container where a Docker engine answers, else local PostgreSQL binaries) and dropped
on exit.

Defects (--defect, repeatable) break the receiver on purpose; see
"hookcert reference defects". Most run in --mode sync only; the inbox defects need
--mode inbox, the outbox defects --sink-url (either mode). On SIGINT/SIGTERM
in-flight deliveries finish first.

--store mysql serves the small MySQL/MariaDB reference instead (Stripe endpoints
only, sync design, defects of "hookcert reference defects --store mysql"): its
database, a mysql:// URL, comes from --database-url or $HOOKCERT_DATABASE_URL and
is never provisioned; --config is then its own endpoints file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validStore(f.store); err != nil {
				return err
			}
			if f.store == storeMySQL {
				return runReferenceServeMySQL(cmd, f)
			}
			return runReferenceServe(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on")
	fl.StringVar(&f.databaseURL, "database-url", "", "PostgreSQL URL (default $HOOKCERT_DATABASE_URL, else provisioned automatically; a password here is visible in ps, prefer the variable)")
	fl.StringVar(&f.config, "config", "", "endpoints YAML file (default: the documented test endpoints)")
	fl.StringArrayVar(&f.defects, "defect", nil, "activate a named defect (repeatable): "+strings.Join(reference.DefectNames(), ", "))
	fl.BoolVar(&f.enableFailpoints, "enable-failpoints", false, "mount /_hookcert/failpoints (testing only: lets anyone who can reach it crash the receiver)")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", reference.DefaultMaxBodyBytes, "largest accepted request body; larger gets 413")
	fl.IntVar(&f.maxConns, "max-conns", reference.DefaultMaxConns, "database connection pool size (unless the URL sets pool_max_conns)")
	fl.DurationVar(&f.tolerance, "tolerance", 0, "signed-timestamp tolerance (default: each profile's documented value, 5m for stripe, standard-webhooks, svix)")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format on stderr: text or json")
	fl.BoolVar(&f.keepDatabase, "keep-database", false, "keep an automatically provisioned database on exit")
	fl.BoolVar(&f.enableAdmin, "enable-admin", false, "mount POST "+reference.AdminPurgePath+" (purge as of a given time; --enable-failpoints mounts it too)")
	fl.DurationVar(&f.purgeInterval, "purge-interval", reference.DefaultPurgeInterval, "how often the in-process purger applies the endpoints' key and payload TTLs (negative: off)")
	fl.StringVar(&f.mode, "mode", reference.ModeSync, "sync (apply before answering 200) or inbox (store, answer 202, workers apply)")
	f.inbox.register(fl, "in-process inbox workers (0: none; run \"hookcert reference worker\" instead)")
	addStoreFlag(cmd, &f.store, "postgres (the reference) or mysql (the MySQL/MariaDB reference; see above)")
	return cmd
}

func runReferenceServe(cmd *cobra.Command, f referenceServeFlags) error {
	inboxOpts, outboxOpts, err := f.validate()
	if err != nil {
		return err
	}
	log, err := serveLogger(cmd.ErrOrStderr(), f.logFormat)
	if err != nil {
		return err
	}
	endpoints, err := serveEndpoints(cmd.OutOrStdout(), f)
	if err != nil {
		return err
	}

	ctx := cmd.Context()
	dbURL, cleanup, err := serveDatabase(ctx, log, f)
	if err != nil {
		return err
	}
	defer cleanup()

	srv, err := reference.Open(ctx, dbURL, reference.Options{
		Endpoints:        endpoints,
		Defects:          f.defects,
		EnableFailpoints: f.enableFailpoints,
		EnableAdmin:      f.enableAdmin,
		PurgeInterval:    f.purgeInterval,
		MaxBodyBytes:     f.maxBodyBytes,
		Tolerance:        f.tolerance,
		Logger:           log,
		Mode:             f.mode,
		Inbox:            inboxOpts,
		Outbox:           outboxOpts,
		MaxConns:         int32(f.maxConns),
	})
	if err != nil {
		// A driver error may quote the password; Main prints this one.
		err = scrub.New(scrub.Password(dbURL)).Error(err)
		if errors.Is(err, reference.ErrUnreachable) {
			return &ExitError{Code: ExitUnreachable, Err: err}
		}
		return &ExitError{Code: ExitFailed, Err: err}
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("--listen: %w", err)}
	}
	if err := srv.Serve(ctx, ln); err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	return nil
}

// validate checks the flags, the inbox and outbox ones included, and returns
// the options those give.
func (f referenceServeFlags) validate() (inbox reference.InboxOptions, outbox reference.OutboxOptions, err error) {
	fail := func(err error) (reference.InboxOptions, reference.OutboxOptions, error) {
		return reference.InboxOptions{}, reference.OutboxOptions{}, err
	}
	if err := reference.ValidateDefects(f.defects); err != nil {
		return fail(usageErr("--defect: %v", err))
	}
	if f.maxBodyBytes <= 0 {
		return fail(usageErr("--max-body-bytes: must be positive, got %d", f.maxBodyBytes))
	}
	if f.tolerance < 0 {
		return fail(usageErr("--tolerance: must not be negative, got %s", f.tolerance))
	}
	if f.maxConns < 1 || f.maxConns > 1000 {
		return fail(usageErr("--max-conns: must be between 1 and 1000, got %d", f.maxConns))
	}
	if f.purgeInterval == 0 {
		return fail(usageErr("--purge-interval: must not be 0 (negative turns the purger off)"))
	}
	if f.mode != reference.ModeSync && f.mode != reference.ModeInbox {
		return fail(usageErr("--mode: must be %s or %s, got %q", reference.ModeSync, reference.ModeInbox, f.mode))
	}
	if inbox, err = f.inbox.options(true); err != nil {
		return fail(err)
	}
	if outbox, err = f.inbox.outbox(); err != nil {
		return fail(err)
	}
	if err := reference.ValidateDefectsFor(f.defects, f.mode, outbox.SinkURL != ""); err != nil {
		return fail(usageErr("--defect: %v", err))
	}
	return inbox, outbox, nil
}

// serveLogger is the reference's logger on w, in --log-format.
func serveLogger(w io.Writer, format string) (*slog.Logger, error) {
	var logHandler slog.Handler
	switch format {
	case "text":
		logHandler = slog.NewTextHandler(w, nil)
	case "json":
		logHandler = slog.NewJSONHandler(w, nil)
	default:
		return nil, usageErr("--log-format: must be text or json, got %q", format)
	}
	return slog.New(logHandler), nil
}

// serveEndpoints are the endpoints of --config, else the default ones, printed
// on out with their public test secrets.
func serveEndpoints(out io.Writer, f referenceServeFlags) ([]reference.Endpoint, error) {
	if f.config != "" {
		cfg, err := reference.LoadConfigWithDefects(f.config, f.defects)
		if err != nil {
			return nil, usageErr("--config: %v", err)
		}
		return cfg.Endpoints, nil
	}
	endpoints := reference.DefaultEndpoints()
	printDefaultEndpoints(out, endpoints)
	return endpoints, nil
}

// serveDatabase is the database the reference serves from: the one it was
// given, else one provisioned now, which cleanup drops (unless
// --keep-database) once the receiver has stopped.
func serveDatabase(ctx context.Context, log *slog.Logger, f referenceServeFlags) (dbURL string, cleanup func(), err error) {
	dbURL = givenDatabaseURL(log, f.databaseURL)
	if dbURL != "" {
		return dbURL, func() {}, nil
	}
	db, drop, err := pgprovision.Provision(ctx, pgprovision.Options{KeepDatabase: f.keepDatabase, NamePrefix: "hookcert_ref", Logger: log})
	if err != nil {
		return "", nil, &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("no database: %w", err)}
	}
	cleanup = func() {
		// The serve context is cancelled by now; cleanup needs its own.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := drop(cctx); err != nil {
			log.Warn("database cleanup failed", "err", err)
		}
	}
	log.Info("database provisioned automatically", "method", db.Method, "server", db.Server, "database", db.Name, "kept_on_exit", f.keepDatabase)
	return db.URL, cleanup, nil
}

// printDefaultEndpoints prints the default endpoints WITH their secrets: they are
// public test values from providers' docs, and a user needs them to sign requests.
func printDefaultEndpoints(w io.Writer, eps []reference.Endpoint) {
	fmt.Fprintln(w, "No --config: serving the default endpoints. Their secrets are PUBLIC TEST SECRETS")
	fmt.Fprintln(w, "from providers' documentation (TEST ONLY, never for real traffic):")
	for _, e := range eps {
		fmt.Fprintf(w, "  %-36s profile=%-17s account=%-7s secret=%s\n", e.Path, e.Profile, e.Account, e.Secret)
	}
}

// givenDatabaseURL is the database the reference was given: --database-url
// (warned about when it carries a password, which ps shows), else
// $HOOKCERT_DATABASE_URL; "" when neither is set.
func givenDatabaseURL(log *slog.Logger, flag string) string {
	switch {
	case flag != "":
		log.Info("database from --database-url", "url", pgprovision.Redact(flag))
		if scrub.Password(flag) != "" {
			log.Warn("--database-url carries a password, which every user of this machine can read in the process list; pass it in $" + pgprovision.EnvDatabaseURL + " instead")
		}
		return flag
	case pgprovision.URLFromEnv() != "":
		u := pgprovision.URLFromEnv()
		log.Info("database from $"+pgprovision.EnvDatabaseURL, "url", pgprovision.Redact(u))
		return u
	}
	return ""
}
