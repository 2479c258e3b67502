package pgprovision

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDatabaseURL names the environment variable that holds an explicit server URL.
const EnvDatabaseURL = "HOOKCERT_DATABASE_URL"

// Methods reported in Database.Method.
const (
	MethodURL    = "url"
	MethodDocker = "docker"
	MethodLocal  = "local"
)

// Defaults applied by Provision to zero-valued Options fields.
const (
	DefaultNamePrefix     = "hookcert"
	DefaultStartTimeout   = 30 * time.Second
	DefaultConnectTimeout = 5 * time.Second
	DefaultDockerImage    = "postgres:16-alpine"
)

// randomSuffixLen is the number of hex characters appended to the name prefix.
const randomSuffixLen = 16

// maxPrefixLen keeps <prefix>_<16 hex> within PostgreSQL's 63-byte identifier limit
// (NAMEDATALEN-1), which would otherwise silently truncate the name.
const maxPrefixLen = 63 - 1 - randomSuffixLen

// ErrUnreachable marks errors where no PostgreSQL server could be obtained or
// reached (the CLI maps it to exit code 3).
var ErrUnreachable = errors.New("no PostgreSQL")

// ErrInvalidOptions marks errors caused by bad Options (the CLI maps it to exit code 2).
var ErrInvalidOptions = errors.New("invalid PostgreSQL options")

// Options say where to find or how to obtain PostgreSQL.
type Options struct {
	// URL is an explicit server or database URL (postgres:// or postgresql://).
	// When set, it is the only method tried. Empty means discover.
	URL string
	// KeepDatabase leaves the run's database in place on cleanup; cleanup logs
	// where it is. For a local cluster the data directory is kept as well.
	KeepDatabase bool
	// NamePrefix starts the database name: <prefix>_<random>. Default "hookcert".
	// Lowercase letters, digits and underscore, at most 46 characters.
	NamePrefix string
	// DisableDocker and DisableLocal skip the container and local-binaries methods.
	DisableDocker, DisableLocal bool
	// Logger receives progress records; nil discards them.
	Logger *slog.Logger
	// StartTimeout bounds starting a container or a local cluster. Default 30s.
	StartTimeout time.Duration
	// ConnectTimeout bounds each connection attempt to an explicit URL and the
	// Docker engine probe. Default 5s.
	ConnectTimeout time.Duration
	// DockerImage is the PostgreSQL image for the container method. Default
	// "postgres:16-alpine".
	DockerImage string
}

// Database is the run's own database.
type Database struct {
	URL    string // URL of the run's own database (may carry a password: pass it through Redact before printing)
	Name   string // database name, <prefix>_<random>
	Method string // MethodURL, MethodDocker or MethodLocal
	Server string // redacted description of the server
	// Notices are messages for the user about what Provision found and did
	// besides obtaining the database, such as "removed 2 stale PostgreSQL
	// clusters left by a killed run (...)". They are also logged (level Warn).
	Notices []string
}

// CleanupFunc drops the run's database (unless kept) and stops what Provision started.
// It is safe to call more than once; later calls return the first call's result.
type CleanupFunc func(ctx context.Context) error

// URLFromEnv returns the explicit server URL from HOOKCERT_DATABASE_URL, or "".
func URLFromEnv() string { return strings.TrimSpace(os.Getenv(EnvDatabaseURL)) }

var prefixRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// ValidateNamePrefix reports whether p can start a database name.
func ValidateNamePrefix(p string) error {
	if p == "" {
		return fmt.Errorf("%w: NamePrefix: must not be empty", ErrInvalidOptions)
	}
	if !prefixRE.MatchString(p) {
		return fmt.Errorf("%w: NamePrefix %q: must contain only lowercase letters, digits and underscore", ErrInvalidOptions, p)
	}
	if len(p) > maxPrefixLen {
		return fmt.Errorf("%w: NamePrefix %q: must be at most %d characters (PostgreSQL names are limited to 63 bytes)", ErrInvalidOptions, p, maxPrefixLen)
	}
	return nil
}

