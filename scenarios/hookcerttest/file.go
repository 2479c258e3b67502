package hookcerttest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/scenarios/harness"
	"github.com/hookcert/hookcert/vocab"
)

// A Target is checked and assembled as the target file it stands for: file
// renders it as one, the target-file loader checks it with its own rules, and
// the composition root (package harness) assembles it as it assembles a file.
// What a file cannot hold — Go functions, a pool — goes to the harness as
// hooks, and the loader is told which of its rules they satisfy.

// goChecks are the rules about the Go-only fields, which no file has.
func (tg *Target) goChecks() error {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("Target.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if (tg.DatabaseURL == "") == (tg.Pool == nil) {
		fail("DatabaseURL", "set exactly one of DatabaseURL and Pool (the receiver's database)")
	}
	if (tg.Kill == nil) != (tg.Restart == nil) {
		fail("Kill", "Kill and Restart go together (capability crash needs both)")
	}
	if tg.Kill != nil && tg.Lifecycle != nil {
		fail("Kill", "set Kill and Restart or Lifecycle, not both: each is how the harness crashes the receiver")
	}
	names := make([]string, 0, len(tg.Fixtures))
	for name := range tg.Fixtures {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if fx := tg.Fixtures[name]; (fx.SQL == "") == (fx.Func == nil) {
			fail("Fixtures["+name+"]", "set exactly one of SQL and Func")
		}
	}
	if r := tg.Retention; r != nil && r.Purge != nil && (r.PurgeSQL != "" || len(r.PurgeCommand) > 0 || r.PurgeHTTPPath != "") {
		fail("Retention.Purge", "set one way to purge: Purge, or one of PurgeSQL, PurgeCommand and PurgeHTTPPath")
	}
	if v := tg.Vocab; v != nil && v.Effect == nil && v.Lifecycle == nil && v.Ordered == nil && v.Unhandled == nil {
		fail("Vocab", "declare at least one of Effect, Lifecycle, Ordered, Unhandled (or leave Vocab nil for the built-in vocabulary)")
	}
	return errors.Join(errs...)
}

// file renders tg as a target file, with the hooks the harness takes for what
// a file cannot hold and the rules those hooks satisfy.
func (tg *Target) file() ([]byte, harness.Hooks, targetfile.GoHooks, error) {
	var hooks harness.Hooks
	var gh targetfile.GoHooks
	name := tg.Name
	if name == "" {
		name = "hookcerttest" // Run names it after the test
	}
	t := map[string]any{"name": name, "base_url": tg.BaseURL, "endpoints": tg.endpoints(),
		"observe": map[string]any{"postgres": tg.postgres(&hooks)}}
	if tg.Vocab != nil {
		t["events"] = events(tg.Vocab, tg.Queries)
	}
	if len(tg.Capabilities) > 0 {
		t["capabilities"] = tg.Capabilities
	}
	if tg.Idempotency != "" {
		t["idempotency"] = tg.Idempotency
	}
	if tg.FailpointsPath != "" {
		t["failpoints"] = map[string]any{"path": tg.FailpointsPath}
	}
	if tg.MaxBodyBytes != 0 {
		t["limits"] = map[string]any{"max_body_bytes": tg.MaxBodyBytes}
	}
	if r := tg.Retention; r != nil {
		t["retention"] = retention(r)
		if r.Purge != nil {
			hooks.Purge, gh.Purge = r.Purge, true
		}
	}
	if fs := tg.fixtures(&hooks, &gh); len(fs) > 0 {
		t["fixtures"] = fs
	}
	if acc := tg.acceptance(); len(acc) > 0 {
		t["acceptance"] = acc
	}
	if l := tg.Lifecycle; l != nil {
		t["lifecycle"] = lifecycle(l)
	}
	tg.queues(t)
	if tg.Kill != nil && tg.Restart != nil {
		hooks.Kill, hooks.Restart, hooks.Alive, gh.Controller = tg.Kill, tg.Restart, tg.Alive, true
	}
	doc := map[string]any{"target": t}
	if len(tg.Profiles) > 0 {
		doc["profiles"] = tg.Profiles
	}
	data, err := yaml.Marshal(doc)
	return data, hooks, gh, err
}

