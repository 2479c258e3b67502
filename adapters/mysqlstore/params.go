package mysqlstore

import (
	"fmt"
	"strconv"
	"strings"
)

// Rewrite turns a statement written with hookcert's parameters ($1..$n) into
// one with MySQL's ? placeholders, and says which parameter each ? stands for,
// in order of appearance: "a = $3 OR b = $3" binds the event ID twice. A $1
// inside a quoted string, a backquoted identifier or a comment is text, and so
// is a $ inside a name (col$1). A ? of the statement's own would be a
// placeholder nobody binds: it is refused, as is an unterminated quote or
// comment.
func Rewrite(stmt string) (string, []int, error) {
	var b strings.Builder
	var order []int
	i := 0
	for i < len(stmt) {
		c := stmt[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j, err := skipQuoted(stmt, i)
			if err != nil {
				return "", nil, err
			}
			b.WriteString(stmt[i:j])
			i = j
		case c == '#' || (c == '-' && strings.HasPrefix(stmt[i:], "--") && (i+2 == len(stmt) || isSpace(stmt[i+2]))):
			j := strings.IndexByte(stmt[i:], '\n')
			if j < 0 {
				j = len(stmt) - i
			}
			b.WriteString(stmt[i : i+j])
			i += j
		case c == '/' && strings.HasPrefix(stmt[i:], "/*"):
			if executableComment(stmt[i:]) {
				// /*! ... */ and /*M! ... */ are code to the server: their
				// parameters are parameters. The closing */ is copied below.
				b.WriteString("/*")
				i += 2
				continue
			}
			j := strings.Index(stmt[i+2:], "*/")
			if j < 0 {
				return "", nil, fmt.Errorf("unterminated /* comment at offset %d", i)
			}
			b.WriteString(stmt[i : i+2+j+2])
			i += 2 + j + 2
		case c == '?':
			return "", nil, fmt.Errorf("a ? placeholder at offset %d: write hookcert's parameters ($1 to $4) instead", i)
		case c == '$' && i+1 < len(stmt) && isDigit(stmt[i+1]) && (i == 0 || !isIdentByte(stmt[i-1])):
			j := i + 1
			for j < len(stmt) && isDigit(stmt[j]) {
				j++
			}
			if j < len(stmt) && isIdentByte(stmt[j]) {
				// $1abc is a name to the server, not a parameter.
				b.WriteString(stmt[i:j])
				i = j
				continue
			}
			n, err := strconv.Atoi(stmt[i+1 : j])
			if err != nil || n < 1 {
				return "", nil, fmt.Errorf("bad parameter %q at offset %d", stmt[i:j], i)
			}
			order = append(order, n)
			b.WriteByte('?')
			i = j
		case isIdentByte(c):
			// A whole name at once, so that a $ inside it stays in it.
			j := i + 1
			for j < len(stmt) && isIdentByte(stmt[j]) {
				j++
			}
			b.WriteString(stmt[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), order, nil
}

// skipQuoted returns the offset just past the quoted string or identifier
// starting at i. In '...' and "..." a backslash escapes the next byte (MySQL's
// default sql_mode); in all three a doubled quote stands for itself.
func skipQuoted(s string, i int) (int, error) {
	q := s[i]
	j := i + 1
	for j < len(s) {
		switch {
		case s[j] == '\\' && q != '`':
			j += 2
		case s[j] == q:
			if j+1 < len(s) && s[j+1] == q {
				j += 2
				continue
			}
			return j + 1, nil
		default:
			j++
		}
	}
	return 0, fmt.Errorf("unterminated %c quote at offset %d", q, i)
}

// executableComment reports whether s starts a /*! or /*M! comment, whose
// content MySQL or MariaDB runs.
func executableComment(s string) bool {
	return strings.HasPrefix(s, "/*!") || strings.HasPrefix(s, "/*M!")
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// isIdentByte: the bytes of an unquoted MySQL name (any non-ASCII byte is part
// of a UTF-8 letter).
func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

// bindArgs lays args out in the order of the rewritten statement's
// placeholders: order[i] = k means the i-th ? takes args[k-1].
func bindArgs(order []int, args []any) ([]any, error) {
	out := make([]any, len(order))
	for i, k := range order {
		if k > len(args) {
			return nil, fmt.Errorf("the statement uses $%d, but %d argument(s) were given", k, len(args))
		}
		out[i] = args[k-1]
	}
	return out, nil
}

// maxParam is the highest parameter a rewritten statement uses: how many it
// takes, its parameters being compact ($1..$n).
func maxParam(order []int) int {
	m := 0
	for _, k := range order {
		m = max(m, k)
	}
	return m
}
