"""The ``TrainJobStatus`` feature on the session cluster (on by default locally): the trainer's containers get
upstream's three env vars and the projected token volume (kubeflow/trainer v2.3.0
``pkg/runtime/framework/plugins/trainjobstatus/trainjobstatus.go``), a node posts its progress as upstream's
``test/e2e/testdata/status_update.py`` does, and the status server (``pkg/statusserver/server.go``) writes it to
``status.trainerStatus``, read back through the API; it refuses requests without a valid token (401), with a token of
another TrainJob (403) and bad payloads (422, naming the field, nothing written). With the gate off (a controller
run by the test on the Kubernetes-only cluster) the JobSet carries none of it.
"""

from __future__ import annotations

import functools
import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client

from airflow_trainjob_local.controller.events import EventRecorder
from airflow_trainjob_local.controller.ports import PortAllocator
from airflow_trainjob_local.testing import waiting
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer import trainjob_status as ts
from airflow_trainjob_local.trainer.reconciler import Reconciler, TrainJobKey
from airflow_trainjob_local.trainer.runtimes import PLAINML

TIMEOUT = 180.0
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT, interval=1.0)

#: What a node runs: upstream's e2e status_update.py in substance (stdlib; one report; prints the answer).
REPORT = """
import json, os, ssl
from urllib import error, request

url = os.environ["KUBEFLOW_TRAINER_SERVER_URL"]
context = ssl.create_default_context(cafile=os.environ["KUBEFLOW_TRAINER_SERVER_CA_CERT"])
token = open(os.environ["KUBEFLOW_TRAINER_SERVER_TOKEN"]).read().strip()
payload = {"trainerStatus": {"progressPercentage": 42, "estimatedRemainingSeconds": 120,
    "metrics": [{"name": "loss", "value": "0.123"}, {"name": "accuracy", "value": "0.95"}],
    "lastUpdatedTime": "2026-12-07T10:00:00.250+01:00"}}
req = request.Request(url, data=json.dumps(payload).encode(), headers={"Authorization": "Bearer " + token})
try:
    resp = request.urlopen(req, context=context, timeout=10)
except error.HTTPError as ex:
    print("status update failed", ex.code, ex.read().decode(), flush=True)
    raise
print("status update", resp.getcode(), resp.read().decode().strip(), flush=True)
"""

REPORTED = {
    "progressPercentage": 42,
    "estimatedRemainingSeconds": 120,
    "metrics": [{"name": "loss", "value": "0.123"}, {"name": "accuracy", "value": "0.95"}],
    "lastUpdatedTime": "2026-12-07T09:00:00Z",
}


@pytest.fixture
def workloads(local_cluster: Any) -> None:
    if not local_cluster.workloads:
        pytest.skip("the session cluster runs without the controllers and the process kubelet")