func (o *Options) defaults() error {
	if o.NamePrefix == "" {
		o.NamePrefix = DefaultNamePrefix
	}
	if err := ValidateNamePrefix(o.NamePrefix); err != nil {
		return err
	}
	if o.StartTimeout < 0 {
		return fmt.Errorf("%w: StartTimeout %s: must not be negative", ErrInvalidOptions, o.StartTimeout)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.ConnectTimeout < 0 {
		return fmt.Errorf("%w: ConnectTimeout %s: must not be negative", ErrInvalidOptions, o.ConnectTimeout)
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.DockerImage == "" {
		o.DockerImage = DefaultDockerImage
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return nil
}

// server is a PostgreSQL server obtained by one method, before the run's
// database exists on it.
type server struct {
	adminURL string // URL of a database the run may connect to for CREATE/DROP DATABASE
	method   string
	desc     string // redacted
	// stop stops what was started (nil when nothing was); keep asks it to leave
	// the data behind when that is possible.
	stop func(ctx context.Context, keep bool) error
	// keepNote says what is left behind when the database is kept and the
	// server is stopped; empty for an external server.
	keepNote func() string
}

// Provision obtains a PostgreSQL server and creates the run's own database on it.
// It returns the database, a cleanup function (never nil when err is nil) and an
// error that names every method tried and why it failed.
func Provision(ctx context.Context, opt Options) (*Database, CleanupFunc, error) {
	if err := opt.defaults(); err != nil {
		return nil, nil, err
	}
	log := opt.Logger
	// A run killed before its cleanup leaves its local cluster behind; the next
	// run, whatever method it uses, clears it away.
	var notices []string
	if msg := sweepStale(os.TempDir(), log).notice(); msg != "" {
		notices = append(notices, msg)
	}

	var srv *server
	if opt.URL != "" {
		if _, err := parsePGURL(opt.URL); err != nil {
			return nil, nil, err
		}
		// The user named a server: it is the only one we may use, so there is no fallback.
		srv = &server{adminURL: opt.URL, method: MethodURL, desc: serverOnly(opt.URL)}
	} else {
		var tried []string
		tried = append(tried, "explicit URL: not given (--database-url or "+EnvDatabaseURL+")")
		if opt.DisableDocker {
			tried = append(tried, "docker: disabled")
		} else {
			s, err := startDocker(ctx, opt)
			if err != nil {
				tried = append(tried, "docker: "+err.Error())
				log.Debug("postgres: docker method unavailable", "reason", err.Error())
			} else {
				srv = s
			}
		}
		if srv == nil {
			if opt.DisableLocal {
				tried = append(tried, "local binaries: disabled")
			} else {
				s, err := startLocal(ctx, opt)
				if err != nil {
					tried = append(tried, "local binaries: "+err.Error())
					log.Debug("postgres: local method unavailable", "reason", err.Error())
				} else {
					srv = s
				}
			}
		}
		if srv == nil {
			return nil, nil, fmt.Errorf("%w: %s", ErrUnreachable, strings.Join(tried, "; "))
		}
	}

	name, err := randomName(opt.NamePrefix)
	if err != nil {
		return nil, nil, errors.Join(err, stopServer(context.WithoutCancel(ctx), srv, false))
	}
	dbURL, err := withDatabase(srv.adminURL, name)
	if err != nil {
		return nil, nil, errors.Join(err, stopServer(context.WithoutCancel(ctx), srv, false))
	}
	if err := createDatabase(ctx, srv.adminURL, name, opt.ConnectTimeout); err != nil {
		err = fmt.Errorf("%w: PostgreSQL at %s (%s): %w", ErrUnreachable, srv.desc, methodLabel(srv.method), err)
		return nil, nil, errors.Join(err, stopServer(context.WithoutCancel(ctx), srv, false))
	}
	db := &Database{URL: dbURL, Name: name, Method: srv.method, Server: srv.desc, Notices: notices}
	log.Info("postgres: database ready", "method", srv.method, "server", srv.desc, "database", name)

	var once sync.Once
	var cleanupErr error
	cleanup := func(ctx context.Context) error {
		once.Do(func() { cleanupErr = cleanupRun(ctx, opt, srv, db) })
		return cleanupErr
	}
	return db, cleanup, nil
}

func cleanupRun(ctx context.Context, opt Options, srv *server, db *Database) error {
	log := opt.Logger
	var errs []error
	if opt.KeepDatabase {
		where := fmt.Sprintf("database %s kept at %s", db.Name, Redact(db.URL))
		if srv.keepNote != nil {
			where += "; " + srv.keepNote()
		}
		log.Info("postgres: "+where, "database", db.Name)
	} else if err := dropDatabase(ctx, srv.adminURL, db.Name, opt.ConnectTimeout); err != nil {
		errs = append(errs, fmt.Errorf("drop database %s on %s: %w", db.Name, srv.desc, err))
	} else {
		log.Debug("postgres: database dropped", "database", db.Name)
	}
	if err := stopServer(ctx, srv, opt.KeepDatabase); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func stopServer(ctx context.Context, srv *server, keep bool) error {
	if srv.stop == nil {
		return nil
	}
	if err := srv.stop(ctx, keep); err != nil {
		return fmt.Errorf("stop %s: %w", srv.desc, err)
	}
	return nil
}

func methodLabel(m string) string {
	switch m {
	case MethodURL:
		return "explicit URL"
	case MethodDocker:
		return "docker"
	default:
		return "local binaries"
	}
}

func randomName(prefix string) (string, error) {
	b := make([]byte, randomSuffixLen/2)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random database name: %w", err)
	}
	return prefix + "_" + hex.EncodeToString(b), nil
}

// parsePGURL accepts only URL-form connection strings, because the run's database
// URL is derived by replacing the path.
func parsePGURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the input, password included: report only the redacted form.
		return nil, fmt.Errorf("%w: database URL %s: cannot be parsed as a URL", ErrInvalidOptions, Redact(raw))
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return nil, fmt.Errorf("%w: database URL %s: must start with postgres:// or postgresql://", ErrInvalidOptions, Redact(raw))
	}
	return u, nil
}

// withDatabase returns raw with its database replaced by name, keeping user,
// hosts and parameters.
func withDatabase(raw, name string) (string, error) {
	u, err := parsePGURL(raw)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	u.RawPath = ""
	if q := u.Query(); q.Has("dbname") {
		// A dbname parameter would override the path in libpq and pgx.
		q.Del("dbname")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// serverOnly describes the server of raw without its database and password.
func serverOnly(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Redact(raw)
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment = "", "", "", ""
	return Redact(u.String())
}

const redacted = "xxxxx"

var (
	// keyword/value form: password=secret or password='se cret'.
	kvPasswordRE = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)`)
	// URL userinfo that url.Parse rejected: scheme://user:secret@host. Greedy up to
	// the last '@' before the path so a password containing '@' is covered.
	userinfoRE = regexp.MustCompile(`(://[^:/@?#]*:)[^/?#]*@`)
)

// Redact returns u with any password replaced by "xxxxx": the userinfo password
// of a URL, a password query parameter, or password=... in keyword/value form.
// Input that is not a URL is scrubbed by pattern.
func Redact(u string) string {
	if p, err := url.Parse(u); err == nil && p.Scheme != "" && p.Opaque == "" {
		if p.User != nil {
			if _, has := p.User.Password(); has {
				p.User = url.UserPassword(p.User.Username(), redacted)
			}
		}
		if q := p.Query(); q.Has("password") {
			q.Set("password", redacted)
			p.RawQuery = q.Encode()
		}
		return p.String()
	}
	s := userinfoRE.ReplaceAllString(u, "${1}"+redacted+"@")
	return kvPasswordRE.ReplaceAllString(s, "${1}"+redacted)
}

// scrub removes the password of connURL from err's text, in case a driver error
// echoes it, and keeps err in the chain.
func scrub(err error, connURL string) error {
	if err == nil {
		return nil
	}
	pw := passwordOf(connURL)
	if pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return &scrubbed{msg: strings.ReplaceAll(err.Error(), pw, redacted), err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.err }

func passwordOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			return p
		}
	}
	return u.Query().Get("password")
}

func connect(ctx context.Context, connURL string, timeout time.Duration) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.Connect(cctx, connURL)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", scrub(err, connURL))
	}
	return conn, nil
}

