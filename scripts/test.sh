#!/usr/bin/env bash
# The project's test command: sets up everything the tests need, then runs them.
#   ./scripts/test.sh [--unit | --integration | --faults] [pytest arguments...]
# Tiers (markers set at collection: `cluster` by the local cluster's pytest plugin for every test whose fixtures
# reach a cluster, `faults` by tests/conftest.py for every test that injects faults; `-m` selects them):
#   --unit         -m "not cluster": pure decisions, models, the operator's branches on an in-memory fake hook.
#                  Builds and starts no cluster (any test reaching one fails: AIRFLOW_TRAINJOB_TEST_NO_CLUSTER=1).
#                  Under a minute.
#   --integration  -m "cluster and not faults": against the real local apiserver, controller and kubelet.
#   --faults       -m faults: the fault matrices (fault proxy, stopped apiserver/controller, SIGKILL).
#   (no tier)      the whole suite, what CI runs. Without test paths it runs as 4 pytest processes (shards, by
#                  file) side by side on the one test cluster -- the tests mostly wait on the cluster, so 2 cores
#                  keep up -- then the tests marked alone; each process
#                  prints its 25 slowest tests. AIRFLOW_TRAINJOB_TEST_PARALLEL=0: one process, in turn.
#                  With test paths (or a tier): one pytest process over what was asked.
# Steps:
# 1. .venv (Python 3.10+) with the provider, its test extras and the example's torch + scikit-learn;
# 2. except --unit: the local cluster's binaries (built once from Debian's source package, then cached: ~5 min
#    cold), and a test cluster of its own (state dir and ports apart from the demo's), stopped again at exit;
# 3. pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

tier=()
cluster=yes
case "${1:-}" in
  --unit) tier=(-m "not cluster"); cluster=no; shift ;;
  --integration) tier=(-m "cluster and not faults"); shift ;;
  --faults) tier=(-m faults); shift ;;
esac

# The shards of a whole-suite run, by file, balanced from the seconds per file a whole-suite run prints at its end
# (2026-12-07: tests/ui 1,914 s, which one process must run; the rest about 1,500-1,750 s a shard). Every file with a
# test that starts a private cluster (ports base+10..13 and base+40..43: spare_cluster, private_cluster,
# kubernetes_only_cluster) is in SHARD_2, so no two processes start one at once; tests/ui (the real Airflow
# deployments, ports base+60 and up, one module at a time) is SHARD_1; a file named in no shard runs in the fourth.
# Tests marked `alone` (they restart the session cluster's kubelet, or count its watches) run afterwards, by
# themselves.
SHARD_1=(tests/ui)
SHARD_2=(tests/operators/test_process_faults.py tests/hooks/test_refusals.py tests/operators/test_no_controller.py
         tests/triggers/test_job_stream.py local-cluster/tests/test_cluster.py local-cluster/tests/test_controller.py
         local-cluster/tests/test_suspension.py tests/example_dags/test_retrain_digits_trainjob.py
         tests/operators/test_trainjob_operator.py)
SHARD_3=(tests/operators/test_faults.py tests/example_dags/test_retrain_digits.py
         tests/example_dags/test_queued_training.py tests/test_provider_info.py
         tests/integration/test_lineage_events.py)
SHARDS=4

export AIRFLOW_TRAINJOB_TEST_STATE_DIR=${AIRFLOW_TRAINJOB_TEST_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/airflow-trainjob/test-cluster}
export AIRFLOW_TRAINJOB_TEST_PORT_BASE=${AIRFLOW_TRAINJOB_TEST_PORT_BASE:-27443}
PARALLEL=${AIRFLOW_TRAINJOB_TEST_PARALLEL:-1}

EXTRAS=test,examples,lint
. scripts/setup-venv.sh

