#!/usr/bin/env bash
# The gates CI runs before the tests, configured in pyproject.toml ([tool.ruff], [tool.mypy]), on the whole
# repository: ruff's lint, ruff's formatting (checked, not applied) and mypy. Sets up .venv as test.sh does.
#   ./scripts/lint.sh          check
#   ./scripts/lint.sh --fix    apply ruff's safe fixes and its formatting first
set -euo pipefail
cd "$(dirname "$0")/.."

EXTRAS=test,examples,lint
. scripts/setup-venv.sh

if [ "${1:-}" = "--fix" ]; then
  "$VENV/bin/ruff" check --fix --quiet . || true
  "$VENV/bin/ruff" format --quiet .
fi
echo "==> ruff check"
"$VENV/bin/ruff" check .
echo "==> ruff format --check"
"$VENV/bin/ruff" format --check .
echo "==> mypy"
"$VENV/bin/mypy"
