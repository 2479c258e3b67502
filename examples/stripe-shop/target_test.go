package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// These tests hold target.yaml — the file hookcert certifies the shop with —
// to what the receiver does. The receiver's code knows nothing of hookcert;
// only this file does.

// The harness's own loader accepts the file.
func TestTargetFileLoads(t *testing.T) {
	tf, data := readTarget(t)
	endpointSecrets(t, tf)
	if err := targetfile.Validate(data, profiles.IDs()); err != nil {
		t.Fatalf("target.yaml does not load: %v", err)
	}
}

// binder runs a target query the way the harness binds it: only the
// parameters it references, renumbered ($1 source, $2 account, $3 event ID,
// $4 object ID; fixtures also $5 amount, $6 currency, $7 parent ID).
type binder struct {
	t    *testing.T
	conn *pgx.Conn
}

type params struct {
	Source, Account, EventID, ObjectID string
	Amount                             int64
	Currency                           string
	// Parent is a child object's parent ($7 of a fixture).
	Parent string
}

func (b binder) args(sql string, p params, fixture bool) (string, []any) {
	b.t.Helper()
	compact, used, err := targetfile.CompactParams(sql)
	if fixture {
		compact, used, err = targetfile.CompactFixtureParams(sql)
	}
	if err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
	all := []any{p.Source, p.Account, p.EventID, p.ObjectID, p.Amount, p.Currency, p.Parent}
	var args []any
	for _, n := range used {
		args = append(args, all[n-1])
	}
	return compact, args
}

// count runs a count query with plain parameters.
func (b binder) count(sql string, args ...any) int {
	b.t.Helper()
	var n int
	if err := b.conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// int reads a one-column integer query; ok is false without a row.
func (b binder) int(sql string, p params) (n int64, ok bool) {
	b.t.Helper()
	q, args := b.args(sql, p, false)
	var v *int64
	err := b.conn.QueryRow(context.Background(), q, args...).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false
	}
	if err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
	if v == nil {
		return 0, true
	}
	return *v, true
}

func (b binder) text(sql string, p params) (string, bool) {
	b.t.Helper()
	q, args := b.args(sql, p, false)
	var s string
	err := b.conn.QueryRow(context.Background(), q, args...).Scan(&s)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false
	}
	if err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
	return s, true
}

func (b binder) boolean(sql string, p params) (bool, bool) {
	b.t.Helper()
	q, args := b.args(sql, p, false)
	var v bool
	err := b.conn.QueryRow(context.Background(), q, args...).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false
	}
	if err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
	return v, true
}

func (b binder) fixture(sql string, p params) {
	b.t.Helper()
	q, args := b.args(sql, p, true)
	if _, err := b.conn.Exec(context.Background(), q, args...); err != nil {
		b.t.Fatalf("fixture %s: %v", sql, err)
	}
}

