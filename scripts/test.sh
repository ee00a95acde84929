#!/usr/bin/env bash
# The project's test command: sets up everything the tests need, then runs them.
#   ./scripts/test.sh [pytest arguments...]
# Creates .venv (Python 3.10+), installs the provider with its test extras, and runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi
echo "==> installing airflow-trainjob and its test dependencies into $VENV (first time: a few minutes)"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e ".[test]"

echo "==> running the tests"
# pytest exits 5 when it collects no test; set -e turns that into a failure too.
exec "$VENV/bin/python" -m pytest "$@"
