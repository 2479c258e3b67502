#!/bin/sh
# Serve the billing site with gunicorn (threads, so a request waiting on the
# database does not hold up the others), once its migrations are applied
# (entrypoint.sh, or a release step of its own). Idle keep-alive connections
# are kept longer than a sender (or a load balancer) keeps them for reuse:
# with gunicorn's 2 s default, a connection can be closed just as a request
# on it arrives, and the sender gets a reset instead of an answer. PORT,
# DATABASE_URL and the webhook settings come from the environment (README.md).
set -eu
cd "$(dirname "$0")"
exec python3 -m gunicorn billing_site.wsgi \
  --bind "${HOST:-127.0.0.1}:${PORT:-8000}" \
  --workers "${WEB_CONCURRENCY:-2}" --threads "${GUNICORN_THREADS:-8}" --worker-class gthread \
  --timeout 30 --graceful-timeout 5 --preload \
  --keep-alive "${GUNICORN_KEEP_ALIVE:-75}"
