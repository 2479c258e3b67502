package targetfile

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxParam is the highest bound parameter a configured query may use: $1 source,
// $2 account, $3 event ID, $4 object ID.
const MaxParam = 4

// ParamNames names the bound parameters, index n-1 for $n.
var ParamNames = [MaxParam]string{"source", "account", "event ID", "object ID"}

// placeholder is one $n found in a query, with its byte span.
type placeholder struct {
	n          int
	start, end int
}

// scanPlaceholders finds the $n parameter references of a PostgreSQL query, skipping
// string literals, quoted identifiers, dollar-quoted strings and comments, where a
// "$1" is text, not a parameter.
func scanPlaceholders(sql string) ([]placeholder, error) {
	var out []placeholder
	i := 0
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == '\'' || c == '"':
			// '...' literal or "..." identifier; a doubled quote escapes itself.
			j := i + 1
			for {
				k := strings.IndexByte(sql[j:], c)
				if k < 0 {
					return nil, fmt.Errorf("unterminated %c quote at offset %d", c, i)
				}
				j += k + 1
				if j < len(sql) && sql[j] == c {
					j++
					continue
				}
				break
			}
			i = j
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			k := strings.IndexByte(sql[i:], '\n')
			if k < 0 {
				i = len(sql)
			} else {
				i += k + 1
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			k := strings.Index(sql[i+2:], "*/")
			if k < 0 {
				return nil, fmt.Errorf("unterminated /* comment at offset %d", i)
			}
			i += 2 + k + 2
		case c == '$':
			j := i + 1
			for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
			if j > i+1 {
				n, err := strconv.Atoi(sql[i+1 : j])
				if err != nil {
					return nil, fmt.Errorf("bad parameter %q", sql[i:j])
				}
				out = append(out, placeholder{n: n, start: i, end: j})
				i = j
				continue
			}
			// $tag$ ... $tag$ dollar quoting: tag is empty or an identifier.
			k := j
			for k < len(sql) && (isIdentByte(sql[k])) {
				k++
			}
			if k < len(sql) && sql[k] == '$' && (k == j || !isDigit(sql[j])) {
				tag := sql[i : k+1]
				end := strings.Index(sql[k+1:], tag)
				if end < 0 {
					return nil, fmt.Errorf("unterminated dollar quote %s at offset %d", tag, i)
				}
				i = k + 1 + end + len(tag)
				continue
			}
			i++
		default:
			i++
		}
	}
	return out, nil
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isIdentByte(b byte) bool {
	return b == '_' || isDigit(b) || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b >= 0x80
}

// QueryParams returns the distinct parameter numbers a query references, ascending.
func QueryParams(sql string) ([]int, error) { return queryParams(sql, MaxParam) }

// MaxFixtureParam is the highest parameter a fixture's SQL may use: the query
// parameters, then $5 amount, $6 currency and $7 the parent object's ID (an
// object with a relation; empty otherwise).
const MaxFixtureParam = 7

// FixtureParamNames names a fixture's parameters, index n-1 for $n; $3 (event
// ID) is not bound, as no event exists yet.
var FixtureParamNames = [MaxFixtureParam]string{"source", "account", "event ID", "object ID", "amount", "currency", "parent ID"}

// FixtureParams is QueryParams for a fixture's SQL ($1..$7).
func FixtureParams(sql string) ([]int, error) { return queryParams(sql, MaxFixtureParam) }

// CompactFixtureParams is CompactParams for a fixture's SQL ($1..$7).
func CompactFixtureParams(sql string) (string, []int, error) {
	return compactParams(sql, MaxFixtureParam)
}

func queryParams(sql string, max int) ([]int, error) {
	ph, err := scanPlaceholders(sql)
	if err != nil {
		return nil, err
	}
	seen := make([]bool, max+1)
	var out []int
	for _, p := range ph {
		if p.n < 1 || p.n > max {
			return nil, fmt.Errorf("parameter $%d is out of range $1..$%d", p.n, max)
		}
		seen[p.n] = true
	}
	for n := 1; n <= max; n++ {
		if seen[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// CompactParams rewrites a query so that the parameters it references are numbered
// contiguously from $1, and returns which original parameter each new one carries.
// PostgreSQL cannot prepare "... WHERE account_id=$2 AND object_id=$4" alone (it
// cannot infer the types of $1 and $3), so the observer binds only what is used.
func CompactParams(sql string) (string, []int, error) { return compactParams(sql, MaxParam) }

func compactParams(sql string, max int) (string, []int, error) {
	ph, err := scanPlaceholders(sql)
	if err != nil {
		return "", nil, err
	}
	used, err := queryParams(sql, max)
	if err != nil {
		return "", nil, err
	}
	renum := map[int]int{}
	for i, n := range used {
		renum[n] = i + 1
	}
	var b strings.Builder
	last := 0
	for _, p := range ph {
		b.WriteString(sql[last:p.start])
		b.WriteString("$" + strconv.Itoa(renum[p.n]))
		last = p.end
	}
	b.WriteString(sql[last:])
	return b.String(), used, nil
}

// declaredQuery checks a query of the declared vocabulary: parameters $1..$4 and
// one of needs referenced. required says whether it must be given.
func (v *validator) declaredQuery(segs []any, sql string, required bool, needs ...int) string {
	if strings.TrimSpace(sql) == "" {
		if required {
			v.fail(segs, "required")
		}
		return ""
	}
	if !v.queryParams(segs, sql, needs) {
		return ""
	}
	return sql
}

// queryParams checks a query's parameters: within $1..$4, and at least one of
// needs referenced (no needs: no parameter at all).
func (v *validator) queryParams(segs []any, sql string, needs []int) bool {
	used, err := QueryParams(sql)
	if err != nil {
		v.fail(segs, "must use only parameters $1..$%d ($1 source, $2 account, $3 event ID, $4 object ID): %v", MaxParam, err)
		return false
	}
	if len(needs) == 0 {
		if len(used) > 0 {
			v.fail(segs, "must take no parameters (got $%d)", used[0])
			return false
		}
		return v.queryForm(segs, sql)
	}
	for _, n := range needs {
		if containsInt(used, n) {
			return v.queryForm(segs, sql)
		}
	}
	alts := make([]string, len(needs))
	for i, n := range needs {
		alts[i] = fmt.Sprintf("$%d (the %s)", n, ParamNames[n-1])
	}
	v.fail(segs, "must reference %s", strings.Join(alts, " or "))
	return false
}
