package redisobserve

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/vocab"
)

// QKeyTTL reads the milliseconds an event's dedupe key has left.
const QKeyTTL = "key_ttl"

// Kinds of reply a query turns into rows.
const (
	asCount     = iota // one integer (no row: 0)
	asQuiescent        // a count of pending work: true at 0
	asObject           // (version integer[, status text])
	asStatus           // (status text)
	asPresent          // (present boolean)
	asTTL              // (milliseconds left), -1 never expires
	asState            // (state text, attempts integer)
)

// shape is what one named query must be: the commands that can answer it,
// how many values it reads, the parameters it needs and its columns.
type shape struct {
	as       int
	commands []string
	// minValues and maxValues bound the fields an HMGET reads.
	minValues, maxValues int
	// needs: one of these parameters must appear; nil: none may.
	needs   []int
	columns []string
}

var (
	countCommands  = []string{"EXISTS", "GET", "HGET", "HMGET", "HLEN", "HEXISTS", "LLEN", "SCARD", "SISMEMBER", "ZCARD", "ZSCORE", "STRLEN", "COUNT"}
	valueCommands  = []string{"GET", "HGET", "HMGET", "ZSCORE"}
	statusCommands = []string{"GET", "HGET", "HMGET"}
)

// shapes are the queries the Reader answers, by name; the parameters each
// needs are the SQL kinds' (targetfile's query list).
var shapes = map[string]shape{
	observe.QEventRows:      {as: asCount, commands: countCommands, minValues: 1, maxValues: 1, needs: []int{3}, columns: []string{"count"}},
	observe.QEffects:        {as: asCount, commands: countCommands, minValues: 1, maxValues: 1, needs: []int{3, 4}, columns: []string{"count"}},
	observe.QObjectEffects:  {as: asCount, commands: countCommands, minValues: 1, maxValues: 1, needs: []int{4}, columns: []string{"count"}},
	observe.QObject:         {as: asObject, commands: valueCommands, minValues: 1, maxValues: 2, needs: []int{4}, columns: []string{"version", "status"}},
	observe.QPayment:        {as: asStatus, commands: statusCommands, minValues: 1, maxValues: 1, needs: []int{4}, columns: []string{"status"}},
	observe.QPayloadPresent: {as: asPresent, commands: []string{"EXISTS", "HEXISTS", "SISMEMBER", "STRLEN", "GET", "HGET"}, minValues: 1, maxValues: 1, needs: []int{3}, columns: []string{"present"}},
	QKeyTTL:                 {as: asTTL, commands: []string{"PTTL", "TTL"}, minValues: 1, maxValues: 1, needs: []int{3}, columns: []string{"ttl_ms"}},
	observe.QQuiescent:      {as: asQuiescent, commands: countCommands, minValues: 1, maxValues: 1, columns: []string{"quiescent"}},
	observe.QInboxState:     {as: asState, commands: []string{"HMGET"}, minValues: 2, maxValues: 2, needs: []int{3}, columns: []string{"state", "attempts"}},
	observe.QOutboxState:    {as: asState, commands: []string{"HMGET"}, minValues: 2, maxValues: 2, needs: []int{3}, columns: []string{"state", "attempts"}},
}

// arity is how many words follow each command: at least min, at most max
// (-1: no bound), described by usage.
var arity = map[string]struct {
	min, max int
	usage    string
}{
	"EXISTS":    {1, -1, "EXISTS key [key ...]"},
	"GET":       {1, 1, "GET key"},
	"HGET":      {2, 2, "HGET key field"},
	"HMGET":     {2, -1, "HMGET key field [field ...]"},
	"HLEN":      {1, 1, "HLEN key"},
	"HEXISTS":   {2, 2, "HEXISTS key field"},
	"LLEN":      {1, 1, "LLEN key"},
	"SCARD":     {1, 1, "SCARD key"},
	"SISMEMBER": {2, 2, "SISMEMBER key member"},
	"ZCARD":     {1, 1, "ZCARD key"},
	"ZSCORE":    {2, 2, "ZSCORE key member"},
	"STRLEN":    {1, 1, "STRLEN key"},
	"PTTL":      {1, 1, "PTTL key"},
	"TTL":       {1, 1, "TTL key"},
	"COUNT":     {1, 1, "COUNT pattern"},
}

// AllowedCommands are the commands a query may use, in the documented order.
func AllowedCommands() []string {
	return []string{"EXISTS", "GET", "HGET", "HMGET", "HLEN", "HEXISTS", "LLEN", "SCARD", "SISMEMBER", "ZCARD", "ZSCORE", "STRLEN", "PTTL", "TTL", "COUNT"}
}

