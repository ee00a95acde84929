"""Command line of the process kubelet::

    python -m airflow_trainjob_local.kubelet --kubeconfig PATH --node-name NAME --port PORT --state-dir DIR

Runs until SIGTERM or SIGINT, then stops its pods' processes and exits 0. Exits 1 with one message when the Node
cannot be registered or the port is taken. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from airflow_trainjob_local.kube import ApiException, api_client_from_kubeconfig


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_trainjob_local.kubelet", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--kubeconfig", required=True, type=Path, help="kubeconfig of the apiserver to serve")
    parser.add_argument("--node-name", required=True, help="name of the Node to register")
    parser.add_argument("--port", required=True, type=int, help="HTTPS port of the log server on 127.0.0.1")
    parser.add_argument("--state-dir", required=True, type=Path, help="certificate, container logs, working dirs")
    parser.add_argument(
        "--client-ca-file",
        type=Path,
        help="require log clients (the apiserver) to present a certificate signed by this CA",
    )
    parser.add_argument(
        "--restart-backoff-seconds",
        type=float,
        default=1.0,
        help="first crash-loop back-off, doubled per failure (default 1; the real kubelet: 10)",
    )
    parser.add_argument(
        "--max-restart-backoff-seconds",
        type=float,
        default=60.0,
        help="back-off cap (default 60; the real kubelet: 300)",
    )
    parser.add_argument(
        "--shutdown-grace-seconds",
        type=float,
        default=5.0,
        help="on SIGTERM, seconds pods' processes get between SIGTERM and SIGKILL (default 5)",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the kubelet until SIGTERM/SIGINT; returns the exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
    # One line per request at INFO would drown the kubelet's own messages.
    logging.getLogger("urllib3").setLevel(logging.WARNING)

    from airflow_trainjob_local.kubelet.kubelet import Kubelet

    # Two watches plus one status writer per pod share the pool.
    api_client = api_client_from_kubeconfig(args.kubeconfig, pool_size=32)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        with api_client:
            kubelet = Kubelet(
                api_client,
                node_name=args.node_name,
                port=args.port,
                state_dir=args.state_dir,
                client_ca=args.client_ca_file,
                backoff_seconds=args.restart_backoff_seconds,
                max_backoff_seconds=args.max_restart_backoff_seconds,
                shutdown_grace_seconds=args.shutdown_grace_seconds,
            )
            kubelet.run(stop)
    except (ApiException, OSError) as e:
        print(f"kubelet: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
