#!/usr/bin/env bash
# The provider beside the Kubeflow training SDK: resolves an environment with the provider (installed from a
# wheel, not editable) and kubeflow-training==1.9.4 (which requires kubernetes<36), then, on a local cluster,
# reads a provider-made job with the SDK's TrainingClient and waits with the provider's sensor on an SDK-made job
# (tests/sdk_env/check_sdk_reads_jobs.py).
#   bash scripts/sdk-check.sh [pytest arguments...]
# The environment is $AIRFLOW_TRAINJOB_SDK_VENV (default .venv-sdk), created or reused; the local cluster is
# started by the main venv's airflow-trainjob-local (it needs kubernetes 36, so it is not installed here):
#   AIRFLOW_TRAINJOB_SDK_STATE_DIR  state dir (default ${XDG_STATE_HOME:-~/.local/state}/airflow-trainjob/sdk-cluster)
#   AIRFLOW_TRAINJOB_SDK_PORT_BASE  ports N..N+3 (default 25443, apart from the test cluster's 27443 and the demo's
#                                   26443)
#   AIRFLOW_TRAINJOB_LOCAL          the local cluster's command (default .venv/bin/airflow-trainjob-local)
# A cluster already up in that state dir is reused and left running; one this script started is stopped at exit.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
SDK_VENV=${AIRFLOW_TRAINJOB_SDK_VENV:-.venv-sdk}
SDK_REQUIREMENT=kubeflow-training==1.9.4
STATE_DIR=${AIRFLOW_TRAINJOB_SDK_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/airflow-trainjob/sdk-cluster}
PORT_BASE=${AIRFLOW_TRAINJOB_SDK_PORT_BASE:-25443}
LOCAL=${AIRFLOW_TRAINJOB_LOCAL:-.venv/bin/airflow-trainjob-local}

if [ ! -x "$LOCAL" ]; then
  echo "sdk-check: $LOCAL not found: the local cluster comes from the main venv (./scripts/test.sh creates it)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/airflow-trainjob-sdk-XXXXXX")
owned=0
cleanup() {
  if [ "$owned" = 1 ]; then
    echo "==> stopping the SDK check's cluster"
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
# The provider is built from a copy of the work tree (what a clean clone would hold, less what .gitignore names):
# the same as `pip install .`, without an in-tree build/ whose leftovers would end up in the wheel, and without
# writing into the checkout.
mkdir "$work/src"
tar -c --exclude=.git --exclude='.venv*' --exclude=venv --exclude=build --exclude=dist --exclude='*.egg-info' \
    --exclude=__pycache__ --exclude='.*_cache' --exclude=.demo . | tar -x -C "$work/src"
echo "==> installing the provider (from a wheel), $SDK_REQUIREMENT and pytest into $SDK_VENV"
log="$SDK_VENV/pip-install.log"
# Lines about this machine's absent local package directories are left out of what is shown; the log has all.
noise='is ignored: it is neither a file nor a directory'
if ! "$SDK_VENV/bin/python" -m pip install --disable-pip-version-check "$work/src" "$SDK_REQUIREMENT" pytest \
    >"$log" 2>&1; then
  echo "sdk-check: pip could not install the provider beside $SDK_REQUIREMENT; it printed ($log):" >&2
  grep -v -- "$noise" "$log" >&2 || true
  exit 1
fi
if ! "$SDK_VENV/bin/python" -m pip check --disable-pip-version-check >"$work/pip-check" 2>&1; then
  echo "sdk-check: pip check found broken requirements in $SDK_VENV:" >&2
  grep -v -- "$noise" "$work/pip-check" >&2 || true
  exit 1
fi
echo "    environment ready after $(( $(date +%s) - start )) s; resolved:"
"$SDK_VENV/bin/python" - <<'PY'
import importlib.metadata as m
for name in ("airflow-trainjob", "kubeflow-training", "kubernetes", "kubernetes_asyncio",
             "apache-airflow-providers-cncf-kubernetes", "apache-airflow", "apache-airflow-core",
             "apache-airflow-task-sdk"):
    print(f"    {name:<42} {m.version(name)}")
import json
direct_url = json.loads(m.distribution("airflow-trainjob").read_text("direct_url.json") or "{}")
assert not direct_url.get("dir_info", {}).get("editable"), "the provider is installed editable"
import kubeflow.training  # noqa: F401  (else the check would skip itself)
PY

check_start=$(date +%s)
if "$LOCAL" status --state-dir "$STATE_DIR" 2>/dev/null | grep -Eq '^ +kube-apiserver +running'; then
  echo "==> reusing the cluster already up in $STATE_DIR"
else
  echo "==> starting a cluster in $STATE_DIR (ports from $PORT_BASE)"
  owned=1
fi
env_line=$("$LOCAL" up --state-dir "$STATE_DIR" --port-base "$PORT_BASE")
eval "$env_line"  # AIRFLOW_CONN_KUBERNETES_DEFAULT=...; the check points it at a namespace of its own
export AIRFLOW_HOME="$work/airflow-home" AIRFLOW__CORE__LOAD_EXAMPLES=False
mkdir "$AIRFLOW_HOME"

echo "==> the SDK reads the provider's job; the provider's sensor waits on the SDK's job"
# --noconftest: the main suite's conftests load the local cluster's plugin and test helpers, not installed here.
"$SDK_VENV/bin/python" -m pytest tests/sdk_env/check_sdk_reads_jobs.py --noconftest -p no:cacheprovider -s -q "$@"
echo "SDK check passed: environment $(( check_start - start )) s, check $(( $(date +%s) - check_start )) s"
