package targetfile

import (
	"os"
	"strings"
)

// observe checks target.observe.postgres: the receiver's database, its tables
// and the observer's bounds and queries.
func (v *validator) observe(t *Target, rt *rawTarget) {
	ro := rt.Observe
	base := []any{"target", "observe", "postgres"}
	if ro == nil || ro.Postgres == nil {
		v.fail(base, "required (the harness judges guarantees from the receiver's state)")
		return
	}
	rp := ro.Postgres
	t.Postgres.URL = v.databaseURL(base, rp)
	if rp.EventTable != "" {
		if !tableNameOK(rp.EventTable) {
			v.fail(at(base, "event_table"), "must be a table name or schema.table of letters, digits and _ (got %q)", rp.EventTable)
		} else {
			t.Postgres.EventTable = rp.EventTable
		}
	}
	if rp.EffectTable != "" {
		if !tableNameOK(rp.EffectTable) {
			v.fail(at(base, "effect_table"), "must be a table name or schema.table of letters, digits and _ (got %q)", rp.EffectTable)
		} else {
			t.Postgres.EffectTable = rp.EffectTable
		}
	}
	t.Postgres.ConnectTimeout = v.boundedDuration(at(base, "connect_timeout"), rp.ConnectTimeout, DefaultConnectTimeout)
	t.Postgres.StatementTimeout = v.boundedDuration(at(base, "statement_timeout"), rp.StatementTimeout, DefaultStatementTimeout)
	t.Postgres.LockTimeout = v.boundedDuration(at(base, "lock_timeout"), rp.LockTimeout, DefaultLockTimeout)
	v.observeQueries(t, rt, rp.Queries)
}

// databaseURL reads the receiver's database URL: inline (a template) or from
// the harness's environment, exactly one of them.
func (v *validator) databaseURL(base []any, rp *rawPostgres) Secret {
	switch {
	case rp.URL != "" && rp.URLEnv != "":
		v.fail(at(base, "url"), "set only one of url and url_env")
	case rp.URL != "":
		if r, ok := v.render(at(base, "url"), rp.URL); ok {
			return NewSecret(r)
		}
	case rp.URLEnv != "":
		if !envNameRE.MatchString(rp.URLEnv) {
			v.fail(at(base, "url_env"), "must be an environment variable name (got %q)", rp.URLEnv)
		} else if val, ok := os.LookupEnv(rp.URLEnv); !ok || val == "" {
			v.fail(at(base, "url_env"), "environment variable %s is not set or empty", rp.URLEnv)
		} else {
			return NewSecret(val)
		}
	default:
		v.fail(at(base, "url"), "required (or url_env)")
	}
	return Secret{}
}

// observeQueries checks observe.postgres.queries: event_rows is required, and
// effects unless the declared vocabulary gives it; each query's parameters.
func (v *validator) observeQueries(t *Target, rt *rawTarget, rq *rawQueries) {
	base := []any{"target", "observe", "postgres"}
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
		PayloadPresent: rq.PayloadPresent}
	for _, nq := range q.list() {
		p := at(base, "queries", nq.name)
		if strings.TrimSpace(nq.sql) == "" {
			switch {
			case nq.name == QueryEventRows:
				v.fail(p, "required")
			case nq.name == QueryEffects && !declaredEffects(rt):
				if rt.Events != nil && rt.Events.Effect != nil {
					v.fail(p, "required (or target.events.effect.effects)")
				} else {
					v.fail(p, "required")
				}
			}
			continue
		}
		v.queryParams(p, nq.sql, nq.needs)
	}
	t.Postgres.Queries = q
}

// declaredEffects reports whether the file gives events.effect.effects, which
// replaces observe.postgres.queries.effects.
func declaredEffects(rt *rawTarget) bool {
	return rt.Events != nil && rt.Events.Effect != nil && strings.TrimSpace(rt.Events.Effect.Effects) != ""
}
