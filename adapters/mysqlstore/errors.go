package mysqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// MySQL and MariaDB error numbers this package tells apart.
const (
	erLockWaitTimeout   = 1205 // ER_LOCK_WAIT_TIMEOUT: a row lock or a metadata lock (lock_wait_timeout)
	erStatementTimeout  = 1969 // MariaDB ER_STATEMENT_TIMEOUT: max_statement_time
	erQueryTimeout      = 3024 // MySQL ER_QUERY_TIMEOUT: max_execution_time
	erNoSuchThread      = 1094 // ER_NO_SUCH_THREAD: KILL of a session already gone
	erQueryInterrupted  = 1317 // ER_QUERY_INTERRUPTED: KILL QUERY
	erConnectionKilled  = 1927 // MariaDB ER_CONNECTION_KILLED
	erServerShutdown    = 1053 // ER_SERVER_SHUTDOWN
	erTooManyConns      = 1040 // ER_CON_COUNT_ERROR
	erOutOfMemory       = 1041 // ER_OUT_OF_RESOURCES
	erDeadlock          = 1213 // ER_LOCK_DEADLOCK
	erReadOnlyMode      = 1290 // ER_OPTION_PREVENTS_STATEMENT (--read-only)
	erReadOnlyTrx       = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	erClientInteraction = 4031 // MySQL: disconnected by the server for inactivity
	erAbortingConn      = 1152 // ER_ABORTING_CONNECTION
	erNetReadError      = 1158 // ER_NET_READ_ERROR and the net errors after it
	erNetWriteInterrupt = 1161
)

// unavailable reports errors that say the server cannot serve now — shutdown,
// a killed session, exhausted resources, a lock conflict — not that the
// statement is wrong: a statement refused with any other number is the
// statement's fault (the target file's).
func unavailable(n uint16) bool {
	switch n {
	case erLockWaitTimeout, erStatementTimeout, erQueryTimeout, erQueryInterrupted, erConnectionKilled,
		erServerShutdown, erTooManyConns, erOutOfMemory, erDeadlock, erReadOnlyMode, erReadOnlyTrx,
		erClientInteraction, erAbortingConn:
		return true
	}
	return n >= erNetReadError && n <= erNetWriteInterrupt
}

// Message is the server's error as the mysql client shows it:
// "ERROR 1146 (42S02): Table 'shop.nope' doesn't exist".
func Message(me *mysql.MySQLError) string {
	if me.SQLState != [5]byte{} {
		return fmt.Sprintf("ERROR %d (%s): %s", me.Number, me.SQLState, me.Message)
	}
	return fmt.Sprintf("ERROR %d: %s", me.Number, me.Message)
}

// storeError is an error of a class (sqlstore.ErrStatement, ErrTimeout)
// whose message is its own, keeping its cause for errors.As.
type storeError struct {
	msg   string
	kinds []error
}

func (e *storeError) Error() string   { return e.msg }
func (e *storeError) Unwrap() []error { return e.kinds }

func classed(msg string, kinds ...error) error {
	e := &storeError{msg: msg}
	for _, k := range kinds {
		if k != nil {
			e.kinds = append(e.kinds, k)
		}
	}
	return e
}

// statementError is a refusal of stmt's own making that the server did not
// word (a ? of its own, an unterminated quote).
func statementError(msg string) error { return classed(msg, sqlstore.ErrStatement) }

// classify turns a driver's error into the classes sqlstore.DB promises.
// ctx is the caller's: its own deadline or cancellation is not a timeout of
// this package's.
func (d *DB) classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch {
		case me.Number == erStatementTimeout || me.Number == erQueryTimeout:
			return classed(fmt.Sprintf("ran longer than %s (%s): %s", d.to.Statement, d.statementVar(), Message(me)), sqlstore.ErrTimeout, me)
		case me.Number == erLockWaitTimeout:
			return classed(fmt.Sprintf("waited %s for a lock another session holds (lock_wait_timeout, innodb_lock_wait_timeout): %s",
				lockSeconds(d.to.Lock), Message(me)), sqlstore.ErrTimeout, me)
		case unavailable(me.Number):
			return classed(fmt.Sprintf("%s: %s", d.where, Message(me)), me)
		}
		return classed(Message(me), sqlstore.ErrStatement, me)
	}
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return classed(fmt.Sprintf("no answer from %s within %s (statement timeout %s + connect timeout %s)",
			d.where, d.to.Statement+d.to.Connect, d.to.Statement, d.to.Connect), sqlstore.ErrTimeout, err)
	}
	return classed(fmt.Sprintf("%s: %v", d.where, err), err)
}

// statementVar names the server's statement timeout.
func (d *DB) statementVar() string {
	if d.mariaDB {
		return "max_statement_time"
	}
	return "max_execution_time"
}