def _trainjob(name: str, command: list[str], *, suspend: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeRef": {"name": PLAINML}, "trainer": {"command": command}}
    if suspend:
        spec["suspend"] = True
    return {"apiVersion": c.API_VERSION, "kind": c.TRAINJOB_KIND, "metadata": {"name": name}, "spec": spec}


def _read(custom: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    return custom.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, name)


def _finished(tj: dict[str, Any]) -> bool:
    conditions = (tj.get("status") or {}).get("conditions") or []
    return any(x["type"] in ("Complete", "Failed") and x["status"] == "True" for x in conditions)


def _node_log(core: client.CoreV1Api, namespace: str, name: str) -> str:
    pods = core.list_namespaced_pod(namespace, label_selector=f"jobset.sigs.k8s.io/jobset-name={name}").items
    assert len(pods) == 1, [p.metadata.name for p in pods]
    response = core.read_namespaced_pod_log(pods[0].metadata.name, namespace, container=c.NODE, _preload_content=False)
    try:
        return str(response.data.decode())
    finally:
        response.release_conn()


def test_a_node_reports_progress_into_the_trainjob_status(workloads, local_cluster, custom_objects, core_v1, namespace):
    custom_objects.create_namespaced_custom_object(
        c.GROUP, c.VERSION, namespace, c.TRAINJOBS, _trainjob("reports", ["python", "-c", REPORT])
    )
    trainjob = wait_for(functools.partial(_read, custom_objects, namespace, "reports"), _finished, what="TrainJob ends")
    log = _node_log(core_v1, namespace, "reports")
    conditions = {x["type"]: x for x in trainjob["status"]["conditions"]}
    assert "Complete" in conditions, (conditions, log)
    # 200 with the parsed payload (the time in UTC, whole seconds, as metav1.Time encodes it).
    assert f"status update 200 {json.dumps({'trainerStatus': REPORTED})}" in log, log
    assert trainjob["status"]["trainerStatus"] == REPORTED

    # What the node was given: upstream's env, mount and projected volume; the CA ConfigMap beside the JobSet.
    pod = core_v1.list_namespaced_pod(namespace, label_selector="jobset.sigs.k8s.io/jobset-name=reports").items[0]
    env = {e.name: e.value for e in pod.spec.containers[0].env or []}
    assert env[ts.ENV_SERVER_URL] == (
        f"https://127.0.0.1:{local_cluster.ports.status_server}"
        f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/reports/status"
    )
    assert env[ts.ENV_CA_CERT] == "/var/run/secrets/kubeflow/trainer/ca.crt"
    assert env[ts.ENV_TOKEN] == "/var/run/secrets/kubeflow/trainer/token"
    volume = next(v for v in pod.spec.volumes if v.name == "kubeflow-trainer-token")
    token_source = volume.projected.sources[0].service_account_token
    assert token_source.audience == f"trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/reports/status"
    assert token_source.expiration_seconds == 3600
    configmap = core_v1.read_namespaced_config_map("reports-tls-config", namespace)
    assert configmap.data["ca.crt"] == local_cluster.ca_cert.read_text()
    assert configmap.metadata.owner_references[0].name == "reports"


# --- requests from the test itself ------------------------------------------------------------------------------


def _post(cluster: Any, namespace: str, name: str, body: Any, token: str | None) -> tuple[int, dict[str, Any]]:
    url = f"https://127.0.0.1:{cluster.ports.status_server}{ts.status_path(namespace, name)}"
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    context = ssl.create_default_context(cafile=str(cluster.ca_cert))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _token(core: client.CoreV1Api, namespace: str, audience: str) -> str:
    """A token of service account ``reporter`` in ``namespace`` (created when missing) for ``audience``."""
    try:
        core.create_namespaced_service_account(namespace, client.V1ServiceAccount(metadata={"name": "reporter"}))
    except client.exceptions.ApiException as exc:
        if exc.status != 409:
            raise
    spec = client.V1TokenRequestSpec(audiences=[audience], expiration_seconds=600)
    request = client.AuthenticationV1TokenRequest(spec=spec)
    return str(core.create_namespaced_service_account_token("reporter", namespace, request).status.token)


@pytest.fixture
def target(workloads, custom_objects, namespace) -> str:
    """A suspended TrainJob ``target`` (nothing runs): the status server writes its status all the same."""
    body = _trainjob("target", ["python", "-c", "pass"], suspend=True)
    custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, body)
    return "target"


def _failure(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code}


def _without_message(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "message"}


def test_a_request_without_a_valid_token_is_refused_with_401(local_cluster, core_v1, custom_objects, namespace, target):
    valid = {"trainerStatus": REPORTED}
    for token in (None, "", "not-a-token", "a.b.c"):
        code, body = _post(local_cluster, namespace, target, valid, token)
        assert (code, _without_message(body)) == (401, _failure(401, "Unauthorized")), token
    assert "trainerStatus" not in (_read(custom_objects, namespace, target).get("status") or {})


def test_a_token_of_another_trainjob_is_refused_with_403(
    local_cluster, core_v1, custom_objects, core_v1_other_namespace, namespace, target
):
    others = [
        _token(core_v1, namespace, ts.token_audience(namespace, "another")),  # another TrainJob's audience
        _token(core_v1_other_namespace, core_v1_other_namespace.namespace, ts.token_audience(namespace, target)),
    ]
    for token in others:
        code, body = _post(local_cluster, namespace, target, {"trainerStatus": REPORTED}, token)
        assert (code, _without_message(body)) == (403, _failure(403, "Forbidden"))
    assert "trainerStatus" not in (_read(custom_objects, namespace, target).get("status") or {})


