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
# The UI tests' headless browser (tests/support/browser.py): Debian's chromium and its WebDriver, when missing, and
# the fonts the screenshots are taken with (a Recommends of chromium; the other recommends, avahi and cups, are not).
if [[ ",${EXTRAS:-}," == *",test,"* ]] && { [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; }; then
  echo "==> installing Debian's chromium and chromium-driver for the UI tests (apt-get)"
  sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-liberation >/dev/null
fi
