package reference

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/reference/store"
)

// DefaultSinkTimeout bounds one downstream call of the outbox dispatcher.
const DefaultSinkTimeout = 10 * time.Second

// OutboxOptions configure the outbox: with SinkURL set, an applied charge.refunded
// or customer_cash_balance_transaction.created (a credit) writes a message in its
// business transaction and a dispatcher POSTs it to SinkURL with an
// Idempotency-Key derived from the event key. Retries, attempts,
// lease and backoff follow the InboxOptions given beside it.
type OutboxOptions struct {
	// SinkURL receives every message (POST, JSON); "" disables the outbox.
	SinkURL string
	// Dispatchers is how many dispatchers run in this process; 0 means 1,
	// negative none.
	Dispatchers int
	// Timeout bounds one call; 0 means DefaultSinkTimeout.
	Timeout time.Duration
	// Defects are the outbox defects to run with (names from Defects(); other
	// names are ignored here). Options.Defects fills it for a Server.
	Defects []string
}

// Validate checks the sink URL.
func (o OutboxOptions) Validate() error {
	if o.SinkURL == "" {
		return nil
	}
	u, err := url.Parse(o.SinkURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("sink url: must be an http or https URL")
	}
	if o.Timeout < 0 {
		return fmt.Errorf("sink timeout: must not be negative, got %s", o.Timeout)
	}
	return ValidateDefects(o.Defects)
}

// Dispatcher sends outbox messages: it claims due messages (FOR UPDATE SKIP
// LOCKED, with a lease), POSTs each, marks it sent on a 2xx, retries transient
// failures with backoff, dead-letters after MaxAttempts (or at once on a 4xx other
// than 408, 409 and 429), and re-offers messages whose lease expired.
type Dispatcher struct {
	pool   *pgxpool.Pool
	opts   OutboxOptions
	retry  InboxOptions
	log    *slog.Logger
	client *http.Client
	wake   chan struct{}
	// steps are the dispatcher's seams (see dispatchSteps); outbox defects
	// replace some of them once, in NewDispatcher.
	steps dispatchSteps
}

// dispatchSteps are the narrow seams of the outbox. correctSteps fills them with
// the correct implementations below; an outbox defect replaces or wraps one or
// more of them ONCE, when the dispatcher is built (dispatcherDefects,
// outbox_defects.go), so no dispatch path asks which defects are active.
type dispatchSteps struct {
	// withOutbox returns the business rules of transactions whose downstream
	// messages this dispatcher sends.
	withOutbox func(r store.Rules) store.Rules
	// key is the Idempotency-Key a message is sent with.
	key func(m store.OutboxMessage) string
	// fail records a failed send and logs what became of the message.
	fail func(ctx context.Context, log *slog.Logger, m store.OutboxMessage, id string, status int, msg string, permanent bool)
	// reconcile is one pass of the reconciler over expired claims.
	reconcile func(ctx context.Context)
}

// correctSteps returns the dispatcher's correct steps.
func (d *Dispatcher) correctSteps() dispatchSteps {
	return dispatchSteps{
		withOutbox: withOutbox,
		key:        stableKey,
		fail:       d.failSend,
		reconcile:  d.reconcile,
	}
}

// NewDispatcher prepares a dispatcher; retry supplies attempts, lease, poll
// interval and backoff (zero fields: the inbox defaults).
func NewDispatcher(pool *pgxpool.Pool, opts OutboxOptions, retry InboxOptions, log *slog.Logger) (*Dispatcher, error) {
	if pool == nil {
		return nil, errors.New("reference: pool: required")
	}
	if opts.SinkURL == "" {
		return nil, errors.New("reference: sink url: required for the outbox")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if err := retry.Validate(); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Dispatchers == 0 {
		opts.Dispatchers = 1
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultSinkTimeout
	}
	retry = retry.withDefaults()
	b := make([]byte, 3)
	_, _ = crand.Read(b)
	retry.WorkerID += "-outbox-" + hex.EncodeToString(b)
	d := &Dispatcher{pool: pool, opts: opts, retry: retry, log: log, wake: make(chan struct{}, 1),
		client: &http.Client{Timeout: opts.Timeout}}
	d.steps = d.correctSteps()
	installDispatcherDefects(d, opts.Defects)
	return d, nil
}

// withOutbox makes applied refunds and credits write their downstream message to
// the outbox in their business transaction.
func withOutbox(r store.Rules) store.Rules {
	r.Outbox = true
	return r
}

// Wake tells an idle dispatcher a message is waiting (never blocks).
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run dispatches until ctx ends; a send in progress finishes first.
func (d *Dispatcher) Run(ctx context.Context) {
	if d.opts.Dispatchers < 0 {
		return
	}
	d.log.Info("outbox dispatchers started", "dispatchers", d.opts.Dispatchers, "sink", redactURL(d.opts.SinkURL))
	var wg sync.WaitGroup
	for i := range d.opts.Dispatchers {
		id := fmt.Sprintf("%s/%d", d.retry.WorkerID, i)
		wg.Go(func() {
			for ctx.Err() == nil {
				n, err := d.Step(ctx, id)
				if err != nil && ctx.Err() == nil {
					d.log.Warn("outbox dispatcher", "dispatcher", id, "err", err)
				}
				if n > 0 {
					continue
				}
				select {
				case <-ctx.Done():
				case <-d.wake:
				case <-time.After(d.retry.PollInterval):
				}
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d.retry.ReconcileInterval):
			}
			d.steps.reconcile(ctx)
		}
	})
	wg.Wait()
}

