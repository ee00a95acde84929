"""TrainingJobHook's retries under faults injected by the proxy, seen from the real apiserver's side."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob.exceptions import KubernetesAccessError
from airflow_trainjob.hooks.retries import ATTEMPTS
from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook, TrainingJobHook
from tests.support.fault_proxy import Fault

JOB = r"/pytorchjobs/h$"


@pytest.fixture
def hook(fault_proxy):
    return TrainingJobHook(kubernetes_conn_id="kubernetes_default")


def manifest(namespace):
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "h", "namespace": namespace},
        "spec": {"pytorchReplicaSpecs": {}},
    }


def uids(custom_objects, namespace):
    return [
        j["metadata"]["uid"]
        for j in custom_objects.list_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs")["items"]
    ]


def test_429_waits_as_long_as_retry_after_says(hook, fault_proxy, namespace):
    hook.create_job(manifest(namespace))
    fault = fault_proxy.add(Fault("status", method="GET", path=JOB, status=429, retry_after=2))
    started = time.monotonic()
    assert hook.get_job("PyTorchJob", "h", namespace)["metadata"]["name"] == "h"
    assert time.monotonic() - started >= 2  # the server's word, not the 0.5 s backoff
    assert fault_proxy.hits(fault) == 1


def test_a_fault_that_persists_is_raised_after_the_last_attempt(hook, fault_proxy, namespace):
    hook.create_job(manifest(namespace))
    fault = fault_proxy.add(Fault("status", method="GET", path=JOB, status=429, retry_after=0, times=None))
    with pytest.raises(ApiException) as raised:
        hook.get_job("PyTorchJob", "h", namespace)
    assert raised.value.status == 429
    assert fault_proxy.hits(fault) == ATTEMPTS


def test_answers_that_are_not_accidents_are_not_retried(hook, fault_proxy, namespace):
    fault = fault_proxy.add(Fault("status", method="GET", path=JOB, status=403, times=None))
    with pytest.raises(KubernetesAccessError) as raised:
        hook.get_job("PyTorchJob", "h", namespace)
    assert "403" in str(raised.value) and "kubernetes_default" in str(raised.value)
    assert fault_proxy.hits(fault) == 1


def test_create_whose_answer_was_lost_is_not_created_twice(hook, fault_proxy, namespace, custom_objects):
    fault = fault_proxy.add(Fault("reset", method="POST", path=r"/pytorchjobs$", after_forward=True))
    with pytest.raises(ApiException) as raised:  # the retry meets the object the lost attempt created
        hook.create_job(manifest(namespace))
    assert raised.value.status == 409  # which the operator turns into "attach to my own job"
    assert fault_proxy.hits(fault) == 1
    assert len(uids(custom_objects, namespace)) == 1


def test_delete_whose_answer_was_lost_counts_as_done(hook, fault_proxy, namespace, custom_objects):
    created = hook.create_job(manifest(namespace))
    fault = fault_proxy.add(Fault("status", method="DELETE", path=JOB, status=504, after_forward=True))
    assert hook.delete_job("PyTorchJob", "h", namespace, uid=created["metadata"]["uid"]) is False  # 404 on the retry
    assert fault_proxy.hits(fault) == 1
    assert uids(custom_objects, namespace) == []


def test_a_retry_is_logged_under_the_method_the_caller_called(hook, fault_proxy, namespace, caplog):
    """Both hooks send every operation through one sender (``_send``/``_send_async``); the retry's log line still
    names the public method that was called, of either hook."""
    hook.create_job(manifest(namespace))
    caplog.set_level(logging.WARNING, logger="airflow_trainjob.hooks.retries")

    def pods() -> Fault:
        return fault_proxy.add(Fault("status", method="GET", path=r"/pods$", status=503))  # once

    def job() -> Fault:
        return fault_proxy.add(Fault("status", method="GET", path=JOB, status=503))

    pods()
    assert hook.list_job_pods("h", namespace, kind="PyTorchJob") == []
    pods()
    assert hook.list_job_pods_and_version("h", namespace, kind="PyTorchJob")[0] == []
    job()
    assert hook.get_job("PyTorchJob", "h", namespace)["metadata"]["name"] == "h"

    async def read_async():
        async_hook = AsyncTrainingJobHook(kubernetes_conn_id="kubernetes_default")
        pods()
        assert await async_hook.list_job_pods_async("h", namespace, kind="PyTorchJob") == []
        job()
        return await async_hook.get_job_async("PyTorchJob", "h", namespace)

    assert asyncio.run(read_async())["metadata"]["name"] == "h"
    retried = [r.getMessage().split(" in ")[0] for r in caplog.records if r.getMessage().startswith("Retrying ")]
    assert retried == [
        "Retrying TrainingJobHook.list_job_pods",
        "Retrying TrainingJobHook.list_job_pods_and_version",
        "Retrying TrainingJobHook.get_job",
        "Retrying AsyncTrainingJobHook.list_job_pods_async",
        "Retrying AsyncTrainingJobHook.get_job_async",
    ]
    assert all(
        f"(attempt 1 of {ATTEMPTS} failed: 503" in r.getMessage()
        for r in caplog.records
        if "Retrying" in r.getMessage()
    )
