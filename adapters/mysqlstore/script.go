package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Script runs a setup script: statements separated by ; (or by what a
// DELIMITER line sets, as the mysql client reads a file, so that a script
// creating a trigger or a procedure runs here as it does there), no
// parameters. The statements run one by one on one session, each bounded only
// by ctx (the setup's own timeout), not by the statement timeout.
//
// "One unit" can only mean so much on MySQL: the script runs inside a
// transaction, rolled back when a statement fails, so a script of INSERTs and
// UPDATEs leaves nothing — but every CREATE, ALTER, DROP or TRUNCATE commits
// implicitly (and is not itself undone), so what a failing script did before
// its last DDL statement stays. A setup script should be written to run
// again over what a failed run left (CREATE TABLE IF NOT EXISTS).
//
// line is the script's line the server blamed: the line it names in the
// failing statement ("... near ',' at line 3") counted from where that
// statement starts, else the line of its first word.
func (d *DB) Script(ctx context.Context, script string) (int, error) {
	stmts, err := splitScript(script)
	if err != nil {
		var se *scriptError
		if errors.As(err, &se) {
			return se.line, statementError(se.msg)
		}
		return 0, statementError(err.Error())
	}
	c, err := d.db.Conn(ctx)
	if err != nil {
		return 0, d.classify(ctx, err)
	}
	// The session's timeouts change below: it never goes back to the pool.
	defer discard(c)
	noLimit := "SET SESSION max_execution_time = 0"
	if d.mariaDB {
		noLimit = "SET SESSION max_statement_time = 0"
	}
	for _, s := range []string{noLimit, "START TRANSACTION"} {
		if _, err := c.ExecContext(ctx, s); err != nil {
			return 0, d.classify(ctx, err)
		}
	}
	for _, st := range stmts {
		if _, err := c.ExecContext(ctx, st.text); err != nil {
			_, _ = c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return st.blamed(err), d.classify(ctx, err)
		}
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, d.classify(ctx, err)
	}
	return 0, nil
}

// discard closes c's session instead of returning it to the pool.
func discard(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}

// scriptStmt is one statement of a script.
type scriptStmt struct {
	text string
	// line is the script's line text starts on; first the line of its first
	// word (text may start with blank lines and comments).
	line, first int
}

var atLineRE = regexp.MustCompile(`at line (\d+)\s*$`)

// blamed is the script's line a failure of the statement points at.
func (s scriptStmt) blamed(err error) int {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		if m := atLineRE.FindStringSubmatch(me.Message); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n >= 1 {
				// The server counts from the statement's first byte past
				// leading blanks (comments count).
				rest := strings.TrimLeft(s.text, " \t\r\n\f\v")
				return s.line + strings.Count(s.text[:len(s.text)-len(rest)], "\n") + n - 1
			}
		}
	}
	return s.first
}

type scriptError struct {
	msg  string
	line int
}

func (e *scriptError) Error() string { return e.msg }

var delimiterRE = regexp.MustCompile(`(?i)^[ \t]*delimiter[ \t]+(\S+)[ \t]*(?:\r?\n|$)`)

// splitScript cuts a script into statements as the mysql client does: at the
// delimiter (; unless a DELIMITER line changed it) outside quotes, backquotes
// and comments. /*! ... */ comments are code to the server and kept.
func splitScript(script string) ([]scriptStmt, error) {
	var out []scriptStmt
	delim := ";"
	line := 1
	start, startLine, first := 0, 1, 0
	flush := func(end int) {
		if first > 0 {
			out = append(out, scriptStmt{text: script[start:end], line: startLine, first: first})
		}
	}
	i := 0
	for i < len(script) {
		// A DELIMITER line between statements sets the delimiter.
		if first == 0 && (i == 0 || script[i-1] == '\n') {
			if m := delimiterRE.FindStringSubmatchIndex(script[i:]); m != nil {
				delim = script[i+m[2] : i+m[3]]
				if strings.HasSuffix(script[i:i+m[1]], "\n") {
					line++
				}
				i += m[1]
				start, startLine = i, line
				continue
			}
		}
		c := script[i]
		switch {
		case strings.HasPrefix(script[i:], delim):
			flush(i)
			i += len(delim)
			start, startLine, first = i, line, 0
		case c == '\'' || c == '"' || c == '`':
			j, err := skipQuoted(script, i)
			if err != nil {
				return nil, &scriptError{msg: fmt.Sprintf("unterminated %c quote starting on line %d", c, line), line: line}
			}
			if first == 0 {
				first = line
			}
			line += strings.Count(script[i:j], "\n")
			i = j
		case c == '#' || (c == '-' && strings.HasPrefix(script[i:], "--") && (i+2 == len(script) || isSpace(script[i+2]))):
			j := strings.IndexByte(script[i:], '\n')
			if j < 0 {
				j = len(script) - i
			}
			i += j
		case c == '/' && strings.HasPrefix(script[i:], "/*"):
			j := strings.Index(script[i+2:], "*/")
			if j < 0 {
				return nil, &scriptError{msg: fmt.Sprintf("unterminated /* comment starting on line %d", line), line: line}
			}
			if executableComment(script[i:]) && first == 0 {
				first = line
			}
			line += strings.Count(script[i:i+2+j+2], "\n")
			i += 2 + j + 2
		case c == '\n':
			line++
			i++
		case isSpace(c):
			i++
		default:
			if first == 0 {
				first = line
			}
			i++
		}
	}
	flush(len(script))
	return out, nil
}
