package observe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookcert/hookcert/adapters/targetfile"
)

// one reads a query that returns at most one row: found is false for no row.
func (o *Observer) one(ctx context.Context, name string, k Key, what string) (row []any, found bool, err error) {
	r, err := o.read(ctx, name, k)
	if err != nil {
		return nil, false, err
	}
	switch len(r.Values) {
	case 0:
		return nil, false, nil
	case 1:
		return r.Values[0], true, nil
	}
	return nil, false, fmt.Errorf("observe: query %s: %d rows for %s (want at most 1)", name, len(r.Values), what)
}

// shape is the error for a value of the wrong type in a query's answer: the
// target's query is wrong, named by its field.
func (o *Observer) shape(name string, want string, v any) error {
	return classed(fmt.Sprintf("observe: %s: must return %s, returned %s %q", o.fieldPath(name), want, typeOf(v), asString(v)), ErrInvalidQuery)
}

// count runs a one-column counting query; a NULL, or no row, counts as 0 (a
// SUM over no rows; a key store's missing counter).
func (o *Observer) count(ctx context.Context, name string, k Key) (int, error) {
	row, found, err := o.one(ctx, name, k, fmt.Sprintf("event %q object %q", k.EventID, k.ObjectID))
	if err != nil || !found || len(row) == 0 || row[0] == nil {
		return 0, err
	}
	n, ok := asInt(row[0])
	if !ok {
		return 0, o.shape(name, "an integer count", row[0])
	}
	return int(n), nil
}

// EventRows counts the receiver's stored keys for one event.
func (o *Observer) EventRows(ctx context.Context, k Key) (int, error) {
	return o.count(ctx, QEventRows, k)
}

// Effects counts the business effects of one event.
func (o *Observer) Effects(ctx context.Context, k Key) (int, error) {
	return o.count(ctx, QEffects, k)
}

// EffectsOf is Effects through the named query: the effects query of a role
// after the first (effects:<label>).
func (o *Observer) EffectsOf(ctx context.Context, name string, k Key) (int, error) {
	return o.count(ctx, name, k)
}

// ObjectEffects counts the business effects on one object (for example the ledger
// entries of one payment).
func (o *Observer) ObjectEffects(ctx context.Context, source, account, objectID string) (int, error) {
	return o.ObjectEffectsOf(ctx, QObjectEffects, source, account, objectID)
}

// ObjectEffectsOf is ObjectEffects through the named query (object_effects:<label>).
func (o *Observer) ObjectEffectsOf(ctx context.Context, name, source, account, objectID string) (int, error) {
	return o.count(ctx, name, Key{Source: source, Account: account, ObjectID: objectID})
}

// Object returns the version and status of a versioned object; found is false when
// the query returns no row. More than one row is an error (the object is ambiguous).
// A query of one column (events.ordered.state: the applied ordering key) gives
// an empty status.
func (o *Observer) Object(ctx context.Context, source, account, objectID string) (version int64, status string, found bool, err error) {
	return o.ObjectOf(ctx, QObject, source, account, objectID)
}

// ObjectOf is Object through the named query (object:<label>).
func (o *Observer) ObjectOf(ctx context.Context, name, source, account, objectID string) (version int64, status string, found bool, err error) {
	row, found, err := o.one(ctx, name, Key{Source: source, Account: account, ObjectID: objectID}, fmt.Sprintf("object %q", objectID))
	if err != nil || !found {
		return 0, "", false, err
	}
	if len(row) > 0 && row[0] != nil {
		v, ok := asInt(row[0])
		if !ok {
			return 0, "", false, o.shape(name, "an integer version first", row[0])
		}
		version = v
	}
	if len(row) > 1 && row[1] != nil {
		status = asString(row[1])
	}
	return version, status, true, nil
}

// ObjectChildren returns the ordering key an ordered object's child rows were
// last written from; found is false for no row or NULL (no child rows).
func (o *Observer) ObjectChildren(ctx context.Context, source, account, objectID string) (key int64, found bool, err error) {
	row, found, err := o.one(ctx, QObjectChildren, Key{Source: source, Account: account, ObjectID: objectID}, fmt.Sprintf("object %q", objectID))
	if err != nil || !found || len(row) == 0 || row[0] == nil {
		return 0, false, err
	}
	k, ok := asInt(row[0])
	if !ok {
		return 0, false, o.shape(QObjectChildren, "an integer key", row[0])
	}
	return k, true, nil
}

// Payment returns the status of a payment; found is false when there is no row.
func (o *Observer) Payment(ctx context.Context, source, account, paymentID string) (status string, found bool, err error) {
	return o.PaymentOf(ctx, QPayment, source, account, paymentID)
}

// PaymentOf is Payment through the named query: the state query of a
// lifecycle object after the first (payment:<label>).
func (o *Observer) PaymentOf(ctx context.Context, name, source, account, paymentID string) (status string, found bool, err error) {
	row, found, err := o.one(ctx, name, Key{Source: source, Account: account, ObjectID: paymentID}, fmt.Sprintf("payment %q", paymentID))
	if err != nil || !found {
		return "", false, err
	}
	if len(row) > 0 && row[0] != nil {
		status = asString(row[0])
	}
	return status, true, nil
}

