package purge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

// Options say where the trigger runs.
type Options struct {
	// BaseURL is the receiver's root URL (http trigger).
	BaseURL string
	// DatabaseURL is the receiver's PostgreSQL database (sql trigger).
	DatabaseURL string
	// DB runs the sql trigger instead on a SQL database other than PostgreSQL
	// (observe.mysql); the caller closes it.
	DB sqlstore.DB
	// Dir and Env are the command trigger's working directory and extra
	// environment (the target's lifecycle.dir and lifecycle.env).
	Dir string
	Env map[string]string
	// HTTPClient is used by the http trigger; nil means a client without timeout
	// (the trigger's own Timeout applies).
	HTTPClient *http.Client
}

// Trigger purges a receiver as of a given time. It is safe for concurrent use.
type Trigger struct {
	spec targetfile.Purge
	opts Options
	pool *pgxpool.Pool
}

// sqlExec runs the sql trigger's statement with the as-of time as $1.
func (t *Trigger) sqlExec(ctx context.Context, asOf time.Time) error {
	if t.opts.DB != nil {
		// $1 is written ? by stores that bind so; a time is bound as UTC.
		return t.opts.DB.Exec(ctx, t.spec.SQL, asOf.UTC())
	}
	_, err := t.pool.Exec(ctx, t.spec.SQL, asOf)
	return err
}

// New prepares the trigger of spec; a sql trigger connects now (sessions marked as
// the harness's, so connection-loss faults spare them). Close releases it.
func New(ctx context.Context, spec targetfile.Purge, opts Options) (*Trigger, error) {
	t := &Trigger{spec: spec, opts: opts}
	if t.spec.Timeout <= 0 {
		t.spec.Timeout = targetfile.DefaultPurgeTimeout
	}
	switch spec.Kind() {
	case "sql":
		if opts.DB != nil {
			break // the caller's sessions in a database other than PostgreSQL
		}
		if opts.DatabaseURL == "" {
			return nil, errors.New("purge: sql trigger: no database URL")
		}
		pool, err := pgsession.Connect(ctx, opts.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("purge: %w", err)
		}
		t.pool = pool
	case "http":
		if opts.BaseURL == "" {
			return nil, errors.New("purge: http trigger: no base URL")
		}
		if t.opts.HTTPClient == nil {
			t.opts.HTTPClient = &http.Client{}
		}
	case "command":
	default:
		return nil, errors.New("purge: no trigger configured (one of sql, command, http)")
	}
	return t, nil
}

// FromTarget prepares the trigger a target file declares.
func FromTarget(ctx context.Context, tg *targetfile.Target) (*Trigger, error) {
	if tg.Retention == nil {
		return nil, errors.New("purge: the target has no retention section")
	}
	o := Options{BaseURL: tg.BaseURL, DatabaseURL: tg.Store.URL.Reveal()}
	if tg.Lifecycle != nil {
		o.Dir, o.Env = tg.Lifecycle.Dir, tg.Lifecycle.Env
	}
	return New(ctx, tg.Retention.Purge, o)
}

// Kind is "sql", "command" or "http".
func (t *Trigger) Kind() string { return t.spec.Kind() }

// Describe says what the trigger does, for evidence (no secrets: the SQL, the
// program name, or the method and path).
func (t *Trigger) Describe() string {
	switch t.Kind() {
	case "sql":
		return "SQL " + t.spec.SQL
	case "command":
		return "command " + t.spec.Command[0]
	default:
		return t.spec.HTTPMethod + " " + t.spec.HTTPPath
	}
}

// Close releases the sql trigger's pool.
func (t *Trigger) Close() {
	if t.pool != nil {
		t.pool.Close()
	}
}

// FormatAsOf is how the as-of time is written for commands and HTTP bodies.
func FormatAsOf(asOf time.Time) string { return asOf.UTC().Format(time.RFC3339Nano) }

// Purge asks the receiver to purge as if the clock read asOf and waits for it.
func (t *Trigger) Purge(ctx context.Context, asOf time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, t.spec.Timeout)
	defer cancel()
	var err error
	switch t.Kind() {
	case "sql":
		err = t.sqlExec(ctx, asOf)
	case "command":
		err = t.command(ctx, asOf)
	case "http":
		err = t.http(ctx, asOf)
	}
	if err != nil {
		return fmt.Errorf("purge as of %s (%s): %w", FormatAsOf(asOf), t.Kind(), err)
	}
	return nil
}

func (t *Trigger) command(ctx context.Context, asOf time.Time) error {
	args := make([]string, len(t.spec.Command))
	for i, a := range t.spec.Command {
		args[i] = strings.ReplaceAll(a, targetfile.AsOfPlaceholder, FormatAsOf(asOf))
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = t.opts.Dir
	cmd.Env = os.Environ()
	for k, v := range t.opts.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w; output: %s", args[0], err, excerpt(out.Bytes()))
	}
	return nil
}

func (t *Trigger) http(ctx context.Context, asOf time.Time) error {
	body, _ := json.Marshal(map[string]string{"as_of": FormatAsOf(asOf)})
	req, err := http.NewRequestWithContext(ctx, t.spec.HTTPMethod, t.opts.BaseURL+t.spec.HTTPPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.opts.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s %s answered %d: %s", t.spec.HTTPMethod, t.spec.HTTPPath, resp.StatusCode, excerpt(b))
	}
	return nil
}

// excerpt keeps the end of an output, where the error usually is.
func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = "…" + s[len(s)-300:]
	}
	if s == "" {
		return "(none)"
	}
	return s
}
