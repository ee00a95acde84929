#!/usr/bin/env bash
# The project's test command: sets up everything the tests need, then runs them.
#   ./scripts/test.sh [pytest arguments...]
# 1. .venv (Python 3.10+) with the provider, its test extras and the example's torch + scikit-learn;
# 2. the local cluster's binaries (built once from Debian's source package, then cached: ~5 min cold);
# 3. a test cluster of its own (state dir and ports apart from the demo's), stopped again at exit;
# 4. pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

export AIRFLOW_TRAINJOB_TEST_STATE_DIR=${AIRFLOW_TRAINJOB_TEST_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/airflow-trainjob/test-cluster}
export AIRFLOW_TRAINJOB_TEST_PORT_BASE=${AIRFLOW_TRAINJOB_TEST_PORT_BASE:-27443}

EXTRAS=test,examples
. scripts/setup-venv.sh

local_cluster() { "$VENV/bin/python" -m airflow_trainjob_local "$@" --state-dir "$AIRFLOW_TRAINJOB_TEST_STATE_DIR"; }
echo "==> local cluster binaries (the first build takes about 5 minutes)"
build_start=$(date +%s)
"$VENV/bin/python" -m airflow_trainjob_local build
echo "    binaries ready after $(( $(date +%s) - build_start )) s"
echo "==> starting the test cluster in $AIRFLOW_TRAINJOB_TEST_STATE_DIR (ports from $AIRFLOW_TRAINJOB_TEST_PORT_BASE)"
trap 'echo "==> stopping the test cluster"; local_cluster down' EXIT
local_cluster up --port-base "$AIRFLOW_TRAINJOB_TEST_PORT_BASE" >/dev/null

echo "==> running the tests"
# pytest exits 5 when it collects no test; set -e turns that into a failure too.
"$VENV/bin/python" -m pytest "$@"
