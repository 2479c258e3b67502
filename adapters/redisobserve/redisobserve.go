package redisobserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// Default bounds, the SQL kinds' own (targetfile.DefaultConnectTimeout and
// DefaultStatementTimeout).
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultReadTimeout    = 5 * time.Second
)

// MaxCountKeys is the most keys COUNT counts before it gives up.
const MaxCountKeys = 10_000

// countBatch is SCAN's COUNT hint: how many slots one call looks at.
const countBatch = 1000

// ClientName marks the harness's connections (CLIENT LIST), as
// application_name does its PostgreSQL sessions.
const ClientName = "hookcert-harness"

// Timeouts bound the Reader's work; a zero field takes its default.
type Timeouts struct {
	// Connect bounds one connection attempt (TCP, TLS, AUTH, SELECT).
	Connect time.Duration
	// Read bounds one command's answer (every SCAN call of a COUNT).
	Read time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Connect <= 0 {
		t.Connect = DefaultConnectTimeout
	}
	if t.Read <= 0 {
		t.Read = DefaultReadTimeout
	}
	return t
}

// Reader answers a target's named queries from one Redis database. It is safe
// for concurrent use.
type Reader struct {
	client  *redis.Client
	where   string
	to      Timeouts
	queries map[string]*query
	// db is the observed database's number: the receiver's clients are its.
	db int
}

var _ observe.Reader = (*Reader)(nil)

// DefaultFieldPath is where a query is read from when Open is given no
// fieldPath.
func DefaultFieldPath(name string) string { return "target.observe.redis.queries." + name }

// Open connects to the Redis server of url (redis://[user:password@]host[:port][/db],
// rediss:// for TLS, unix://), checks every query (fieldPath(name) names its field
// in errors; nil: target.observe.redis.queries.<name>) and that the server answers
// PING. All the queries' mistakes are reported at once.
func Open(ctx context.Context, url string, queries map[string]string, fieldPath func(name string) string, to Timeouts) (*Reader, error) {
	to = to.withDefaults()
	if fieldPath == nil {
		fieldPath = DefaultFieldPath
	}
	r := &Reader{to: to, queries: map[string]*query{}}
	var errs []error
	names := make([]string, 0, len(queries))
	for n := range queries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		field := fieldPath(n)
		q, err := parseQuery(n, field, queries[n])
		if err != nil {
			errs = append(errs, classed(fmt.Sprintf("observe: %s: %v", field, err), observe.ErrInvalidQuery))
			continue
		}
		r.queries[n] = q
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	opt, err := redis.ParseURL(url)
	if err != nil {
		// url.Parse's errors quote the URL, and its password with it.
		return nil, classed("observe: invalid Redis URL (not shown: it may hold a password): want redis://[user:password@]host[:port][/db]", observe.ErrUnreachable)
	}
	r.where = fmt.Sprintf("%s/%d", opt.Addr, opt.DB)
	r.db = opt.DB
	opt.ClientName = ClientName
	opt.DialTimeout = to.Connect
	opt.ReadTimeout = to.Read
	opt.WriteTimeout = to.Read
	opt.ContextTimeoutEnabled = true
	// One dial per attempt: the caller's deadline, not a retry loop, bounds it.
	opt.DialerRetries = 1
	opt.MaxRetries = 1
	opt.PoolSize = 8
	// RESP2 and no client-side extras: plain replies, nothing logged, nothing
	// the server must support beyond the commands.
	opt.Protocol = 2
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	quietLogs(opt.Addr)
	r.client = redis.NewClient(opt)

	pctx, cancel := context.WithTimeout(quiet(ctx), to.Connect+to.Read)
	err = r.client.Ping(pctx).Err()
	cancel()
	if err != nil {
		_ = r.client.Close()
		if ctx.Err() == nil && isTimeout(err) {
			return nil, classed(fmt.Sprintf("observe: Redis at %s does not answer PING within %s (connect timeout %s + read timeout %s)",
				r.where, to.Connect+to.Read, to.Connect, to.Read), observe.ErrUnreachable, observe.ErrTimeout)
		}
		return nil, classed(fmt.Sprintf("observe: Redis at %s does not answer PING: %v", r.where, err), observe.ErrUnreachable, err)
	}
	return r, nil
}

// Kind is "redis".
func (r *Reader) Kind() string { return "redis" }

// Where names the server and database (host:port/db, never a password).
func (r *Reader) Where() string { return r.where }

