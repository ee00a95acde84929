"""What the benchmarks share: the apiserver's request counters, the PyTorchJob they create, the status a scripted
writer gives it (playing the training operator through the status subresource), and percentiles.

Standard library only: a tracker process may run it with another environment's interpreter (the Kubeflow SDK's).
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

GROUP, VERSION, PLURAL, KIND = "kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"

_SAMPLE = re.compile(r"^apiserver_request_total\{(.*)\}\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def request_counts(api_client: Any) -> Counter:
    """apiserver_request_total by (verb, resource, subresource, scope), from the apiserver's /metrics.

    :param api_client: a ``kubernetes.client.ApiClient`` of the cluster's admin.
    """
    resp = api_client.call_api(
        "/metrics", "GET", auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=True
    )
    counts: Counter[tuple[str | None, ...]] = Counter()
    for line in resp.data.decode().splitlines():
        m = _SAMPLE.match(line)
        if m:
            lab = dict(_LABEL.findall(m.group(1)))
            counts[(lab.get("verb"), lab.get("resource"), lab.get("subresource", ""), lab.get("scope"))] += int(
                float(m.group(2))
            )  # a counter: a whole number, printed as a float
    return counts


def job(name: str, namespace: str) -> dict:
    """A one-Master PyTorchJob that no controller runs (the benchmarks' clusters have ``--no-workloads``).

    :param name: its ``metadata.name``.
    :param namespace: its namespace.
    """
    container = {"name": "pytorch", "image": "bench/none:0", "command": ["true"]}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}
            },
            "runPolicy": {"cleanPodPolicy": "None"},
        },
    }


def status(phase: str) -> dict:
    """The status patch the training operator would write for ``phase`` (``Running`` or ``Succeeded``).

    :param phase: ``Running``, or anything else for ``Succeeded``.
    """
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def cond(condition_type: str, value: str) -> dict:
        return {
            "type": condition_type,
            "status": value,
            "reason": f"PyTorchJob{condition_type}",
            "message": f"bench {condition_type}",
            "lastUpdateTime": now,
            "lastTransitionTime": now,
        }

    if phase == "Running":
        return {
            "status": {
                "conditions": [cond("Created", "True"), cond("Running", "True")],
                "replicaStatuses": {"Master": {"active": 1}},
                "startTime": now,
            }
        }
    return {
        "status": {
            "conditions": [cond("Created", "True"), cond("Running", "False"), cond("Succeeded", "True")],
            "replicaStatuses": {"Master": {"succeeded": 1}},
            "completionTime": now,
        }
    }


def pct(values: list[float], q: int) -> float:
    """The ``q``-th percentile of ``values`` (inclusive method; the value itself for one).

    :param values: the sample (at least one).
    :param q: the percentile, 1-99.
    """
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def say(msg: str) -> None:
    """A progress line on stderr (stdout holds the table).

    :param msg: the line.
    """
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def stop_processes(procs: Iterable[subprocess.Popen]) -> None:
    """Kill the tracker processes that still run, and reap them.

    :param procs: the processes the run started.
    """
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def end_run(cluster: Any, work: Path, keep: bool, procs: Iterable[subprocess.Popen] = ()) -> None:
    """A run's end, whatever way it ends: its trackers killed, its cluster stopped, its work dir kept or removed.

    :param cluster: the local cluster the run started; None: one it was given, left running.
    :param work: the run's work dir (logs, tracker results).
    :param keep: keep ``work`` (and say where it is) instead of removing it.
    :param procs: the tracker processes the run started.
    """
    stop_processes(procs)
    if cluster is not None:
        cluster.down()
    if keep:
        say(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
