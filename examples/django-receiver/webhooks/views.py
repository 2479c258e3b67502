"""The webhook endpoint: verify, store durably, answer; workers apply later."""

import json
import logging
import threading

from django.conf import settings
from django.db import connection, transaction
from django.http import HttpResponse, JsonResponse
from django.utils.dateparse import parse_datetime
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from billing.handlers import HANDLED_TYPES, envelope_problem
from .models import InboxEvent
from .signatures import SignatureError, verify

log = logging.getLogger("webhooks.receive")

SIGNED_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")


def reply(status, outcome, reason=""):
    body = {"status": outcome}
    if reason:
        body["reason"] = reason
    return JsonResponse(body, status=status)


@require_GET
def healthz(request):
    # Liveness only: the database is checked by the requests that need it.
    return HttpResponse("ok", content_type="text/plain")


@csrf_exempt
@require_POST
def receive(request, source, account):
    secret = settings.WEBHOOK_ENDPOINTS.get((source, account))
    if secret is None:
        return reply(404, "rejected", "unknown endpoint")
    try:
        length = int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return reply(411, "rejected", "Content-Length required")
    if length > settings.WEBHOOK_MAX_BODY_BYTES:
        drain(request, length)
        log.info("rejected %s/%s: body of %d bytes over the limit", source, account, length)
        return reply(413, "rejected", "body too large")
    body = request.body
    headers = {name: request.headers.get(name, "") for name in SIGNED_HEADERS}
    try:
        verify(secret, headers, body, settings.WEBHOOK_TOLERANCE_SECONDS)
    except SignatureError as exc:
        log.info("rejected %s/%s %s: %s", source, account, headers["webhook-id"][:64], exc)
        return reply(401, "rejected", str(exc))
    try:
        envelope = json.loads(body)
    except ValueError:
        return reply(400, "rejected", "body is not JSON")
    problem = envelope_problem(envelope)
    if problem:
        log.info("rejected %s/%s %s: %s", source, account, headers["webhook-id"], problem)
        return reply(400, "rejected", problem)
    if envelope["type"] not in HANDLED_TYPES:
        # Signed and valid, but nothing we subscribe to: acknowledged, not kept.
        return reply(200, "ignored", "event type not handled")
    event = {
        "source": source,
        "account": account,
        "event_id": headers["webhook-id"],
        "event_type": envelope["type"],
        "occurred_at": parse_datetime(envelope["timestamp"]),
        "payload": envelope,
    }
    if settings.RECEIVER_DEFECT == "ack-before-commit":
        return store_in_background(event)
    created = store(event)
    log.info("%s %s/%s %s %s", "accepted" if created else "duplicate", source, account, event["event_id"], event["event_type"])
    # The row is committed: a 2xx now cannot lose the event. A duplicate is
    # acknowledged too, or the provider would keep retrying it.
    return reply(202 if created else 200, "accepted" if created else "duplicate")


def store(event):
    """Insert the event unless its key is stored; True if this call inserted it.

    The unique constraint on (source, account, event_id) decides between
    concurrent copies: get_or_create's insert fails for all but one, and the
    others read the winner's row once it commits.
    """
    key = {k: event[k] for k in ("source", "account", "event_id")}
    defaults = {k: event[k] for k in ("event_type", "occurred_at", "payload")}
    with transaction.atomic():
        if settings.RECEIVER_DEFECT == "check-then-insert":
            return check_then_insert(key, defaults)
        _, created = InboxEvent.objects.get_or_create(**key, defaults=defaults)
    return created


def check_then_insert(key, defaults):
    # PLANTED DEFECT: look first, then insert. Concurrent copies all find
    # nothing; the constraint then refuses all but one insert, and those
    # copies get a 500 instead of an acknowledgement.
    if InboxEvent.objects.filter(**key).exists():
        return False
    InboxEvent.objects.create(**key, **defaults)
    return True


def store_in_background(event):
    # PLANTED DEFECT: answer at once ("the provider wants a fast 2xx") and
    # store on a thread. A crash, or a database that cannot take the insert
    # yet, loses an event the provider was told we have.
    def run():
        try:
            store(event)
        except Exception:
            log.exception("background store of %s failed", event["event_id"])
        finally:
            connection.close()

    threading.Thread(target=run, daemon=True).start()
    return reply(202, "accepted")


def drain(request, length):
    """Read and drop a refused body (bounded), so the sender reads our 413
    instead of a connection reset."""
    remaining = min(length, 4 * settings.WEBHOOK_MAX_BODY_BYTES)
    while remaining > 0:
        chunk = request.read(min(65536, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
