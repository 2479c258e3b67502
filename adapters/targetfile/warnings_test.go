package targetfile

import (
	"strings"
	"testing"
)

// warnTarget is a target file with the endpoints, queries and limits given.
func warnTarget(endpoints, queries, extra string) string {
	return `target:
  name: t
  base_url: http://{{.ListenAddr}}
  endpoints:
` + endpoints + `  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
` + queries + extra
}

const (
	oneStripe  = "    - {profile: stripe, account: acct_A, path: /a, secret: s}\n"
	twoStripe  = oneStripe + "    - {profile: stripe, account: acct_B, path: /b, secret: s}\n"
	oneStdHook = "    - {profile: standard-webhooks, account: acct_A, path: /s, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\n"
	twoSources = oneStripe + oneStdHook
	oneGitHub  = "    - {profile: github, account: octo, path: /g, secret: s}\n"

	byEvent = "        event_rows: SELECT count(*) FROM events WHERE source = $1 AND account = $2 AND event_id = $3\n" +
		"        effects: SELECT count(*) FROM ledger WHERE source = $1 AND account = $2 AND event_id = $3\n"
	// Per object, as the docs' examples count a charge's ledger rows.
	byObject = "        event_rows: SELECT count(*) FROM events WHERE source = $1 AND account = $2 AND event_id = $3\n" +
		"        effects: SELECT count(*) FROM ledger WHERE source = $1 AND account = $2 AND charge_id = $4\n"
	noAccount = "        event_rows: SELECT count(*) FROM events WHERE source = $1 AND event_id = $3\n" +
		"        effects: SELECT count(*) FROM ledger WHERE source = $1 AND event_id = $3\n"
	noSource = "        event_rows: SELECT count(*) FROM events WHERE account = $2 AND event_id = $3\n" +
		"        effects: SELECT count(*) FROM ledger WHERE account = $2 AND event_id = $3\n"
	// "$2" in a literal and a comment is not a parameter.
	accountInText = "        event_rows: SELECT count(*) FROM events WHERE note <> '$2' AND event_id = $3 -- $2\n" +
		"        effects: SELECT count(*) FROM ledger WHERE account = $2 AND event_id = $3\n"
	declaredPerObject = `  events:
    effect:
      type: charge.succeeded
      effects: SELECT count(*) FROM ledger WHERE charge_id = $4
`
)

func TestWarnings(t *testing.T) {
	cases := []struct {
		name string
		src  string
		// want are the fields warned about, in order, each with a word its
		// text must hold.
		want [][2]string
	}{
		{"clean: every key part bound, two accounts", warnTarget(twoStripe, byEvent, ""), nil},
		{"per-object effects, header event IDs: DEDUP-5 shares a body",
			warnTarget(oneStdHook, byObject, ""), [][2]string{{"target.observe.postgres.queries.effects", "DEDUP-5"}}},
		{"per-object effects declared with the events",
			warnTarget(oneStdHook, "        event_rows: SELECT count(*) FROM events WHERE event_id = $3\n", declaredPerObject),
			[][2]string{{"target.events.effect.effects", "byte-identical bodies"}}},
		{"per-object effects, event ID in the body: no two events share an object",
			warnTarget(oneStripe, byObject, ""), nil},
		{"no account with two accounts declared",
			warnTarget(twoStripe, noAccount, ""), [][2]string{
				{"target.observe.postgres.queries.event_rows", "acct_A and acct_B"},
				{"target.observe.postgres.queries.effects", "DEDUP-3"}}},
		{"no account with one account", warnTarget(oneStripe, noAccount, ""), nil},
		{"$2 only in a literal and a comment",
			warnTarget(twoStripe, accountInText, ""), [][2]string{{"target.observe.postgres.queries.event_rows", "$2 (account)"}}},
		{"no source with two sources for one account",
			warnTarget(twoSources, noSource, ""), [][2]string{
				{"target.observe.postgres.queries.event_rows", "DEDUP-4"},
				{"target.observe.postgres.queries.effects", "stripe and standard-webhooks"}}},
		{"no source with one source", warnTarget(twoStripe, noSource, ""), nil},
		{"max_body_bytes below GitHub's 25 MB",
			warnTarget(oneGitHub, byEvent, "  limits: {max_body_bytes: 65536}\n"),
			[][2]string{{"target.limits.max_body_bytes", "26214400"}}},
		{"max_body_bytes absent: the 1 MiB default is below GitHub's 25 MB",
			warnTarget(oneGitHub, byEvent, ""), [][2]string{{"target.limits.max_body_bytes", "ACK-7"}}},
		{"max_body_bytes at GitHub's 25 MB", warnTarget(oneGitHub, byEvent, "  limits: {max_body_bytes: 26214400}\n"), nil},
		{"max_body_bytes of a profile that documents no maximum",
			warnTarget(oneStripe, byEvent, "  limits: {max_body_bytes: 65536}\n"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg, err := Parse([]byte(c.src), testVars)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, c.src)
			}
			got := tg.Warnings()
			if len(got) != len(c.want) {
				t.Fatalf("%d warnings, want %d:\n%v", len(got), len(c.want), got)
			}
			for i, w := range c.want {
				if got[i].Field != w[0] || !strings.Contains(got[i].String(), w[1]) {
					t.Errorf("warning %d = %q, want field %s saying %q", i, got[i], w[0], w[1])
				}
				if got[i].Guarantee == "" || got[i].Problem == "" || got[i].Fix == "" {
					t.Errorf("warning %d lacks the guarantee, the problem or the fix: %+v", i, got[i])
				}
			}
		})
	}
}
