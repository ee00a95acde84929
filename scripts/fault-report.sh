#!/usr/bin/env bash
# Run the fault-injection tests and print the README's fault table from what they observed.
#   ./scripts/fault-report.sh [extra pytest args]
# Uses the test cluster settings of ./scripts/test.sh (AIRFLOW_TRAINJOB_TEST_STATE_DIR / _PORT_BASE pass through)
# and the Python of $PYTHON (default: .venv/bin/python).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
report="${AIRFLOW_TRAINJOB_FAULT_REPORT:-$(mktemp -t fault-report.XXXXXX.jsonl)}"
: > "$report"
AIRFLOW_TRAINJOB_FAULT_REPORT="$report" "$PYTHON" -m pytest -q -p no:cacheprovider \
  tests/test_fault_proxy.py tests/hooks/test_faults.py tests/operators/test_faults.py \
  tests/operators/test_process_faults.py "$@"
status=$?
"$PYTHON" scripts/fault_table.py "$report"
echo "rows: $report" >&2
exit $status
