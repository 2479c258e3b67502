package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/scenarios"
)

// unboundWarnings: a query that uses a parameter its reads do not bind is
// handed an empty string there, so its WHERE matches nothing and it reads 0
// or no row whatever the receiver did ($4 in event_rows, $3 in object). The
// catalogue says which guarantees read each query, with what bound.
func unboundWarnings(t *targetfile.Target) []targetfile.Warning {
	q := t.Store.Queries
	type use struct {
		binds []int
		ids   []string
	}
	uses := map[string]*use{}
	add := func(query, who string, binds []int) {
		name := fileQuery(query)
		u := uses[name]
		if u == nil {
			u = &use{binds: binds}
			uses[name] = u
		}
		if !slices.Contains(u.ids, who) {
			u.ids = append(u.ids, who)
		}
	}
	for _, g := range scenarios.Catalogue() {
		for _, r := range g.Reads {
			add(r.Query, g.ID, r.Binds)
		}
	}
	for _, r := range scenarios.ReconcileReads {
		add(r.Query, "every guarantee's reconciliation", r.Binds)
	}
	named := q.Named()
	var out []targetfile.Warning
	for _, name := range []string{targetfile.QueryEventRows, targetfile.QueryEffects, targetfile.QueryObjectEffects,
		targetfile.QueryObject, targetfile.QueryPayment, targetfile.QueryPayloadPresent, targetfile.QueryKeyTTL} {
		sql, u := named[name], uses[name]
		if sql == "" || u == nil {
			continue
		}
		used, err := targetfile.QueryParams(sql)
		if err != nil {
			continue // the loader reports it
		}
		var empty []string
		for _, n := range used {
			if !slices.Contains(u.binds, n) {
				empty = append(empty, fmt.Sprintf("$%d (%s)", n, targetfile.ParamNames[n-1]))
			}
		}
		if len(empty) == 0 {
			continue
		}
		var bound []string
		for _, n := range u.binds {
			bound = append(bound, fmt.Sprintf("$%d", n))
		}
		out = append(out, targetfile.Warning{
			Field:     q.FieldPath(name),
			Guarantee: strings.Join(u.ids, ", "),
			Problem: fmt.Sprintf("the query uses %s, which its reads pass as an empty string (they bind %s only), so its WHERE matches nothing "+
				"and it reads 0 or no row whatever the receiver did.", strings.Join(empty, " and "), strings.Join(bound, " ")),
			Fix: fmt.Sprintf("key the query on what its reads bind (%s); docs/target.md lists each query's parameters.", strings.Join(bound, " ")),
		})
	}
	return out
}

// fileQuery is the target file's name of a query the catalogue reads (the
// lifecycle state is the observer's payment query).
func fileQuery(name string) string {
	if name == "state" {
		return targetfile.QueryPayment
	}
	return name
}
