import os
import signal
import socket
import threading

from django.core.management.base import BaseCommand, CommandError

from webhooks.worker import Options, Worker


class Command(BaseCommand):
    help = "Apply queued webhook events until SIGTERM: claim, apply, retry with backoff, dead-letter."

    def add_arguments(self, parser):
        d = Options()
        parser.add_argument("--lease", type=float, default=d.lease,
                            help="seconds a claim lasts; a dead worker's event is claimed again after it")
        parser.add_argument("--max-attempts", type=int, default=d.max_attempts,
                            help="attempts before an event is dead-lettered")
        parser.add_argument("--backoff", type=float, default=d.backoff,
                            help="seconds before the first retry; doubled for each further one")
        parser.add_argument("--backoff-max", type=float, default=d.backoff_max, help="longest wait between retries")
        parser.add_argument("--poll-interval", type=float, default=d.poll_interval,
                            help="seconds between looks at an empty queue")

    def handle(self, *args, **o):
        opts = Options(lease=o["lease"], max_attempts=o["max_attempts"], backoff=o["backoff"],
                       backoff_max=o["backoff_max"], poll_interval=o["poll_interval"])
        for name, value in (("--lease", opts.lease), ("--max-attempts", opts.max_attempts),
                            ("--backoff", opts.backoff), ("--poll-interval", opts.poll_interval)):
            if value <= 0:
                raise CommandError(f"{name} must be greater than 0")
        if opts.backoff_max < opts.backoff:
            raise CommandError("--backoff-max must not be shorter than --backoff")
        stop = threading.Event()
        # SIGTERM finishes the event in hand, then exits.
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        Worker(f"{socket.gethostname()}:{os.getpid()}", opts).run(stop)
