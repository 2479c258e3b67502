from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from webhooks.models import InboxEvent


class Command(BaseCommand):
    help = ("Forget old webhook events: payloads of processed events after WEBHOOK_PAYLOAD_TTL_HOURS, "
            "their keys after WEBHOOK_KEY_TTL_HOURS. Queued, running and dead-lettered events are kept.")

    def add_arguments(self, parser):
        parser.add_argument("--as-of", help="purge as if the clock read this RFC 3339 time (default: now)")

    def handle(self, *args, **o):
        as_of = timezone.now()
        if o["as_of"]:
            as_of = parse_datetime(o["as_of"])
            if as_of is None or as_of.tzinfo is None:
                raise CommandError("--as-of must be an RFC 3339 time with a zone, e.g. 2030-01-01T00:00:00Z")
        key_before = as_of - timedelta(hours=settings.WEBHOOK_KEY_TTL_HOURS)
        payload_before = as_of - timedelta(hours=settings.WEBHOOK_PAYLOAD_TTL_HOURS)
        # Only finished work is forgotten: a queued, running or dead-lettered
        # event still needs its payload, and its key keeps it deduplicated.
        done = InboxEvent.objects.filter(status=InboxEvent.SUCCEEDED)
        with transaction.atomic():
            payloads = done.filter(received_at__lt=payload_before, payload__isnull=False).update(payload=None)
            keys, _ = done.filter(received_at__lt=key_before).delete()
        self.stdout.write(f"purged as of {as_of.isoformat()}: {payloads} payload(s), {keys} key(s)")