def test_a_bad_payload_is_refused_with_422_naming_the_field(local_cluster, core_v1, custom_objects, namespace, target):
    token = _token(core_v1, namespace, ts.token_audience(namespace, target))
    bad = {"trainerStatus": {**REPORTED, "progressPercentage": 150, "epoch": 3}}
    code, body = _post(local_cluster, namespace, target, bad, token)
    assert (code, _without_message(body)) == (422, _failure(422, "Invalid"))
    assert body["message"].startswith(f'TrainJob.trainer.kubeflow.org "{target}" is invalid: ')
    assert "status.trainerStatus.progressPercentage: Invalid value: 150" in body["message"]
    assert 'status.trainerStatus.epoch: Invalid value: unknown field "epoch"' in body["message"]
    code, body = _post(local_cluster, namespace, target, b"{not json", token)
    assert (code, _without_message(body)) == (422, _failure(422, "Invalid"))
    assert "trainerStatus" not in (_read(custom_objects, namespace, target).get("status") or {})


def test_a_valid_report_is_written_and_replaces_the_last(local_cluster, core_v1, custom_objects, namespace, target):
    token = _token(core_v1, namespace, ts.token_audience(namespace, target))
    assert _post(local_cluster, namespace, target, {"trainerStatus": REPORTED}, token) == (
        200,
        {"trainerStatus": REPORTED},
    )
    assert _read(custom_objects, namespace, target)["status"]["trainerStatus"] == REPORTED
    later = {"progressPercentage": 50, "lastUpdatedTime": "2026-12-07T09:01:00Z"}
    assert _post(local_cluster, namespace, target, {"trainerStatus": later}, token) == (200, {"trainerStatus": later})
    # Replaced whole, as upstream's apply by its one field manager: no metrics, no estimate left over.
    assert _read(custom_objects, namespace, target)["status"]["trainerStatus"] == later
    # No trainerStatus: 200, nothing written.
    assert _post(local_cluster, namespace, target, {}, token) == (200, {})
    assert _read(custom_objects, namespace, target)["status"]["trainerStatus"] == later


def test_a_report_for_a_missing_trainjob_is_404(local_cluster, core_v1, namespace, workloads):
    token = _token(core_v1, namespace, ts.token_audience(namespace, "missing"))
    code, body = _post(local_cluster, namespace, "missing", {"trainerStatus": REPORTED}, token)
    assert (code, _without_message(body)) == (404, _failure(404, "NotFound"))


@pytest.fixture
def core_v1_other_namespace(core_v1, kube_api_client) -> Any:
    """A CoreV1Api with ``.namespace``: a second fresh namespace, deleted afterwards."""
    import uuid

    name = f"t-other-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    api = client.CoreV1Api(kube_api_client)
    api.namespace = name
    yield api
    core_v1.delete_namespace(name)


# --- the gate off -----------------------------------------------------------------------------------------------


def _node_env_after_reconcile(cluster: Any, namespace: str, name: str, settings: ts.StatusServerSettings | None):
    api_client = cluster.api_client()
    custom = client.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, _trainjob(name, ["true"]))
    reconciler = Reconciler(api_client, EventRecorder(api_client), PortAllocator(), status_server=settings)
    reconciler.reconcile(TrainJobKey(namespace, name))
    jobset = custom.get_namespaced_custom_object(c.JOBSET_GROUP, c.JOBSET_VERSION, namespace, c.JOBSETS, name)
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return {e["name"] for e in pod["containers"][0].get("env") or []}, [v["name"] for v in pod.get("volumes") or []]


def test_with_the_gate_off_the_trainer_gets_no_status_server(kubernetes_only_cluster):
    """A controller run by the test (no other runs on this cluster): off, then on for contrast."""
    core = client.CoreV1Api(kubernetes_only_cluster.api_client())
    namespace = "gate-" + __import__("uuid").uuid4().hex[:6]
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        env, volumes = _node_env_after_reconcile(kubernetes_only_cluster, namespace, "off", None)
        assert not env & {ts.ENV_SERVER_URL, ts.ENV_CA_CERT, ts.ENV_TOKEN}
        assert "kubeflow-trainer-token" not in volumes
        settings = ts.StatusServerSettings("https://127.0.0.1:1", "PEM")
        env, volumes = _node_env_after_reconcile(kubernetes_only_cluster, namespace, "on", settings)
        assert {ts.ENV_SERVER_URL, ts.ENV_CA_CERT, ts.ENV_TOKEN} <= env
        assert "kubeflow-trainer-token" in volumes
        assert core.read_namespaced_config_map("on-tls-config", namespace).data == {"ca.crt": "PEM"}
    finally:
        core.delete_namespace(namespace)
