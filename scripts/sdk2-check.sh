#!/usr/bin/env bash
# The Kubeflow SDK v2 (kubeflow 0.5.x: TrainerClient, Kubernetes backend) on the local cluster, as its users run it:
# train() on the torch-distributed ClusterTrainingRuntime (a CustomTrainerContainer and a CustomTrainer, 2 nodes),
# list_jobs/get_job, wait_for_job_status, get_job_logs, delete_job (tests/sdk_env/check_sdk_v2_trains.py); then the
# provider beside it: TrainerClient reads a TrainJob the provider's TrainJobOperator made, and the provider's
# TrainingJobSensor waits on a TrainJob TrainerClient.train made (tests/sdk_env/check_sdk_v2_reads_trainjobs.py).
#   bash scripts/sdk2-check.sh [pytest arguments...]
# The environment is $AIRFLOW_TRAINJOB_SDK2_VENV (default .venv-sdk2), created or reused, with the SDK, the provider
# (installed from a wheel, not editable: kubeflow 0.5 requires kubernetes<36, which the provider accepts) and pytest;
# not the local cluster, which needs kubernetes 36. The local cluster is started by the main venv's
# airflow-trainjob-local:
#   AIRFLOW_TRAINJOB_SDK2_STATE_DIR  state dir (default ${XDG_STATE_HOME:-~/.local/state}/airflow-trainjob/sdk2-cluster)
#   AIRFLOW_TRAINJOB_SDK2_PORT_BASE  ports N..N+3 (default 22443, apart from the v1 SDK check's 25443, the test
#                                    cluster's 27443 and the demo's 26443)
#   AIRFLOW_TRAINJOB_LOCAL           the local cluster's command (default .venv/bin/airflow-trainjob-local)
# A cluster already up in that state dir is reused and left running; one this script started is stopped at exit.
# A cluster that does not serve trainjobs (trainer.kubeflow.org/v1alpha1) fails the check at once, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
SDK_VENV=${AIRFLOW_TRAINJOB_SDK2_VENV:-.venv-sdk2}
SDK_REQUIREMENT='kubeflow==0.5.*'
STATE_DIR=${AIRFLOW_TRAINJOB_SDK2_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/airflow-trainjob/sdk2-cluster}
PORT_BASE=${AIRFLOW_TRAINJOB_SDK2_PORT_BASE:-22443}
LOCAL=${AIRFLOW_TRAINJOB_LOCAL:-.venv/bin/airflow-trainjob-local}

if [ ! -x "$LOCAL" ]; then
  echo "sdk2-check: $LOCAL not found: the local cluster comes from the main venv (./scripts/test.sh creates it)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/airflow-trainjob-sdk2-XXXXXX")
owned=0
cleanup() {
  if [ "$owned" = 1 ]; then
    echo "==> stopping the SDK v2 check's cluster"
    "$LOCAL" down --state-dir "$STATE_DIR" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

start=$(date +%s)
if [ ! -x "$SDK_VENV/bin/python" ]; then
  echo "==> creating $SDK_VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$SDK_VENV"
fi
# The provider is built from a copy of the work tree, as scripts/sdk-check.sh builds it (what a clean clone holds).
mkdir "$work/src"
tar -c --exclude=.git --exclude='.venv*' --exclude=venv --exclude=build --exclude=dist --exclude='*.egg-info' \
    --exclude=__pycache__ --exclude='.*_cache' --exclude=.demo . | tar -x -C "$work/src"
echo "==> installing the provider (from a wheel), $SDK_REQUIREMENT and pytest into $SDK_VENV"
log="$SDK_VENV/pip-install.log"
# Lines about this machine's absent local package directories are left out of what is shown; the log has all.
noise='is ignored: it is neither a file nor a directory'
if ! "$SDK_VENV/bin/python" -m pip install --disable-pip-version-check "$work/src" "$SDK_REQUIREMENT" pytest \
    >"$log" 2>&1; then
  echo "sdk2-check: pip could not install the provider beside $SDK_REQUIREMENT; it printed ($log):" >&2
  grep -v -- "$noise" "$log" >&2 || true
  exit 1
fi
if ! broken=$("$SDK_VENV/bin/python" -m pip check --disable-pip-version-check 2>&1); then
  echo "sdk2-check: pip check found broken requirements in $SDK_VENV:" >&2
  echo "$broken" | grep -v -- "$noise" >&2 || true
  exit 1
fi
echo "    environment ready after $(( $(date +%s) - start )) s; resolved:"
"$SDK_VENV/bin/python" - <<'PY'
import importlib.metadata as m
for name in ("kubeflow", "kubeflow-trainer-api", "kubernetes", "pydantic", "airflow-trainjob", "kubernetes_asyncio",
             "apache-airflow", "apache-airflow-providers-cncf-kubernetes"):
    print(f"    {name:<40} {m.version(name)}")
import json
direct_url = json.loads(m.distribution("airflow-trainjob").read_text("direct_url.json") or "{}")
assert not direct_url.get("dir_info", {}).get("editable"), "the provider is installed editable"
import kubeflow.trainer  # noqa: F401  (else the check would skip itself)
PY

check_start=$(date +%s)
if "$LOCAL" status --state-dir "$STATE_DIR" 2>/dev/null | grep -Eq '^ +kube-apiserver +running'; then
  echo "==> reusing the cluster already up in $STATE_DIR"
else
  echo "==> starting a cluster in $STATE_DIR (ports from $PORT_BASE)"
  owned=1
fi
env_line=$("$LOCAL" up --state-dir "$STATE_DIR" --port-base "$PORT_BASE")
eval "$env_line"  # AIRFLOW_CONN_KUBERNETES_DEFAULT=...: its kube_config_path is what the SDK's users would export
export AIRFLOW_HOME="$work/airflow-home" AIRFLOW__CORE__LOAD_EXAMPLES=False
mkdir "$AIRFLOW_HOME"
KUBECONFIG=$("$SDK_VENV/bin/python" -c \
  'import json, os; print(json.loads(os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"])["extra"]["kube_config_path"])')
export KUBECONFIG

# Exit 3: the apiserver answers 404 for trainjobs (no such resource); anything else it raises fails the script.
served=0
"$SDK_VENV/bin/python" - <<'PY' || served=$?
import sys
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
try:
    client.CustomObjectsApi(config.new_client_from_config()).list_cluster_custom_object(
        "trainer.kubeflow.org", "v1alpha1", "trainjobs", limit=1)
except ApiException as e:
    if e.status != 404:
        raise
    sys.exit(3)
PY
if [ "$served" = 3 ]; then
  echo "sdk2-check: the local cluster does not serve trainjobs (trainer.kubeflow.org/v1alpha1 answered 404)" >&2
  exit 1
elif [ "$served" != 0 ]; then
  echo "sdk2-check: could not ask the cluster whether it serves trainjobs (exit $served)" >&2
  exit 1
fi

echo "==> the SDK v2 trains on torch-distributed, waits, reads the logs and deletes; it reads the provider's TrainJob,"
echo "    and the provider's sensor waits on the SDK's TrainJob"
"$SDK_VENV/bin/python" -m pytest tests/sdk_env/check_sdk_v2_trains.py tests/sdk_env/check_sdk_v2_reads_trainjobs.py \
  --noconftest -p no:cacheprovider -s -q "$@"
echo "SDK v2 check passed: environment $(( check_start - start )) s, check $(( $(date +%s) - check_start )) s"
