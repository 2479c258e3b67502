#!/bin/sh
# Start the billing site the way its container does: apply the migrations,
# then serve (serve.sh). A deployment with a release step of its own runs
# `manage.py migrate` there and starts serve.sh alone.
set -eu
cd "$(dirname "$0")"
python3 manage.py migrate --noinput
exec ./serve.sh
