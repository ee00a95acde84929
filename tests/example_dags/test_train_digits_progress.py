"""The digits training script's progress reports (Kubeflow Trainer's TrainJobStatus feature), no cluster: nothing
without the three env vars; a report a status server accepts (checked with the local status server's own parser);
one warning and no more tries when the server cannot be reached; each epoch's report carries its training loss."""

from __future__ import annotations

import http.server
import importlib.util
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from airflow_trainjob_local import pki
from airflow_trainjob_local.trainer.status_payload import parse_update_request

pytestmark = pytest.mark.skipif(
    find_spec("torch") is None or find_spec("sklearn") is None,
    reason="the example trains with torch on scikit-learn's digits (scripts/test.sh installs both)",
)

SCRIPT = Path(__file__).resolve().parents[2] / "example_dags" / "train_digits.py"


@pytest.fixture(scope="module")
def train_digits() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_digits_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def status_server(tmp_path: Path) -> Iterator[tuple[str, Path, list[dict[str, Any]]]]:
    """An HTTPS server on a free port that records each POST (path, Authorization, body) and answers 200."""
    pki.ensure_credentials(tmp_path)
    cert, key = pki.ensure_status_server_certificate(tmp_path)
    received: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"path": self.path, "auth": self.headers["Authorization"], "body": body})
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}", tmp_path / "ca.crt", received
    httpd.shutdown()
    httpd.server_close()


def _env(url: str, ca: Path, token_file: Path) -> dict[str, str]:
    return {
        "KUBEFLOW_TRAINER_SERVER_URL": url,
        "KUBEFLOW_TRAINER_SERVER_CA_CERT": str(ca),
        "KUBEFLOW_TRAINER_SERVER_TOKEN": str(token_file),
    }


def test_without_the_env_vars_nothing_is_reported(train_digits, capsys):
    reporter = train_digits.ProgressReporter({})
    assert not reporter.enabled
    reporter.report(50, 10, {"loss": 0.5})
    assert capsys.readouterr().out == ""


def test_a_report_is_what_the_status_server_accepts(train_digits, status_server, tmp_path, capsys):
    base, ca, received = status_server
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/digits/status"
    token_file = tmp_path / "token"
    token_file.write_text("first\n")
    reporter = train_digits.ProgressReporter(_env(base + path, ca, token_file))
    reporter.report(40, 12, {"loss": 0.123456, "accuracy": 0.9})
    token_file.write_text("rotated\n")  # read again for every report
    reporter.report(100, 0, {"loss": 0.05})
    assert capsys.readouterr().out == ""
    assert [(r["path"], r["auth"]) for r in received] == [(path, "Bearer first"), (path, "Bearer rotated")]
    first = parse_update_request(received[0]["body"])["trainerStatus"]
    assert first["progressPercentage"] == 40 and first["estimatedRemainingSeconds"] == 12
    assert first["metrics"] == [{"name": "loss", "value": "0.1235"}, {"name": "accuracy", "value": "0.9000"}]
    assert parse_update_request(received[1]["body"])["trainerStatus"]["progressPercentage"] == 100


def test_an_unreachable_server_costs_one_warning_and_no_more_tries(train_digits, tmp_path, capsys):
    token_file = tmp_path / "token"
    token_file.write_text("t")
    reporter = train_digits.ProgressReporter(_env("https://127.0.0.1:1/status", tmp_path / "none.crt", token_file))
    started = time.monotonic()
    reporter.report(10, 5, {"loss": 1.0})
    reporter.report(20, 4, {"loss": 0.9})
    assert time.monotonic() - started < train_digits.REPORT_TIMEOUT_SECONDS + 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: progress not reported to the TrainJob status"), lines
    assert not reporter.enabled


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_each_epoch_reports_its_training_loss_which_falls(train_digits, status_server, tmp_path, monkeypatch):
    import torch

    # One node (torch.distributed on gloo, world of 1) trains 5 epochs in this process and reports each.
    base, ca, received = status_server
    token_file = tmp_path / "token"
    token_file.write_text("t")
    world = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "RANK": "0", "WORLD_SIZE": "1"}
    for name, value in {**world, **_env(base + "/status", ca, token_file)}.items():
        monkeypatch.setenv(name, value)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as torchrun's one process per node: threads only slow such small steps down
    try:
        train_digits.main("2026-12-07", str(tmp_path / "metrics.json"), 5)
    finally:
        torch.set_num_threads(threads)

    reports = [parse_update_request(r["body"])["trainerStatus"] for r in received]
    assert [r["progressPercentage"] for r in reports] == [20, 40, 60, 80, 100]
    losses = [float(next(m["value"] for m in r["metrics"] if m["name"] == "loss")) for r in reports]
    # The epoch's loss over all its images falls as the model learns; the last batch's alone (1347 images in
    # batches of 32: 3 images) jumps up and down from one epoch to the next.
    assert losses == sorted(losses, reverse=True) and len(set(losses)) == 5, losses
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["final_loss"] == pytest.approx(losses[-1], abs=1e-4), (metrics, losses)
