package targetfile

import (
	"regexp"
	"strings"
	"testing"
)

// TestObserverKinds: target.observe takes exactly one kind; each kind's queries
// are checked in its own form, and what a kind cannot do is refused naming it.
func TestObserverKinds(t *testing.T) {
	head := `target:
  name: t
  base_url: http://{{.ListenAddr}}
  endpoints: [{profile: stripe, account: a, path: /w, secret: whsec_x}]
  lifecycle: {command: [rx], ready: {http: /healthz}}
`
	cases := []struct{ name, body, want string }{
		{"no kind", "  observe: {}\n", "target.observe: required: one of postgres, mysql, redis, command, http"},
		{"two kinds", "  observe:\n    postgres: {url: postgres://x/y, queries: {event_rows: \"SELECT 1 WHERE $3 <> ''\", effects: \"SELECT 1 WHERE $3 <> ''\"}}\n    redis: {url: redis://x, queries: {event_rows: EXISTS k:$3, effects: GET c:$3}}\n",
			"target.observe: set only one of postgres, redis"},
		{"mysql URL of another scheme", "  observe:\n    mysql: {url: postgres://x/y, queries: {event_rows: \"SELECT 1 WHERE $3 <> ''\", effects: \"SELECT 1 WHERE $3 <> ''\"}}\n",
			"target.observe.mysql.url: must be a mysql:// URL"},
		{"redis write command", "  observe:\n    redis: {url: redis://x, queries: {event_rows: SET k:$3 1, effects: GET c:$3}}\n",
			"target.observe.redis.queries.event_rows: must start with a read-only Redis command"},
		{"redis wrong arity", "  observe:\n    redis: {url: redis://x, queries: {event_rows: EXISTS k:$3 other, effects: GET c:$3}}\n",
			"target.observe.redis.queries.event_rows: EXISTS takes one argument (a key)"},
		{"redis effects that read 0 or 1", "  observe:\n    redis: {url: redis://x, queries: {event_rows: EXISTS k:$3, effects: EXISTS applied:$3}}\n",
			"target.observe.redis.queries.effects: must count the effects"},
		{"redis without the event ID", "  observe:\n    redis: {url: redis://x, queries: {event_rows: EXISTS k:$1, effects: GET c:$3}}\n",
			"target.observe.redis.queries.event_rows: must reference $3"},
		{"redis URL of another scheme", "  observe:\n    redis: {url: http://x, queries: {event_rows: EXISTS k:$3, effects: GET c:$3}}\n",
			"target.observe.redis.url: must be a redis:// or rediss:// URL"},
		{"redis has no tables", "  observe:\n    redis: {url: redis://x, event_table: t, queries: {event_rows: EXISTS k:$3, effects: GET c:$3}}\n",
			"target.observe.redis.event_table"},
		{"lock-gating on a command observer", "  observe:\n    command: {queries: {event_rows: ./obs rows $3, effects: ./obs effects $3}}\n  capabilities: [lock-gating]\n",
			`target.capabilities[0]: capability "lock-gating" needs an observer the harness can hold (observe.postgres, observe.mysql or observe.redis)`},
		{"connection-loss on an HTTP observer", "  observe:\n    http: {base_url: \"http://x\", queries: {event_rows: \"/r/$3\", effects: \"/e/$3\"}}\n  capabilities: [connection-loss]\n",
			`capability "connection-loss" needs an observer the harness can hold`},
		{"setup script without SQL", "  setup: {sql_file: schema.sql}\n  observe:\n    command: {queries: {event_rows: ./obs rows $3, effects: ./obs effects $3}}\n",
			"target.setup.sql_file: needs a SQL observer (observe.postgres or observe.mysql) to run on; with target.observe.command use setup.command"},
		{"SQL fixture without SQL", "  fixtures: {f: {sql: \"INSERT INTO x VALUES ($4)\"}}\n  observe:\n    redis: {url: redis://x, queries: {event_rows: EXISTS k:$3, effects: GET c:$3}}\n",
			"target.fixtures.f.sql: needs a SQL observer"},
		{"http path without base_url", "  observe:\n    http: {queries: {event_rows: \"/rows?e=$3\", effects: \"/effects?e=$3\"}}\n",
			"target.observe.http.queries.event_rows: a path needs target.observe.http.base_url"},
		{"command output bound", "  observe:\n    command: {max_output_bytes: 0, queries: {event_rows: ./obs rows $3, effects: ./obs effects $3}}\n",
			"target.observe.command.max_output_bytes: must be between 1 and 67108864 bytes"},
		{"key_ttl without the event ID", "  observe:\n    redis: {url: redis://x, queries: {event_rows: EXISTS k:$3, effects: GET c:$3, key_ttl: PTTL k:$1}}\n",
			"target.observe.redis.queries.key_ttl: must reference $3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(head+c.body), testVars, WithBaseDir(t.TempDir()))
			if err == nil || !strings.Contains(regexp.MustCompile(` \(line \d+\)`).ReplaceAllString(err.Error(), ""), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}

	ok := map[string]string{
		KindMySQL: "  observe:\n    mysql: {url: \"mysql://root@127.0.0.1:3306/db\", event_table: webhook_events, effect_table: ledger,\n" +
			"      queries: {event_rows: \"SELECT COUNT(*) FROM webhook_events WHERE source = $1 AND event_id = $3\", effects: \"SELECT COUNT(*) FROM ledger WHERE event_id = $3\"}}\n" +
			"  capabilities: [lock-gating, connection-loss]\n",
		KindRedis:   "  observe:\n    redis: {url: redis://127.0.0.1:6379/0, queries: {event_rows: EXISTS seen:$1:$3, effects: GET applied:$3, key_ttl: PTTL seen:$1:$3, object_effects: COUNT ledger:$4:*}}\n  capabilities: [lock-gating, connection-loss]\n",
		KindCommand: "  observe:\n    command: {timeout: 2s, capabilities: ./obs capabilities, queries: {event_rows: ./obs rows $1 $3, effects: ./obs effects $3}}\n",
		KindHTTP:    "  observe:\n    http: {base_url: \"http://127.0.0.1:9/\", queries: {event_rows: \"/rows?source=$1&event=$3\", effects: \"http://127.0.0.1:9/effects/$3\"}}\n",
	}
	for kind, body := range ok {
		tg, err := Parse([]byte(head+body), testVars, WithBaseDir(t.TempDir()))
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if tg.Store.Kind != kind || tg.Store.Queries.FieldPath("event_rows") != "target.observe."+kind+".queries.event_rows" || tg.Store.SQL() != (kind == KindMySQL) {
			t.Errorf("%s: parsed kind %q, field %s, SQL %v", kind, tg.Store.Kind, tg.Store.Queries.FieldPath("event_rows"), tg.Store.SQL())
		}
	}
}
