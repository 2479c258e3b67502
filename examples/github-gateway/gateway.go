package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// maxWorkers keeps the pool (workers + handlerConns) within 12 connections.
	maxWorkers   = 8
	handlerConns = 4
	// shutdownGrace bounds a graceful stop: in-flight requests, the task each
	// worker is in, and (memory-queue) the last flush.
	shutdownGrace = 4 * time.Second
)

// Defect is a planted bug, for showing what a conformance run catches.
type Defect string

const (
	DefectNone Defect = ""
	// DefectCheckThenInsert: the worker looks the delivery up in processed and
	// inserts it when absent, on a processed table without its primary key (an
	// older schema); two tasks of one delivery racing both apply the effect.
	DefectCheckThenInsert Defect = "check-then-insert"
	// DefectMemoryQueue: deliveries are acknowledged once they sit in an
	// in-process buffer that is written to the inbox in batches; a crash loses
	// what was acknowledged but not yet written.
	DefectMemoryQueue Defect = "memory-queue"
)

var defects = []Defect{DefectCheckThenInsert, DefectMemoryQueue}

func defectNames() string {
	var names []string
	for _, d := range defects {
		names = append(names, string(d))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func parseDefect(s string) (Defect, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return DefectNone, nil
	}
	for _, d := range defects {
		if string(d) == s {
			return d, nil
		}
	}
	return "", fmt.Errorf("unknown defect %q (known: %s)", s, defectNames())
}

// Config is what serve needs.
type Config struct {
	Listen      string
	DatabaseURL string
	Workers     int
	// Secret is the webhook secret's bytes (GitHub signs with its UTF-8 bytes).
	Secret []byte
	Defect Defect
}

// String keeps the secret and the database URL out of any log line.
func (c Config) String() string {
	return fmt.Sprintf("listen=%s workers=%d defect=%q", c.Listen, c.Workers, c.Defect)
}

// Gateway is the running service: the HTTP handler, the queue and its workers.
type Gateway struct {
	cfg  Config
	log  *slog.Logger
	pool *pgxpool.Pool
	// wake nudges an idle worker when a delivery was enqueued, so workers need
	// not wait for the next poll.
	wake chan struct{}
	// acceptTimeout bounds the enqueue of one delivery: GitHub gives up after
	// 10 seconds, and an answer it never sees is worse than a 503.
	acceptTimeout time.Duration
	// pollEvery is the idle workers' poll period.
	pollEvery time.Duration
	// mem is the memory-queue defect's buffer (nil otherwise).
	mem *memQueue

	stop    chan struct{}
	workers sync.WaitGroup
}

// openPool opens a pool sized for the handlers and the workers.
func openPool(ctx context.Context, url string, workers int) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors may quote the URL, password included.
		return nil, errors.New("the database URL does not parse")
	}
	pc.MaxConns = int32(workers + handlerConns)
	pc.MinConns = 0
	pc.ConnConfig.RuntimeParams["application_name"] = "github-gateway"
	pc.ConnConfig.ConnectTimeout = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return pool, nil
}

// newGateway opens the database and creates the schema.
func newGateway(ctx context.Context, cfg Config, log *slog.Logger) (*Gateway, error) {
	pool, err := openPool(ctx, cfg.DatabaseURL, cfg.Workers)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, pool, cfg.Defect); err != nil {
		pool.Close()
		return nil, fmt.Errorf("schema: %w", err)
	}
	g := &Gateway{cfg: cfg, log: log, pool: pool, wake: make(chan struct{}, maxWorkers),
		acceptTimeout: 8 * time.Second, pollEvery: 20 * time.Millisecond, stop: make(chan struct{})}
	if cfg.Defect == DefectMemoryQueue {
		g.mem = newMemQueue(g)
	}
	return g, nil
}

// start launches n workers (and the memory-queue flusher).
func (g *Gateway) start(n int) {
	if g.mem != nil {
		g.workers.Add(1)
		go func() { defer g.workers.Done(); g.mem.run(g.stop) }()
	}
	for i := 0; i < n; i++ {
		g.workers.Add(1)
		go func() { defer g.workers.Done(); g.work(i) }()
	}
}

// close stops the workers once their current task is done, then the pool.
func (g *Gateway) close() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	done := make(chan struct{})
	go func() { g.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		g.log.Warn("workers still busy at shutdown; their tasks stay queued")
	}
	g.pool.Close()
}

// Handler routes the gateway's HTTP API.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /github/webhook", g.accept)
	// Liveness only: it must answer while the pool is busy (say, every
	// connection waiting on a lock), or a supervisor would restart a healthy
	// process.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// serve runs the gateway until ctx is done, then stops gracefully.
func serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	g, err := newGateway(ctx, cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		g.pool.Close()
		return err
	}
	srv := &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// A 25 MB body over a slow link still fits.
		ReadTimeout:  60 * time.Second,
		WriteTimeout: 30 * time.Second,
		IdleTimeout:  90 * time.Second,
	}
	g.start(cfg.Workers)
	log.Info("github-gateway listening", "config", cfg.String(), "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		g.close()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("requests still in flight at shutdown", "err", err)
	}
	g.close()
	log.Info("stopped")
	return nil
}