func (tg *Target) endpoints() []map[string]any {
	var eps []map[string]any
	for _, ep := range tg.Endpoints {
		e := map[string]any{"profile": ep.Profile, "account": ep.Account, "path": ep.Path, "secret": ep.Secret}
		put(e, "source", ep.Source)
		putDur(e, "key_ttl", ep.KeyTTL)
		putDur(e, "payload_ttl", ep.PayloadTTL)
		putDur(e, "ack_timeout", ep.AckTimeout)
		eps = append(eps, e)
	}
	return eps
}

// postgres is observe.postgres: the database (a pool's through the hooks),
// the tables and the queries a declared role does not hold.
func (tg *Target) postgres(hooks *harness.Hooks) map[string]any {
	pg := map[string]any{}
	url := tg.DatabaseURL
	if tg.Pool != nil {
		hooks.PoolConfig = tg.Pool.Config()
		url = hooks.PoolConfig.ConnString()
	}
	put(pg, "url", url)
	put(pg, "event_table", tg.EventTable)
	put(pg, "effect_table", tg.EffectTable)
	putDur(pg, "connect_timeout", tg.Timeouts.Connect)
	putDur(pg, "statement_timeout", tg.Timeouts.Statement)
	putDur(pg, "lock_timeout", tg.Timeouts.Lock)
	q, v := tg.Queries, tg.Vocab
	queries := map[string]any{"event_rows": q.EventRows}
	// A declared role's queries are its own (events.*); the others stay the
	// observer's, as in a file.
	if v == nil || v.Effect == nil {
		put(queries, "effects", q.Effects)
	}
	if v == nil || v.Lifecycle == nil {
		put(queries, "object_effects", q.ObjectEffects)
		put(queries, "payment", q.Payment)
	}
	if v == nil || v.Ordered == nil {
		put(queries, "object", q.Object)
	}
	put(queries, "payload_present", q.PayloadPresent)
	pg["queries"] = queries
	return pg
}

func retention(r *Retention) map[string]any {
	rt := map[string]any{}
	putDur(rt, "key_ttl", r.KeyTTL)
	putDur(rt, "payload_ttl", r.PayloadTTL)
	purge := map[string]any{}
	put(purge, "sql", r.PurgeSQL)
	if len(r.PurgeCommand) > 0 {
		purge["command"] = r.PurgeCommand
	}
	if r.PurgeHTTPPath != "" {
		purge["http"] = map[string]any{"path": r.PurgeHTTPPath}
	}
	if len(purge) > 0 {
		rt["purge"] = purge
	}
	return rt
}

// fixtures are the SQL fixtures; Go ones go to the hooks.
func (tg *Target) fixtures(hooks *harness.Hooks, gh *targetfile.GoHooks) map[string]any {
	fs := map[string]any{}
	for name, fx := range tg.Fixtures {
		if fx.Func == nil {
			fs[name] = map[string]any{"sql": fx.SQL}
			continue
		}
		if hooks.Fixtures == nil {
			hooks.Fixtures = map[string]func(context.Context, vocab.ObjectData) error{}
		}
		hooks.Fixtures[name] = fx.Func
		gh.Fixtures = append(gh.Fixtures, name)
	}
	return fs
}

func (tg *Target) acceptance() map[string]any {
	acc := map[string]any{}
	if tg.Acceptance.Async {
		acc["mode"] = targetfile.AcceptAsync
	}
	putDur(acc, "settle", tg.Acceptance.Settle)
	put(acc, "quiescent", tg.Queries.Quiescent)
	return acc
}

// queues puts the inbox and outbox sections into t.
func (tg *Target) queues(t map[string]any) {
	if in := tg.Inbox; in != nil {
		m := map[string]any{"state": in.State}
		putDur(m, "lease", in.Lease)
		putInt(m, "max_attempts", in.MaxAttempts)
		put(m, "table", in.Table)
		t["inbox"] = m
	}
	if out := tg.Outbox; out != nil {
		m := map[string]any{}
		put(m, "key_header", out.KeyHeader)
		putInt(m, "max_attempts", out.MaxAttempts)
		put(m, "state", out.State)
		t["outbox"] = m
	}
}

