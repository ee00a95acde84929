"""TrainingJobHook against the local cluster: namespace resolution, access errors, CRUD."""

from __future__ import annotations

import json

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.exceptions import KubernetesAccessError
from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.models import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from tests.support.jobs import pytorch_specs

SECRET = "not-a-real-token-8c1f"


def kubeconfig_with_token(local_cluster, token: str) -> dict:
    config = yaml.safe_load(local_cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    return config


def connection(monkeypatch, extra: dict) -> str:
    monkeypatch.setenv("AIRFLOW_CONN_TRAINJOB_TEST", json.dumps({"conn_type": "kubernetes", "extra": extra}))
    return "trainjob_test"


def test_namespace_resolution(local_cluster, monkeypatch):
    path = str(local_cluster.kubeconfig)
    with_ns = TrainingJobHook(
        kubernetes_conn_id=connection(monkeypatch, {"kube_config_path": path, "namespace": "team-a"})
    )
    assert with_ns.resolve_namespace("explicit") == "explicit"
    assert with_ns.resolve_namespace(None) == "team-a"
    without = TrainingJobHook(kubernetes_conn_id=connection(monkeypatch, {"kube_config_path": path}))
    assert without.resolve_namespace(None) == "default"


def test_crud_roundtrip(kubernetes_default_conn, namespace):
    hook = TrainingJobHook()
    spec = TrainingJobSpec.parse("PyTorchJob", pytorch_specs("import time; time.sleep(60)", workers=0))
    created = hook.create_job(build_manifest(spec=spec, name="crud", namespace=namespace))
    assert created["metadata"]["uid"]
    with pytest.raises(ApiException) as conflict:
        hook.create_job(build_manifest(spec=spec, name="crud", namespace=namespace))
    assert conflict.value.status == 409
    patched = hook.patch_job("PyTorchJob", "crud", namespace, {"metadata": {"labels": {"stage": "patched"}}})
    assert patched["metadata"]["labels"]["stage"] == "patched"
    with pytest.raises(ApiException) as wrong_uid:
        hook.delete_job("PyTorchJob", "crud", namespace, uid="00000000-0000-0000-0000-000000000000")
    assert wrong_uid.value.status == 409  # the uid precondition protects a same-named successor
    assert hook.delete_job("PyTorchJob", "crud", namespace, uid=created["metadata"]["uid"]) is True
    assert hook.delete_job("PyTorchJob", "crud", namespace) is False  # 404 counts as done
    assert hook.delete_pod("no-such-pod", namespace) is False  # for pods too


def test_bad_token_is_a_clear_401_without_the_token(local_cluster, monkeypatch, namespace):
    conn_id = connection(monkeypatch, {"kube_config": kubeconfig_with_token(local_cluster, SECRET)})
    with pytest.raises(KubernetesAccessError) as raised:
        TrainingJobHook(kubernetes_conn_id=conn_id).get_job("PyTorchJob", "anything", namespace)
    message = str(raised.value)
    assert "401" in message and conn_id in message
    # Raised from None: the ApiException, whose str() is the response's headers and body, is not chained.
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert SECRET not in message and SECRET not in repr(raised.value)


def test_missing_permission_is_a_clear_403(local_cluster, monkeypatch, namespace, service_account_api_client):
    client = service_account_api_client("no-rights")
    token = client.configuration.api_key["BearerToken"]
    conn_id = connection(monkeypatch, {"kube_config": kubeconfig_with_token(local_cluster, token)})
    with pytest.raises(KubernetesAccessError) as raised:
        TrainingJobHook(kubernetes_conn_id=conn_id).list_job_pods("anything", namespace, kind="PyTorchJob")
    message = str(raised.value)
    assert "403" in message and "list a training job's pods" in message and "forbidden" in message.lower()
    assert token not in message
