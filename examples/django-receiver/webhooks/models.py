from django.db import models
from django.utils import timezone


class InboxEvent(models.Model):
    """One verified provider event, stored before it is acknowledged.

    The unique key (source, account, event_id) is the deduplication: a
    redelivery finds its row and changes nothing. Workers claim queued rows
    (SELECT ... FOR UPDATE SKIP LOCKED), apply them and mark them succeeded in
    one transaction; failures back off and end as dead letters.
    """

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    DEAD_LETTER = "dead_letter"
    STATUSES = [
        (QUEUED, "queued"),
        (RUNNING, "running"),
        (SUCCEEDED, "succeeded"),
        (DEAD_LETTER, "dead letter"),
    ]

    source = models.CharField(max_length=64)
    account = models.CharField(max_length=64)
    event_id = models.CharField(max_length=255)
    event_type = models.CharField(max_length=255)
    # The event's own time (the envelope's timestamp), which orders updates.
    occurred_at = models.DateTimeField()
    # The whole envelope; emptied once processed and older than the payload TTL.
    payload = models.JSONField(null=True)
    received_at = models.DateTimeField(default=timezone.now)

    status = models.CharField(max_length=16, choices=STATUSES, default=QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    available_at = models.DateTimeField(default=timezone.now)
    locked_by = models.CharField(max_length=128, blank=True, default="")
    locked_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "account", "event_id"], name="inbox_event_key"),
        ]
        indexes = [
            models.Index(fields=["status", "available_at"], name="inbox_due"),
            models.Index(fields=["received_at"], name="inbox_received"),
        ]

    def __str__(self):
        return f"{self.source}/{self.account}/{self.event_id} {self.event_type} ({self.status})"
