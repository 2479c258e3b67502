package redisobserve

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/adapters/observe"
)

// TestQueryRules: each wrong query is refused before any connection, naming
// its field and the rule, and all of them are reported at once.
func TestQueryRules(t *testing.T) {
	cases := []struct{ name, query, want string }{
		{"event_rows", "DEL seen:$3", "DEL is not a command hookcert reads with (read-only, one key: EXISTS GET HGET HMGET HLEN HEXISTS LLEN SCARD SISMEMBER ZCARD ZSCORE STRLEN PTTL TTL COUNT)"},
		{"event_rows", "EVAL return 1 0", "EVAL is not a command hookcert reads with"},
		{"event_rows", "  ", "is empty: want one read-only Redis command (EXISTS seen:$1:$3)"},
		{"event_rows", "GET seen:$3 extra", "wrong number of words: want GET key, got 2 word(s) after GET"},
		{"event_rows", "HGET seen:$3", "wrong number of words: want HGET key field, got 1 word(s) after HGET"},
		{"event_rows", "EXISTS seen:$1", "must reference $3 (the event ID) in a key or field"},
		{"effects", "LLEN ledger:$2", "must reference $3 (the event ID) or $4 (the object ID) in a key or field"},
		{"object_effects", "COUNT ledger:$5:*", "must use only parameters $1..$4 ($1 source, $2 account, $3 event ID, $4 object ID): $5 in \"ledger:$5:*\" is out of range"},
		{"object_effects", "COUNT ledger:$0:*", "$0 in \"ledger:$0:*\" is out of range"},
		{"event_rows", "GE$3 seen:$3", "the command word \"GE$3\" holds a parameter"},
		{"event_rows", "PTTL seen:$3", "PTTL cannot answer event_rows, which is a count (use EXISTS, GET,"},
		{"key_ttl", "EXISTS seen:$3", "EXISTS cannot answer key_ttl, which is the time the key has left (use PTTL, TTL)"},
		{"key_ttl", "PTTL seen:$1", "must reference $3 (the event ID)"},
		{"object", "HMGET sub:$4 version status extra", "HMGET reads 3 field(s) here; object reads 1 to 2 (version, status)"},
		{"payment", "HMGET payment:$4 status version", "HMGET reads 2 field(s) here; payment reads exactly 1 (status)"},
		{"inbox_state", "HMGET inbox:$3 state", "HMGET reads 1 field(s) here; inbox_state reads exactly 2 (state, attempts)"},
		{"inbox_state", "HGET inbox:$3 state", "HGET cannot answer inbox_state"},
		{"object", "LLEN sub:$4", "LLEN cannot answer object"},
		{"quiescent", "LLEN queue:$1", "must take no parameters (got $1)"},
		{"ledger", "LLEN ledger:$4", "not a query hookcert reads from Redis (known: effects, event_rows, inbox_state, key_ttl, object, object_effects, outbox_state, payload_present, payment, quiescent)"},
	}
	for _, c := range cases {
		_, err := Open(context.Background(), "redis://127.0.0.1:1/0", map[string]string{c.name: c.query}, nil, Timeouts{})
		field := "observe: target.observe.redis.queries." + c.name + ": "
		if err == nil || !strings.HasPrefix(err.Error(), field) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q: err = %v\nwant %q%q", c.name, c.query, err, field, c.want)
			continue
		}
		if !errors.Is(err, observe.ErrInvalidQuery) || errors.Is(err, observe.ErrUnreachable) {
			t.Errorf("%s: %q: err does not wrap ErrInvalidQuery alone: %v", c.name, c.query, err)
		}
	}

	// Every mistake at once, each under the field the caller names.
	_, err := Open(context.Background(), "redis://127.0.0.1:1/0", map[string]string{
		"event_rows": "DEL seen:$3", "effects": "GET applied:$3", "payment": "HGET p:$4",
	}, func(n string) string { return "target.events.x." + n }, Timeouts{})
	for _, want := range []string{"target.events.x.event_rows: DEL", "target.events.x.payment: wrong number of words"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "effects") {
		t.Errorf("a correct query is blamed: %v", err)
	}
}