func lifecycle(l *Lifecycle) map[string]any {
	m := map[string]any{"command": l.Command}
	if len(l.Env) > 0 {
		m["env"] = l.Env
	}
	put(m, "dir", l.Dir)
	ready := map[string]any{}
	put(ready, "http", l.ReadyPath)
	putDur(ready, "timeout", l.ReadyTimeout)
	m["ready"] = ready
	putDur(m, "stop_grace", l.StopGrace)
	if w := l.Worker; w != nil {
		wm := map[string]any{"command": w.Command}
		if len(w.Env) > 0 {
			wm["env"] = w.Env
		}
		put(wm, "dir", w.Dir)
		putInt(wm, "processes", w.Processes)
		m["worker"] = wm
	}
	return m
}

// events renders a vocabulary as the file's events section, its queries in
// the roles' slots.
func events(v *vocab.Vocabulary, q Queries) map[string]any {
	out := map[string]any{}
	role := func(r *vocab.EventRole) map[string]any {
		m := map[string]any{"type": r.Type}
		put(m, "id_prefix", r.IDPrefix)
		if r.Object != nil {
			m["object"] = r.Object.Source()
		}
		return m
	}
	if r := v.Effect; r != nil {
		m := role(r)
		put(m, "effects", q.Effects)
		out["effect"] = m
	}
	if l := v.Lifecycle; l != nil {
		m := map[string]any{"initial": l.Initial}
		put(m, "object", l.Object)
		put(m, "id_prefix", l.IDPrefix)
		put(m, "missing", l.Missing)
		switch {
		case l.Create != nil:
			c := map[string]any{"type": l.Create.Type}
			if l.Create.Object != nil {
				c["object"] = l.Create.Object.Source()
			}
			m["create"] = c
		case l.Fixture != "":
			m["create"] = map[string]any{"fixture": l.Fixture}
		}
		var ts []map[string]any
		for _, tr := range l.Transitions {
			tm := map[string]any{"type": tr.Type, "from": tr.From, "to": tr.To}
			if tr.Effect {
				tm["effect"] = true
			}
			put(tm, "missing", tr.Missing)
			if tr.Object != nil {
				tm["object"] = tr.Object.Source()
			}
			ts = append(ts, tm)
		}
		m["transitions"] = ts
		put(m, "state", q.Payment)
		put(m, "effects", q.ObjectEffects)
		out["lifecycle"] = m
	}
	if o := v.Ordered; o != nil {
		m := role(&o.EventRole)
		put(m, "key", o.Key)
		if o.Fixture != "" {
			m["create"] = map[string]any{"fixture": o.Fixture}
		}
		put(m, "state", q.Object)
		put(m, "ties", o.Ties)
		put(m, "children", q.ObjectChildren)
		if d := o.Delete; d != nil {
			dm := map[string]any{"type": d.Type}
			if d.Object != nil {
				dm["object"] = d.Object.Source()
			}
			m["delete"] = dm
		}
		out["ordered"] = m
	}
	if r := v.Unhandled; r != nil {
		out["unhandled"] = role(r)
	}
	return out
}

