"""The compact observation of a job the shared stream and the UI cache keep (issue 25, "a compact cache"): what the
provider reads of a job, and that much only; read as the job by the code that reads jobs."""

from __future__ import annotations

import copy
import gc
import json
from datetime import datetime, timezone

import pytest

from airflow_trainjob.constants import JOB_KINDS, LABEL_KUEUE_QUEUE_NAME, LABEL_PREFIX
from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.cleanup_hold import ANNOTATION_HELD_RUN_POLICY, user_run_policy
from airflow_trainjob.domain.deadlines import queue_state
from airflow_trainjob.domain.observation import Observed, frozen_observation, observe
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.families import family_of
from airflow_trainjob.triggers.events import FINISHED, event_payload

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
IDENTITY = TaskInstanceIdentity(dag_id="dag", task_id="train", run_id="manual__1", map_index=-1, try_number=1)


def _condition(kind: str, when: str) -> dict:
    return {
        "type": kind,
        "status": "True",
        "reason": f"PyTorchJob{kind}",
        "message": f"PyTorchJob ml/train is {kind.lower()}.",
        "lastUpdateTime": when,
        "lastTransitionTime": when,
    }


def _replica(replicas: int) -> dict:
    container = {
        "name": "pytorch",
        "image": "trainer:1",
        "env": [{"name": "HF_TOKEN", "value": "hf_secret"}],
        "args": ["python", "-c", "train()"],
    }
    return {
        "replicas": replicas,
        "restartPolicy": "OnFailure",
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [container]}},
    }


def whole_job(name: str = "train", **status: object) -> dict:
    """A job as the API returns it, with what the observation leaves out."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"uid-{name}",
            "resourceVersion": "4711",
            "generation": 1,
            "creationTimestamp": "2026-12-07T01:00:00Z",
            "labels": {**IDENTITY.labels(), LABEL_KUEUE_QUEUE_NAME: "team-a", "team": "nlp"},
            "annotations": {
                **IDENTITY.annotations(),
                ANNOTATION_HELD_RUN_POLICY: json.dumps({"cleanPodPolicy": "All"}),
                LAST_APPLIED: json.dumps({"spec": {"huge": "x" * 1000}}),
                "example.com/other": "not read",
            },
            "managedFields": [{"manager": "training-operator", "fieldsV1": {"f:status": {}}}],
        },
        "spec": {
            "pytorchReplicaSpecs": {"Master": _replica(1), "Worker": _replica(3)},
            "runPolicy": {"cleanPodPolicy": "None", "suspend": False, "backoffLimit": 2},
        },
        "status": {
            "conditions": [
                _condition("Created", "2026-12-07T01:00:01Z"),
                _condition("Running", "2026-12-07T01:00:09Z"),
            ],
            "replicaStatuses": {
                "Master": {"active": 1, "selector": "training.kubeflow.org/job-name=train"},
                "Worker": {"active": 2, "failed": 1, "labelSelector": {"matchLabels": {"a": "b"}}},
            },
            "startTime": "2026-12-07T01:00:09Z",
            **status,
        },
    }


def test_the_observation_keeps_what_the_provider_reads_and_nothing_else():
    seen = observe(whole_job())
    meta = seen["metadata"]
    assert {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")} == {
        "name": "train",
        "namespace": "ml",
        "uid": "uid-train",
        "resourceVersion": "4711",
        "creationTimestamp": "2026-12-07T01:00:00Z",
    }
    assert "managedFields" not in meta
    assert meta["labels"] == whole_job()["metadata"]["labels"]
    assert set(meta["annotations"]) == {ANNOTATION_HELD_RUN_POLICY, *IDENTITY.annotations()}  # no last-applied
    assert all(k.startswith(LABEL_PREFIX) for k in meta["annotations"])
    master = seen["spec"]["pytorchReplicaSpecs"]["Master"]
    assert master == {
        "replicas": 1,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [{"name": "pytorch"}]}},
    }
    assert seen["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "suspend": False, "backoffLimit": 2}
    assert seen["status"]["replicaStatuses"] == {"Master": {"active": 1}, "Worker": {"active": 2, "failed": 1}}
    assert seen["status"]["conditions"] == whole_job()["status"]["conditions"]
    assert "hf_secret" not in repr(seen) and "huge" not in repr(seen)


def test_the_readers_read_the_observation_as_they_read_the_job():
    job = whole_job()
    seen = observe(job)
    kind = JOB_KINDS["PyTorchJob"]
    assert conditions.phase(seen.get("status")) == conditions.phase(job["status"]) == "Running"
    assert kind.desired_replicas(seen) == kind.desired_replicas(job) == {"Master": 1, "Worker": 3}
    assert user_run_policy(seen) == user_run_policy(job)
    family = family_of(job["kind"])
    assert queue_state(seen, family) == queue_state(job, family)
    line = conditions.progress_line("PyTorchJob ml/train", seen.get("status"), kind.desired_replicas(seen))
    assert line == conditions.progress_line("PyTorchJob ml/train", job["status"], kind.desired_replicas(job))


def test_the_triggers_event_and_the_ui_row_are_the_same_from_the_observation():
    from airflow_trainjob.ui.views import job_identity, job_row

    job = whole_job(completionTime="2026-12-07T02:00:00Z")
    job["status"]["conditions"].append(_condition("Succeeded", "2026-12-07T02:00:00Z"))
    seen = observe(job)
    assert event_payload(FINISHED, "done", seen) == event_payload(FINISHED, "done", job)
    json.dumps(event_payload(FINISHED, "done", seen))  # plain JSON: Airflow stores it
    now = datetime(2026, 12, 7, 3, tzinfo=timezone.utc)
    assert job_identity(seen) == job_identity(job) == IDENTITY
    assert job_row(seen, IDENTITY, now) == job_row(job, IDENTITY, now)


def test_an_observation_cannot_be_changed_and_what_it_gives_out_is_a_copy():
    seen = observe(whole_job())
    with pytest.raises(TypeError):
        seen["kind"] = "TFJob"
    seen["status"]["conditions"].clear()  # a new list: changes nothing kept
    seen["metadata"]["labels"]["team"] = "cv"  # a new dict
    assert len(seen["status"]["conditions"]) == 2 and seen["metadata"]["labels"]["team"] == "nlp"
    plain = copy.deepcopy(seen)
    assert type(plain) is dict and plain == seen == seen.thaw() and json.loads(json.dumps(plain)) == plain
    assert copy.copy(seen) is seen and observe(seen) is seen


def test_jobs_of_one_structure_share_their_shape_and_are_one_untracked_tuple_each():
    frozen = [frozen_observation(whole_job(f"job-{i}")) for i in range(200)]
    assert len({f[0] for f in frozen}) == 1 and all(type(f) is tuple for f in frozen)
    gc.collect(0)
    assert not any(gc.is_tracked(f) for f in frozen)
    assert Observed(frozen[7])["metadata"]["name"] == "job-7"


def test_labels_of_anyones_choosing_make_no_new_shape():
    """Their keys are among the leaves: a shape says only how many there are."""
    first = frozen_observation(whole_job("a"))
    other = whole_job("b")
    count = len(other["metadata"]["labels"])
    other["metadata"]["labels"] = {f"example.com/key-{i}": str(i) for i in range(count)}  # as many, other keys
    assert frozen_observation(other)[0] == first[0]
