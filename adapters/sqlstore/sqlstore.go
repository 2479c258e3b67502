// Package sqlstore is the one shape in which the harness reaches a receiver's
// SQL database, whatever the server: the observer's reads, the checks of the
// target file's statements, fixtures, the setup script and the purge all go
// through DB. Statements are written with hookcert's parameters, $1 to $n in
// order of first use (targetfile.CompactParams renumbers a query to that
// form); each kind binds them the way its server wants ($n for PostgreSQL, ?
// for MySQL and MariaDB). It imports nothing of the harness.
package sqlstore

import (
	"context"
	"errors"
	"time"
)

// Kinds of SQL store.
const (
	Postgres = "postgres"
	MySQL    = "mysql"
)

// ColumnType is what a result column holds, as far as the harness's checks care.
type ColumnType int

// Column types.
const (
	TypeOther ColumnType = iota
	TypeInt
	TypeBool
	TypeText
	// TypeUnknown: the server does not say before running the statement.
	TypeUnknown
)

// Column is one result column of a prepared statement.
type Column struct {
	Name string
	Type ColumnType
	// TypeName is the server's name for the type ("bigint", "TINYINT"), for messages.
	TypeName string
}

// Statement is what the server says of a statement it prepared.
type Statement struct {
	// Params is how many parameters the statement takes; -1 when the server
	// does not say.
	Params  int
	Columns []Column
}

// Rows is a query's result. Values are int64, float64, string, bool, time.Time
// or nil (NULL); a server's raw bytes are given as string.
type Rows struct {
	Columns []string
	Values  [][]any
}

// DB is a pool of the harness's own sessions in the receiver's database,
// marked so that fault tools and busy checks spare them. It is safe for
// concurrent use.
type DB interface {
	// Kind is Postgres or MySQL.
	Kind() string
	// Prepare checks stmt on the server without running it. A statement the
	// server refuses gives an error wrapping ErrStatement.
	Prepare(ctx context.Context, stmt string) (Statement, error)
	// Query runs a read and returns its rows.
	Query(ctx context.Context, stmt string, args ...any) (Rows, error)
	// Exec runs a statement that returns no rows.
	Exec(ctx context.Context, stmt string, args ...any) error
	// Script runs a setup script (several statements, no parameters) as one
	// unit where the server can: a failing statement leaves nothing. line is
	// the script's line the server blamed (0 when it does not say).
	Script(ctx context.Context, script string) (line int, err error)
	// Where names the server and database for messages (host:port/db, never a
	// password).
	Where() string
	Close()
}

// ErrStatement is wrapped by an error that blames the statement (wrong SQL, an
// unknown table or column), not the server's state: a mistake in the target
// file. Its message is the server's, as its own client shows it.
var ErrStatement = errors.New("statement refused by the server")

// ErrTimeout is wrapped by an error of a statement the server canceled at the
// statement or lock timeout.
var ErrTimeout = errors.New("statement timed out")

// Timeouts bound the harness's sessions; zero fields take the caller's defaults.
type Timeouts struct {
	// Connect bounds one connection attempt (TCP, TLS, authentication).
	Connect time.Duration
	// Statement is the longest one statement runs, on the server.
	Statement time.Duration
	// Lock is the longest a statement waits for a lock another session holds.
	Lock time.Duration
}
