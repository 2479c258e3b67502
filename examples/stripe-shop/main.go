// Command stripe-shop is the webhook receiver of a small shop that sells
// through Stripe Connect: every connected account (a merchant of the shop) has
// a live and a test endpoint, each with its own signing secret.
//
//	stripe-shop serve --listen 127.0.0.1:8080          # database URL in SHOP_DATABASE_URL
//	stripe-shop purge --as-of 2026-05-01T00:00:00Z     # retention, run from cron
//
// See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  stripe-shop serve [--listen ADDR] [--database-url URL] [--secret-env MODE/ACCOUNT=ENV ...] [--defect NAME]
  stripe-shop purge --as-of RFC3339 [--database-url URL] [--key-ttl 720h] [--payload-ttl 168h]

The database URL is read from --database-url, else SHOP_DATABASE_URL, else
DATABASE_URL (prefer the environment: a command line is visible to every user).
Signing secrets are read from the environment only: SHOP_SECRET_<MODE>_<ACCOUNT>
(upper case, e.g. SHOP_SECRET_LIVE_ACCT_123), or the variable --secret-env names.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serveCmd(args[1:], stderr)
	case "purge":
		return purgeCmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "stripe-shop: unknown command %q\n%s", args[0], usage)
	return 2
}

// envOr returns the first non-empty environment variable of names, else def.
func envOr(def string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return def
}

// secretEnvFlags collects --secret-env MODE/ACCOUNT=ENV.
type secretEnvFlags map[string]string

func (s secretEnvFlags) String() string { return fmt.Sprint(map[string]string(s)) }

func (s secretEnvFlags) Set(v string) error {
	k, env, ok := strings.Cut(v, "=")
	mode, account, ok2 := strings.Cut(k, "/")
	if !ok || !ok2 || env == "" || !validMode(mode) || !validAccount(account) {
		return fmt.Errorf("want MODE/ACCOUNT=ENV_NAME with MODE live or test (got %q)", v)
	}
	if strings.HasPrefix(env, "whsec_") {
		return errors.New("pass the NAME of an environment variable holding the secret, not the secret")
	}
	s[mode+"/"+account] = env
	return nil
}

func serveCmd(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen", envOr("127.0.0.1:8080", "SHOP_LISTEN"), "address to listen on")
	dbURL := fl.String("database-url", "", "PostgreSQL URL (default $SHOP_DATABASE_URL, then $DATABASE_URL)")
	maxConns := fl.Int("max-conns", 8, "database pool size")
	maxBody := fl.Int64("max-body-bytes", 1<<20, "largest webhook body accepted")
	tolerance := fl.Duration("tolerance", 300*time.Second, "accepted age of a Stripe-Signature timestamp")
	shutdown := fl.Duration("shutdown-timeout", 8*time.Second, "on SIGTERM, how long in-flight requests may take")
	defect := fl.String("defect", envOr("", "SHOP_DEFECT"), "planted bug to enable (see README): "+strings.Join(defectNames(), ", "))
	secretEnvs := secretEnvFlags{}
	fl.Var(secretEnvs, "secret-env", "MODE/ACCOUNT=ENV: read this endpoint's signing secret from ENV (repeatable)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	d, err := parseDefect(*defect)
	if err != nil {
		log.Error("bad --defect", "err", err)
		return 2
	}
	url := *dbURL
	if url == "" {
		url = envOr("", "SHOP_DATABASE_URL", "DATABASE_URL")
	}
	if url == "" {
		log.Error("no database: set SHOP_DATABASE_URL (or --database-url)")
		return 2
	}
	cfg := Config{MaxBodyBytes: *maxBody, Tolerance: *tolerance, Defect: d, Secrets: envSecrets{explicit: secretEnvs}}
	if d == DefectSmallBodyCap {
		cfg.MaxBodyBytes = 64 << 10
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	pool, err := openPool(ctx, url, int32(*maxConns))
	if err != nil {
		log.Error("database", "err", err)
		return 1
	}
	defer pool.Close()
	handler, err := newHandler(ctx, pool, cfg, log)
	if err != nil {
		log.Error("migrations", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	log.Info("stripe-shop listening", "addr", ln.Addr().String(), "max_body_bytes", cfg.MaxBodyBytes, "defect", string(d))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		log.Error("serve", "err", err)
		return 1
	case <-ctx.Done():
	}
	// Graceful stop: no new connections, in-flight deliveries finish (and
	// commit) before the pool closes.
	log.Info("stopping")
	sctx, cancel := context.WithTimeout(context.Background(), *shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

// newHandler migrates the schema and returns the receiver's routes: what
// serve does before it listens.
func newHandler(ctx context.Context, pool *pgxpool.Pool, cfg Config, log *slog.Logger) (http.Handler, error) {
	if err := migrate(ctx, pool); err != nil {
		return nil, err
	}
	return NewServer(pool, cfg, log).Routes(), nil
}

func openPool(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors redact the password; say no more than that.
		return nil, errors.New("cannot parse the database URL")
	}
	pc.MaxConns = maxConns
	pc.ConnConfig.RuntimeParams["application_name"] = "stripe-shop"
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(cctx, pc)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(cctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

func purgeCmd(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("purge", flag.ContinueOnError)
	fl.SetOutput(stderr)
	dbURL := fl.String("database-url", "", "PostgreSQL URL (default $SHOP_DATABASE_URL, then $DATABASE_URL)")
	asOf := fl.String("as-of", "", "purge as if the clock read this time (RFC 3339); default now")
	keyTTL := fl.Duration("key-ttl", DefaultKeyTTL, "how long event IDs are kept (Stripe resends up to 30 days)")
	payloadTTL := fl.Duration("payload-ttl", DefaultPayloadTTL, "how long event payloads are kept")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	at := time.Now()
	if *asOf != "" {
		t, err := time.Parse(time.RFC3339Nano, *asOf)
		if err != nil {
			log.Error("--as-of must be RFC 3339", "got", *asOf)
			return 2
		}
		at = t
	}
	if *payloadTTL > *keyTTL || *payloadTTL <= 0 {
		log.Error("--payload-ttl must be positive and not longer than --key-ttl")
		return 2
	}
	url := *dbURL
	if url == "" {
		url = envOr("", "SHOP_DATABASE_URL", "DATABASE_URL")
	}
	if url == "" {
		log.Error("no database: set SHOP_DATABASE_URL (or --database-url)")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := purgeDatabase(ctx, url, at, *keyTTL, *payloadTTL)
	if err != nil {
		log.Error("purge", "err", err)
		return 1
	}
	fmt.Fprintf(stdout, "purged as of %s: %d event keys deleted, %d payloads cleared\n",
		at.UTC().Format(time.RFC3339), res.KeysDeleted, res.PayloadsCleared)
	return 0
}
