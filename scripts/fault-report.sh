#!/usr/bin/env bash
# Run the fault-injection tests and print the README's fault table from what they observed.
#   ./scripts/fault-report.sh [extra pytest args]
# By default through ./scripts/test.sh (its .venv, its own test cluster, started and stopped). With PYTHON set
# (e.g. a dev venv's python), pytest runs directly and the session's cluster fixture starts the cluster named by
# AIRFLOW_TRAINJOB_TEST_STATE_DIR / AIRFLOW_TRAINJOB_TEST_PORT_BASE (or reuses it when it is already up).
# The rows go to $AIRFLOW_TRAINJOB_FAULT_REPORT (default: a temporary file), one JSON line per fault tried.
set -uo pipefail
cd "$(dirname "$0")/.."
report="${AIRFLOW_TRAINJOB_FAULT_REPORT:-$(mktemp -t fault-report.XXXXXX.jsonl)}"
: > "$report"
export AIRFLOW_TRAINJOB_FAULT_REPORT="$report"
tests=(tests/test_fault_proxy.py tests/hooks/test_faults.py tests/operators/test_faults.py
       tests/operators/test_process_faults.py)
if [ -n "${PYTHON:-}" ]; then
  "$PYTHON" -m pytest -q -p no:cacheprovider "${tests[@]}" "$@"
else
  ./scripts/test.sh -q -p no:cacheprovider "${tests[@]}" "$@"
fi
status=$?
"${PYTHON:-.venv/bin/python}" scripts/fault_table.py "$report"
echo "rows: $report" >&2
exit $status
