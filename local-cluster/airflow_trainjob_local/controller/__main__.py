"""Command line of the local training controller:
``python -m airflow_trainjob_local.controller --kubeconfig PATH``.

Runs until SIGTERM or SIGINT, then stops its threads and exits 0. Logs go to stderr. Exits 1 with one
message when the kubeconfig cannot be loaded, or the status server cannot start.

``--feature-gates TrainJobStatus=true|false`` (upstream's flag; on by default here, alpha and off upstream): with
it on and ``--status-server-port`` given, the TrainJob status server (:mod:`airflow_trainjob_local.trainer.status_server`)
listens on 127.0.0.1 with ``--status-server-cert``/``--status-server-key``, and TrainJobs' trainer containers get
its env and token (:mod:`airflow_trainjob_local.trainer.trainjob_status`, the CA of ``--status-server-ca``).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from kubernetes.config import ConfigException

from airflow_trainjob_local.controller.controller import Controller
from airflow_trainjob_local.jobset.controller import JobSetController
from airflow_trainjob_local.kube import api_client_from_kubeconfig
from airflow_trainjob_local.trainer.controller import TrainJobController
from airflow_trainjob_local.trainer.status_server import StatusServer
from airflow_trainjob_local.trainer.trainjob_status import FEATURE_GATE, StatusServerSettings

#: Feature gates this controller knows, with their local defaults.
DEFAULT_FEATURE_GATES = {FEATURE_GATE: True}

log = logging.getLogger("airflow_trainjob_local.controller")


def _port_range(text: str) -> tuple[int, int]:
    try:
        low, high = (int(part) for part in text.split("-", 1))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected LOW-HIGH, got {text!r}") from exc
    if not 0 < low <= high < 65536:
        raise argparse.ArgumentTypeError(f"bad port range {text!r}")
    return low, high


def _feature_gates(text: str) -> dict[str, bool]:
    """``Name=true,Other=false`` -> the gates, over :data:`DEFAULT_FEATURE_GATES` (as upstream's flag)."""
    gates = dict(DEFAULT_FEATURE_GATES)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or name not in gates or value.lower() not in ("true", "false"):
            known = ", ".join(sorted(DEFAULT_FEATURE_GATES))
            raise argparse.ArgumentTypeError(f"expected Name=true|false with Name one of {known}, got {item!r}")
        gates[name] = value.lower() == "true"
    return gates


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_trainjob_local.controller",
        description="Local Kubeflow training controller (PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob).",
    )
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig of the cluster to control")
    parser.add_argument("--context", help="kubeconfig context (default: its current context)")
    parser.add_argument("--resync-seconds", type=float, default=30.0, help="reconcile every job at least this often")
    parser.add_argument("--workers", type=int, default=2, help="reconcile threads")
    parser.add_argument(
        "--port-range",
        type=_port_range,
        default=(20000, 29999),
        help="loopback TCP ports handed to replicas, LOW-HIGH inclusive (default 20000-29999)",
    )
    parser.add_argument(
        "--feature-gates",
        type=_feature_gates,
        default=dict(DEFAULT_FEATURE_GATES),
        help="Name=true|false,... (TrainJobStatus: on by default locally)",
    )
    parser.add_argument("--status-server-port", type=int, help="TrainJob status server port on 127.0.0.1")
    parser.add_argument("--status-server-cert", help="status server certificate (PEM)")
    parser.add_argument("--status-server-key", help="status server private key (PEM)")
    parser.add_argument("--status-server-ca", help="CA certificate given to trainer containers (PEM)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the controller until SIGTERM/SIGINT; returns the exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # The client logs request bodies at DEBUG; keep it quiet so tokens never reach the log.
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    try:
        api_client = api_client_from_kubeconfig(args.kubeconfig, args.context)
    except (ConfigException, OSError) as exc:
        print(
            f"airflow_trainjob_local.controller: error: cannot load kubeconfig {args.kubeconfig}: {exc}",
            file=sys.stderr,
        )
        return 1

    stop = _stop_on_signals()
    try:
        status_server, settings = _status_server(args, api_client)
    except (OSError, ValueError) as exc:
        print(f"airflow_trainjob_local.controller: error: status server: {exc}", file=sys.stderr)
        return 1
    controller = Controller(
        api_client, resync_seconds=args.resync_seconds, workers=args.workers, port_range=args.port_range
    )
    # Trainer v2 (TrainJobs) beside v1, sharing the loopback ports so the two never hand out the same one.
    trainjobs = TrainJobController(
        api_client,
        ports=controller.ports,
        resync_seconds=args.resync_seconds,
        workers=args.workers,
        status_server=settings,
    )
    jobsets = JobSetController(api_client, resync_seconds=args.resync_seconds, workers=args.workers)
    if status_server is not None:
        status_server.start()
    controller.start()
    jobsets.start()
    trainjobs.start()
    log.info("local training controller started (resync %.0fs, %d workers)", args.resync_seconds, args.workers)
    while not stop.wait(1.0):
        pass
    trainjobs.stop()
    controller.stop()
    jobsets.stop()
    if status_server is not None:
        status_server.stop()
    log.info("local training controller stopped")
    return 0


def _stop_on_signals() -> threading.Event:
    """An event set on SIGTERM or SIGINT."""
    stop = threading.Event()

    def _on_signal(signum: int, _frame: object) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    return stop


def _status_server(
    args: argparse.Namespace, api_client: Any
) -> tuple[StatusServer | None, StatusServerSettings | None]:
    """The status server (not started) and what trainer containers are told of it; ``(None, None)`` when the
    gate is off or no port is given.

    :raises OSError: the port is taken or a PEM file cannot be read.
    :raises ValueError: the gate is on with a port but without the certificate, key or CA.
    """
    if not args.feature_gates[FEATURE_GATE] or args.status_server_port is None:
        log.info("%s feature gate off: no TrainJob status server", FEATURE_GATE)
        return None, None
    if not (args.status_server_cert and args.status_server_key and args.status_server_ca):
        raise ValueError("--status-server-port needs --status-server-cert, --status-server-key and --status-server-ca")
    with open(args.status_server_ca, encoding="ascii") as handle:
        ca_pem = handle.read()
    server = StatusServer(
        api_client, port=args.status_server_port, cert_file=args.status_server_cert, key_file=args.status_server_key
    )
    return server, StatusServerSettings(f"https://127.0.0.1:{server.port}", ca_pem)


if __name__ == "__main__":
    sys.exit(main())