if [ "$cluster" = yes ]; then
  local_cluster() { "$VENV/bin/python" -m airflow_trainjob_local "$@" --state-dir "$AIRFLOW_TRAINJOB_TEST_STATE_DIR"; }
  echo "==> local cluster binaries (the first build takes about 5 minutes)"
  build_start=$(date +%s)
  "$VENV/bin/python" -m airflow_trainjob_local build
  echo "    binaries ready after $(( $(date +%s) - build_start )) s"
  echo "==> starting the test cluster in $AIRFLOW_TRAINJOB_TEST_STATE_DIR (ports from $AIRFLOW_TRAINJOB_TEST_PORT_BASE)"
  trap 'echo "==> stopping the test cluster"; local_cluster down' EXIT
  local_cluster up --port-base "$AIRFLOW_TRAINJOB_TEST_PORT_BASE" >/dev/null
else
  echo "==> unit tier: no cluster (built or started)"
  export AIRFLOW_TRAINJOB_TEST_NO_CLUSTER=1
fi

# A whole-suite run: no tier, no test path, -m or -k among the arguments (options such as -q or -x are passed to
# every shard).
whole_suite=yes
[ ${#tier[@]} -eq 0 ] || whole_suite=no
for arg in "$@"; do
  if [[ "$arg" == -m* || "$arg" == -k* || ( "$arg" != -* && ( -e "${arg%%::*}" || "$arg" == *::* ) ) ]]; then
    whole_suite=no
  fi
done

# pytest exits 5 when it collects no test; set -e (or the shards' status) turns that into a failure too.
pytest_cmd=("$VENV/bin/python" -m pytest -c pyproject.toml --rootdir .)
if [ "$whole_suite" = no ] || [ "$PARALLEL" = 0 ]; then
  echo "==> running the tests"
  "${pytest_cmd[@]}" ${tier[@]+"${tier[@]}"} "$@"
  exit 0
fi

echo "==> running the whole suite as $SHARDS shards side by side, then the tests marked alone"
logs=$(mktemp -d -t trainjob-tests.XXXXXX)
# Every process appends its report rows (tests/support/report.py) to one file, summed at the end.
export AIRFLOW_TRAINJOB_REPORT=${AIRFLOW_TRAINJOB_REPORT:-$logs/report.jsonl}
ignore=()
for path in "${SHARD_1[@]}" "${SHARD_2[@]}" "${SHARD_3[@]}"; do ignore+=(--ignore="$path"); done
suite_start=$(date +%s)
pids=()
for i in 1 2 3; do
  declare -n shard="SHARD_$i"
  "${pytest_cmd[@]}" -m "not alone" --junitxml="$logs/shard-$i.xml" "$@" "${shard[@]}" >"$logs/$i.log" 2>&1 &
  pids+=($!)
done
"${pytest_cmd[@]}" -m "not alone" --junitxml="$logs/shard-4.xml" "$@" tests local-cluster/tests "${ignore[@]}" \
  >"$logs/4.log" 2>&1 & pids+=($!)
status=0
for i in $(seq 1 "$SHARDS"); do
  rc=0; wait "${pids[$((i - 1))]}" || rc=$?
  echo "==> shard $i of $SHARDS (exit $rc, $(( $(date +%s) - suite_start )) s after the start)"
  cat "$logs/$i.log"
  [ "$rc" -eq 0 ] || status=1
done
echo "==> the tests marked alone, with nothing else on the cluster"
"${pytest_cmd[@]}" -m alone "$@" tests local-cluster/tests || status=1
echo "==> seconds per test file in each shard (what balancing the shards above goes by)"
"$VENV/bin/python" -m tests.support.file_times "$logs"/shard-*.xml || true
if [ -s "$AIRFLOW_TRAINJOB_REPORT" ]; then
  echo "==> report of the whole suite (all processes, summed)"
  "$VENV/bin/python" -m tests.support.report "$AIRFLOW_TRAINJOB_REPORT"
fi
rm -rf "$logs"
echo "==> whole suite: $(( $(date +%s) - suite_start )) s, $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