// Has reports whether the named query is configured.
func (r *Reader) Has(name string) bool { return r.queries[name] != nil }

// Describe is the query's command as configured, with its $n.
func (r *Reader) Describe(name string) string {
	if q := r.queries[name]; q != nil {
		return q.template
	}
	return ""
}

// Params are the parameters the named query uses, ascending.
func (r *Reader) Params(name string) []int {
	if q := r.queries[name]; q != nil {
		return append([]int(nil), q.params...)
	}
	return nil
}

// Close closes the connections.
func (r *Reader) Close() { _ = r.client.Close() }

// Read runs the named query for k and gives its rows as the observe.Reader
// contract has them:
//
//   - counts (event_rows, effects, object_effects): an integer reply, or a
//     string holding one, is one row of an int64; nil is no row (read as 0);
//   - quiescent: a count of pending work, one row true when it is 0 (nil too);
//   - object: one row (version int64[, status]); HMGET gives its values, and
//     no row when all are nil;
//   - payment: one row (status), no row for nil;
//   - payload_present: one row (true when the reply is a non-zero integer or a
//     string), no row for nil;
//   - key_ttl: PTTL -2 (no key) is no row, -1 (no expiry) is -1, else the
//     milliseconds left; TTL's seconds are given in milliseconds the same way;
//   - inbox_state, outbox_state: HMGET key <state field> <attempts field>, one
//     row (state, attempts int64), no row when both are nil.
//
// A reply of another shape is an error wrapping observe.ErrInvalidQuery, as is
// a Redis error about the query (WRONGTYPE: the key holds another type) and a
// COUNT past MaxCountKeys.
func (r *Reader) Read(ctx context.Context, name string, k observe.Key) (sqlstore.Rows, error) {
	q := r.queries[name]
	if q == nil {
		return sqlstore.Rows{}, fmt.Errorf("observe: query %s: %w", name, observe.ErrNotConfigured)
	}
	args := q.expand(k)
	// The client deadline covers a reconnect, then the answer.
	rctx, cancel := context.WithTimeout(quiet(ctx), r.to.Connect+r.to.Read)
	defer cancel()
	var reply any
	var err error
	if q.cmd == "COUNT" {
		reply, err = r.count(rctx, q, args[0])
	} else {
		words := make([]any, 0, len(args)+1)
		words = append(words, q.cmd)
		for _, a := range args {
			words = append(words, a)
		}
		reply, err = r.client.Do(rctx, words...).Result()
		if errors.Is(err, redis.Nil) {
			reply, err = nil, nil
		}
	}
	if err != nil {
		return sqlstore.Rows{}, r.readError(ctx, q, err)
	}
	rows, err := q.rows(reply)
	if err != nil {
		return sqlstore.Rows{}, classed(fmt.Sprintf("observe: %s: %s answered %v", q.field, q.template, err), observe.ErrInvalidQuery)
	}
	return rows, nil
}

// errTooMany is a COUNT that matched more than MaxCountKeys keys.
var errTooMany = errors.New("too many keys")

// count counts the keys matching pattern, each once (SCAN may repeat a key).
func (r *Reader) count(ctx context.Context, q *query, pattern string) (any, error) {
	seen := map[string]struct{}{}
	var cursor uint64
	for {
		keys, next, err := r.client.Scan(ctx, cursor, pattern, countBatch).Result()
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			seen[k] = struct{}{}
		}
		if len(seen) > MaxCountKeys {
			return nil, errTooMany
		}
		if next == 0 {
			return int64(len(seen)), nil
		}
		cursor = next
	}
}

