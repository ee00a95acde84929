"""The widened family port (:class:`~airflow_trainjob.domain.family.JobFamily`) and its one lookup
(:func:`airflow_trainjob.families.family_of`): the ``kubeflow.org/v1`` adapter answers the drivers' questions as the
modules they read before did, and a made-up second family (:mod:`tests.families.toy`) goes through the drivers'
paths (addressing, the pods' selector, the link, the event, the trigger's judging) without any of them naming a
kind."""

from __future__ import annotations

import pytest

from airflow_trainjob.constants import JOB_KINDS, LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from airflow_trainjob.domain import cleanup_hold, conditions, failures, pods
from airflow_trainjob.domain.cleanup_hold import ANNOTATION_HELD_RUN_POLICY
from airflow_trainjob.domain.lifecycle import Finished, KeepWaiting, pods_stopped_at_terminal
from airflow_trainjob.families import family_of, family_or_none, is_known, known_kinds
from airflow_trainjob.hooks import requests
from airflow_trainjob.hooks.addressing import JobAddress, job_pod_selector
from airflow_trainjob.links.training_job import job_url
from airflow_trainjob.triggers.events import FINISHED, event_payload
from airflow_trainjob.triggers.training_job import TrainingJobTrigger
from tests.families import toy


def v1_pod(replica_type: str, index: int, container: str = "pytorch") -> dict:
    return {
        "metadata": {
            "name": f"train-{replica_type.lower()}-{index}",
            "labels": {LABEL_REPLICA_TYPE: replica_type.lower(), LABEL_REPLICA_INDEX: str(index)},
        },
        "spec": {"containers": [{"name": "sidecar"}, {"name": container}]},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {"name": container, "state": {"terminated": {"exitCode": 3, "finishedAt": "2026-12-07T04:00:00Z"}}}
            ],
        },
    }


# --- the lookup -------------------------------------------------------------------------------------------------


def test_the_lookup_finds_each_kind_of_both_families_and_nothing_else():
    assert known_kinds() == (*JOB_KINDS, "TrainJob")
    assert family_of("TrainJob").kind == "TrainJob" and is_known("TrainJob")
    for kind in JOB_KINDS:
        assert family_of(kind).kind == kind and is_known(kind) and family_or_none(kind) is not None
    for other in ("Deployment", "pytorchjob", "", None, 3):
        assert not is_known(other) and family_or_none(other) is None
    with pytest.raises(KeyError):
        family_of("Deployment")


# --- the v1 adapter's widened answers ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(JOB_KINDS))
def test_the_v1_address_is_the_kinds(kind):
    where = family_of(kind).resource
    assert (where.group, where.version, where.plural) == ("kubeflow.org", "v1", JOB_KINDS[kind].plural)
    assert where.api_version == "kubeflow.org/v1" and where.name == f"{JOB_KINDS[kind].plural}.kubeflow.org"
    assert JobAddress(kind, "ml", "t").object() == ("kubeflow.org", "v1", "ml", JOB_KINDS[kind].plural, "t")


def test_the_v1_pods_are_found_by_the_operators_job_name_label():
    family = family_of("TFJob")
    assert family.pod_selector("t") == f"{LABEL_JOB_NAME}=t" == job_pod_selector("t", kind="TFJob")
    assert family.pod_selector("t", 0) == f"{LABEL_JOB_NAME}=t,{LABEL_REPLICA_INDEX}=0"


def test_the_v1_replicas_lead_and_containers_are_the_domains():
    family, kind = family_of("PyTorchJob"), JOB_KINDS["PyTorchJob"]
    found = [v1_pod("Worker", 0), v1_pod("Master", 0)]
    assert family.lead_order == kind.lead_order
    assert family.replica_of(found[0]) == pods.replica_of(found[0], kind) == ("Worker", 0)
    assert family.lead_pod(found) is found[1]
    assert family.log_container(found[0]) == pods.log_container(found[0], kind) == "pytorch"
    assert family.container_ends(found) == failures.container_ends(found, kind)
    assert failures.last_replica_end(family.container_ends(found[:1])) == failures.replica_end(found[0], kind)