// TestExpand: parameters are substituted inside words, several per word,
// and a COUNT pattern escapes the values' glob characters.
func TestExpand(t *testing.T) {
	k := observe.Key{Source: "stripe", Account: "acct A", EventID: "evt_1", ObjectID: "ch_*?[x]\\"}
	for _, c := range []struct {
		name, query string
		want        []string
		params      []int
	}{
		{"event_rows", "EXISTS seen:$1:$2:$3 $$3 $x", []string{"seen:stripe:acct A:evt_1", "$evt_1", "$x"}, []int{1, 2, 3}},
		{"object", "HMGET sub:$4 version status", []string{"sub:ch_*?[x]\\", "version", "status"}, []int{4}},
		{"object_effects", "COUNT ledger:$4:*", []string{`ledger:ch_\*\?\[x\]\\:*`}, []int{4}},
		{"key_ttl", "pttl seen:$3", []string{"seen:evt_1"}, []int{3}},
	} {
		q, err := parseQuery(c.name, DefaultFieldPath(c.name), c.query)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		if got := q.expand(k); !slices.Equal(got, c.want) {
			t.Errorf("%s: expand = %q, want %q", c.query, got, c.want)
		}
		if !slices.Equal(q.params, c.params) {
			t.Errorf("%s: params = %v, want %v", c.query, q.params, c.params)
		}
	}
}

// TestRowsFromReplies: each kind of reply becomes the rows the Reader contract
// gives its query.
func TestRowsFromReplies(t *testing.T) {
	cases := []struct {
		name, query string
		reply       any
		want        [][]any // nil: no row
		err         string
	}{
		{"event_rows", "EXISTS s:$3", int64(1), [][]any{{int64(1)}}, ""},
		{"effects", "GET a:$3", "2", [][]any{{int64(2)}}, ""},
		{"effects", "GET a:$3", nil, nil, ""},
		{"effects", "GET a:$3", "two", nil, `"two", not an integer`},
		{"effects", "HMGET a:$3 n", []any{"3"}, [][]any{{int64(3)}}, ""},
		{"object_effects", "ZSCORE z:$4 m", "4", [][]any{{int64(4)}}, ""},
		{"object", "HMGET s:$4 version status", []any{"3", "active"}, [][]any{{int64(3), "active"}}, ""},
		{"object", "HMGET s:$4 version status", []any{nil, nil}, nil, ""},
		{"object", "HMGET s:$4 version status", []any{nil, "deleted"}, [][]any{{nil, "deleted"}}, ""},
		{"object", "HMGET s:$4 version status", []any{"v3", "active"}, nil, `"v3", not an integer for the version`},
		{"object", "ZSCORE s $4", "1700000123", [][]any{{int64(1700000123)}}, ""},
		{"payment", "HGET p:$4 status", "succeeded", [][]any{{"succeeded"}}, ""},
		{"payment", "HGET p:$4 status", nil, nil, ""},
		{"payload_present", "HEXISTS e:$3 payload", int64(0), [][]any{{false}}, ""},
		{"payload_present", "HEXISTS e:$3 payload", int64(1), [][]any{{true}}, ""},
		{"payload_present", "GET p:$3", "{}", [][]any{{true}}, ""},
		{"payload_present", "GET p:$3", nil, nil, ""},
		{"key_ttl", "PTTL s:$3", int64(-2), nil, ""},
		{"key_ttl", "PTTL s:$3", int64(-1), [][]any{{int64(-1)}}, ""},
		{"key_ttl", "PTTL s:$3", int64(1234), [][]any{{int64(1234)}}, ""},
		{"key_ttl", "TTL s:$3", int64(60), [][]any{{int64(60000)}}, ""},
		{"key_ttl", "TTL s:$3", int64(-1), [][]any{{int64(-1)}}, ""},
		{"key_ttl", "TTL s:$3", int64(-2), nil, ""},
		{"key_ttl", "PTTL s:$3", int64(-3), nil, "-3, not a time to live"},
		{"quiescent", "LLEN q", int64(0), [][]any{{true}}, ""},
		{"quiescent", "LLEN q", int64(2), [][]any{{false}}, ""},
		{"quiescent", "GET pending", nil, [][]any{{true}}, ""},
		{"inbox_state", "HMGET i:$3 state attempts", []any{"done", "2"}, [][]any{{"done", int64(2)}}, ""},
		{"inbox_state", "HMGET i:$3 state attempts", []any{nil, nil}, nil, ""},
		{"outbox_state", "HMGET o:$3 state attempts", []any{"sent", "x"}, nil, `"x", not an integer for the attempts`},
	}
	for _, c := range cases {
		q, err := parseQuery(c.name, DefaultFieldPath(c.name), c.query)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		rows, err := q.rows(c.reply)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %#v: err = %v, want %q", c.query, c.reply, err, c.err)
			}
		case err != nil:
			t.Errorf("%s %#v: %v", c.query, c.reply, err)
		case !equalRows(rows.Values, c.want):
			t.Errorf("%s %#v: rows = %#v, want %#v", c.query, c.reply, rows.Values, c.want)
		}
	}
}

func equalRows(a, b [][]any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