// readError classifies a failed read. ctx is the caller's: its cancellation
// is not the Reader's failure.
func (r *Reader) readError(ctx context.Context, q *query, err error) error {
	var rerr redis.Error
	switch {
	case errors.Is(err, errTooMany):
		return classed(fmt.Sprintf("observe: %s: %s matches more than %d keys; hookcert counts at most %d (bounded): narrow the pattern with $n",
			q.field, q.template, MaxCountKeys, MaxCountKeys), observe.ErrInvalidQuery)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("observe: query %s: %w", q.name, ctx.Err())
	case isTimeout(err):
		// The caller's deadline counts too: the observer bounds a read by the
		// same timeouts.
		return classed(fmt.Sprintf("observe: query %s: no answer from Redis at %s within %s (read timeout %s + connect timeout %s)",
			q.name, r.where, r.to.Read+r.to.Connect, r.to.Read, r.to.Connect), observe.ErrTimeout, err)
	case errors.As(err, &rerr) && redis.HasErrorPrefix(err, "WRONGTYPE"):
		// The key holds another type than the command reads: the query's
		// mistake. Other refusals (LOADING, NOAUTH, too many clients) are the
		// server's state.
		return classed(fmt.Sprintf("observe: %s: %s: %v", q.field, q.template, err), observe.ErrInvalidQuery, err)
	}
	return classed(fmt.Sprintf("observe: query %s: Redis at %s: %v", q.name, r.where, err), observe.ErrUnreachable, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// rows converts a reply (int64, string, []any, float64 or nil) into q's rows.
func (q *query) rows(reply any) (sqlstore.Rows, error) {
	sh := q.shape
	vals := []any{reply}
	if list, ok := reply.([]any); ok {
		vals = list
	}
	out := sqlstore.Rows{Columns: sh.columns[:min(len(vals), len(sh.columns))]}
	allNil := true
	for _, v := range vals {
		if v != nil {
			allNil = false
		}
	}
	if allNil {
		switch sh.as {
		case asQuiescent:
			// No counter, no pending work.
			out.Values = [][]any{{true}}
		}
		return out, nil
	}
	if len(vals) < sh.minValues || len(vals) > sh.maxValues {
		return out, fmt.Errorf("%d values, want %s", len(vals), fieldCount(sh))
	}
	switch sh.as {
	case asCount, asQuiescent:
		n, err := integer(vals[0])
		if err != nil {
			return out, err
		}
		if sh.as == asQuiescent {
			out.Values = [][]any{{n == 0}}
		} else {
			out.Values = [][]any{{n}}
		}
	case asObject:
		row := make([]any, len(vals))
		if vals[0] != nil {
			n, err := integer(vals[0])
			if err != nil {
				return out, fmt.Errorf("%v for the version", err)
			}
			row[0] = n
		}
		if len(vals) > 1 {
			row[1] = text(vals[1])
		}
		out.Values = [][]any{row}
	case asStatus:
		out.Values = [][]any{{text(vals[0])}}
	case asPresent:
		present := true
		if n, ok := vals[0].(int64); ok {
			present = n != 0
		}
		out.Values = [][]any{{present}}
	case asTTL:
		n, ok := vals[0].(int64)
		switch {
		case !ok:
			return out, fmt.Errorf("%s, not an integer", show(vals[0]))
		case n == -2:
			// The key is gone.
		case n == -1:
			out.Values = [][]any{{int64(-1)}}
		case n < 0:
			return out, fmt.Errorf("%d, not a time to live", n)
		case q.cmd == "TTL":
			out.Values = [][]any{{n * 1000}}
		default:
			out.Values = [][]any{{n}}
		}
	case asState:
		row := []any{text(vals[0]), nil}
		if vals[1] != nil {
			n, err := integer(vals[1])
			if err != nil {
				return out, fmt.Errorf("%v for the attempts", err)
			}
			row[1] = n
		}
		out.Values = [][]any{row}
	}
	return out, nil
}

// integer reads an integer reply, or a string (GET, HGET, ZSCORE) holding one.
func integer(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n, nil
		}
		// ZSCORE gives "3" for 3 but may give "3e+20" or "1.5".
		if f, err := strconv.ParseFloat(x, 64); err == nil && f == float64(int64(f)) {
			return int64(f), nil
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x), nil
		}
	}
	return 0, fmt.Errorf("%s, not an integer", show(v))
}

// text reads a status: strings stay, integers are written in decimal.
func text(v any) any {
	switch x := v.(type) {
	case nil, string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}

// show quotes a value for a message, cut short.
func show(v any) string {
	s := fmt.Sprintf("%q", fmt.Sprint(v))
	if len(s) > 66 {
		s = s[:64] + `…"`
	}
	return s
}

// kindError belongs to classes (observe.ErrInvalidQuery …) without repeating
// their words in its message, as the observe package's errors do.
type kindError struct {
	msg   string
	kinds []error
}

func (e *kindError) Error() string   { return e.msg }
func (e *kindError) Unwrap() []error { return e.kinds }

func classed(msg string, kinds ...error) error {
	e := &kindError{msg: msg}
	for _, k := range kinds {
		if k != nil {
			e.kinds = append(e.kinds, k)
		}
	}
	return e
}
