"""The Trainer v2 adapter (:mod:`airflow_trainjob.families.trainer_v2`) on a TrainJob as the local cluster's trainer
and JobSet controllers write it, and on its pods as the JobSet's Jobs make them: suspended, resumed, complete; its two
nodes' pods found, told apart, led by node 0, whose ``node`` container's log is the run's."""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_api.models import TrainerV1alpha1TrainJob  # type: ignore[import-untyped]

from airflow_trainjob.families import trainer_v2
from airflow_trainjob_local.testing.waiting import wait_for
from tests.families.trainer_v2_objects import upstream_shape

FAMILY = trainer_v2.family("TrainJob")
GROUP, VERSION, PLURAL = FAMILY.resource.group, FAMILY.resource.version, FAMILY.resource.plural
SAY_INDEX = "import os; print('node', os.environ['JOB_COMPLETION_INDEX'], 'trained')"


def test_a_trainjob_suspended_resumed_and_complete_reads_through_the_adapter(custom_objects, core_v1, namespace):
    job = {
        "apiVersion": FAMILY.resource.api_version,
        "kind": "TrainJob",
        "metadata": {"name": "two-nodes"},
        "spec": {
            "runtimeRef": {"name": "plainml"},
            "trainer": {"numNodes": 2, "command": ["python", "-c", SAY_INDEX]},
            "suspend": True,
        },
    }
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, job)

    def read() -> dict[str, Any]:
        found: dict[str, Any] = custom_objects.get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "two-nodes"
        )
        return found

    suspended = wait_for(read, lambda j: FAMILY.phase(j.get("status")) == "Suspended", timeout=60, what="Suspended")
    assert FAMILY.has_condition(suspended["status"], "Suspended") and not FAMILY.is_terminal(suspended["status"])
    assert core_v1.list_namespaced_pod(namespace, label_selector=FAMILY.pod_selector("two-nodes")).items == []

    custom_objects.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "two-nodes", {"spec": {"suspend": False}}
    )
    done = wait_for(read, lambda j: FAMILY.is_terminal(j.get("status")), timeout=120, what="the end")
    upstream_shape(TrainerV1alpha1TrainJob, done)
    status = done["status"]
    assert FAMILY.is_succeeded(status) and not FAMILY.has_condition(status, "Suspended")
    resumed = next(c for c in status["conditions"] if c["type"] == "Suspended")
    assert (resumed["status"], resumed["reason"]) == ("False", "Resumed")
    assert FAMILY.summary(status, FAMILY.desired_replicas(done)) == (
        "Complete (AllJobsCompleted: jobset completed successfully) — node (2 nodes): 1 succeeded"
    )

    listed = core_v1.list_namespaced_pod(namespace, label_selector=FAMILY.pod_selector("two-nodes"))
    pods = [core_v1.api_client.sanitize_for_serialization(p) for p in listed.items]
    assert sorted(FAMILY.replica_of(p) for p in pods) == [("node", 0), ("node", 1)]
    lead = FAMILY.lead_pod(pods)
    assert lead is not None and FAMILY.replica_of(lead) == ("node", 0) and FAMILY.log_container(lead) == "node"
    index_0 = core_v1.list_namespaced_pod(namespace, label_selector=FAMILY.pod_selector("two-nodes", 0)).items
    assert [p.metadata.name for p in index_0] == [lead["metadata"]["name"]]
    log = core_v1.read_namespaced_pod_log(lead["metadata"]["name"], namespace, container="node")
    assert "node 0 trained" in log
    ends = FAMILY.container_ends(pods)
    assert sorted(e.replica for e in ends) == ["node-0", "node-1"] and not any(e.failed for e in ends)