// The file's events, fixtures and queries describe what the receiver does:
// each role's rendered events sent to the file's endpoint paths, and read
// back through the file's queries.
func TestTargetFileMatchesTheReceiver(t *testing.T) {
	tf, _ := readTarget(t)
	secrets := endpointSecrets(t, tf)
	sh := newShop(t, Config{Secrets: secrets})
	conn, err := pgx.Connect(context.Background(), sh.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	db := binder{t: t, conn: conn}
	tg := tf.Target
	ev := tg.Events
	if tg.Limits.MaxBodyBytes != sh.srv.cfg.MaxBodyBytes {
		t.Errorf("limits.max_body_bytes %d, the receiver's default cap %d", tg.Limits.MaxBodyBytes, sh.srv.cfg.MaxBodyBytes)
	}
	if tg.Observe.Postgres.EventTable != "stripe_events" || tg.Observe.Postgres.EffectTable != "ledger" {
		t.Errorf("observe tables %q/%q", tg.Observe.Postgres.EventTable, tg.Observe.Postgres.EffectTable)
	}
	if tg.Retention.KeyTTL != DefaultKeyTTL.String() && tg.Retention.KeyTTL != "720h" {
		t.Errorf("retention.key_ttl %s, the purge's default %s", tg.Retention.KeyTTL, DefaultKeyTTL)
	}
	if tg.Retention.PayloadTTL != "168h" {
		t.Errorf("retention.payload_ttl %s, the purge's default %s", tg.Retention.PayloadTTL, DefaultPayloadTTL)
	}

	created := time.Now().Unix()
	// send renders a role's object template and delivers the event to an
	// endpoint of the file.
	sendParent := func(epIndex int, typ, tpl, eventID, objectID, parent string, at int64) int {
		t.Helper()
		ep := tg.Endpoints[epIndex]
		ot, err := vocab.ParseObjectTemplate(tpl)
		if err != nil {
			t.Fatalf("%s object template: %v", typ, err)
		}
		obj, err := ot.Render(vocab.ObjectData{EventID: eventID, Type: typ, ObjectID: objectID, Source: ep.Source,
			Account: ep.Account, Currency: "eur", Amount: 1234, Created: at, Parent: parent})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		body := event(eventID, typ, at, string(obj))
		req, _ := http.NewRequest(http.MethodPost, sh.hs.URL+ep.Path, bytes.NewReader(body))
		req.Header.Set("Stripe-Signature", sign(body, secrets[modeOf(ep.Source)+"/"+ep.Account][0], time.Now()))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	send := func(epIndex int, typ, tpl, eventID, objectID string, at int64) int {
		t.Helper()
		return sendParent(epIndex, typ, tpl, eventID, objectID, "", at)
	}
	ok2xx := func(s int) bool { return s >= 200 && s < 300 }
	key := func(epIndex int, eventID, objectID string) params {
		ep := tg.Endpoints[epIndex]
		return params{Source: ep.Source, Account: ep.Account, EventID: eventID, ObjectID: objectID, Amount: 1234, Currency: "eur"}
	}
	queries := tg.Observe.Postgres.Queries

	t.Run("effect", func(t *testing.T) {
		e := ev.Effect
		id, obj := uniq("evt"), uniq(e.IDPrefix)
		for i := 0; i < 2; i++ {
			if s := send(0, e.Type, e.Object, id, obj, created); s != 200 {
				t.Fatalf("delivery %d: %d", i, s)
			}
		}
		// The same event ID on the account's other mode is another event.
		if s := send(1, e.Type, e.Object, id, obj, created); s != 200 {
			t.Fatalf("other source: %d", s)
		}
		for _, epIndex := range []int{0, 1} {
			k := key(epIndex, id, obj)
			if n, _ := db.int(e.Effects, k); n != 1 {
				t.Errorf("endpoint %d: events.effect.effects %d, want 1", epIndex, n)
			}
			if n, _ := db.int(queries["effects"], k); n != 1 {
				t.Errorf("endpoint %d: queries.effects %d, want 1", epIndex, n)
			}
			if n, _ := db.int(queries["event_rows"], k); n != 1 {
				t.Errorf("endpoint %d: queries.event_rows %d, want 1", epIndex, n)
			}
			if p, found := db.boolean(queries["payload_present"], k); !p || !found {
				t.Errorf("endpoint %d: payload_present (%v, %v)", epIndex, p, found)
			}
		}
		if n, _ := db.int(queries["event_rows"], key(2, id, obj)); n != 0 {
			t.Errorf("another account sees the event: %d", n)
		}
	})

	if len(ev.Lifecycles) != 2 {
		t.Fatalf("%d lifecycle objects, want the payment intent and the refund", len(ev.Lifecycles))
	}
	byObject := map[string]lifecycleDoc{}
	for _, l := range ev.Lifecycles {
		byObject[l.Object] = l
	}
	// pathTo is the run of transitions from l's initial state to state.
	pathTo := func(l lifecycleDoc, state string) []transitionDoc {
		paths := map[string][]transitionDoc{l.Initial: nil}
		order := []string{l.Initial}
		for i := 0; i < len(order); i++ {
			for _, x := range l.Transitions {
				if contains(x.From, order[i]) {
					if _, seen := paths[x.To]; !seen {
						paths[x.To] = append(append([]transitionDoc(nil), paths[order[i]]...), x)
						order = append(order, x.To)
					}
				}
			}
		}
		return paths[state]
	}
	// makeObject writes obj of l with its fixture, and first, for a child,
	// its parent (ID derived as the harness derives it) brought to the state
	// the relation names; it returns the parent's ID ("" for none).
	var makeObject func(l lifecycleDoc, obj string) string
	makeObject = func(l lifecycleDoc, obj string) string {
		t.Helper()
		parent := ""
		if l.Parent != nil {
			p := byObject[l.Parent.Object]
			parent = vocab.Ref(p.IDPrefix, obj)
			makeObject(p, parent)
			for _, step := range pathTo(p, l.Parent.State) {
				if s := send(0, step.Type, step.Object, uniq("evt"), parent, created); s != 200 {
					t.Fatalf("parent %s to %s: %s answered %d", parent, l.Parent.State, step.Type, s)
				}
			}
		}
		fixture := tg.Fixtures[l.Create.Fixture]
		if fixture.SQL == "" {
			t.Fatalf("no fixture %q", l.Create.Fixture)
		}
		k := key(0, "", obj)
		k.Parent = parent
		db.fixture(fixture.SQL, k)
		return parent
	}
	for _, l := range ev.Lifecycles {
		t.Run("lifecycle "+l.Object, func(t *testing.T) {
			// path from initial to every reachable state, breadth first.
			paths := map[string][]transitionDoc{l.Initial: nil}
			order := []string{l.Initial}
			for i := 0; i < len(order); i++ {
				for _, x := range l.Transitions {
					if contains(x.From, order[i]) {
						if _, seen := paths[x.To]; !seen {
							paths[x.To] = append(append([]transitionDoc(nil), paths[order[i]]...), x)
							order = append(order, x.To)
						}
					}
				}
			}
			reachable := func(from, to string) bool {
				seen := map[string]bool{from: true}
				q := []string{from}
				for len(q) > 0 {
					s := q[0]
					q = q[1:]
					if s == to {
						return true
					}
					for _, x := range l.Transitions {
						if contains(x.From, s) && !seen[x.To] {
							seen[x.To] = true
							q = append(q, x.To)
						}
					}
				}
				return false
			}
			check := func(k params, wantState string, wantEffects int64, what string) {
				t.Helper()
				if s, _ := db.text(l.State, k); s != wantState {
					t.Errorf("%s: state %q, want %q", what, s, wantState)
				}
				if l.Effects == "" {
					return
				}
				if n, _ := db.int(l.Effects, k); n != wantEffects {
					t.Errorf("%s: effects %d, want %d", what, n, wantEffects)
				}
			}
			// An event for an object that does not exist: missing: retry.
			for _, x := range l.Transitions {
				obj := uniq(l.IDPrefix)
				s := sendParent(0, x.Type, x.Object, uniq("evt"), obj, "pi_none", created)
				if l.Missing == "retry" && ok2xx(s) {
					t.Errorf("%s for a missing object: %d, want non-2xx (missing: retry)", x.Type, s)
				}
				if _, found := db.text(l.State, key(0, "", obj)); found {
					t.Errorf("%s created the object", x.Type)
				}
			}
			for _, state := range order {
				for _, x := range l.Transitions {
					obj := uniq(l.IDPrefix)
					k := key(0, "", obj)
					parent := makeObject(l, obj)
					check(k, l.Initial, 0, "fixture")
					var effects int64
					for _, step := range paths[state] {
						if s := sendParent(0, step.Type, step.Object, uniq("evt"), obj, parent, created); s != 200 {
							t.Fatalf("path to %s: %s answered %d", state, step.Type, s)
						}
						if step.Effect {
							effects++
						}
					}
					check(k, state, effects, "path to "+state)
					what := fmt.Sprintf("%s in state %s", x.Type, state)
					s := sendParent(0, x.Type, x.Object, uniq("evt"), obj, parent, created)
					switch {
					case contains(x.From, state):
						if x.Effect {
							effects++
						}
						if s != 200 {
							t.Errorf("%s (allowed): %d", what, s)
						}
						check(k, x.To, effects, what)
					case x.To == state || !reachable(state, x.To):
						// Another event for the change already made, or one the
						// object is past: acknowledged, not applied.
						if s != 200 {
							t.Errorf("%s (stale): %d, want 200", what, s)
						}
						check(k, state, effects, what)
					default:
						// Premature: refused so Stripe retries it later.
						if ok2xx(s) {
							t.Errorf("%s (premature): %d, want non-2xx", what, s)
						}
						check(k, state, effects, what)
					}
				}
			}
		})
	}

	if len(ev.Ordered) != 2 {
		t.Fatalf("%d ordered roles, want customers and products", len(ev.Ordered))
	}
	for _, o := range ev.Ordered {
		t.Run("ordered "+o.Type, func(t *testing.T) {
			obj := uniq(o.IDPrefix)
			k := key(2, "", obj)
			if _, found := db.int(o.State, k); found {
				t.Fatal("object exists before its first update")
			}
			for _, at := range []int64{created - 50, created - 10, created - 30, created - 10} {
				if s := send(2, o.Type, o.Object, uniq("evt"), obj, at); s != 200 {
					t.Fatalf("update created %d: %d", at, s)
				}
			}
			if n, _ := db.int(o.State, k); n != created-10 {
				t.Errorf("ordered state %d, want the newest created %d", n, created-10)
			}
			if o.Table != "" && db.count(`SELECT count(*) FROM `+o.Table+` WHERE id = $1`, obj) != 1 {
				t.Errorf("the role's table %s does not hold its object", o.Table)
			}
		})
	}

	t.Run("unhandled", func(t *testing.T) {
		u := ev.Unhandled
		id := uniq("evt")
		if s := send(3, u.Type, u.Object, id, uniq(u.IDPrefix), created); s != 200 {
			t.Errorf("%s: %d, want 200", u.Type, s)
		}
		if n, _ := db.int(queries["event_rows"], key(3, id, "")); n != 0 {
			t.Errorf("%s stored %d event rows", u.Type, n)
		}
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
