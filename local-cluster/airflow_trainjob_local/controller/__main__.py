"""Command line of the local training controller:
``python -m airflow_trainjob_local.controller --kubeconfig PATH``.

Runs until SIGTERM or SIGINT, then stops its threads and exits 0. Logs go to stderr. Exits 1 with one
message when the kubeconfig cannot be loaded.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from kubernetes.config import ConfigException

from airflow_trainjob_local.controller.controller import Controller
from airflow_trainjob_local.jobset.controller import JobSetController
from airflow_trainjob_local.kube import api_client_from_kubeconfig
from airflow_trainjob_local.trainer.controller import TrainJobController

log = logging.getLogger("airflow_trainjob_local.controller")


def _port_range(text: str) -> tuple[int, int]:
    try:
        low, high = (int(part) for part in text.split("-", 1))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected LOW-HIGH, got {text!r}") from exc
    if not 0 < low <= high < 65536:
        raise argparse.ArgumentTypeError(f"bad port range {text!r}")
    return low, high


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

    stop = threading.Event()

    def _on_signal(signum: int, _frame: object) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    controller = Controller(
        api_client, resync_seconds=args.resync_seconds, workers=args.workers, port_range=args.port_range
    )
    # Trainer v2 (TrainJobs) beside v1, sharing the loopback ports so the two never hand out the same one.
    trainjobs = TrainJobController(
        api_client, ports=controller.ports, resync_seconds=args.resync_seconds, workers=args.workers
    )
    jobsets = JobSetController(api_client, resync_seconds=args.resync_seconds, workers=args.workers)
    controller.start()
    jobsets.start()
    trainjobs.start()
    log.info("local training controller started (resync %.0fs, %d workers)", args.resync_seconds, args.workers)
    while not stop.wait(1.0):
        pass
    trainjobs.stop()
    controller.stop()
    jobsets.stop()
    log.info("local training controller stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
