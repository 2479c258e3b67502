package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v85"
)

// errBadObject: a correctly signed event whose data.object is not what its
// type promises. Answered 400.
var errBadObject = errors.New("malformed data.object")

// result is what a handler decided. retry rolls the transaction back and
// answers 409, so that Stripe redelivers later.
type result struct {
	retry bool
	note  string
}

type delivery struct {
	ep Endpoint
	ev *stripe.Event
}

type handlerFunc func(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error)

// handlers are the event types the shop subscribes to. Anything else is
// acknowledged and dropped without a trace.
var handlers = map[stripe.EventType]handlerFunc{
	stripe.EventTypeChargeSucceeded:            onChargeSucceeded,
	stripe.EventTypePaymentIntentSucceeded:     onPaymentIntentSucceeded,
	stripe.EventTypePaymentIntentPaymentFailed: onPaymentIntentFailed,
	stripe.EventTypeChargeRefunded:             onChargeRefunded,
	stripe.EventTypeCustomerUpdated:            onCustomerUpdated,
	stripe.EventTypeCustomerDeleted:            onCustomerDeleted,
	stripe.EventTypeRefundUpdated:              onRefundUpdated,
	stripe.EventTypeRefundFailed:               onRefundFailed,
	stripe.EventTypeProductUpdated:             onProductUpdated,
	stripe.EventTypeProductDeleted:             onProductDeleted,
}

