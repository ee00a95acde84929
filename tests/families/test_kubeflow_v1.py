"""The ``kubeflow.org/v1`` adapter (:mod:`airflow_trainjob.families.kubeflow_v1`): each of the six kinds answers the
lifecycle core's questions (:class:`~airflow_trainjob.domain.family.JobFamily`) as the domain's modules do."""

from __future__ import annotations

import pytest

from airflow_trainjob.constants import JOB_KINDS, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.family import JobFamily
from airflow_trainjob.families import kubeflow_v1


def status(*true: str) -> dict:
    return {"conditions": [{"type": t, "status": "True"} for t in true]}


@pytest.mark.parametrize("kind", sorted(JOB_KINDS))
def test_every_kind_has_its_adapter(kind):
    family: JobFamily = kubeflow_v1.family(kind)  # (mypy checks the adapter against the port)
    assert family.kind == kind and family.replica_types == JOB_KINDS[kind].replica_types


@pytest.mark.parametrize(
    "state", [(), ("Created",), ("Created", "Running"), ("Created", "Succeeded"), ("Created", "Running", "Failed")]
)
def test_what_a_status_means_is_the_conditions_modules(state):
    family = kubeflow_v1.family("PyTorchJob")
    seen = status(*state)
    assert family.is_failed(seen) == conditions.is_failed(seen)
    assert family.is_succeeded(seen) == conditions.is_succeeded(seen)
    assert family.is_terminal(seen) == conditions.is_terminal(seen)
    assert family.phase(seen) == conditions.phase(seen)
    assert family.summary(seen, {"Master": 1}) == conditions.summary(seen, {"Master": 1})
    assert family.has_condition(seen, "Running") == ("Running" in state)
    assert family.controller_has_acted(seen) == bool(state)


def test_replicas_and_the_lead_replica_are_the_kinds():
    family = kubeflow_v1.family("TFJob")
    job = {"spec": {"tfReplicaSpecs": {"chief": {"replicas": 1}, "Worker": {}}}}
    assert family.desired_replicas(job) == {"Chief": 1, "Worker": 1}
    pods = [
        {
            "metadata": {
                "name": p,
                "labels": {LABEL_REPLICA_TYPE: t, LABEL_REPLICA_INDEX: "0"},
            }
        }
        for p, t in (("w0", "worker"), ("c0", "chief"))
    ]
    assert (family.lead_pod(pods) or {})["metadata"]["name"] == "c0"


def test_an_unknown_kind_has_none():
    with pytest.raises(KeyError):
        kubeflow_v1.family("TrainJob")