func createDatabase(ctx context.Context, adminURL, name string, timeout time.Duration) error {
	conn, err := connect(ctx, adminURL, timeout)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// template0 because concurrent CREATE DATABASE from template1 fails while any
	// other session is connected to template1; nobody connects to template0.
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE template0"
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create database %s: %w", name, scrub(err, adminURL))
	}
	return nil
}

func dropDatabase(ctx context.Context, adminURL, name string, timeout time.Duration) error {
	conn, err := connect(ctx, adminURL, timeout)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	sql := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize()
	if serverMajor(conn) >= 13 {
		// WITH (FORCE) terminates sessions a test or receiver left open.
		sql += " WITH (FORCE)"
	} else {
		// Before 13 there is no FORCE: end the sessions first (a new one may still
		// slip in, and the DROP then reports it).
		if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
			return fmt.Errorf("terminate sessions: %w", scrub(err, adminURL))
		}
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("drop: %w", scrub(err, adminURL))
	}
	return nil
}

// serverMajor is the server's major version from the server_version parameter
// it reports at startup ("15.20 (Debian ...)", "9.6.24"); 0 when unknown.
func serverMajor(conn *pgx.Conn) int {
	v := conn.PgConn().ParameterStatus("server_version")
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(v)
	}
	n, _ := strconv.Atoi(v[:end])
	return n
}
