package targetfile

import (
	"net/url"
	"os"
	"strings"
)

// rawStore is what the rest of the file's rules read of the chosen observer,
// whatever its kind: its tables (SQL kinds) and its queries.
type rawStore struct {
	kind                    string
	URL, URLEnv             string
	EventTable, EffectTable string
	Queries                 *rawQueries
}

// kinds lists the observer sections the file gives, in ObserverKinds order.
func (ro *rawObserve) kinds() []string {
	if ro == nil {
		return nil
	}
	var out []string
	for _, k := range []struct {
		name string
		set  bool
	}{{KindPostgres, ro.Postgres != nil}, {KindMySQL, ro.MySQL != nil}, {KindRedis, ro.Redis != nil},
		{KindCommand, ro.Command != nil}, {KindHTTP, ro.HTTP != nil}} {
		if k.set {
			out = append(out, k.name)
		}
	}
	return out
}

// store is the file's one observer section, nil when it gives none or several.
func (rt *rawTarget) store() *rawStore {
	ro := rt.Observe
	if ks := ro.kinds(); len(ks) != 1 {
		return nil
	}
	switch {
	case ro.Postgres != nil:
		p := ro.Postgres
		return &rawStore{KindPostgres, p.URL, p.URLEnv, p.EventTable, p.EffectTable, p.Queries}
	case ro.MySQL != nil:
		p := ro.MySQL
		return &rawStore{KindMySQL, p.URL, p.URLEnv, p.EventTable, p.EffectTable, p.Queries}
	case ro.Redis != nil:
		return &rawStore{kind: KindRedis, URL: ro.Redis.URL, URLEnv: ro.Redis.URLEnv, Queries: ro.Redis.Queries}
	case ro.Command != nil:
		return &rawStore{kind: KindCommand, Queries: ro.Command.Queries}
	default:
		return &rawStore{kind: KindHTTP, Queries: ro.HTTP.Queries}
	}
}

// storeKind is the file's observer kind (postgres when it gives none or
// several: the error is reported once, by observe).
func (rt *rawTarget) storeKind() string {
	if s := rt.store(); s != nil {
		return s.kind
	}
	return KindPostgres
}

// storeField is the path of a field of the file's observer section.
func (rt *rawTarget) storeField(rest ...string) string {
	return strings.Join(append([]string{"target", "observe", rt.storeKind()}, rest...), ".")
}

// sqlStore reports whether the file's observer is a SQL database.
func (rt *rawTarget) sqlStore() bool {
	k := rt.storeKind()
	return k == KindPostgres || k == KindMySQL
}

// observe checks target.observe: exactly one kind of store, its connection,
// its bounds and its queries.
func (v *validator) observe(t *Target, rt *rawTarget) {
	ro := rt.Observe
	ks := ro.kinds()
	switch {
	case len(ks) == 0:
		if ro == nil {
			v.fail([]any{"target", "observe", "postgres"}, "required (the harness judges guarantees from the receiver's state; or one of observe.mysql, observe.redis, observe.command, observe.http)")
		} else {
			v.fail([]any{"target", "observe"}, "required: one of %s (how the harness reads the receiver's state)", strings.Join(ObserverKinds, ", "))
		}
		return
	case len(ks) > 1:
		v.fail([]any{"target", "observe"}, "set only one of %s (the receiver's state is read from one store)", strings.Join(ks, ", "))
		return
	}
	kind := ks[0]
	base := []any{"target", "observe", kind}
	t.Store.Kind = kind
	t.Store.Queries.Base = "target.observe." + kind
	v.store = &t.Store
	switch kind {
	case KindPostgres, KindMySQL:
		rp := ro.Postgres
		if kind == KindMySQL {
			rp = ro.MySQL
		}
		t.Store.URL = v.databaseURL(base, rp.URL, rp.URLEnv)
		// A template is checked once rendered for real (a stand-in is not a
		// MySQL URL); the opener then names the field.
		if kind == KindMySQL && t.Store.URL.Reveal() != "" && !strings.Contains(rp.URL, "{{") {
			if u, err := url.Parse(t.Store.URL.Reveal()); err != nil || (u.Scheme != "mysql" && u.Scheme != "mariadb") {
				// Parse errors can quote the URL: not shown.
				v.fail(at(base, "url"), "must be a mysql:// URL (mysql://USER@HOST:PORT/DATABASE)")
			}
		}
		v.tables(t, base, rp)
		t.Store.ConnectTimeout = v.boundedDuration(at(base, "connect_timeout"), rp.ConnectTimeout, DefaultConnectTimeout)
		t.Store.StatementTimeout = v.boundedDuration(at(base, "statement_timeout"), rp.StatementTimeout, DefaultStatementTimeout)
		t.Store.LockTimeout = v.boundedDuration(at(base, "lock_timeout"), rp.LockTimeout, DefaultLockTimeout)
	case KindRedis:
		rr := ro.Redis
		t.Store.URL = v.databaseURL(base, rr.URL, rr.URLEnv)
		if u := t.Store.URL.Reveal(); u != "" && !strings.Contains(rr.URL, "{{") && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
			v.fail(at(base, "url"), "must be a redis:// or rediss:// URL")
		}
		t.Store.ConnectTimeout = v.boundedDuration(at(base, "connect_timeout"), rr.ConnectTimeout, DefaultConnectTimeout)
		t.Store.StatementTimeout = v.boundedDuration(at(base, "statement_timeout"), rr.StatementTimeout, DefaultStatementTimeout)
	case KindCommand:
		v.commandObserver(t, base, ro.Command)
	case KindHTTP:
		v.httpObserver(t, base, ro.HTTP)
	}
	v.observeQueries(t, rt, base)
}

