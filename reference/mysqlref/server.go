package mysqlref

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultDBTimeout    = 30 * time.Second
	// DefaultMaxConns lets a burst of concurrent copies reach the database
	// together, which is what the database must arbitrate.
	DefaultMaxConns = 16
	// DefaultShutdownTimeout bounds how long in-flight deliveries may finish.
	DefaultShutdownTimeout = 10 * time.Second
	// deadlockAttempts is how often a transaction InnoDB chose as a deadlock
	// victim is run again before the provider is asked to retry.
	deadlockAttempts = 5
)

// ErrUnreachable marks an Open error caused by the database not answering.
var ErrUnreachable = errors.New("database unreachable")

// Options configure a Server; the zero value of each field but Endpoints is usable.
type Options struct {
	// Endpoints to serve; nil means DefaultEndpoints().
	Endpoints []Endpoint
	// Defects to start with (names from Defects()).
	Defects []string
	// MaxBodyBytes limits request bodies (413 above it); 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Tolerance for Stripe's signed timestamp; 0 means Stripe's 5 minutes.
	Tolerance time.Duration
	// DBTimeout bounds the database work of one delivery; 0 means DefaultDBTimeout.
	DBTimeout time.Duration
	// MaxConns is the connection pool's size; 0 means DefaultMaxConns.
	MaxConns int
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Server is a receiver bound to one database.
type Server struct {
	db        *sql.DB
	endpoints map[string]Endpoint
	defects   defectSet
	maxBody   int64
	tolerance time.Duration
	dbTimeout time.Duration
	log       *slog.Logger
	handler   http.Handler
}

// Open connects to the database of dbURL (mysql://user[:password]@host[:port]/db),
// creates the schema and returns the server. Its errors never quote the URL.
func Open(ctx context.Context, dbURL string, opts Options) (*Server, error) {
	if err := ValidateDefects(opts.Defects); err != nil {
		return nil, fmt.Errorf("mysqlref: %w", err)
	}
	eps := opts.Endpoints
	if eps == nil {
		eps = DefaultEndpoints()
	}
	if err := ValidateEndpoints(eps); err != nil {
		return nil, fmt.Errorf("mysqlref: %w", err)
	}
	cfg, err := ParseURL(dbURL)
	if err != nil {
		return nil, fmt.Errorf("mysqlref: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("mysqlref: database URL: names no database (mysql://user@host:port/DATABASE)")
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysqlref: database URL: %w", err)
	}
	db := sql.OpenDB(conn)
	n := opts.MaxConns
	if n <= 0 {
		n = DefaultMaxConns
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(10 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("mysqlref: %w at %s: %w", ErrUnreachable, cfg.Addr, err)
	}
	s := &Server{
		db:        db,
		endpoints: map[string]Endpoint{},
		defects:   defectSet{},
		maxBody:   opts.MaxBodyBytes,
		tolerance: opts.Tolerance,
		dbTimeout: opts.DBTimeout,
		log:       opts.Logger,
	}
	for _, d := range opts.Defects {
		s.defects[d] = true
	}
	for _, e := range eps {
		s.endpoints[e.Path] = e
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.dbTimeout <= 0 {
		s.dbTimeout = DefaultDBTimeout
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := Migrate(ctx, db, s.defects.has(DefectCheckThenInsert)); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("mysqlref: %w", err)
	}
	for _, d := range opts.Defects {
		s.log.Warn("started with a defect: this receiver is broken on purpose", "defect", d)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("/", s.serveDelivery)
	s.handler = mux
	return s, nil
}

// Handler is the receiver's HTTP handler: the endpoints and GET /healthz.
func (s *Server) Handler() http.Handler { return s.handler }

// Close releases the connection pool.
func (s *Server) Close() error { return s.db.Close() }

// Serve serves on ln until ctx is done, then shuts down gracefully: new
// connections are refused and in-flight deliveries finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Bounds a sender trickling a body; providers send theirs at once.
		ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("listening", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing in-flight deliveries")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	s.log.Info("stopped")
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.PingContext(ctx); err != nil {
		s.log.Warn("health check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, response{Status: "unhealthy", Reason: "database_unreachable"})
		return
	}
	writeJSON(w, http.StatusOK, response{Status: "ok"})
}

// MySQL server error numbers the receiver acts on.
const (
	erDupEntry     = 1062 // ER_DUP_ENTRY: the unique event key is taken
	erLockDeadlock = 1213 // ER_LOCK_DEADLOCK: InnoDB rolled the transaction back
)

func isMySQLError(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}
