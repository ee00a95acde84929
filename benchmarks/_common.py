"""What the benchmarks share: the apiserver's request counters, the jobs they create (a PyTorchJob, or a TrainJob
with ``--kind TrainJob``), the status a scripted writer gives each (playing the training operator, or Kubeflow
Trainer v2's controller, through the status subresource), and percentiles.

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GROUP, VERSION, PLURAL, KIND = "kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"
#: The ClusterTrainingRuntime the benchmarks' TrainJobs name: one the local cluster installs (``up``).
TRAINJOB_RUNTIME = "torch-distributed"

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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def train_job(name: str, namespace: str) -> dict:
    """A one-node TrainJob on the ``torch-distributed`` ClusterTrainingRuntime that no controller runs (the
    benchmarks' clusters have ``--no-workloads``: no trainer, no JobSet).

    :param name: its ``metadata.name``.
    :param namespace: its namespace.
    """
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runtimeRef": {
                "name": TRAINJOB_RUNTIME,
                "apiGroup": "trainer.kubeflow.org",
                "kind": "ClusterTrainingRuntime",
            },
            "trainer": {"image": "bench/none:0", "command": ["true"], "numNodes": 1},
        },
    }


def train_job_status(phase: str) -> dict:
    """The status patch Kubeflow Trainer v2's controller would write for ``phase``, in a TrainJob's words: for
    ``Running`` no condition (a TrainJob has no ``Running`` one) but ``jobsStatus`` with the ``node`` Job active and
    ready; else a true ``Complete`` condition (``metav1.Condition``: reason ``AllJobsCompleted``, as the trainer copies
    the JobSet's) and the ``node`` Job succeeded.

    :param phase: ``Running``, or anything else for ``Complete``.
    """

    def node_job(**counts: int) -> list[dict]:
        return [
            {"name": "node", **{k: counts.get(k, 0) for k in ("active", "failed", "ready", "succeeded", "suspended")}}
        ]

    if phase == "Running":
        return {"status": {"jobsStatus": node_job(active=1, ready=1)}}
    complete = {
        "type": "Complete",
        "status": "True",
        "reason": "AllJobsCompleted",
        "message": "jobset completed successfully",
        "lastTransitionTime": _now(),
    }
    return {"status": {"conditions": [complete], "jobsStatus": node_job(succeeded=1)}}


@dataclass(frozen=True)
class JobKind:
    """A kind the benchmarks create, wait on and finish (``--kind``).

    :param kind: the ``kind``, e.g. ``PyTorchJob``.
    :param group: its API group.
    :param version: its API version.
    :param plural: its resource in URLs (and in the apiserver's ``resource`` label).
    :param success: the condition type of its success (``Succeeded``; a TrainJob's ``Complete``).
    :param job: ``(name, namespace) -> manifest``.
    :param status: ``phase -> status patch`` (``Running``, else the success).
    """

    kind: str
    group: str
    version: str
    plural: str
    success: str
    job: Callable[[str, str], dict]
    status: Callable[[str], dict]

    def is_terminal(self, obj: dict) -> bool:
        """The job's success or ``Failed`` condition is ``"True"``: what a poller waits for.

        :param obj: the job, an API JSON dict.
        """
        conditions = (obj.get("status") or {}).get("conditions") or []
        return any(c.get("type") in (self.success, "Failed") and c.get("status") == "True" for c in conditions)


KINDS = {
    KIND: JobKind(KIND, GROUP, VERSION, PLURAL, "Succeeded", job, status),
    "TrainJob": JobKind(
        "TrainJob", "trainer.kubeflow.org", "v1alpha1", "trainjobs", "Complete", train_job, train_job_status
    ),
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
