#!/usr/bin/env bash
# The README's run command ends here: grade the shipped example task with the `rubric` command, then
# start the web app and a Celery worker on the embedded default (SQLite + filesystem broker).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PORT=${PORT:-8000}
# The login page names the demo users only with this set (rubrics_app/views/login.py).
export RUBRICS_DEMO=true
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rubric-demo.XXXXXX")
worker_pid=""
cleanup() {
  if [ -n "$worker_pid" ]; then kill "$worker_pid" 2>/dev/null || true; wait "$worker_pid" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

echo "== the rubric command on the example task (scripted judge: a deterministic stand-in for demos)"
$PY -m examples.demo "$WORK"

echo
echo "== the web app"
mkdir -p var
$PY manage.py migrate --noinput
# DEBUG is off, so pages link the hashed static files that collectstatic writes to var/staticfiles/ (and
# the app serves them itself through WhiteNoise); a second run copies only what changed.
$PY manage.py collectstatic --noinput --verbosity 0
$PY manage.py load_demo
.venv/bin/celery -A rubrics_app worker --pool=solo --concurrency=1 --loglevel=WARNING &
worker_pid=$!
echo "Open http://127.0.0.1:$PORT/ (Ctrl-C stops the server and the worker)"
$PY manage.py runserver "127.0.0.1:$PORT" --noreload