// reconcile re-offers messages whose lease expired, dead-lettering those that
// have had MaxAttempts attempts.
func (d *Dispatcher) reconcile(ctx context.Context) {
	if n, err := store.ReclaimOutbox(ctx, d.pool, d.retry.MaxAttempts, 100); err != nil && ctx.Err() == nil {
		d.log.Warn("outbox reconciler", "err", err)
	} else if n > 0 {
		d.log.Warn("outbox: re-offered messages whose lease expired", "messages", n)
		d.Wake()
	}
}

// Step claims and sends one due message as dispatcher id; it returns how many it
// sent or failed (0 when none was due).
func (d *Dispatcher) Step(ctx context.Context, id string) (int, error) {
	msgs, err := store.ClaimOutbox(ctx, d.pool, id, d.retry.Lease, 1)
	if err != nil {
		return 0, fmt.Errorf("reference: %w", err)
	}
	for _, m := range msgs {
		d.send(ctx, id, m)
	}
	return len(msgs), nil
}

func (d *Dispatcher) send(ctx context.Context, id string, m store.OutboxMessage) {
	// The call and its bookkeeping finish even during shutdown (bounded by the
	// timeout), so a sent message is not left to be resent needlessly.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.Timeout+5*time.Second)
	defer cancel()
	log := d.log.With("dispatcher", id, "event_id", m.EventID, "kind", m.Kind, "attempt", m.Attempts)
	status, err := d.post(cctx, m)
	if err == nil && status/100 == 2 {
		ok, err := store.MarkSent(cctx, d.pool, m.ID, id, status)
		switch {
		case err != nil:
			log.Error("outbox message sent but not recorded; it will be resent with the same key", "err", err)
		case !ok:
			log.Warn("outbox message sent after its claim was lost; the downstream deduplicates the resend")
		default:
			log.Info("outbox message sent", "status", status)
		}
		return
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		msg = fmt.Sprintf("sink answered %d", status)
	}
	permanent := err == nil && status/100 == 4 && status != http.StatusRequestTimeout &&
		status != http.StatusConflict && status != http.StatusTooManyRequests
	d.steps.fail(cctx, log, m, id, status, msg, permanent)
}

// failSend records a failed send: retried after backoff, or dead-lettered after
// MaxAttempts attempts (at once if permanent).
func (d *Dispatcher) failSend(ctx context.Context, log *slog.Logger, m store.OutboxMessage, id string, status int, msg string, permanent bool) {
	state, ferr := store.FailOutbox(ctx, d.pool, m.ID, id, status, truncate(msg, 1000), permanent, d.retry.MaxAttempts, backoff(d.retry, m.Attempts))
	switch {
	case ferr != nil:
		log.Error("outbox send failed and could not be recorded", "err", msg, "record_err", ferr)
	case state == store.OutboxDead:
		log.Error("outbox message DEAD-LETTERED", "err", msg, "max_attempts", d.retry.MaxAttempts)
	default:
		log.Warn("outbox send failed; will retry", "err", msg)
	}
}

// post sends one message; a transport error (no answer, or the connection closed
// before one) returns err, any answer its status.
func (d *Dispatcher) post(ctx context.Context, m store.OutboxMessage) (int, error) {
	return d.call(ctx, d.steps.key(m), m.Body)
}

// stableKey is the message's Idempotency-Key, derived from its event key when it
// was written (store.OutboxKey): every resend carries the same one.
func stableKey(m store.OutboxMessage) string { return m.IdempotencyKey }

// SendNow makes one downstream call with the given key and body, and fails
// unless the downstream answers 2xx. Only the send-before-commit defect calls it,
// from inside a business transaction.
func (d *Dispatcher) SendNow(ctx context.Context, key string, body []byte) error {
	status, err := d.call(ctx, key, body)
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return fmt.Errorf("sink answered %d", status)
	}
	return nil
}

// call POSTs body with the Idempotency-Key.
func (d *Dispatcher) call(ctx context.Context, key string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.opts.SinkURL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := d.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the log already, without credentials
		}
		return 0, fmt.Errorf("call sink: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, nil
}

// redactURL drops userinfo and query from a URL for logs.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable)"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}
