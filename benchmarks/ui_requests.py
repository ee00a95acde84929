"""Kubernetes API requests made by the UI while 1, then 10 clients keep a task instance's Training job tab open.

Runs ``tests/ui/test_api.py::test_ten_open_tabs_cost_the_kubernetes_api_what_one_does`` for ``--seconds`` per client
group: a real api-server (own process, SQLite) with the provider's plugin, a live PyTorchJob on the local cluster
(the session cluster of the tests: ``$AIRFLOW_TRAINJOB_TEST_STATE_DIR`` / ``$AIRFLOW_TRAINJOB_TEST_PORT_BASE``, started
if none runs), and a counting proxy between the api-server and the apiserver. Each client polls the tab's JSON and
the lead replica's log every 5 s (the page's ``refresh_seconds``), the clients' first polls spread over 5 s. Prints a
Markdown table: page requests, and the Kubernetes requests that reached the cluster by what they read.

Run: ``.venv/bin/python benchmarks/ui_requests.py --seconds 60`` (about 3 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST = "tests/ui/test_api.py::test_ten_open_tabs_cost_the_kubernetes_api_what_one_does"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="polling time per client group (seconds)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainjob-ui-bench-") as work:
        report = Path(work) / "report.jsonl"
        env = {
            **os.environ,
            "AIRFLOW_TRAINJOB_UI_BENCH_SECONDS": str(args.seconds),
            "AIRFLOW_TRAINJOB_REPORT": str(report),
        }
        command = [sys.executable, "-m", "pytest", TEST, "-p", "no:cacheprovider", "-q", "-s"]
        rc = subprocess.call(command, cwd=ROOT, env=env)
        rows = [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []
    rows = [r for r in rows if r.get("section") == "ui_requests"]
    if rc != 0 or not rows:
        print(f"the benchmark's test failed (exit {rc})", file=sys.stderr)
        return rc or 1
    print(
        f"\n| clients, {args.seconds:g} s | page requests | Kubernetes requests | pods lists | events lists | log reads | job lists/watches |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['clients']} | {r['page_requests']} | {r['kubernetes_requests']} | {r['kubernetes_pods']} | "
            f"{r['kubernetes_events']} | {r['kubernetes_logs']} | {r['kubernetes_jobs']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