// process records the event and applies it in one transaction: the
// stripe_events row commits with the business change or not at all, so a
// failure at any point leaves Stripe's retry something to do, and a
// redelivery of a committed event finds its row and changes nothing.
func (s *Server) process(ctx context.Context, ep Endpoint, ev *stripe.Event, body []byte, h handlerFunc) (result, error) {
	memory := s.cfg.Defect == DefectMemoryDedup
	key := ep.Mode + "/" + ep.Account + "/" + ev.ID
	if memory {
		if _, ok := s.seen.Load(key); ok {
			return result{note: "duplicate"}, nil
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return result{}, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, `INSERT INTO stripe_events (mode, account, event_id, type, payload)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
		ep.Mode, ep.Account, ev.ID, string(ev.Type), storablePayload(body))
	if err != nil {
		return result{}, fmt.Errorf("record event: %w", err)
	}
	if tag.RowsAffected() == 0 && !memory {
		// Already processed (a retry, a resend, a racing copy that committed
		// first): acknowledge, change nothing.
		return result{note: "duplicate"}, nil
	}
	res, err := h(ctx, s, tx, delivery{ep: ep, ev: ev})
	if err != nil || res.retry {
		return res, err
	}
	if err := tx.Commit(ctx); err != nil {
		return result{}, fmt.Errorf("commit: %w", err)
	}
	if memory {
		s.seen.Store(key, struct{}{})
	}
	return res, nil
}

// storablePayload is the body as jsonb, or nil when PostgreSQL's jsonb cannot
// hold it (a \u0000 escape): the key is what matters, the payload is for humans.
func storablePayload(body []byte) any {
	if bytes.Contains(body, []byte(`\u0000`)) {
		return nil
	}
	return string(body)
}

func decode(d delivery, v any) error {
	if err := json.Unmarshal(d.ev.Data.Raw, v); err != nil {
		return fmt.Errorf("%w: %w", errBadObject, err)
	}
	return nil
}

// charge.succeeded: book the charge. One row per charge event; the event's
// row in stripe_events is what keeps a redelivery from booking it again.
func onChargeSucceeded(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var ch stripe.Charge
	if err := decode(d, &ch); err != nil {
		return result{}, err
	}
	if ch.ID == "" {
		return result{}, fmt.Errorf("%w: charge without id", errBadObject)
	}
	var paymentID *string
	if ch.PaymentIntent != nil && ch.PaymentIntent.ID != "" {
		paymentID = &ch.PaymentIntent.ID
	}
	_, err := tx.Exec(ctx, `INSERT INTO ledger (mode, account, payment_id, charge_id, kind, amount, currency, event_id)
		VALUES ($1, $2, $3, $4, 'charge', $5, $6, $7)`,
		d.ep.Mode, d.ep.Account, paymentID, ch.ID, ch.Amount, string(ch.Currency), d.ev.ID)
	if err != nil {
		return result{}, fmt.Errorf("book charge: %w", err)
	}
	return result{note: "charge booked"}, nil
}

func onPaymentIntentSucceeded(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var pi stripe.PaymentIntent
	if err := decode(d, &pi); err != nil {
		return result{}, err
	}
	if pi.ID == "" {
		return result{}, fmt.Errorf("%w: payment_intent without id", errBadObject)
	}
	var chargeID *string
	if pi.LatestCharge != nil && pi.LatestCharge.ID != "" {
		chargeID = &pi.LatestCharge.ID
	}
	return s.settlePayment(ctx, tx, d, pi.ID, "succeeded", chargeID)
}

func onPaymentIntentFailed(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var pi stripe.PaymentIntent
	if err := decode(d, &pi); err != nil {
		return result{}, err
	}
	if pi.ID == "" {
		return result{}, fmt.Errorf("%w: payment_intent without id", errBadObject)
	}
	return s.settlePayment(ctx, tx, d, pi.ID, "failed", nil)
}

// settlePayment moves a processing payment to succeeded or failed, crediting
// the order on success. Stripe does not deliver in order and may send two
// events for one change, so only a processing payment moves; a payment in any
// other state is past this event and the event is acknowledged and ignored.
func (s *Server) settlePayment(ctx context.Context, tx pgx.Tx, d delivery, id, to string, chargeID *string) (result, error) {
	var status, currency string
	var amount int64
	// FOR UPDATE: decide on the state no concurrent event can change before
	// this transaction ends.
	err := tx.QueryRow(ctx, `SELECT status, amount, currency FROM payments WHERE id = $1 AND account = $2 FOR UPDATE`,
		id, d.ep.Account).Scan(&status, &amount, &currency)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.missingPayment(id)
	}
	if err != nil {
		return result{}, err
	}
	guarded := s.cfg.Defect != DefectLateOverwrite
	if guarded && status != "processing" {
		return result{note: fmt.Sprintf("ignored: payment %s is %s", id, status)}, nil
	}
	q := `UPDATE payments SET status = $3, updated_at = now() WHERE id = $1 AND account = $2 AND status = 'processing'`
	if !guarded {
		q = `UPDATE payments SET status = $3, updated_at = now() WHERE id = $1 AND account = $2`
	}
	tag, err := tx.Exec(ctx, q, id, d.ep.Account, to)
	if err != nil {
		return result{}, err
	}
	if tag.RowsAffected() == 0 {
		return result{note: fmt.Sprintf("ignored: payment %s is %s", id, status)}, nil
	}
	if to != "succeeded" {
		return result{note: "payment " + to}, nil
	}
	// The partial unique index holds the credit to one per payment even if the
	// state check above is ever wrong.
	_, err = tx.Exec(ctx, `INSERT INTO ledger (mode, account, payment_id, charge_id, kind, amount, currency, event_id)
		VALUES ($1, $2, $3, $4, 'payment', $5, $6, $7)
		ON CONFLICT (payment_id, kind) WHERE kind IN ('payment', 'refund') DO NOTHING`,
		d.ep.Mode, d.ep.Account, id, chargeID, amount, currency, d.ev.ID)
	if err != nil {
		return result{}, fmt.Errorf("credit payment: %w", err)
	}
	return result{note: "payment succeeded"}, nil
}

// missingPayment: the order's row is written by checkout, which may not have
// committed yet when Stripe's first event arrives. Roll back and let Stripe
// retry.
func (s *Server) missingPayment(id string) (result, error) {
	if s.cfg.Defect == DefectMissingAck {
		return result{note: fmt.Sprintf("ignored: no payment %s", id)}, nil
	}
	return result{retry: true, note: fmt.Sprintf("payment %s not found (yet)", id)}, nil
}

// charge.refunded: a succeeded payment becomes refunded, with a negative
// ledger row. A refund can only follow a success; one that arrives first is
// early (Stripe does not keep order), so it is refused for a retry.
func onChargeRefunded(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var ch stripe.Charge
	if err := decode(d, &ch); err != nil {
		return result{}, err
	}
	if ch.ID == "" {
		return result{}, fmt.Errorf("%w: charge without id", errBadObject)
	}
	if ch.PaymentIntent == nil || ch.PaymentIntent.ID == "" {
		// Not a checkout payment (a charge made outside the shop).
		return result{note: "ignored: charge has no payment_intent"}, nil
	}
	id := ch.PaymentIntent.ID
	var status, currency string
	err := tx.QueryRow(ctx, `SELECT status, currency FROM payments WHERE id = $1 AND account = $2 FOR UPDATE`,
		id, d.ep.Account).Scan(&status, &currency)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.missingPayment(id)
	}
	if err != nil {
		return result{}, err
	}
	switch status {
	case "processing":
		return result{retry: true, note: fmt.Sprintf("payment %s has not succeeded yet", id)}, nil
	case "succeeded":
	default:
		return result{note: fmt.Sprintf("ignored: payment %s is %s", id, status)}, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'refunded', updated_at = now()
		WHERE id = $1 AND account = $2 AND status = 'succeeded'`, id, d.ep.Account); err != nil {
		return result{}, err
	}
	refunded := ch.AmountRefunded
	if refunded <= 0 {
		refunded = ch.Amount
	}
	_, err = tx.Exec(ctx, `INSERT INTO ledger (mode, account, payment_id, charge_id, kind, amount, currency, event_id)
		VALUES ($1, $2, $3, $4, 'refund', $5, $6, $7)
		ON CONFLICT (payment_id, kind) WHERE kind IN ('payment', 'refund') DO NOTHING`,
		d.ep.Mode, d.ep.Account, id, ch.ID, -refunded, currency, d.ev.ID)
	if err != nil {
		return result{}, fmt.Errorf("book refund: %w", err)
	}
	return result{note: "payment refunded"}, nil
}

// customer.updated carries the whole customer; events arrive in any order, so
// an update is applied only if its event is newer than the one last applied.
// Stripe's created has one-second resolution: of two updates in one second,
// the first applied wins.
func onCustomerUpdated(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var c stripe.Customer
	if err := decode(d, &c); err != nil {
		return result{}, err
	}
	if c.ID == "" {
		return result{}, fmt.Errorf("%w: customer without id", errBadObject)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO customers (id, account, email, last_event_at)
		VALUES ($1, $2, NULLIF($3, ''), to_timestamp($4::bigint))
		ON CONFLICT (id) DO UPDATE SET account = EXCLUDED.account, email = EXCLUDED.email, last_event_at = EXCLUDED.last_event_at
		WHERE customers.last_event_at IS NULL OR customers.last_event_at < EXCLUDED.last_event_at`,
		c.ID, d.ep.Account, c.Email, d.ev.Created)
	if err != nil {
		return result{}, fmt.Errorf("upsert customer: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return result{note: "ignored: a newer update of the customer is applied"}, nil
	}
	return result{note: "customer updated"}, nil
}

// customer.deleted leaves a tombstone ordered like an update: the row stays,
// marked deleted as of the event's created, so a late older update is stale.
func onCustomerDeleted(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var c stripe.Customer
	if err := decode(d, &c); err != nil {
		return result{}, err
	}
	if c.ID == "" {
		return result{}, fmt.Errorf("%w: customer without id", errBadObject)
	}
	if s.cfg.Defect == DefectHardDelete {
		if _, err := tx.Exec(ctx, `DELETE FROM customers WHERE id = $1 AND account = $2`, c.ID, d.ep.Account); err != nil {
			return result{}, fmt.Errorf("delete customer: %w", err)
		}
		return result{note: "customer deleted"}, nil
	}
	tag, err := tx.Exec(ctx, `INSERT INTO customers (id, account, last_event_at, deleted_at)
		VALUES ($1, $2, to_timestamp($3::bigint), to_timestamp($3::bigint))
		ON CONFLICT (id) DO UPDATE SET last_event_at = EXCLUDED.last_event_at, deleted_at = EXCLUDED.deleted_at
		WHERE customers.last_event_at IS NULL OR customers.last_event_at < EXCLUDED.last_event_at`,
		c.ID, d.ep.Account, d.ev.Created)
	if err != nil {
		return result{}, fmt.Errorf("delete customer: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return result{note: "ignored: a newer event of the customer is applied"}, nil
	}
	return result{note: "customer deleted"}, nil
}

// refund.updated confirms a refund the shop started: a pending refund whose
// object now reads succeeded becomes succeeded. Other updates (a pending
// refund's pending_reason) change nothing the shop keeps.
func onRefundUpdated(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var re stripe.Refund
	if err := decode(d, &re); err != nil {
		return result{}, err
	}
	if re.ID == "" {
		return result{}, fmt.Errorf("%w: refund without id", errBadObject)
	}
	if re.Status != stripe.RefundStatusSucceeded {
		return result{note: fmt.Sprintf("ignored: refund %s is %s at Stripe", re.ID, re.Status)}, nil
	}
	return s.settleRefund(ctx, tx, d, re.ID, "succeeded", "")
}

// refund.failed: a pending refund failed; the shop will have to pay the
// customer back another way.
func onRefundFailed(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var re stripe.Refund
	if err := decode(d, &re); err != nil {
		return result{}, err
	}
	if re.ID == "" {
		return result{}, fmt.Errorf("%w: refund without id", errBadObject)
	}
	return s.settleRefund(ctx, tx, d, re.ID, "failed", string(re.FailureReason))
}

// settleRefund moves a pending refund to succeeded or failed. The shop treats
// both as final: an event for a refund already settled is late (Stripe does
// not deliver in order) and is acknowledged and ignored. A refund the shop
// has not written yet is refused for a retry, as a payment is.
func (s *Server) settleRefund(ctx context.Context, tx pgx.Tx, d delivery, id, to, reason string) (result, error) {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM refunds WHERE id = $1 AND account = $2 FOR UPDATE`, id, d.ep.Account).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		if s.cfg.Defect == DefectMissingAck {
			return result{note: fmt.Sprintf("ignored: no refund %s", id)}, nil
		}
		return result{retry: true, note: fmt.Sprintf("refund %s not found (yet)", id)}, nil
	}
	if err != nil {
		return result{}, err
	}
	guarded := !(s.cfg.Defect == DefectRefundLateFailure && to == "failed")
	if guarded && status != "pending" {
		return result{note: fmt.Sprintf("ignored: refund %s is %s", id, status)}, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE refunds SET status = $3, failure_reason = NULLIF($4, ''), updated_at = now()
		WHERE id = $1 AND account = $2`, id, d.ep.Account, to, reason); err != nil {
		return result{}, fmt.Errorf("settle refund: %w", err)
	}
	return result{note: "refund " + to}, nil
}

// product.updated carries the whole product; as for customers, an update is
// applied only if its event is newer than the one last applied.
func onProductUpdated(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var p stripe.Product
	if err := decode(d, &p); err != nil {
		return result{}, err
	}
	if p.ID == "" {
		return result{}, fmt.Errorf("%w: product without id", errBadObject)
	}
	guard := ` WHERE products.last_event_at IS NULL OR products.last_event_at < EXCLUDED.last_event_at`
	if s.cfg.Defect == DefectProductUnordered {
		guard = ""
	}
	tag, err := tx.Exec(ctx, `INSERT INTO products (id, account, name, active, last_event_at)
		VALUES ($1, $2, NULLIF($3, ''), $4, to_timestamp($5::bigint))
		ON CONFLICT (id) DO UPDATE SET account = EXCLUDED.account, name = EXCLUDED.name, active = EXCLUDED.active,
			last_event_at = EXCLUDED.last_event_at`+guard,
		p.ID, d.ep.Account, p.Name, p.Active, d.ev.Created)
	if err != nil {
		return result{}, fmt.Errorf("upsert product: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return result{note: "ignored: a newer event of the product is applied"}, nil
	}
	return result{note: "product updated"}, nil
}

// product.deleted leaves a tombstone ordered like an update.
func onProductDeleted(ctx context.Context, s *Server, tx pgx.Tx, d delivery) (result, error) {
	var p stripe.Product
	if err := decode(d, &p); err != nil {
		return result{}, err
	}
	if p.ID == "" {
		return result{}, fmt.Errorf("%w: product without id", errBadObject)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO products (id, account, active, last_event_at, deleted_at)
		VALUES ($1, $2, false, to_timestamp($3::bigint), to_timestamp($3::bigint))
		ON CONFLICT (id) DO UPDATE SET active = false, last_event_at = EXCLUDED.last_event_at, deleted_at = EXCLUDED.deleted_at
		WHERE products.last_event_at IS NULL OR products.last_event_at < EXCLUDED.last_event_at`,
		p.ID, d.ep.Account, d.ev.Created)
	if err != nil {
		return result{}, fmt.Errorf("delete product: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return result{note: "ignored: a newer event of the product is applied"}, nil
	}
	return result{note: "product deleted"}, nil
}
