"""What each provider event does to the billing tables.

apply() runs inside the worker's transaction, which also marks the event
succeeded: the change and that mark commit together or not at all. It returns
"applied" or "ignored" (an event the object is already past), and raises Retry
for an event that arrives before it can apply (an invoice not known yet, or not
yet in the state the event needs): the worker tries it again after a backoff.
"""

from django.db.models import F
from django.utils.dateparse import parse_datetime

from .models import Customer, Invoice, LedgerEntry, Wallet


class Retry(Exception):
    """The event cannot apply yet; it may once other events have."""


# Invoice transitions: event type -> (states it applies from, state it leads to).
INVOICE_TRANSITIONS = {
    "invoice.finalized": ({Invoice.DRAFT}, Invoice.OPEN),
    "invoice.paid": ({Invoice.OPEN, Invoice.UNCOLLECTIBLE}, Invoice.PAID),
    "invoice.marked_uncollectible": ({Invoice.OPEN}, Invoice.UNCOLLECTIBLE),
    "invoice.voided": ({Invoice.DRAFT, Invoice.OPEN, Invoice.UNCOLLECTIBLE}, Invoice.VOID),
}
# The states an invoice can still reach from each state: an event whose
# from-states lie ahead waits for them; one whose from-states lie behind is stale.
INVOICE_AHEAD = {
    Invoice.DRAFT: {Invoice.OPEN, Invoice.UNCOLLECTIBLE, Invoice.PAID, Invoice.VOID},
    Invoice.OPEN: {Invoice.UNCOLLECTIBLE, Invoice.PAID, Invoice.VOID},
    Invoice.UNCOLLECTIBLE: {Invoice.PAID, Invoice.VOID},
    Invoice.PAID: set(),
    Invoice.VOID: set(),
}


def _str(data, field):
    value = data.get(field)
    return isinstance(value, str) and value != ""


def _int(data, field):
    value = data.get(field)
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# The fields each handled type needs in its data object.
REQUIRED = {
    "credit_grant.created": (("id", _str), ("customer", _str), ("amount", _int), ("currency", _str)),
    "invoice.created": (("id", _str), ("amount_due", _int), ("currency", _str)),
    "invoice.finalized": (("id", _str),),
    "invoice.paid": (("id", _str), ("amount_paid", _int)),
    "invoice.marked_uncollectible": (("id", _str),),
    "invoice.voided": (("id", _str),),
    "customer.updated": (("id", _str),),
    "customer.deleted": (("id", _str),),
}
HANDLED_TYPES = frozenset(REQUIRED)


def envelope_problem(envelope):
    """Why a Standard Webhooks envelope {type, timestamp, data} cannot be
    accepted, or None. Checked before anything is stored."""
    if not isinstance(envelope, dict):
        return "body is not a JSON object"
    if not _str(envelope, "type"):
        return "type missing"
    if not isinstance(envelope.get("timestamp"), str) or parse_datetime(envelope["timestamp"]) is None:
        return "timestamp missing or not an RFC 3339 time"
    data = envelope.get("data")
    if not isinstance(data, dict):
        return "data is not an object"
    for field, ok in REQUIRED.get(envelope["type"], ()):
        if not ok(data, field):
            return f"data.{field} missing or of the wrong type"
    return None


def apply(event):
    """Apply an InboxEvent (locked by the caller's transaction)."""
    data = event.payload["data"]
    scope = {"source": event.source, "account": event.account}
    if event.event_type == "credit_grant.created":
        return grant_credit(event, scope, data)
    if event.event_type == "invoice.created":
        return create_invoice(scope, data)
    if event.event_type in INVOICE_TRANSITIONS:
        return move_invoice(event, scope, data)
    if event.event_type == "customer.updated":
        return update_customer(event, scope, data)
    if event.event_type == "customer.deleted":
        return delete_customer(event, scope, data)
    return "ignored"


def grant_credit(event, scope, data):
    # The ledger entry first: it is the effect, unique per event. The ledger
    # outlives the inbox's keys, so a provider's resend after its key was
    # purged finds its entry here and changes nothing (retrying it would
    # only fail again).
    _, created = LedgerEntry.objects.get_or_create(
        **scope, event_id=event.event_id, kind=LedgerEntry.CREDIT,
        defaults={"customer_id": data["customer"], "credit_grant_id": data["id"], "amount": data["amount"],
                  "currency": data["currency"]},
    )
    if not created:
        return "ignored"
    wallet, _ = Wallet.objects.select_for_update().get_or_create(
        **scope, customer_id=data["customer"], defaults={"currency": data["currency"]},
    )
    Wallet.objects.filter(pk=wallet.pk).update(balance=F("balance") + data["amount"])
    return "applied"


def create_invoice(scope, data):
    _, created = Invoice.objects.get_or_create(
        **scope, invoice_id=data["id"],
        defaults={"status": Invoice.DRAFT, "amount_due": data["amount_due"], "currency": data["currency"],
                  "customer_id": data.get("customer") or ""},
    )
    return "applied" if created else "ignored"


def move_invoice(event, scope, data):
    allowed, to = INVOICE_TRANSITIONS[event.event_type]
    invoice = Invoice.objects.select_for_update().filter(**scope, invoice_id=data["id"]).first()
    if invoice is None:
        raise Retry(f"invoice {data['id']} is not known yet")
    if invoice.status not in allowed:
        if allowed & INVOICE_AHEAD[invoice.status]:
            raise Retry(f"invoice {invoice.invoice_id} is {invoice.status}; {event.event_type} needs {sorted(allowed)}")
        return "ignored"
    if to == Invoice.PAID:
        LedgerEntry.objects.create(
            **scope, event_id=event.event_id, kind=LedgerEntry.INVOICE_PAYMENT, invoice_id=invoice.invoice_id,
            customer_id=invoice.customer_id, amount=data["amount_paid"], currency=invoice.currency,
        )
    invoice.status = to
    invoice.save(update_fields=["status", "updated_at"])
    return "applied"


def update_customer(event, scope, data):
    fields = {"email": data.get("email") or "", "name": data.get("name") or ""}
    customer, created = Customer.objects.select_for_update().get_or_create(
        **scope, customer_id=data["id"], defaults={**fields, "last_event_at": event.occurred_at},
    )
    # The provider does not promise order: only a later event may overwrite,
    # and a deleted customer stays deleted.
    if created or customer.deleted or event.occurred_at <= customer.last_event_at:
        return "applied" if created else "ignored"
    Customer.objects.filter(pk=customer.pk).update(**fields, last_event_at=event.occurred_at)
    return "applied"


def delete_customer(event, scope, data):
    customer, created = Customer.objects.select_for_update().get_or_create(
        **scope, customer_id=data["id"], defaults={"deleted": True, "last_event_at": event.occurred_at},
    )
    if created:
        return "applied"
    # A tombstone: a late, older update must not bring the customer back.
    Customer.objects.filter(pk=customer.pk).update(
        deleted=True, last_event_at=max(customer.last_event_at, event.occurred_at),
    )
    return "applied"
