#!/usr/bin/env bash
# The reliability and security report of the README, from one command: runs the fault-injection, finished-then-
# deleted, refusal, least-privilege, secrets and bad-input tests, then prints the figures they recorded.
#   ./scripts/report.sh [extra pytest args]
# By default through ./scripts/test.sh (its .venv and its own test cluster, started and stopped; ~15 min on
# 2 cores). With PYTHON set (a dev venv's python), pytest runs directly on the cluster the test fixtures start.
# The rows go to $AIRFLOW_TRAINJOB_REPORT (default: a temporary file), one JSON line each (tests/support/report.py).
set -uo pipefail
cd "$(dirname "$0")/.."
report="${AIRFLOW_TRAINJOB_REPORT:-$(mktemp -t trainjob-report.XXXXXX.jsonl)}"
: > "$report"
export AIRFLOW_TRAINJOB_REPORT="$report"
tests=(tests/test_fault_proxy.py tests/hooks/test_faults.py tests/operators/test_faults.py
       tests/operators/test_process_faults.py tests/operators/test_finished_then_deleted.py
       tests/hooks/test_refusals.py tests/security tests/models/test_bad_input.py)
if [ -n "${PYTHON:-}" ]; then
  "$PYTHON" -m pytest -q -p no:cacheprovider "${tests[@]}" "$@"
else
  ./scripts/test.sh -q -p no:cacheprovider "${tests[@]}" "$@"
fi
status=$?
python="${PYTHON:-.venv/bin/python}"
echo
"$python" -m tests.support.report "$report"
echo
"$python" scripts/fault_table.py "$report"
echo "rows: $report" >&2
exit $status
