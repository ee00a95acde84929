"""The XCom summary of a finished TrainJob (found by the TrainJob example DAG: its ``report`` printed ``took None s``).

A TrainJob's status has no ``startTime``/``completionTime`` (kubeflow/trainer v2.3.0 ``TrainJobStatus``: conditions,
``jobsStatus``, ``trainerStatus``): the summary reads its run's times through its family (``run_times``: its creation,
or last admission, to its ``Complete``), as the operator's drivers call it.
"""

from __future__ import annotations

from airflow_trainjob.domain.summary import job_summary
from airflow_trainjob.families import family_of

COMPLETE_TRAINJOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "t", "namespace": "ml", "creationTimestamp": "2026-12-07T12:00:00Z"},
    "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
    "status": {
        "conditions": [
            {
                "type": "Complete",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": "2026-12-07T12:00:42Z",
            }
        ],
        "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}],
    },
}


def test_a_complete_trainjob_has_a_duration():
    summary = job_summary(COMPLETE_TRAINJOB, family_of("TrainJob"))
    assert (summary["startTime"], summary["completionTime"]) == ("2026-12-07T12:00:00Z", "2026-12-07T12:00:42Z")
    assert summary["duration"] == 42.0 and summary["jobsStatus"][0]["succeeded"] == 1
