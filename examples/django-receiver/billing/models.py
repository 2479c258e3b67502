from django.db import models
from django.db.models import Q


class LedgerEntry(models.Model):
    """A money movement. Every applied effect writes exactly one."""

    CREDIT = "credit"
    INVOICE_PAYMENT = "invoice_payment"
    KINDS = [(CREDIT, "credit grant"), (INVOICE_PAYMENT, "invoice payment")]

    source = models.CharField(max_length=64)
    account = models.CharField(max_length=64)
    # The provider event that caused it.
    event_id = models.CharField(max_length=255)
    kind = models.CharField(max_length=32, choices=KINDS)
    customer_id = models.CharField(max_length=255, blank=True, default="")
    credit_grant_id = models.CharField(max_length=255, blank=True, default="")
    invoice_id = models.CharField(max_length=255, blank=True, default="")
    amount = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # An event moves money once.
            models.UniqueConstraint(fields=["source", "account", "event_id", "kind"], name="ledger_once_per_event"),
            # An invoice is paid once, whatever events say so.
            models.UniqueConstraint(
                fields=["source", "account", "invoice_id"],
                condition=Q(kind="invoice_payment"),
                name="ledger_one_payment_per_invoice",
            ),
        ]
        indexes = [models.Index(fields=["source", "account", "invoice_id"], name="ledger_invoice")]


class Wallet(models.Model):
    """A customer's prepaid credit balance."""

    source = models.CharField(max_length=64)
    account = models.CharField(max_length=64)
    customer_id = models.CharField(max_length=255)
    balance = models.BigIntegerField(default=0)
    currency = models.CharField(max_length=3)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "account", "customer_id"], name="wallet_per_customer"),
        ]


class Invoice(models.Model):
    """An invoice mirrored from the provider: draft, open, then paid, void or uncollectible."""

    DRAFT, OPEN, PAID, VOID, UNCOLLECTIBLE = "draft", "open", "paid", "void", "uncollectible"
    STATUSES = [(s, s) for s in (DRAFT, OPEN, PAID, VOID, UNCOLLECTIBLE)]

    source = models.CharField(max_length=64)
    account = models.CharField(max_length=64)
    invoice_id = models.CharField(max_length=255)
    customer_id = models.CharField(max_length=255, blank=True, default="")
    amount_due = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    status = models.CharField(max_length=16, choices=STATUSES)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "account", "invoice_id"], name="invoice_key"),
        ]


class Customer(models.Model):
    """A customer profile mirrored from customer.updated; deletion leaves a tombstone."""

    source = models.CharField(max_length=64)
    account = models.CharField(max_length=64)
    customer_id = models.CharField(max_length=255)
    email = models.CharField(max_length=255, blank=True, default="")
    name = models.CharField(max_length=255, blank=True, default="")
    deleted = models.BooleanField(default=False)
    # The occurred_at of the event applied last: only a later one may overwrite.
    last_event_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "account", "customer_id"], name="customer_key"),
        ]
