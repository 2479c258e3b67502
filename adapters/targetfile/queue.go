package targetfile

import (
	"net/http"
	"strings"
	"time"
)

// Query names of the inbox and outbox sections.
const (
	// QueryInboxState returns (state, attempts) of one event's accepted work.
	QueryInboxState = "inbox_state"
	// QueryOutboxState returns (state, attempts) of one event's downstream message.
	QueryOutboxState = "outbox_state"
)

// Inbox and outbox states the state queries must map the receiver's own onto.
var (
	InboxStates  = []string{"pending", "processing", "done", "dead"}
	OutboxStates = []string{"pending", "processing", "sent", "dead"}
)

// Bounds of the inbox and outbox sections.
const (
	MaxInboxLease   = 5 * time.Minute
	MaxQueueAttempt = 100
)

// InboxSpec is the declared inbox (capability inbox): how the receiver's workers
// claim accepted events and give up on them.
type InboxSpec struct {
	// Lease is how long a worker's claim lasts before the event is offered again.
	Lease time.Duration
	// MaxAttempts is how many attempts an event gets before it is dead-lettered
	// (0: not declared; the dead-letter guarantee is then not applicable).
	MaxAttempts int
	// Table is the table whose rows the workers claim and mark done (default:
	// observe.postgres.event_table); the harness may lock it.
	Table string
}

// OutboxSpec is the declared outbox (capability outbox): the receiver sends its
// downstream calls to the harness's sink, {{.SinkURL}}.
type OutboxSpec struct {
	// KeyHeader is the request header carrying the operation key
	// (DefaultOutboxKeyHeader).
	KeyHeader string
	// MaxAttempts is how many calls a message gets before it is dead-lettered
	// (0: not declared).
	MaxAttempts int
}

// DefaultOutboxKeyHeader is the operation key header of Stripe-style APIs.
const DefaultOutboxKeyHeader = "Idempotency-Key"

type rawInbox struct {
	Lease       string `yaml:"lease"`
	MaxAttempts int    `yaml:"max_attempts"`
	Table       string `yaml:"table"`
	State       string `yaml:"state"`
}

type rawOutbox struct {
	KeyHeader   string `yaml:"key_header"`
	MaxAttempts int    `yaml:"max_attempts"`
	State       string `yaml:"state"`
}

// queues checks the inbox and outbox sections and fills their query slots.
func (v *validator) queues(t *Target, rt *rawTarget) {
	setQuery := func(name, field, sql string) {
		if t.Store.Queries.From == nil {
			t.Store.Queries.From = map[string]string{}
		}
		t.Store.Queries.From[name] = field
		switch name {
		case QueryInboxState:
			t.Store.Queries.InboxState = sql
		case QueryOutboxState:
			t.Store.Queries.OutboxState = sql
		}
	}
	if ri := rt.Inbox; ri != nil {
		base := []any{"target", "inbox"}
		spec := &InboxSpec{}
		if ri.Lease == "" {
			v.fail(at(base, "lease"), "required: how long a worker's claim lasts (the harness waits past it for an abandoned claim to be offered again)")
		} else if d := v.duration(at(base, "lease"), ri.Lease, 0, false); d > MaxInboxLease {
			v.fail(at(base, "lease"), "must be at most %s (got %s)", MaxInboxLease, ri.Lease)
		} else {
			spec.Lease = d
		}
		spec.MaxAttempts = v.attempts(at(base, "max_attempts"), ri.MaxAttempts)
		if ri.Table != "" {
			if !tableNameOK(ri.Table) {
				v.fail(at(base, "table"), "must be a table name or schema.table of letters, digits and _ (got %q)", ri.Table)
			} else {
				spec.Table = ri.Table
			}
		}
		if strings.TrimSpace(ri.State) == "" {
			v.fail(at(base, "state"), "required: a query returning (state, attempts) for $1 source, $2 account, $3 event ID; state one of %s", strings.Join(InboxStates, ", "))
		} else if v.queryParams(at(base, "state"), ri.State, []int{3}) {
			setQuery(QueryInboxState, "target.inbox.state", ri.State)
		}
		t.Inbox = spec
	}
	if ro := rt.Outbox; ro != nil {
		base := []any{"target", "outbox"}
		spec := &OutboxSpec{KeyHeader: DefaultOutboxKeyHeader}
		if ro.KeyHeader != "" {
			if h := http.CanonicalHeaderKey(ro.KeyHeader); !validHeaderName(ro.KeyHeader) {
				v.fail(at(base, "key_header"), "must be an HTTP header name (got %q)", ro.KeyHeader)
			} else {
				spec.KeyHeader = h
			}
		}
		spec.MaxAttempts = v.attempts(at(base, "max_attempts"), ro.MaxAttempts)
		if strings.TrimSpace(ro.State) != "" && v.queryParams(at(base, "state"), ro.State, []int{3}) {
			setQuery(QueryOutboxState, "target.outbox.state", ro.State)
		}
		if spec.MaxAttempts > 0 && strings.TrimSpace(ro.State) == "" {
			v.fail(at(base, "state"), "required with max_attempts: a query returning (state, attempts) for $1 source, $2 account, $3 event ID; state one of %s", strings.Join(OutboxStates, ", "))
		}
		t.Outbox = spec
	}
}

func (v *validator) attempts(segs []any, n int) int {
	switch {
	case n == 0:
		return 0
	case n < 1 || n > MaxQueueAttempt:
		v.fail(segs, "must be between 1 and %d (got %d)", MaxQueueAttempt, n)
		return 0
	}
	return n
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}
