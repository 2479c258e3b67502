package targetfile

import (
	"strings"
	"testing"
	"time"
)

const retentionBase = `target:
  name: r
  base_url: http://127.0.0.1:1
  endpoints:
    - {profile: stripe, account: a, path: /s, secret: x}
    - {profile: github, account: a, path: /g, secret: y, key_ttl: 4d, payload_ttl: 12h}
  observe:
    postgres:
      url: postgres://x@127.0.0.1/db
      queries:
        event_rows: SELECT 1 WHERE $3 = ''
        effects: SELECT 1 WHERE $3 = ''
        payload_present: SELECT true WHERE $3 = ''
  capabilities: [retention]
`

func TestRetentionParsed(t *testing.T) {
	for kind, purge := range map[string]string{
		"sql":     `{sql: "SELECT purge_as_of($1)"}`,
		"command": `{command: [./purge, --as-of, "{{.AsOf}}", --db, "{{.DatabaseURL}}"], timeout: 30s}`,
		"http":    `{http: {path: /_hookcert/purge}}`,
	} {
		src := retentionBase + "  retention: {key_ttl: 744h, payload_ttl: 1d, purge: " + purge + "}\n"
		tg, err := Parse([]byte(src), Vars{DatabaseURL: "postgres://db"})
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		r := tg.Retention
		if r == nil || r.Purge.Kind() != kind {
			t.Fatalf("%s: got %+v", kind, r)
		}
		s, g := tg.Endpoints[0], tg.Endpoints[1]
		if s.KeyTTL != 744*time.Hour || s.PayloadTTL != 24*time.Hour || g.KeyTTL != 96*time.Hour || g.PayloadTTL != 12*time.Hour {
			t.Errorf("%s: TTLs stripe %s/%s github %s/%s", kind, s.KeyTTL, s.PayloadTTL, g.KeyTTL, g.PayloadTTL)
		}
		switch kind {
		case "command":
			if got := strings.Join(r.Purge.Command, " "); got != "./purge --as-of {{.AsOf}} --db postgres://db" || r.Purge.Timeout != 30*time.Second {
				t.Errorf("command = %q, timeout %s", got, r.Purge.Timeout)
			}
		case "http":
			if r.Purge.HTTPMethod != "POST" || r.Purge.HTTPPath != "/_hookcert/purge" || r.Purge.Timeout != DefaultPurgeTimeout {
				t.Errorf("http = %+v", r.Purge)
			}
		}
	}
}

func TestRetentionErrors(t *testing.T) {
	cases := map[string]string{
		"no section": `|target.capabilities[0] (line 14): capability "retention" needs target.retention, which is missing`,
		"no purge":   "  retention: {key_ttl: 1h, payload_ttl: 1h}\n" + "|target.retention.purge (line 15): required (one of sql, command, http",
		"two purges": "  retention: {key_ttl: 1h, payload_ttl: 1h, purge: {sql: SELECT $1, http: {path: /p}}}\n" +
			"|target.retention.purge (line 15): set exactly one of sql, command and http (got 2)",
		"sql param": "  retention: {key_ttl: 1h, payload_ttl: 1h, purge: {sql: SELECT $2}}\n" +
			"|target.retention.purge.sql (line 15): must reference $1 (the as-of time) and no other parameter",
		"no as-of": "  retention: {key_ttl: 1h, payload_ttl: 1h, purge: {command: [./purge]}}\n" +
			"|target.retention.purge.command (line 15): must pass the as-of time: put {{.AsOf}} in an argument",
		"bad ttl": "  retention: {key_ttl: forever, payload_ttl: 1h, purge: {sql: SELECT $1}}\n" +
			`|target.retention.key_ttl (line 15): must be a duration like 72h or whole days like 30d (got "forever")`,
		"payload longer": "  retention: {key_ttl: 1h, payload_ttl: 2h, purge: {sql: SELECT $1}}\n" +
			"|target.endpoints[0].payload_ttl (line 5): 2h0m0s is longer than the key TTL 1h0m0s",
		"missing ttl": "  retention: {payload_ttl: 1h, purge: {sql: SELECT $1}}\n" +
			"|target.endpoints[0].key_ttl (line 5): required when target.retention is given",
		"bad method": "  retention: {key_ttl: 1h, payload_ttl: 1h, purge: {http: {method: GET, path: /p}}}\n" +
			`|target.retention.purge.http.method (line 15): must be POST or PUT (got "GET")`,
		"unknown field": "  retention: {key_ttl: 1h, payload_ttl: 1h, purge: {shell: x}}\n" +
			`|target.retention.purge.shell (line 15): unknown field in target.retention.purge (valid: command, http, sql, timeout)`,
	}
	for name, c := range cases {
		add, want, _ := strings.Cut(c, "|")
		_, err := Parse([]byte(retentionBase+add), Vars{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v\nwant it to contain %q", name, err, want)
		}
	}
	// The capability also needs the payload_present query.
	src := strings.Replace(retentionBase, "        payload_present: SELECT true WHERE $3 = ''\n", "", 1) +
		"  retention: {key_ttl: 1h, payload_ttl: 1h, purge: {sql: SELECT $1}}\n"
	if _, err := Parse([]byte(src), Vars{}); err == nil || !strings.Contains(err.Error(), "needs target.observe.postgres.queries.payload_present") {
		t.Errorf("no payload_present: %v", err)
	}
}
