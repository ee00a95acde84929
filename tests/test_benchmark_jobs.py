"""The jobs the benchmarks create and the statuses their scripted writer sends (``benchmarks/_common.py``) are what
the provider's families read: a TrainJob in upstream's shape that the TrainJob family reads as ``Running``, then
``Complete``; and ``benchmarks/sync_wait.py`` splits the apiserver's counts between its trackers as documented."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
from kubeflow_trainer_api.models import (  # type: ignore[import-untyped]
    TrainerV1alpha1TrainJob,
    TrainerV1alpha1TrainJobStatus,
)

from airflow_trainjob import families
from tests.families.trainer_v2_objects import upstream_shape

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> tuple[ModuleType, ModuleType]:
    """``_common`` and ``sync_wait``, imported as the scripts import them (``benchmarks/`` on the path)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _common
        import sync_wait
    finally:
        sys.path.remove(str(BENCHMARKS))
    return _common, sync_wait


def test_the_trainjob_is_in_upstreams_shape_and_names_a_runtime_the_local_cluster_installs(bench):
    common, _ = bench
    job = common.KINDS["TrainJob"].job("bench-00001", "bench")
    upstream_shape(TrainerV1alpha1TrainJob, job)
    assert job["spec"]["runtimeRef"]["name"] == "torch-distributed" and job["metadata"]["namespace"] == "bench"


@pytest.mark.parametrize(
    ("kind", "phase", "read_as", "terminal"),
    [
        ("TrainJob", "Running", "Running", False),
        ("TrainJob", "Complete", "Complete", True),
        ("PyTorchJob", "Running", "Running", False),
        ("PyTorchJob", "Succeeded", "Succeeded", True),
    ],
)
def test_the_writers_status_is_what_the_family_reads(bench, kind, phase, read_as, terminal):
    common, _ = bench
    spec = common.KINDS[kind]
    status = spec.status(phase)["status"]
    family = families.family_of(kind)
    assert family.phase(status) == read_as
    assert family.is_terminal(status) is terminal and family.is_succeeded(status) is terminal
    assert spec.is_terminal({"status": status}) is terminal  # what the pollers stop at
    if kind == "TrainJob":
        upstream_shape(TrainerV1alpha1TrainJobStatus, status)


def test_the_trainjobs_complete_condition_is_a_metav1_condition_of_the_jobsets_reason(bench):
    common, _ = bench
    (complete,) = common.train_job_status("Complete")["status"]["conditions"]
    assert set(complete) == {"type", "status", "reason", "message", "lastTransitionTime"}
    assert (complete["type"], complete["status"], complete["reason"]) == ("Complete", "True", "AllJobsCompleted")
    assert "conditions" not in common.train_job_status("Running")["status"]  # a TrainJob has no Running condition


def test_the_sdk_v2s_requests_and_its_pod_lists_are_told_from_ours(bench):
    common, sync_wait = bench
    diff = Counter(
        {
            ("WATCH", "trainjobs", "", "namespace"): 3,
            ("LIST", "trainjobs", "", "namespace"): 50,  # 1.20's label for a GET of one custom object
            ("LIST", "trainjobs", "status", "namespace"): 15,
            ("PATCH", "trainjobs", "status", "namespace"): 3,
            ("LIST", "trainingruntimes", "", "namespace"): 50,
            ("GET", "clustertrainingruntimes", "", "resource"): 50,
            ("GET", "configmaps", "", "resource"): 3,
            ("LIST", "pods", "", "namespace"): 53,
            ("WATCH", "pods", "", "namespace"): 3,
            ("LIST", "pods", "", "cluster"): 7,  # the garbage collector's
        }
    )
    by = sync_wait.attribute(diff, common.KINDS["TrainJob"], ours_pod_lists=3)
    assert by["ours"] == Counter({"WATCH job": 3, "LIST pods": 3, "WATCH pods": 3})
    assert by["sdk"] == Counter(
        {
            "LIST job": 50,
            "LIST trainingruntime": 50,
            "GET clustertrainingruntime": 50,
            "GET configmap": 3,
            "LIST pods": 50,
        }
    )
    assert by["poll"] == Counter({"LIST job/status": 15}) and by["writer"] == Counter({"PATCH job/status": 3})


def test_for_the_v1_kinds_every_pod_request_stays_ours(bench):
    common, sync_wait = bench
    diff = Counter({("LIST", "pods", "", "namespace"): 10, ("LIST", "pytorchjobs", "", "namespace"): 131})
    by = sync_wait.attribute(diff, common.KINDS["PyTorchJob"], ours_pod_lists=0)
    assert by["ours"] == Counter({"LIST pods": 10}) and by["sdk"] == Counter({"LIST job": 131})
