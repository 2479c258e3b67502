// Package pgsession is what every part of the harness that talks to a
// receiver's PostgreSQL shares: the application_name that marks the harness's
// own sessions (so faults and busy checks spare them), how such a pool is
// opened, and how a server error is classified and shown. It is a leaf: the
// observer, the fault tools, the purge trigger and the fixtures import it, and
// it imports nothing of the harness.
package pgsession

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ApplicationName marks the harness's own PostgreSQL sessions.
const ApplicationName = "hookcert-harness"

// Connect opens a pool whose sessions carry ApplicationName and checks that the
// server answers.
func Connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can quote the URL (and its password): don't wrap them.
		return nil, errors.New("pgsession: invalid database URL (not shown: it may hold a password)")
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = ApplicationName
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgsession: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgsession: connect to %s/%s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

// Unavailable reports SQLSTATEs that say the server cannot serve, not that the
// statement is wrong: connection exceptions (08), insufficient resources (53),
// operator intervention (57: shutdown, cancel) and system errors (58). A
// statement refused with any other code is the statement's fault (the target
// file's), one refused with these is the database's state.
func Unavailable(code string) bool {
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "53") ||
		strings.HasPrefix(code, "57") || strings.HasPrefix(code, "58")
}

// StatementError returns the server's error when err is one that blames the
// statement (not Unavailable), else nil.
func StatementError(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !Unavailable(pe.Code) {
		return pe
	}
	return nil
}

// Message is the server's error as psql shows it, with the detail, the hint
// and the position.
func Message(pe *pgconn.PgError) string {
	m := fmt.Sprintf("%s: %s (SQLSTATE %s)", pe.Severity, pe.Message, pe.Code)
	if pe.Detail != "" {
		m += "; " + pe.Detail
	}
	if pe.Hint != "" {
		m += "; hint: " + pe.Hint
	}
	if pe.Position > 0 {
		m += fmt.Sprintf("; at character %d", pe.Position)
	}
	return m
}
