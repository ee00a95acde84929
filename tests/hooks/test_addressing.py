"""``hooks/addressing``: how a job is addressed — group/version/plural, its pods' selector, a delete with a uid
precondition (no cluster)."""

from __future__ import annotations

import asyncio

import kubernetes.client
import kubernetes_asyncio.client
import pytest

from airflow_trainjob.constants import JOB_KINDS, LABEL_JOB_NAME
from airflow_trainjob.hooks import addressing
from airflow_trainjob.hooks.addressing import JobAddress


def test_every_kind_has_its_plural_and_resource():
    for kind, spec in JOB_KINDS.items():
        assert addressing.plural(kind) == spec.plural
        assert addressing.resource(kind) == f"{spec.plural}.kubeflow.org"
    assert addressing.plural("PyTorchJob") == "pytorchjobs"
    with pytest.raises(KeyError):
        addressing.plural("Deployment")


def test_an_address_gives_the_custom_object_arguments():
    job = JobAddress("PyTorchJob", "ml", "train")
    assert job.collection() == ("kubeflow.org", "v1", "ml", "pytorchjobs")
    assert job.object() == ("kubeflow.org", "v1", "ml", "pytorchjobs", "train")
    assert job.api_version == "kubeflow.org/v1"
    assert job.ref == str(job) == "PyTorchJob ml/train"
    every = JobAddress("TFJob", "ml")
    assert every.collection() == ("kubeflow.org", "v1", "ml", "tfjobs")
    assert str(every) == "tfjobs.kubeflow.org in namespace ml"
    with pytest.raises(ValueError):
        every.object()
    with pytest.raises(ValueError):
        _ = every.pod_selector
    hash(job)  # frozen: usable as a key


def test_the_pods_of_a_job_are_selected_by_the_operators_label():
    selector = addressing.job_pod_selector("train", kind="PyTorchJob")
    assert selector == f"{LABEL_JOB_NAME}=train" == "training.kubeflow.org/job-name=train"
    assert JobAddress("PyTorchJob", "ml", "train").pod_selector == selector
    assert addressing.job_pod_selector("train", kind="TrainJob") == "jobset.sigs.k8s.io/jobset-name=train"
    assert addressing.name_field_selector("train") == "metadata.name=train"
    assert addressing.involved_object_selector("train") == "involvedObject.name=train"


def test_delete_options_carry_the_uid_precondition():
    assert addressing.delete_options("u-1", "Background") == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "propagationPolicy": "Background",
        "preconditions": {"uid": "u-1"},
    }
    assert addressing.delete_options() == {"apiVersion": "v1", "kind": "DeleteOptions"}  # any object of the name
    assert "propagationPolicy" not in addressing.delete_options("u-1")


@pytest.mark.parametrize(
    "client", [kubernetes.client, kubernetes_asyncio.client], ids=["kubernetes", "kubernetes_asyncio"]
)
def test_both_clients_send_the_delete_body_as_their_own_model_would(client):
    """The dict is what either client's ``V1DeleteOptions`` serialises to, and each sends a dict as it is."""

    async def serialised():  # kubernetes_asyncio's ApiClient needs a running loop
        api = client.ApiClient()
        try:
            model = client.V1DeleteOptions(
                api_version="v1",
                kind="DeleteOptions",
                propagation_policy="Foreground",
                preconditions=client.V1Preconditions(uid="u-1"),
            )
            return api.sanitize_for_serialization(model), api.sanitize_for_serialization(body)
        finally:
            closed = api.close()
            if asyncio.iscoroutine(closed):
                await closed

    body = addressing.delete_options("u-1", "Foreground")
    modelled, sent = asyncio.run(serialised())
    assert sent == body == modelled
