// Command github-gateway ingests GitHub webhook deliveries: it verifies and
// durably enqueues each delivery in PostgreSQL, answers 202, and applies the
// event later in a pool of workers that deduplicate on the delivery GUID.
//
//	github-gateway serve --listen 127.0.0.1:8080 --database-url postgres://... --workers 4
//
// The webhook secret is read from GATEWAY_WEBHOOK_SECRET (never from the
// command line, which every user of the machine can read).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Environment variables the gateway reads.
const (
	envSecret      = "GATEWAY_WEBHOOK_SECRET"
	envDatabaseURL = "GATEWAY_DATABASE_URL"
	envDefect      = "GATEWAY_DEFECT"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: github-gateway serve [flags]

Accepts GitHub webhook deliveries on POST /github/webhook, queues them in
PostgreSQL and processes them in workers.

Environment:
  GATEWAY_WEBHOOK_SECRET  the webhook secret configured on GitHub (required)
  GATEWAY_DATABASE_URL    default for --database-url
  GATEWAY_DEFECT          default for --defect

Flags:
`

// run is main without the process exit, so tests can run the command.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprint(stderr, usage)
		newServeFlags(stderr).fs.PrintDefaults()
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	f := newServeFlags(stderr)
	f.fs.Usage = func() { fmt.Fprint(stderr, usage); f.fs.PrintDefaults() }
	if err := f.fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := f.config(os.Getenv(envSecret))
	if err != nil {
		fmt.Fprintf(stderr, "github-gateway: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("gateway stopped", "err", err)
		return 1
	}
	return 0
}

type serveFlags struct {
	fs      *flag.FlagSet
	listen  *string
	dbURL   *string
	workers *int
	defect  *string
}

func newServeFlags(out io.Writer) *serveFlags {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(out)
	return &serveFlags{
		fs:      fs,
		listen:  fs.String("listen", "127.0.0.1:8080", "address to listen on"),
		dbURL:   fs.String("database-url", "", "PostgreSQL URL (default $"+envDatabaseURL+")"),
		workers: fs.Int("workers", 4, fmt.Sprintf("queue workers, 1..%d", maxWorkers)),
		defect:  fs.String("defect", "", "planted defect: "+defectNames()+" (default none)"),
	}
}

func (f *serveFlags) config(secret string) (Config, error) {
	if f.fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", f.fs.Arg(0))
	}
	if secret == "" {
		return Config{}, fmt.Errorf("%s is not set: the gateway refuses unsigned deliveries", envSecret)
	}
	// Environment defaults are read here, not as flag defaults: --help prints
	// flag defaults, and the URL may hold a password.
	if *f.dbURL == "" {
		*f.dbURL = os.Getenv(envDatabaseURL)
	}
	if *f.defect == "" {
		*f.defect = os.Getenv(envDefect)
	}
	if *f.dbURL == "" {
		return Config{}, fmt.Errorf("--database-url (or %s) is required", envDatabaseURL)
	}
	if *f.workers < 1 || *f.workers > maxWorkers {
		return Config{}, fmt.Errorf("--workers must be between 1 and %d (got %d)", maxWorkers, *f.workers)
	}
	d, err := parseDefect(*f.defect)
	if err != nil {
		return Config{}, err
	}
	return Config{Listen: *f.listen, DatabaseURL: *f.dbURL, Workers: *f.workers, Secret: []byte(secret), Defect: d}, nil
}