func put(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func putInt(m map[string]any, k string, v int) {
	if v != 0 {
		m[k] = v
	}
}

func putDur(m map[string]any, k string, d time.Duration) {
	if d != 0 {
		m[k] = d.String()
	}
}

// goNames renders the loader's errors with the Go fields of Target instead of
// the file's paths, without the file's line numbers.
func goNames(err error) error {
	var fes []*targetfile.FieldError
	var other []error
	for _, e := range unjoin(err) {
		var fe *targetfile.FieldError
		if errors.As(e, &fe) {
			fes = append(fes, fe)
		} else {
			other = append(other, e)
		}
	}
	out := make([]error, 0, len(fes)+len(other))
	for _, fe := range fes {
		rule := pathRE.ReplaceAllStringFunc(fe.Rule, goField)
		// A Go test crashes its receiver through a Lifecycle or its own hooks.
		rule = strings.Replace(rule, "needs Target.Lifecycle, which is missing", "needs Target.Lifecycle, or Target.Kill and Target.Restart", 1)
		out = append(out, fmt.Errorf("%s: %s", goField(fe.Path), rule))
	}
	return errors.Join(append(out, other...)...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// pathRE finds a file path such as target.endpoints[0].path in a rule's text.
var pathRE = regexp.MustCompile(`\btarget(\.[a-z_]+(\[\d+\])?)+|\bprofiles\[\d+\](\.[a-z_]+(\[\d+\])?)*`)

// goFields map the file's paths to Target's fields where they differ beyond
// spelling; longest first.
var goFields = []struct{ file, goName string }{
	{"target.observe.postgres.queries", "Target.Queries"},
	{"target.observe.postgres.url", "Target.DatabaseURL"},
	{"target.observe.postgres.event_table", "Target.EventTable"},
	{"target.observe.postgres.effect_table", "Target.EffectTable"},
	{"target.observe.postgres.connect_timeout", "Target.Timeouts.Connect"},
	{"target.observe.postgres.statement_timeout", "Target.Timeouts.Statement"},
	{"target.observe.postgres.lock_timeout", "Target.Timeouts.Lock"},
	{"target.observe.postgres", "Target.DatabaseURL"},
	{"target.events.effect.effects", "Target.Queries.Effects"},
	{"target.events.lifecycle.state", "Target.Queries.Payment"},
	{"target.events.lifecycle.effects", "Target.Queries.ObjectEffects"},
	{"target.events.ordered.state", "Target.Queries.Object"},
	{"target.events.ordered.children", "Target.Queries.ObjectChildren"},
	{"target.events.ordered.ties", "Target.Vocab.Ordered.Ties"},
	{"target.events.lifecycle.create.fixture", "Target.Vocab.Lifecycle.Fixture"},
	{"target.events.ordered.create.fixture", "Target.Vocab.Ordered.Fixture"},
	{"target.events", "Target.Vocab"},
	{"target.acceptance.quiescent", "Target.Queries.Quiescent"},
	{"target.acceptance.mode", "Target.Acceptance.Async"},
	{"target.limits.max_body_bytes", "Target.MaxBodyBytes"},
	{"target.failpoints.path", "Target.FailpointsPath"},
	{"target.failpoints", "Target.FailpointsPath"},
	{"target.lifecycle.ready.http", "Target.Lifecycle.ReadyPath"},
	{"target.lifecycle.ready.timeout", "Target.Lifecycle.ReadyTimeout"},
	{"target.lifecycle.ready", "Target.Lifecycle.ReadyPath"},
}

// goField names the Target field of a file path: its mapped prefix, then
// each remaining snake_case segment in Go's spelling (key_ttl → KeyTTL).
func goField(path string) string {
	if rest, ok := strings.CutPrefix(path, "profiles"); ok {
		// A contract's fields keep their schema's spelling: the Go type is
		// profiles.Contract, whose yaml names the rules speak of.
		return "Target.Profiles" + rest
	}
	rest := path
	out := "Target"
	for _, m := range goFields {
		if path == m.file || strings.HasPrefix(path, m.file+".") || strings.HasPrefix(path, m.file+"[") {
			out, rest = m.goName, strings.TrimPrefix(path, m.file)
			break
		}
	}
	if out == "Target" {
		rest = strings.TrimPrefix(path, "target")
	}
	fixtures := strings.HasPrefix(path, "target.fixtures.")
	for i, seg := range strings.Split(strings.TrimPrefix(rest, "."), ".") {
		if seg == "" {
			continue
		}
		name, index, _ := strings.Cut(seg, "[")
		if index != "" {
			index = "[" + index
		}
		switch {
		case fixtures && i == 1:
			// A fixture's name is a map key: Fixtures[name].
			out += "[" + name + "]" + index
			continue
		}
		out += "." + camel(name) + index
	}
	return out
}

// initialisms are spelled whole in Go names.
var initialisms = map[string]string{"id": "ID", "url": "URL", "ttl": "TTL", "http": "HTTP", "sql": "SQL"}

func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if x, ok := initialisms[w]; ok {
			b.WriteString(x)
			continue
		}
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}
