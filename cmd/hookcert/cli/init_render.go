package cli

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/targetfile"
)

// lineWriter writes one line of the target file, as fmt.Sprintf formats it.
type lineWriter func(format string, args ...any)

// render writes the proposed target file. selfCheck puts an inline stand-in
// secret where the file names an environment variable, so that the loader can
// check everything else without it.
func (p *proposal) render(selfCheck bool) []byte {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p.renderReceiver(w, selfCheck)
	p.renderDatabase(w, selfCheck)
	if p.event == nil {
		renderSkeletonQueries(w)
	} else {
		p.renderTables(w)
		p.renderQueries(w)
		p.renderCapabilities(w)
	}
	p.renderDeclaration(&b)
	return []byte(b.String())
}

// renderReceiver writes the receiver: its name, base URL and endpoint, and the
// lifecycle left to the user.
func (p *proposal) renderReceiver(w lineWriter, selfCheck bool) {
	q := yamlScalar
	w("# hookcert target file proposed by `hookcert init` from the schema of the database")
	w("# %s (%s). Every field: docs/target.md. Lines marked TODO are left to you.", p.dbWhere, time.Now().UTC().Format("2006-01-02"))
	w("target:")
	w("  name: %s  # TODO: the receiver's name in reports", q(p.dbName))
	if p.f.receiverURL != "" {
		w("  base_url: %s", q(strings.TrimSuffix(p.f.receiverURL, "/")))
	} else {
		w("  # TODO: the receiver's root URL; endpoint paths are appended to it. With a lifecycle,")
		w("  # http://{{.ListenAddr}} and the harness picks the port.")
		w("  base_url: http://127.0.0.1:8080")
	}
	w("  endpoints:")
	w("    # One per event-key scope (source, account). TODO: the path the receiver serves")
	w("    # %s deliveries on, the account it files them under, and its signing secret", p.f.profile)
	w("    # (export %s; never commit a secret).", p.secretEnv)
	switch {
	case len(p.accounts) > 0:
		w("    # Accounts in %s.%s today: %s.", p.event.t.display(), p.event.acc.name, strings.Join(p.accounts, ", "))
	case p.event != nil && p.event.src != nil:
		w("    # The harness sends source %q ($1); set source: if the receiver records another.", p.f.profile)
	}
	w("    - profile: %s", q(p.f.profile))
	w("      account: %s", q(p.account))
	w("      path: %s", q(p.path))
	if selfCheck {
		w("      secret: stand-in")
	} else {
		w("      secret_env: %s", p.secretEnv)
	}
	w("  # TODO (optional): how the harness starts the receiver, so that it can crash and restart")
	w("  # it (capability crash). Without a lifecycle the receiver must already run at base_url.")
	w("  # lifecycle:")
	w("  #   command: [./bin/receiver, --listen, \"{{.ListenAddr}}\"]")
	w("  #   env: {DATABASE_URL: \"{{.DatabaseURL}}\"}   # a database of its own per run")
	w("  #   ready: {http: /healthz, timeout: 30s}")
}

// renderDatabase writes where the observer reads the receiver's state.
func (p *proposal) renderDatabase(w lineWriter, selfCheck bool) {
	q := yamlScalar
	w("  observe:")
	w("    %s:", p.kind)
	switch {
	case selfCheck && p.kind == kindMySQL:
		w("      url: mysql://hookcert@127.0.0.1:3306/hookcert")
	case selfCheck:
		w("      url: postgres://hookcert@127.0.0.1:5432/hookcert")
	case p.urlHasPassword:
		w("      # TODO: export HOOKCERT_RECEIVER_DATABASE_URL: the URL holds a password, so it is not written here.")
		w("      url_env: HOOKCERT_RECEIVER_DATABASE_URL")
	default:
		w("      # The database init read. With a lifecycle, \"{{.DatabaseURL}}\" gives each run its own.")
		w("      url: %s", q(p.f.databaseURL))
	}
}

// renderSkeletonQueries writes the queries to fill in by hand when no event
// table was found.
func renderSkeletonQueries(w lineWriter) {
	w("      # TODO: no table of event keys was found (an events-like name with a unique key over")
	w("      # event_id, delivery_id, webhook_id or id). Name it and write the queries by hand.")
	w("      queries:")
	w("        # $1 source, $2 account, $3 event ID, $4 object ID")
	w("        event_rows: SELECT count(*) FROM TODO WHERE event_id = $3")
	w("        effects: SELECT count(*) FROM TODO WHERE event_id = $3")
	w("  capabilities: []")
}

