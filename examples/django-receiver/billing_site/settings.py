"""Settings of the billing site: a webhook receiver, configured from the environment.

Nothing secret is written here: the database URL and the webhook signing secrets
come from environment variables, and none of them is ever logged.
"""

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit, parse_qsl

from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name, default=None):
    value = os.environ.get(name, default)
    if value is None:
        raise ImproperlyConfigured(f"environment variable {name} is required")
    return value


def database_from_url(url):
    """DATABASES['default'] from a postgres:// URL (what the deployment hands us)."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured("DATABASE_URL must be a postgres:// URL")
    options = dict(parse_qsl(parts.query))
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or "postgres",
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
        # Web threads keep their connection for a minute instead of opening one
        # per request; a connection that failed is dropped at the request's end.
        "CONN_MAX_AGE": int(env("DATABASE_CONN_MAX_AGE", "60")),
        "OPTIONS": options,
    }


# The site has no sessions, forms or signed cookies: a per-process key is enough
# when none is configured.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or get_random_secret_key()
DEBUG = os.environ.get("DJANGO_DEBUG") == "1"
ALLOWED_HOSTS = env("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")

INSTALLED_APPS = [
    "webhooks",
    "billing",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]

ROOT_URLCONF = "billing_site.urls"
WSGI_APPLICATION = "billing_site.wsgi.application"
TEMPLATES = []

DATABASES = {"default": database_from_url(env("DATABASE_URL"))}
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("DJANGO_TEST_DATABASE_NAME")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
USE_I18N = False

# The provider signs with one secret per endpoint; each of our merchant accounts
# has its own endpoint, /webhooks/<source>/<account>/. WEBHOOK_ACCOUNTS lists the
# accounts, WEBHOOK_SECRET_<ACCOUNT> holds each one's secret (whsec_...).
WEBHOOK_SOURCE = env("WEBHOOK_SOURCE", "payments")
WEBHOOK_ENDPOINTS = {
    (WEBHOOK_SOURCE, account): env("WEBHOOK_SECRET_" + account.upper())
    for account in env("WEBHOOK_ACCOUNTS", "").split(",")
    if account
}
# Standard Webhooks: reject timestamps more than 5 minutes off, either way.
WEBHOOK_TOLERANCE_SECONDS = 300
# The largest body we accept. The spec asks senders to keep payloads small
# (usually under 20 kB) and documents no maximum, so 1 MiB leaves room.
WEBHOOK_MAX_BODY_BYTES = int(env("WEBHOOK_MAX_BODY_BYTES", str(1024 * 1024)))
DATA_UPLOAD_MAX_MEMORY_SIZE = WEBHOOK_MAX_BODY_BYTES
# Event IDs are kept a week (the spec's example retry schedule spans 75 hours),
# payloads of processed events a day. purge_webhook_events applies both.
WEBHOOK_KEY_TTL_HOURS = int(env("WEBHOOK_KEY_TTL_HOURS", str(7 * 24)))
WEBHOOK_PAYLOAD_TTL_HOURS = int(env("WEBHOOK_PAYLOAD_TTL_HOURS", "24"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": env("LOG_LEVEL", "INFO")},
}

# A planted bug, for showing that a certification catches it (README.md,
# "Planted defects"). Empty in any real deployment.
RECEIVER_DEFECT = os.environ.get("DJANGO_RECEIVER_DEFECT", "")
if RECEIVER_DEFECT not in ("", "check-then-insert", "ack-before-commit"):
    raise ImproperlyConfigured(
        f"DJANGO_RECEIVER_DEFECT={RECEIVER_DEFECT!r}: unknown (valid: check-then-insert, ack-before-commit)"
    )