def test_the_v1_held_cleanup_is_cleanup_holds():
    family = family_of("PyTorchJob")
    job = {
        "metadata": {"uid": "u", "annotations": {ANNOTATION_HELD_RUN_POLICY: '{"cleanPodPolicy": "Running"}'}},
        "spec": {"runPolicy": {"cleanPodPolicy": "None"}},
    }
    assert family.cleanup_policy_field == "cleanPodPolicy"
    assert family.user_run_policy(job) == cleanup_hold.user_run_policy(job)


def test_the_v1_announced_end_is_the_operators_event():
    event = {"reason": "PyTorchJobFailed", "message": "x", "involvedObject": {"uid": "u"}}
    family = family_of("PyTorchJob")
    assert family.status_from_events([event], "u") == conditions.status_from_events([event], "PyTorchJob", "u")
    assert family.status_from_events([event], None) is None


def test_the_v1_spec_summary_keeps_counts_policies_and_container_names_only():
    spec = {
        "runPolicy": {"suspend": True, "cleanPodPolicy": "All"},
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {"spec": {"containers": [{"name": "pytorch", "env": [1]}]}},
            },
            "Worker": None,
        },
    }
    assert family_of("PyTorchJob").spec_summary(spec) == {
        "runPolicy": {"suspend": True},
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {"spec": {"containers": [{"name": "pytorch"}]}},
            },
            "Worker": {"template": {"spec": {"containers": []}}},
        },
    }


# --- a second family through the drivers ------------------------------------------------------------------------


def test_a_second_family_is_addressed_and_its_pods_selected_by_its_own_words(monkeypatch):
    with toy.registered(monkeypatch):
        address = JobAddress(toy.KIND, "ml", "t")
        assert address.object() == ("toy.example.org", "v1alpha1", "ml", "toyjobs", "t")
        assert address.api_version == "toy.example.org/v1alpha1" and address.resource == "toyjobs.toy.example.org"
        assert address.pod_selector == f"{toy.LABEL_JOB}=t"
        listing = requests.list_job_pods("t", "ml", 0, kind=toy.KIND)
        assert listing.options["label_selector"] == f"{toy.LABEL_JOB}=t,{toy.LABEL_INDEX}=0"
        assert job_url("/{kind}/{plural}/{namespace}/{name}", toy.KIND, "ml", "t") == "/ToyJob/toyjobs/ml/t"


def test_a_second_familys_event_keeps_what_its_family_summarises(monkeypatch):
    with toy.registered(monkeypatch):
        payload = event_payload(FINISHED, "done", toy.toy_job("Complete"))
    assert payload["job"]["spec"] == {"numNodes": 2}  # the toy's summary: never its pod template


def test_the_triggers_judging_reads_a_second_familys_conditions(monkeypatch):
    with toy.registered(monkeypatch):
        trigger = TrainingJobTrigger(
            kind=toy.KIND, name="t", namespace="ml", target_conditions=["Complete"], follow_lead_log=True
        )
        assert trigger.serialize()[1]["kind"] == toy.KIND
        assert isinstance(trigger._judge_seen(toy.toy_job("Created")), KeepWaiting)
        done = trigger._judge_seen(toy.toy_job("Complete"))
        assert isinstance(done, Finished) and not done.failed and done.summary == "Complete (toy)"
        failed = trigger._judge_seen(toy.toy_job("Failed"))
        assert isinstance(failed, Finished) and failed.failed


def test_the_held_cleanup_is_said_in_the_familys_words(monkeypatch):
    with toy.registered(monkeypatch):
        stop = pods_stopped_at_terminal("ToyJob ml/t", toy.toy_job("Failed"), [], family_of(toy.KIND))
    assert stop.pods == () and stop.line is None and stop.policy.held is False