// Queries are the query names the Reader answers, sorted.
func Queries() []string {
	out := make([]string, 0, len(shapes))
	for n := range shapes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var paramNames = [4]string{"source", "account", "event ID", "object ID"}

// query is one checked command template.
type query struct {
	name, field, template string
	cmd                   string
	args                  []string // the words after the command, with $n in them
	params                []int    // distinct, ascending
	shape                 shape
}

// parseQuery checks one configured query; the error is the rule it breaks,
// without the field (the caller names it).
func parseQuery(name, field, template string) (*query, error) {
	sh, ok := shapes[vocab.BaseQuery(name)]
	if !ok {
		return nil, fmt.Errorf("not a query hookcert reads from Redis (known: %s)", strings.Join(Queries(), ", "))
	}
	words := strings.Fields(template)
	if len(words) == 0 {
		return nil, fmt.Errorf("is empty: want one read-only Redis command (%s)", example(sh))
	}
	q := &query{name: name, field: field, template: template, cmd: strings.ToUpper(words[0]), args: words[1:], shape: sh}
	if strings.Contains(words[0], "$") {
		return nil, fmt.Errorf("the command word %q holds a parameter: only keys, fields and members may", words[0])
	}
	a, known := arity[q.cmd]
	if !known {
		return nil, fmt.Errorf("%s is not a command hookcert reads with (read-only, one key: %s)", words[0], strings.Join(AllowedCommands(), " "))
	}
	if !slices.Contains(sh.commands, q.cmd) {
		return nil, fmt.Errorf("%s cannot answer %s, which %s (use %s)", q.cmd, name, answers(sh), strings.Join(sh.commands, ", "))
	}
	if n := len(q.args); n < a.min || (a.max >= 0 && n > a.max) {
		return nil, fmt.Errorf("wrong number of words: want %s, got %d word(s) after %s", a.usage, n, q.cmd)
	}
	if q.cmd == "HMGET" {
		if n := len(q.args) - 1; n < sh.minValues || n > sh.maxValues {
			return nil, fmt.Errorf("HMGET reads %d field(s) here; %s reads %s (%s)", n, name, fieldCount(sh), strings.Join(sh.columns[:sh.maxValues], ", "))
		}
	}
	seen := map[int]bool{}
	for _, w := range q.args {
		ns, err := wordParams(w)
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			seen[n] = true
		}
	}
	for n := 1; n <= 4; n++ {
		if seen[n] {
			q.params = append(q.params, n)
		}
	}
	if sh.needs == nil {
		if len(q.params) > 0 {
			return nil, fmt.Errorf("must take no parameters (got $%d)", q.params[0])
		}
		return q, nil
	}
	for _, n := range sh.needs {
		if seen[n] {
			return q, nil
		}
	}
	alts := make([]string, len(sh.needs))
	for i, n := range sh.needs {
		alts[i] = fmt.Sprintf("$%d (the %s)", n, paramNames[n-1])
	}
	return nil, fmt.Errorf("must reference %s in a key or field, or it reads the same key for every event", strings.Join(alts, " or "))
}

// wordParams finds the $n in one word; a $ not followed by a digit is text.
func wordParams(w string) ([]int, error) {
	var out []int
	for i := 0; i < len(w); i++ {
		if w[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(w) && w[j] >= '0' && w[j] <= '9' {
			j++
		}
		if j == i+1 {
			continue
		}
		n, err := strconv.Atoi(w[i+1 : j])
		if err != nil || n < 1 || n > 4 {
			return nil, fmt.Errorf("must use only parameters $1..$4 ($1 source, $2 account, $3 event ID, $4 object ID): %s in %q is out of range", w[i:j], w)
		}
		out = append(out, n)
		i = j - 1
	}
	return out, nil
}

// expand substitutes k's values into the words; in a COUNT pattern a value's
// glob characters are escaped so that it matches only itself.
func (q *query) expand(k observe.Key) []string {
	vals := [4]string{k.Source, k.Account, k.EventID, k.ObjectID}
	out := make([]string, len(q.args))
	for i, w := range q.args {
		var b strings.Builder
		for j := 0; j < len(w); j++ {
			if w[j] == '$' {
				e := j + 1
				for e < len(w) && w[e] >= '0' && w[e] <= '9' {
					e++
				}
				if e > j+1 {
					n, _ := strconv.Atoi(w[j+1 : e]) // checked by parseQuery: 1..4
					v := vals[n-1]
					if q.cmd == "COUNT" {
						v = globEscape(v)
					}
					b.WriteString(v)
					j = e - 1
					continue
				}
			}
			b.WriteByte(w[j])
		}
		out[i] = b.String()
	}
	return out
}

// globEscape escapes the characters Redis's glob matching gives a meaning to.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\^`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\', '^':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// answers says what a query must give, for messages.
func answers(sh shape) string {
	switch sh.as {
	case asCount:
		return "is a count"
	case asQuiescent:
		return "is a count of pending work (0: quiescent)"
	case asObject:
		return "is the object's (version[, status])"
	case asStatus:
		return "is the object's status"
	case asPresent:
		return "says whether the payload is still stored"
	case asTTL:
		return "is the time the key has left"
	case asState:
		return "is (state, attempts) from one hash"
	}
	return "is something else"
}

func fieldCount(sh shape) string {
	if sh.minValues == sh.maxValues {
		return fmt.Sprintf("exactly %d", sh.minValues)
	}
	return fmt.Sprintf("%d to %d", sh.minValues, sh.maxValues)
}

// example is a query of that shape, for the message of an empty one.
func example(sh shape) string {
	switch sh.as {
	case asTTL:
		return "PTTL seen:$1:$3"
	case asObject:
		return "HMGET sub:$4 version status"
	case asStatus:
		return "HGET payment:$4 status"
	case asState:
		return "HMGET inbox:$3 state attempts"
	case asQuiescent:
		return "LLEN queue"
	}
	return "EXISTS seen:$1:$3"
}
