# Sourced by demo.sh and test.sh: creates $VENV if missing and installs, editable, the provider with the
# extras named in $EXTRAS and the local cluster (its own distribution, local-cluster/, with its pytest
# plugin), plus torch's CPU build for the example (2.13.0 is the release these machines carry as a file;
# a newer range would pull a several-GB CUDA build).
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_REQUIREMENT=${TORCH_REQUIREMENT:-torch==2.13.0}

if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi
echo "==> installing airflow-trainjob[$EXTRAS], airflow-trainjob-local[testing] and $TORCH_REQUIREMENT into $VENV (first time: a few minutes)"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e ".[$EXTRAS]" -e "./local-cluster[testing]" "$TORCH_REQUIREMENT"
