#!/usr/bin/env bash
# The main job: the example weekly retraining DAG, end to end, on the local cluster.
#   ./scripts/demo.sh [--keep-cluster] [DATE]
# Sets up .venv (provider + torch CPU + scikit-learn), builds/starts the local cluster, makes an
# Airflow home in .demo/, and runs `airflow dags test retrain_digits DATE`: a PyTorchJob with one
# Master and one Worker trains a digits classifier with torch.distributed, then `report` prints
# the final metrics. The cluster is stopped at the end unless --keep-cluster is given.
set -euo pipefail
cd "$(dirname "$0")/.."

KEEP=0
if [ "${1:-}" = "--keep-cluster" ]; then KEEP=1; shift; fi
DATE=${1:-$(date -u +%Y-%m-%d)}
DEMO_DIR=$PWD/.demo

EXTRAS=examples
. scripts/setup-venv.sh

echo "==> starting the local cluster (the first run builds kube-apiserver from Debian's source: about 5 minutes)"
if [ "$KEEP" = 0 ]; then
  trap 'echo "==> stopping the local cluster (use --keep-cluster to keep it)"; "$VENV/bin/airflow-trainjob-local" down' EXIT
fi
# `up` prints the one line that points Airflow's kubernetes_default connection at the cluster.
connection_line=$("$VENV/bin/airflow-trainjob-local" up)
eval "$connection_line"

export AIRFLOW_HOME=$DEMO_DIR/airflow-home
export AIRFLOW__CORE__DAGS_FOLDER=$PWD/example_dags
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export TRAINJOB_EXAMPLE_METRICS_DIR=$DEMO_DIR/metrics
mkdir -p "$DEMO_DIR"
echo "==> preparing the Airflow home in $AIRFLOW_HOME"
"$VENV/bin/airflow" db migrate >"$DEMO_DIR/db-migrate.log" 2>&1 || { cat "$DEMO_DIR/db-migrate.log"; exit 1; }

echo "==> airflow dags test retrain_digits $DATE"
set +e  # a failed run still gets its log path and exit code below
"$VENV/bin/airflow" dags test retrain_digits "$DATE" 2>&1 | tee "$DEMO_DIR/dags-test.log" \
  | grep --line-buffered -E "Created |Attaching |Replacing |PyTorchJob .*: |\[(Master|Worker)-[0-9]+\]|final metrics|took |ERROR|Traceback|DagRun Finished" \
  | sed -E 's/ +\[airflow\.[^]]*\].*$//; s/^[0-9T:.-]+Z \[[a-z ]+\] //'
status=${PIPESTATUS[0]}
set -e
# The job writes metrics-<job name>.json; the report task's log names the file it read.
metrics=$(sed -nE 's/.*metrics from ([^ ]+\.json).*/\1/p' "$DEMO_DIR/dags-test.log" | tail -n 1)
echo "==> full log: $DEMO_DIR/dags-test.log; metrics: ${metrics:-none written}"
if [ -n "$metrics" ] && [ -f "$metrics" ]; then
  cat "$metrics"; echo
fi
exit "$status"
