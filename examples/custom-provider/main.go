// Command custom-provider is the webhook receiver of a wallet service that
// takes events from Acme, a provider hookcert has no built-in profile for:
// Acme signs "<timestamp>:<event ID>:<body>" with HMAC-SHA256, sends the
// event ID in a header of its own, and allows 5 minutes of clock skew.
//
//	custom-provider serve --listen 127.0.0.1:8080   # database URL in ACME_DATABASE_URL
//
// See README.md. The receiver knows nothing of hookcert; target.yaml
// declares Acme's delivery contract to hookcert (profiles:) and certifies it.
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
  custom-provider serve [--listen ADDR] [--tolerance 5m] [--defect NAME]

The database URL is read from ACME_DATABASE_URL (else DATABASE_URL): the
environment, not the command line, which every user of the machine can read.
Each account's signing secret is read from ACME_SECRET_<ACCOUNT> (upper case,
e.g. ACME_SECRET_ACCT_ALPHA); several, separated by commas, during a roll.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serveCmd(args[1:], stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "custom-provider: unknown command %q\n%s", args[0], usage)
	return 2
}

func envOr(def string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return def
}

func serveCmd(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen", envOr("127.0.0.1:8080", "ACME_LISTEN"), "address to listen on")
	tolerance := fl.Duration("tolerance", DefaultTolerance, "how far an Acme-Signature timestamp may be from now, either way")
	maxBody := fl.Int64("max-body-bytes", 1<<20, "largest webhook body accepted")
	defect := fl.String("defect", envOr("", "ACME_DEFECT"), "planted bug to enable (README.md): "+strings.Join(defectNames(), ", "))
	if err := fl.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	d, err := parseDefect(*defect)
	if err != nil {
		log.Error("bad --defect", "err", err)
		return 2
	}
	url := envOr("", "ACME_DATABASE_URL", "DATABASE_URL")
	if url == "" {
		log.Error("no database: set ACME_DATABASE_URL")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	pool, err := openPool(ctx, url)
	if err != nil {
		log.Error("database", "err", err)
		return 1
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		log.Error("schema", "err", err)
		return 1
	}
	srv := &http.Server{
		Handler:           NewServer(pool, Config{Tolerance: *tolerance, MaxBodyBytes: *maxBody, Defect: d}, log).Routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	log.Info("custom-provider listening", "addr", ln.Addr().String(), "tolerance", tolerance.String(), "defect", string(d))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		log.Error("serve", "err", err)
		return 1
	case <-ctx.Done():
	}
	// In-flight deliveries finish (and commit) before the pool closes.
	sctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown", "err", err)
		return 1
	}
	return 0
}

func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error may quote the URL, password included.
		return nil, errors.New("cannot parse the database URL")
	}
	pc.MaxConns = 8
	pc.ConnConfig.RuntimeParams["application_name"] = "custom-provider"
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

// schemaLock serialises concurrent starts creating the schema.
const schemaLock = 4_107_220_031

// schema is the receiver's whole schema: idempotent, applied at start.
const schema = `
-- One row per Acme event received on an account's endpoint. The primary key
-- makes a redelivery a no-op: it is what the receiver deduplicates on.
CREATE TABLE IF NOT EXISTS acme_events (
    account     text        NOT NULL,
    event_id    text        NOT NULL,
    type        text        NOT NULL,
    payload     jsonb       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, event_id)
);

-- The business change: one credit per credit.granted event, written in the
-- transaction that records the event.
CREATE TABLE IF NOT EXISTS wallet_credits (
    id         bigserial   PRIMARY KEY,
    account    text        NOT NULL,
    event_id   text        NOT NULL,
    credit_id  text        NOT NULL,
    wallet     text        NOT NULL,
    amount     bigint      NOT NULL CHECK (amount > 0),
    currency   text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS wallet_credits_event ON wallet_credits (account, event_id);
`

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLock)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