// tables reads a SQL store's event and effect tables.
func (v *validator) tables(t *Target, base []any, rp *rawPostgres) {
	if rp.EventTable != "" {
		if !tableNameOK(rp.EventTable) {
			v.fail(at(base, "event_table"), "must be a table name or schema.table of letters, digits and _ (got %q)", rp.EventTable)
		} else {
			t.Store.EventTable = rp.EventTable
		}
	}
	if rp.EffectTable != "" {
		if !tableNameOK(rp.EffectTable) {
			v.fail(at(base, "effect_table"), "must be a table name or schema.table of letters, digits and _ (got %q)", rp.EffectTable)
		} else {
			t.Store.EffectTable = rp.EffectTable
		}
	}
}

// commandObserver reads observe.command: where its programs run and their bounds.
func (v *validator) commandObserver(t *Target, base []any, rc *rawCommandObserver) {
	c := &CommandObserver{Dir: v.opts.baseDir, Env: Env{}}
	if rc.Dir != "" {
		if d, ok := v.render(at(base, "dir"), rc.Dir); ok {
			c.Dir = v.resolvePath(d)
			if st, err := os.Stat(c.Dir); err != nil || !st.IsDir() {
				v.fail(at(base, "dir"), "must be an existing directory (got %q)", c.Dir)
			}
		}
	}
	for k, val := range rc.Env {
		if !envNameRE.MatchString(k) {
			v.fail(at(base, "env", k), "must be an environment variable name")
			continue
		}
		if r, ok := v.render(at(base, "env", k), val); ok {
			c.Env[k] = r
		}
	}
	c.Timeout = v.boundedDuration(at(base, "timeout"), rc.Timeout, DefaultObserverCallTimeout)
	c.MaxOutput = v.byteBound(at(base, "max_output_bytes"), rc.MaxOutputBytes)
	if rc.Capabilities != "" {
		if r, ok := v.render(at(base, "capabilities"), rc.Capabilities); ok {
			if len(strings.Fields(r)) == 0 {
				v.fail(at(base, "capabilities"), "must be a command line (a program and its arguments)")
			}
			c.Capabilities = r
		}
	}
	t.Store.Command = c
}

// httpObserver reads observe.http: the base URL and the calls' bounds.
func (v *validator) httpObserver(t *Target, base []any, rh *rawHTTPObserver) {
	h := &HTTPObserver{}
	if rh.BaseURL != "" {
		if r, ok := v.render(at(base, "base_url"), rh.BaseURL); ok {
			if u, err := url.Parse(r); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				v.fail(at(base, "base_url"), "must be an http:// or https:// URL (got %q)", r)
			}
			h.BaseURL = r
		}
	}
	h.Timeout = v.boundedDuration(at(base, "timeout"), rh.Timeout, DefaultObserverCallTimeout)
	h.MaxBody = v.byteBound(at(base, "max_body_bytes"), rh.MaxBodyBytes)
	if rh.Capabilities != "" {
		if r, ok := v.render(at(base, "capabilities"), rh.Capabilities); ok {
			v.observerURL(at(base, "capabilities"), r, h.BaseURL)
			h.Capabilities = r
		}
	}
	t.Store.HTTP = h
}