// PayloadPresent reports whether the event's key row still holds its payload;
// found is false when the query returns no row (the key is gone). A NULL reads as
// false; more than one row is an error.
func (o *Observer) PayloadPresent(ctx context.Context, k Key) (present, found bool, err error) {
	row, found, err := o.one(ctx, QPayloadPresent, k, fmt.Sprintf("event %q", k.EventID))
	if err != nil || !found {
		return false, false, err
	}
	if len(row) == 0 || row[0] == nil {
		return false, true, nil
	}
	b, ok := asBool(row[0])
	if !ok {
		return false, false, o.shape(QPayloadPresent, "a boolean", row[0])
	}
	return b, true, nil
}

// KeyTTL reads how long one event's key has left before the store expires it:
// found is false when the key is gone, never true when it does not expire
// (key_ttl answers -1).
func (o *Observer) KeyTTL(ctx context.Context, k Key) (ttl time.Duration, never, found bool, err error) {
	row, found, err := o.one(ctx, QKeyTTL, k, fmt.Sprintf("event %q", k.EventID))
	if err != nil || !found || len(row) == 0 || row[0] == nil {
		return 0, false, false, err
	}
	ms, ok := asInt(row[0])
	switch {
	case !ok:
		return 0, false, false, o.shape(QKeyTTL, "milliseconds left (an integer; -1 when the key never expires)", row[0])
	case ms == -1:
		return 0, true, true, nil
	case ms == -2:
		return 0, false, false, nil // Redis's answer for a key that is gone
	case ms < 0:
		return 0, false, false, o.shape(QKeyTTL, "milliseconds left (an integer; -1 when the key never expires)", row[0])
	}
	return time.Duration(ms) * time.Millisecond, false, true, nil
}

// Quiescent reports whether the receiver has no accepted work pending (the
// acceptance.quiescent query). Its one row must hold true or false: no row,
// several, or NULL is an error, since the harness cannot tell.
func (o *Observer) Quiescent(ctx context.Context) (bool, error) {
	r, err := o.read(ctx, QQuiescent, Key{})
	if err != nil {
		return false, err
	}
	switch {
	case len(r.Values) != 1:
		return false, fmt.Errorf("observe: query quiescent: %d rows (want exactly 1)", len(r.Values))
	case len(r.Values[0]) == 0 || r.Values[0][0] == nil:
		return false, errors.New("observe: query quiescent: NULL (want true or false)")
	}
	b, ok := asBool(r.Values[0][0])
	if !ok {
		return false, o.shape(QQuiescent, "a boolean", r.Values[0][0])
	}
	return b, nil
}

// Result is what one query returned, as evidence for a report.
type Result struct {
	Query   string            `json:"query"`
	SQL     string            `json:"sql"`
	Params  map[string]string `json:"params"`
	Columns []string          `json:"columns,omitempty"`
	Rows    [][]string        `json:"rows"`
	Error   string            `json:"error,omitempty"`
}

// Snapshot runs every configured query for k and returns the rows, stringified
// ("NULL" for null). A failing query is recorded in its Result, not returned.
func (o *Observer) Snapshot(ctx context.Context, k Key) []Result {
	var out []Result
	for _, name := range o.order {
		text, params := o.describe(name)
		r := Result{Query: name, SQL: text, Params: map[string]string{}, Rows: [][]string{}}
		for _, n := range params {
			r.Params[fmt.Sprintf("$%d %s", n, targetfile.ParamNames[n-1])] = k.param(n)
		}
		rows, err := o.read(ctx, name, k)
		if err != nil {
			r.Error = err.Error()
		}
		r.Columns = rows.Columns
		for _, vals := range rows.Values {
			row := make([]string, len(vals))
			for i, v := range vals {
				if v == nil {
					row[i] = "NULL"
				} else {
					row[i] = asString(v)
				}
			}
			r.Rows = append(r.Rows, row)
		}
		out = append(out, r)
	}
	return out
}

// QueueState is one event's row in the receiver's inbox or outbox, its state
// mapped by the target's query onto targetfile.InboxStates or targetfile.OutboxStates.
type QueueState struct {
	State    string
	Attempts int
	Found    bool
}

// InboxState reads the accepted work of one event (target.inbox.state).
func (o *Observer) InboxState(ctx context.Context, k Key) (QueueState, error) {
	return o.queueState(ctx, QInboxState, k, targetfile.InboxStates)
}

// OutboxState reads the downstream message of one event (target.outbox.state).
func (o *Observer) OutboxState(ctx context.Context, k Key) (QueueState, error) {
	return o.queueState(ctx, QOutboxState, k, targetfile.OutboxStates)
}

func (o *Observer) queueState(ctx context.Context, name string, k Key, valid []string) (QueueState, error) {
	row, found, err := o.one(ctx, name, k, fmt.Sprintf("event %q", k.EventID))
	if err != nil || !found {
		return QueueState{}, err
	}
	st := QueueState{Found: true}
	if len(row) > 0 && row[0] != nil {
		st.State = asString(row[0])
	}
	if len(row) > 1 && row[1] != nil {
		n, ok := asInt(row[1])
		if !ok {
			return QueueState{}, o.shape(name, "an integer attempts second", row[1])
		}
		st.Attempts = int(n)
	}
	if !slices.Contains(valid, st.State) {
		return QueueState{}, fmt.Errorf("observe: query %s: state %q for event %q is not one of %s (map the receiver's states onto them in the query)",
			name, st.State, k.EventID, strings.Join(valid, ", "))
	}
	return st, nil
}
