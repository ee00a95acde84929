#!/usr/bin/env bash
# The main job: the example weekly retraining DAG, end to end, on the local cluster.
#   ./scripts/demo.sh [--trainjob] [--keep-cluster] [DATE]
# Sets up .venv (provider + torch CPU + scikit-learn), builds/starts the local cluster, makes an
# Airflow home in .demo/, and runs `airflow dags test retrain_digits DATE`: a PyTorchJob with one
# Master and one Worker trains a digits classifier with torch.distributed, then `report` prints
# the final metrics. With --trainjob it runs `retrain_digits_trainjob` instead: the same pipeline with
# its training task as a Kubeflow Trainer v2 TrainJob (2 nodes on the torch-distributed runtime).
# The cluster is stopped at the end unless --keep-cluster is given.
#   AIRFLOW_TRAINJOB_DEMO_PORT_BASE  the cluster's ports N..N+3 (default: those of its last start, else 26443)
#   AIRFLOW_TRAINJOB_DEMO_STATE_DIR  the cluster's state dir (default: airflow-trainjob-local's own)
set -euo pipefail
cd "$(dirname "$0")/.."

KEEP=0
DAG_ID=retrain_digits
while [ $# -gt 0 ]; do
  case "$1" in
    --keep-cluster) KEEP=1; shift ;;
    --trainjob) DAG_ID=retrain_digits_trainjob; shift ;;
    -*) echo "demo.sh: unknown option $1 (usage: ./scripts/demo.sh [--trainjob] [--keep-cluster] [DATE])" >&2; exit 2 ;;
    *) break ;;
  esac
done
DATE=${1:-$(date -u +%Y-%m-%d)}
DEMO_DIR=$PWD/.demo
CLUSTER_ARGS=()
if [ -n "${AIRFLOW_TRAINJOB_DEMO_STATE_DIR:-}" ]; then CLUSTER_ARGS+=(--state-dir "$AIRFLOW_TRAINJOB_DEMO_STATE_DIR"); fi
if [ -n "${AIRFLOW_TRAINJOB_DEMO_PORT_BASE:-}" ]; then CLUSTER_ARGS+=(--port-base "$AIRFLOW_TRAINJOB_DEMO_PORT_BASE"); fi

EXTRAS=examples
. scripts/setup-venv.sh

echo "==> starting the local cluster (the first run builds kube-apiserver from Debian's source: about 5 minutes)"
if [ "$KEEP" = 0 ]; then
  trap 'echo "==> stopping the local cluster (use --keep-cluster to keep it)"; "$VENV/bin/airflow-trainjob-local" down ${CLUSTER_ARGS[@]+"${CLUSTER_ARGS[@]}"}' EXIT
fi
# `up` prints the one line that points Airflow's kubernetes_default connection at the cluster.
connection_line=$("$VENV/bin/airflow-trainjob-local" up ${CLUSTER_ARGS[@]+"${CLUSTER_ARGS[@]}"})
eval "$connection_line"

export AIRFLOW_HOME=$DEMO_DIR/airflow-home
export AIRFLOW__CORE__DAGS_FOLDER=$PWD/example_dags
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export TRAINJOB_EXAMPLE_METRICS_DIR=$DEMO_DIR/metrics
mkdir -p "$DEMO_DIR"
echo "==> preparing the Airflow home in $AIRFLOW_HOME"
"$VENV/bin/airflow" db migrate >"$DEMO_DIR/db-migrate.log" 2>&1 || { cat "$DEMO_DIR/db-migrate.log"; exit 1; }

echo "==> airflow dags test $DAG_ID $DATE"
set +e  # a failed run still gets its log path and exit code below
"$VENV/bin/airflow" dags test "$DAG_ID" "$DATE" 2>&1 | tee "$DEMO_DIR/dags-test.log" \
  | grep --line-buffered -E "Created |Attaching |Replacing |(PyTorchJob|TrainJob) .*: |\[(Master|Worker|node)-[0-9]+\]|final metrics|took |ERROR|Traceback|DagRun Finished" \
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