// renderTables writes the event and effect tables the proposal picked, and why.
func (p *proposal) renderTables(w lineWriter) {
	q := yamlScalar
	ev, ef := p.event, p.effect
	if ev.key != nil {
		kind := "unique index " + ev.key.name
		if ev.key.primary {
			kind = "primary key"
		}
		w("      # Event keys: %s, %s over (%s).", ev.t.display(), kind, strings.Join(ev.key.cols, ", "))
		for _, c := range ev.unmapped {
			w("      # WARNING: %s is part of the event key but is neither its source ($1) nor its account", c)
			w("      # ($2): no query binds it. TODO: if it scopes events as an account or a source does,")
			w("      # rename the parameter's column in the queries below (two scopes' events are counted together).")
		}
	} else {
		w("      # WARNING: %s has no unique key over %s: the database does not stop two copies of one", ev.t.display(), ev.idCol.name)
		w("      # event from both being stored, and DEDUP-1 will tell whether the receiver does.")
	}
	if len(p.others) > 0 {
		w("      # Other candidates: %s.", strings.Join(p.others, ", "))
	}
	if f := ev.t.field(); f != "" {
		w("      event_table: %s", q(f))
	}
	if ef != nil {
		w("      # Business effects: %s (%s).", ef.t.display(), ef.why)
		for _, m := range []struct {
			ev, ef *column
			part   string
		}{{ev.src, ef.src, "source"}, {ev.acc, ef.acc, "account"}} {
			if m.ev != nil && m.ef == nil {
				w("      # WARNING: %s has no %s column, so effects cannot be counted per %s: one event ID", ef.t.display(), m.part, m.part)
				w("      # under two %ss counts twice (DEDUP-3, DEDUP-4). TODO: join %s if it can tell them apart.", m.part, ev.t.display())
			}
		}
		if ef.t.unwritten {
			w("      # NOTE: %s has no rows, and none was ever inserted or updated on this database", ef.t.display())
			w("      # (pg_stat_user_tables), while other tables were: if the receiver has handled events here,")
			w("      # it does not write there, and counting it shows nothing. TODO: count the table it writes.")
		}
		if len(p.otherEffects) > 0 {
			w("      # Other tables referring to the event: %s.", strings.Join(p.otherEffects, ", "))
		}
		if len(p.unwritten) > 0 {
			w("      # Tables that looked unwritten (no rows, none ever inserted or updated): %s.", strings.Join(p.unwritten, ", "))
		}
		if f := ef.t.field(); f != "" {
			w("      effect_table: %s", q(f))
		}
	}
}

// renderQueries writes the observer queries over the tables' columns.
func (p *proposal) renderQueries(w lineWriter) {
	q := yamlScalar
	ev, ef := p.event, p.effect
	w("      queries:")
	w("        # $1 source, $2 account, $3 event ID, $4 object ID: each only where a matching column exists.")
	w("        event_rows: %s", q(p.eventRows))
	if ef != nil {
		w("        effects: %s", q(p.effects))
	} else {
		w("        # TODO: no table refers to %s.%s: count the event's business effects here.", ev.t.display(), ev.idCol.name)
		w("        effects: %s", q(p.eventRows))
	}
	if p.objectEffects != "" {
		w("        # TODO, if one payment is credited once whatever its events (capability domain-constraint):")
		w("        # object_effects: %s", p.objectEffects)
	}
	if p.payloadQ != "" {
		w("        # TODO, with a retention section (capability retention):")
		w("        # payload_present: %s", p.payloadQ)
	}
	w("        # TODO (capabilities ordering, state-machine): object and payment, docs/target.md \"Queries\".")
}

// renderCapabilities writes the capabilities the tables justify, then what is
// left to the user: the other capabilities and the declared events.
func (p *proposal) renderCapabilities(w lineWriter) {
	ev, ef := p.event, p.effect
	var caps, why []string
	if ev.t.field() != "" {
		caps = append(caps, string(targetfile.LockGating))
		why = append(why, fmt.Sprintf("lock-gating: the harness may lock %s so concurrent copies of an event race", ev.t.display()))
	}
	if ef != nil && ef.t.field() != "" {
		caps = append(caps, string(targetfile.ConnectionLoss))
		why = append(why, fmt.Sprintf("connection-loss: it may lock %s and cut the receiver's sessions mid-transaction", ef.t.display()))
	}
	for _, l := range why {
		w("  # %s.", l)
	}
	w("  # TODO: crash needs a lifecycle; ordering, state-machine and domain-constraint their queries.")
	w("  capabilities: [%s]", strings.Join(caps, ", "))
	w("  # TODO (optional): without an events section the built-in conformance vocabulary applies")
	w("  # (docs/conformance-domain.md). If the receiver handles other event types, declare them by")
	w("  # role (effect, lifecycle, ordered, unhandled): docs/target.md, \"Declared events\".")
}

// yamlScalar renders s as a YAML scalar, quoted where YAML needs it.
func yamlScalar(s string) string {
	b, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// renderDeclaration writes the profiles: section of a provider declared in
// --profile-file: its entry as written there, comments and order kept.
func (p *proposal) renderDeclaration(b *strings.Builder) {
	if len(p.declaration) == 0 {
		return
	}
	fmt.Fprintf(b, "\n# The provider's delivery contract: hookcert has no built-in profile for %s, so the\n", p.f.profile)
	fmt.Fprintf(b, "# file declares it (copied from %s; docs/target.md, \"Declaring a provider\").\n", p.f.profileFile)
	b.WriteString("profiles:\n")
	b.Write(p.declaration)
}