// byteBound reads an optional size bound: 1 byte to 64 MiB.
func (v *validator) byteBound(segs []any, n *int) int {
	if n == nil {
		return DefaultObserverMaxOutput
	}
	if *n < 1 || *n > 64<<20 {
		v.fail(segs, "must be between 1 and 67108864 bytes (got %d)", *n)
		return DefaultObserverMaxOutput
	}
	return *n
}

// observerURL checks a URL of observe.http: absolute, or a path resolved
// against base_url.
func (v *validator) observerURL(segs []any, s, base string) {
	if strings.HasPrefix(s, "/") {
		if base == "" {
			v.fail(segs, "a path needs target.observe.http.base_url (or give an absolute http:// URL)")
		}
		return
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.fail(segs, "must be an absolute http:// URL or a path starting with / (got %q)", s)
	}
}

// databaseURL reads the store's URL: inline (a template) or from the harness's
// environment, exactly one of them.
func (v *validator) databaseURL(base []any, raw, env string) Secret {
	switch {
	case raw != "" && env != "":
		v.fail(at(base, "url"), "set only one of url and url_env")
	case raw != "":
		if r, ok := v.render(at(base, "url"), raw); ok {
			return NewSecret(r)
		}
	case env != "":
		if !envNameRE.MatchString(env) {
			v.fail(at(base, "url_env"), "must be an environment variable name (got %q)", env)
		} else if val, ok := os.LookupEnv(env); !ok || val == "" {
			v.fail(at(base, "url_env"), "environment variable %s is not set or empty", env)
		} else {
			return NewSecret(val)
		}
	default:
		v.fail(at(base, "url"), "required (or url_env)")
	}
	return Secret{}
}

// observeQueries checks observe.<kind>.queries: event_rows is required, and
// effects unless the declared vocabulary gives it; each query's parameters,
// and its form for the kind.
func (v *validator) observeQueries(t *Target, rt *rawTarget, base []any) {
	rq := rt.store().Queries
	ledgerless := v.target != nil && v.target.Ledgerless()
	if rq == nil && ledgerless {
		rq = &rawQueries{}
	}
	if rq == nil {
		if declaredEffects(rt) {
			v.fail(at(base, "queries"), "required (at least event_rows)")
		} else {
			v.fail(at(base, "queries"), "required (at least event_rows and effects)")
		}
		return
	}
	q := Queries{EventRows: rq.EventRows, Effects: rq.Effects,
		ObjectEffects: rq.ObjectEffects, Object: rq.Object, Payment: rq.Payment,
		PayloadPresent: rq.PayloadPresent, KeyTTL: rq.KeyTTL, Base: t.Store.Queries.Base}
	for _, nq := range q.list() {
		p := at(base, "queries", nq.name)
		if strings.TrimSpace(nq.sql) == "" {
			switch {
			case nq.name == QueryEventRows && !ledgerless:
				v.fail(p, "required (or target.idempotency: object-version, for a receiver that keeps no event rows)")
			case nq.name == QueryEffects && !declaredEffects(rt) && !ledgerless:
				if rt.Events != nil && rt.Events.Effect.Len() > 0 {
					v.fail(p, "required (or target.events.effect.effects)")
				} else {
					v.fail(p, "required")
				}
			}
			continue
		}
		v.queryParams(p, nq.sql, nq.needs)
	}
	t.Store.Queries = q
}

// queryForm checks a query of the file's observer (observe.<kind>.queries, and
// the events, acceptance, inbox and outbox queries that fill its slots) in the
// form its kind has where hookcert reads it: a Redis command, a command line,
// a URL. SQL is checked by the server when the observer opens.
func (v *validator) queryForm(p []any, q string) bool {
	st := v.store
	if st == nil {
		return true
	}
	switch st.Kind {
	case KindRedis:
		if msg := redisQueryProblem(q); msg != "" {
			v.fail(p, "%s", msg)
			return false
		}
		// An effects count that can only read 0 or 1 would show an effect
		// applied twice as applied once: the DEDUP checks could not fail.
		if last, _ := p[len(p)-1].(string); last == QueryEffects || last == QueryObjectEffects {
			if w := strings.ToUpper(strings.Fields(q)[0]); w == "EXISTS" || w == "SISMEMBER" || w == "HEXISTS" {
				v.fail(p, "must count the effects (GET of a counter, LLEN, SCARD, ZCARD, HLEN or COUNT): %s answers 0 or 1, so an effect applied twice would read as applied once", w)
				return false
			}
		}
	case KindCommand:
		if len(strings.Fields(q)) == 0 {
			v.fail(p, "must be a command line (a program and its arguments; $1 to $4 are replaced inside its words)")
			return false
		}
	case KindHTTP:
		base := ""
		if st.HTTP != nil {
			base = st.HTTP.BaseURL
		}
		v.observerURL(p, q, base)
	}
	return true
}

