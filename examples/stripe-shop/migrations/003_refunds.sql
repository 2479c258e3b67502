-- Refunds the shop starts itself (a return in the back office): the row is
-- written, status pending, when the shop calls Stripe's create-refund API;
-- Stripe then confirms it with refund.updated (succeeded) or refund.failed.
CREATE TABLE IF NOT EXISTS refunds (
    id         text        PRIMARY KEY, -- re_...
    account    text        NOT NULL,
    payment_id text        NOT NULL REFERENCES payments (id),
    amount     bigint      NOT NULL CHECK (amount >= 0),
    currency   text        NOT NULL,
    status     text        NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'succeeded', 'failed')),
    failure_reason text,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS refunds_payment ON refunds (payment_id);
