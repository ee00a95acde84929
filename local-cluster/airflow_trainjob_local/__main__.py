"""Command line of the local cluster: ``python -m airflow_trainjob_local up|down|status|build`` (or
``airflow-trainjob-local``).

``build`` only finds or builds the binaries (minutes the first time) and prints their directory.
``up`` prints exactly one line on stdout, the shell line that points Airflow's ``kubernetes_default`` connection at
the cluster, so ``eval "$(airflow-trainjob-local up)"`` works; progress goes to stderr. ``status`` exits 0 when
every component that can run is running and the apiserver is ready, else 1. Errors exit 1 with one message.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from airflow_trainjob_local.build import BuildError, ensure_binaries
from airflow_trainjob_local.cluster import DEFAULT_PORT_BASE, ClusterError, LocalCluster, Ports


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--state-dir",
        type=Path,
        help="state directory (default: ${XDG_STATE_HOME:-~/.local/state}/airflow-trainjob/cluster)",
    )
    common.add_argument(
        "--port-base",
        type=int,
        help=f"apiserver = N, etcd client = N+1, etcd peer = N+2, "
        f"kubelet = N+3, TrainJob status server = N+4 (default: the ports of the last up, else {DEFAULT_PORT_BASE})",
    )
    common.add_argument("--apiserver-port", type=int, help="kube-apiserver secure port on 127.0.0.1")
    common.add_argument("--etcd-port", type=int, help="etcd client port on 127.0.0.1")
    common.add_argument("--etcd-peer-port", type=int, help="etcd peer port on 127.0.0.1")
    common.add_argument("--kubelet-port", type=int, help="process kubelet's HTTPS port on 127.0.0.1")
    common.add_argument("--node-name", help="name of the Node the process kubelet registers")
    common.add_argument(
        "--feature-gates",
        help="the local training controller's feature gates, e.g. TrainJobStatus=false (default: TrainJobStatus on)",
    )
    common.add_argument(
        "--no-workloads", action="store_true", help="Kubernetes only: no local training controller, no process kubelet"
    )

    parser = argparse.ArgumentParser(
        prog="airflow-trainjob-local",
        description="The local Kubernetes of airflow-trainjob: etcd, kube-apiserver, kube-controller-manager, "
        "the kubeflow.org/v1 CRDs, a local training controller and a process kubelet, all on 127.0.0.1.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", parents=[common], help="start the cluster (builds the binaries on first use)")
    down = sub.add_parser("down", parents=[common], help="stop every process of the cluster")
    down.add_argument("--purge", action="store_true", help="also delete the state directory")
    sub.add_parser("status", parents=[common], help="report each process and the apiserver's readiness")
    sub.add_parser("build", help="only find or build the binaries (what `up` does first); print their directory")
    return parser


def _cluster(args: argparse.Namespace) -> LocalCluster:
    cluster = LocalCluster(
        args.state_dir, node_name=args.node_name, workloads=not args.no_workloads, feature_gates=args.feature_gates
    )
    singles = {
        "apiserver": args.apiserver_port,
        "etcd_client": args.etcd_port,
        "etcd_peer": args.etcd_peer_port,
        "kubelet": args.kubelet_port,
    }
    if args.port_base is not None or any(v is not None for v in singles.values()):
        ports = Ports.from_base(args.port_base) if args.port_base is not None else cluster.ports
        cluster = LocalCluster(
            args.state_dir,
            replace(ports, **{k: v for k, v in singles.items() if v is not None}),
            node_name=args.node_name,
            workloads=not args.no_workloads,
            feature_gates=args.feature_gates,
        )
    return cluster


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (also the console script's entry point)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "build":
            print(ensure_binaries().kube_apiserver.parent)
            return 0
        cluster = _cluster(args)
        if args.command == "up":
            cluster.up()
            print(cluster.env_line())
            return 0
        if args.command == "down":
            cluster.down(purge=args.purge)
            return 0
        status = cluster.status()
        print(f"state dir:  {cluster.state_dir}")
        print(f"kubeconfig: {status.kubeconfig}")
        for c in status.components:
            state = "running" if c.running else ("skipped" if c.note else "stopped")
            pid = f"pid {c.pid}" if c.running else ""
            print(f"  {c.name:<24} {state:<8} {pid:<11} {c.note or c.log}")
        print(f"apiserver {status.server}: {'ready' if status.apiserver_ready else 'not ready'}")
        return 0 if status.healthy else 1
    except (ClusterError, BuildError) as e:
        print(f"airflow-trainjob-local: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