// RedisCommands are the read-only commands a Redis query may run, with how
// many arguments each takes after the command (-1: one or more); COUNT is
// hookcert's own, a bounded SCAN MATCH over a pattern.
var RedisCommands = map[string]int{
	"EXISTS": 1, "GET": 1, "HGET": 2, "HMGET": -1, "HLEN": 1, "HEXISTS": 2, "LLEN": 1,
	"SCARD": 1, "SISMEMBER": 2, "ZCARD": 1, "ZSCORE": 2, "STRLEN": 1, "PTTL": 1, "TTL": 1, "COUNT": 1,
}

// redisQueryProblem says what is wrong with a Redis query ("" when nothing).
func redisQueryProblem(q string) string {
	words := strings.Fields(q)
	if len(words) == 0 {
		return "must be a Redis command (one of " + redisCommandList() + ")"
	}
	n, ok := RedisCommands[strings.ToUpper(words[0])]
	switch {
	case !ok:
		return "must start with a read-only Redis command, one of " + redisCommandList() + " (got " + words[0] + ")"
	case n == -1 && len(words) < 3:
		return words[0] + " takes a key and at least one field"
	case n >= 0 && len(words)-1 != n:
		return words[0] + " takes " + map[int]string{1: "one argument (a key)", 2: "two arguments (a key and a member)"}[n]
	}
	return ""
}

func redisCommandList() string {
	return "EXISTS, GET, HGET, HMGET, HLEN, HEXISTS, LLEN, SCARD, SISMEMBER, ZCARD, ZSCORE, STRLEN, PTTL, TTL, COUNT"
}

// declaredEffects reports whether the file gives events.effect.effects, which
// replaces observe.<kind>.queries.effects.
func declaredEffects(rt *rawTarget) bool {
	return rt.Events != nil && rt.Events.Effect.Len() > 0 && rt.Events.Effect.Items[0] != nil &&
		strings.TrimSpace(rt.Events.Effect.Items[0].Effects) != ""
}

// kindRules refuses what the file's observer kind cannot do: only a store the
// harness can hold (a SQL database's table lock, Redis's write pause) lets it
// force races and cut the receiver's connections, and only a SQL store runs a
// SQL fixture, setup script or purge statement.
func (v *validator) kindRules(t *Target, rt *rawTarget) {
	if rt.store() == nil || rt.sqlStore() {
		return
	}
	kind := "target.observe." + rt.storeKind()
	why := map[Capability]string{
		LockGating:     "holds the receiver at a lock",
		ConnectionLoss: "cuts the receiver's connections while it waits at a lock",
	}
	for i, c := range rt.Capabilities {
		if w, ok := why[Capability(c)]; ok && rt.storeKind() != KindRedis {
			v.fail([]any{"target", "capabilities", i}, "capability %q needs an observer the harness can hold (observe.postgres, observe.mysql or observe.redis): the harness %s, and %s has no lock or connection the harness can hold", c, w, kind)
		}
	}
	if rt.Setup != nil && rt.Setup.SQLFile != "" {
		v.fail([]any{"target", "setup", "sql_file"}, "needs a SQL observer (observe.postgres or observe.mysql) to run on; with %s use setup.command", kind)
	}
	for name, f := range rt.Fixtures {
		if f.SQL != "" {
			v.fail([]any{"target", "fixtures", name, "sql"}, "needs a SQL observer (observe.postgres or observe.mysql) to run on; with %s use command or http", kind)
		}
	}
	if rt.Retention != nil && rt.Retention.Purge != nil && rt.Retention.Purge.SQL != "" {
		v.fail([]any{"target", "retention", "purge", "sql"}, "needs a SQL observer (observe.postgres or observe.mysql) to run on; with %s use command or http", kind)
	}
}
