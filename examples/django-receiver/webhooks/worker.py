"""The inbox worker: claim a due event, apply it, mark it succeeded.

A claim is its own short transaction: the row is taken with SELECT ... FOR
UPDATE SKIP LOCKED (competing workers never wait for each other or take the
same row), counted as an attempt and leased to this worker until
locked_until. The event is then applied in a second transaction that locks the
row again, checks the claim is still ours, and commits the business change
together with the succeeded mark. A worker that dies mid-way leaves the row
running with an expiring lease: another worker claims it again once the lease
has passed. A failed attempt goes back to the queue after a backoff, and after
max_attempts attempts it stays as a dead letter, with its last error, for an
operator.
"""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from billing import handlers
from .models import InboxEvent

log = logging.getLogger("webhooks.worker")


class ClaimLost(Exception):
    """The event is no longer leased to this worker."""


@dataclass
class Options:
    lease: float = 30.0
    max_attempts: int = 8
    backoff: float = 5.0
    backoff_max: float = 3600.0
    poll_interval: float = 1.0


@dataclass
class Task:
    pk: int
    event_id: str
    event_type: str
    attempts: int


class Worker:
    def __init__(self, name, options):
        self.name = name
        self.opts = options

    def run(self, stop):
        """Work until stop (a threading.Event) is set."""
        log.info("worker %s started: lease %ss, %d attempts, backoff %ss..%ss",
                 self.name, self.opts.lease, self.opts.max_attempts, self.opts.backoff, self.opts.backoff_max)
        while not stop.is_set():
            try:
                task = self.claim()
            except DatabaseError as exc:
                log.warning("claim failed: %s", exc)
                connection.close()
                stop.wait(self.opts.poll_interval)
                continue
            if task is None:
                stop.wait(self.opts.poll_interval)
                continue
            self.process(task)
        connection.close()
        log.info("worker %s stopped", self.name)

    def claim(self):
        """Lease the next due event to this worker, or return None."""
        while True:
            now = timezone.now()
            with transaction.atomic():
                event = (
                    InboxEvent.objects.select_for_update(skip_locked=True)
                    .filter(Q(status=InboxEvent.QUEUED, available_at__lte=now)
                            | Q(status=InboxEvent.RUNNING, locked_until__lt=now))
                    .order_by("available_at")
                    .defer("payload")
                    .first()
                )
                if event is None:
                    return None
                if event.status == InboxEvent.RUNNING and event.attempts >= self.opts.max_attempts:
                    # Its worker died during the last attempt it had.
                    self.bury(event, "the lease of the last attempt expired: its worker died")
                    continue
                if event.status == InboxEvent.RUNNING:
                    log.warning("%s: lease of %s expired; claimed again", event.event_id, event.locked_by)
                event.status = InboxEvent.RUNNING
                event.attempts += 1
                event.locked_by = self.name
                event.locked_until = now + timedelta(seconds=self.opts.lease)
                event.save(update_fields=["status", "attempts", "locked_by", "locked_until"])
                return Task(event.pk, event.event_id, event.event_type, event.attempts)

    def process(self, task):
        try:
            with transaction.atomic():
                event = InboxEvent.objects.select_for_update().get(pk=task.pk)
                if event.status != InboxEvent.RUNNING or event.locked_by != self.name:
                    raise ClaimLost()
                outcome = handlers.apply(event)
                event.status = InboxEvent.SUCCEEDED
                event.processed_at = timezone.now()
                event.locked_by, event.locked_until, event.last_error = "", None, ""
                event.save(update_fields=["status", "processed_at", "locked_by", "locked_until", "last_error"])
            log.info("%s %s %s (attempt %d)", outcome, task.event_id, task.event_type, task.attempts)
        except ClaimLost:
            log.warning("%s: claim lost before it was applied; left to its new holder", task.event_id)
        except handlers.Retry as exc:
            self.fail(task, str(exc))
        except Exception as exc:
            if isinstance(exc, (OperationalError, InterfaceError)):
                # The session is gone (terminated, or the server restarted):
                # the next query opens a new one.
                connection.close()
            log.warning("%s %s attempt %d failed: %s", task.event_id, task.event_type, task.attempts,
                        f"{type(exc).__name__}: {exc}".strip())
            self.fail(task, f"{type(exc).__name__}: {exc}")

    def fail(self, task, error):
        """Record a failed attempt: queued again after a backoff, or dead."""
        try:
            with transaction.atomic():
                event = InboxEvent.objects.select_for_update().defer("payload").get(pk=task.pk)
                if event.status != InboxEvent.RUNNING or event.locked_by != self.name:
                    return
                if event.attempts >= self.opts.max_attempts:
                    self.bury(event, error)
                    return
                delay = min(self.opts.backoff * 2 ** (event.attempts - 1), self.opts.backoff_max)
                event.status = InboxEvent.QUEUED
                event.available_at = timezone.now() + timedelta(seconds=delay)
                event.locked_by, event.locked_until, event.last_error = "", None, error[:2000]
                event.save(update_fields=["status", "available_at", "locked_by", "locked_until", "last_error"])
            log.info("%s: attempt %d failed (%s); retry in %.2fs", task.event_id, task.attempts, error[:200], delay)
        except DatabaseError as exc:
            # Not even the failure could be recorded: the lease brings the
            # event back.
            connection.close()
            log.warning("%s: could not record the failed attempt (%s); its lease will expire", task.event_id, exc)

    def bury(self, event, error):
        event.status = InboxEvent.DEAD_LETTER
        event.locked_by, event.locked_until, event.last_error = "", None, error[:2000]
        event.save(update_fields=["status", "locked_by", "locked_until", "last_error"])
        log.error("%s %s DEAD-LETTERED after %d attempts: %s", event.event_id, event.event_type, event.attempts, error[:200])
