"""Installs benchmarks/loop_probe.py in a triggerer started with this directory on its PYTHONPATH and
LOOP_PROBE_OUT set (the file the stalls are written to); any other process is left alone."""

import os
import sys

if os.environ.get("LOOP_PROBE_OUT") and "triggerer" in sys.argv:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import loop_probe

    loop_probe.install(os.environ["LOOP_PROBE_OUT"], float(os.environ.get("LOOP_PROBE_THRESHOLD", "0.1")))
