"""The pure parts of the ``TrainJobStatus`` feature, no cluster: the trainer plugin's env and volume
(kubeflow/trainer v2.3.0 ``plugins/trainjobstatus``), the payload checks, the token helpers, the status server's
answers that need no apiserver, the process kubelet's volumes, the Job pod's service account, the gates flag."""

from __future__ import annotations

import argparse
import base64
import json
import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from airflow_trainjob_local import pki
from airflow_trainjob_local.cluster import LocalCluster, Ports
from airflow_trainjob_local.controller.__main__ import _feature_gates
from airflow_trainjob_local.jobset.pods import build_pod
from airflow_trainjob_local.kubelet.environment import ContainerConfigError
from airflow_trainjob_local.kubelet.volumes import materialize_volumes, rewrite_env_paths
from airflow_trainjob_local.trainer import trainjob_status as ts
from airflow_trainjob_local.trainer.spec import TrainJobView
from airflow_trainjob_local.trainer.status_auth import (
    Verdict,
    bearer_token,
    claimed_audiences,
    service_account_namespace,
)
from airflow_trainjob_local.trainer.status_payload import PayloadError, parse_update_request, trainer_status_patch
from airflow_trainjob_local.trainer.status_server import StatusServer

SETTINGS = ts.StatusServerSettings("https://127.0.0.1:29447", "CA PEM")


def _trainjob(name: str = "mnist", namespace: str = "team") -> TrainJobView:
    return TrainJobView.from_object(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace, "uid": "u-1"},
            "spec": {"runtimeRef": {"name": "torch-distributed"}},
        }
    )


def _job(name: str, ancestor: str, containers: list[str]) -> dict[str, Any]:
    pod = {"containers": [{"name": n, "env": [{"name": "KEEP", "value": "1"}]} for n in containers]}
    return {
        "name": name,
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}},
            "spec": {"template": {"spec": pod}},
        },
    }


# --- the plugin -------------------------------------------------------------------------------------------------


def test_every_trainer_container_gets_the_env_the_mount_and_the_pod_the_volume():
    spec = {
        "replicatedJobs": [
            _job("dataset-initializer", "dataset-initializer", ["d"]),
            _job("node", "trainer", ["node", "side"]),
        ]
    }
    ts.enforce_trainjob_status(spec, _trainjob(), SETTINGS)
    init_pod, node_pod = (job["template"]["spec"]["template"]["spec"] for job in spec["replicatedJobs"])
    assert init_pod == {"containers": [{"name": "d", "env": [{"name": "KEEP", "value": "1"}]}]}
    for container in node_pod["containers"]:
        assert container["env"] == [
            {"name": "KEEP", "value": "1"},
            {
                "name": "KUBEFLOW_TRAINER_SERVER_URL",
                "value": "https://127.0.0.1:29447/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/mnist/status",
            },
            {"name": "KUBEFLOW_TRAINER_SERVER_CA_CERT", "value": "/var/run/secrets/kubeflow/trainer/ca.crt"},
            {"name": "KUBEFLOW_TRAINER_SERVER_TOKEN", "value": "/var/run/secrets/kubeflow/trainer/token"},
        ]
        assert container["volumeMounts"] == [
            {"name": "kubeflow-trainer-token", "mountPath": "/var/run/secrets/kubeflow/trainer", "readOnly": True}
        ]
    assert node_pod["volumes"] == [
        {
            "name": "kubeflow-trainer-token",
            "projected": {
                "sources": [
                    {
                        "serviceAccountToken": {
                            "audience": "trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/mnist/status",
                            "expirationSeconds": 3600,
                            "path": "token",
                        }
                    },
                    {"configMap": {"name": "mnist-tls-config", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                ]
            },
        }
    ]
    # Applying twice changes nothing (upserts).
    again = json.loads(json.dumps(spec))
    ts.enforce_trainjob_status(again, _trainjob(), SETTINGS)
    assert again == spec


def test_the_tls_configmap_is_owned_by_the_trainjob():
    configmap = ts.tls_configmap(_trainjob(), SETTINGS)
    assert configmap["metadata"]["name"] == "mnist-tls-config"
    assert configmap["metadata"]["ownerReferences"][0]["name"] == "mnist"
    assert configmap["data"] == {"ca.crt": "CA PEM"}


# --- the payload ------------------------------------------------------------------------------------------------


def _parse(obj: Any) -> dict[str, Any]:
    return parse_update_request(json.dumps(obj).encode())


def _problems(obj: Any) -> list[str]:
    with pytest.raises(PayloadError) as info:
        _parse(obj)
    return info.value.problems


def test_a_valid_payload_is_echoed_in_struct_order_with_the_time_as_metav1_encodes_it():
    status = {
        "lastUpdatedTime": "2026-12-07T10:00:00.75+01:00",
        "metrics": [{"name": "loss", "value": "0.1"}],
        "estimatedRemainingSeconds": 0,
        "progressPercentage": 100,
    }
    parsed = _parse({"trainerStatus": status})
    assert json.dumps(parsed) == json.dumps(
        {
            "trainerStatus": {
                "progressPercentage": 100,
                "estimatedRemainingSeconds": 0,
                "metrics": [{"name": "loss", "value": "0.1"}],
                "lastUpdatedTime": "2026-12-07T09:00:00Z",
            }
        }
    )
    assert _parse({}) == {} and _parse({"trainerStatus": None}) == {}


def test_the_patch_names_every_field_so_the_last_report_is_replaced_whole():
    patch = trainer_status_patch(
        _parse({"trainerStatus": {"progressPercentage": 5, "lastUpdatedTime": "2026-01-01T00:00:00Z"}})
    )
    assert patch == {
        "status": {
            "trainerStatus": {
                "progressPercentage": 5,
                "estimatedRemainingSeconds": None,
                "metrics": None,
                "lastUpdatedTime": "2026-01-01T00:00:00Z",
            }
        }
    }


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"progressPercentage": 150}, "status.trainerStatus.progressPercentage: Invalid value: 150"),
        ({"progressPercentage": -1}, "status.trainerStatus.progressPercentage: Invalid value: -1"),
        ({"progressPercentage": "50"}, 'status.trainerStatus.progressPercentage: Invalid value: "50"'),
        ({"progressPercentage": True}, "status.trainerStatus.progressPercentage: Invalid value: true"),
        ({"estimatedRemainingSeconds": -5}, "status.trainerStatus.estimatedRemainingSeconds: Invalid value: -5"),
        (
            {"estimatedRemainingSeconds": 2**31},
            "status.trainerStatus.estimatedRemainingSeconds: Invalid value: 2147483648",
        ),
        ({"epoch": 3}, 'status.trainerStatus.epoch: Invalid value: unknown field "epoch"'),
        ({"metrics": [{"name": "loss", "value": 0.1}]}, "status.trainerStatus.metrics[0].value: Invalid value: 0.1"),
        ({"metrics": [{"name": "", "value": "1"}]}, 'status.trainerStatus.metrics[0].name: Invalid value: ""'),
        ({"metrics": [{"name": "x" * 65, "value": "1"}]}, "status.trainerStatus.metrics[0].name: Invalid value:"),
        (
            {"metrics": [{"name": "a", "value": "1", "step": 2}]},
            "status.trainerStatus.metrics[0].step: Invalid value: unknown field",
        ),
        ({"metrics": [{"name": "a", "value": "1"}] * 257}, "status.trainerStatus.metrics: Too many: 257"),
        ({"metrics": "loss"}, 'status.trainerStatus.metrics: Invalid value: "loss"'),
        ({"lastUpdatedTime": "2026-12-07T10:00:00"}, "status.trainerStatus.lastUpdatedTime: Invalid value:"),
        ({"lastUpdatedTime": "yesterday"}, 'status.trainerStatus.lastUpdatedTime: Invalid value: "yesterday"'),
    ],
)
def test_a_bad_field_is_named(status, expected):
    problems = _problems({"trainerStatus": {"lastUpdatedTime": "2026-12-07T10:00:00Z", **status}})
    assert any(p.startswith(expected) for p in problems), problems


def test_a_missing_time_and_other_shapes_are_refused():
    assert _problems({"trainerStatus": {"progressPercentage": 1}}) == [
        "status.trainerStatus.lastUpdatedTime: Required value: lastUpdatedTime is required when trainerStatus is present"
    ]
    assert _problems({"trainerStatus": 3}) == ["status.trainerStatus: Invalid value: must be an object"]
    assert _problems([1]) == ['request body must be a JSON object: {"trainerStatus": {...}}']
    assert _problems({"status": {}})[0].startswith('status: Invalid value: unknown field "status"')
    with pytest.raises(PayloadError, match="request body is not JSON"):
        parse_update_request(b"{nope")


# --- tokens -----------------------------------------------------------------------------------------------------


def _jwt(claims: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJSUzI1NiJ9.{body}.c2ln"


def test_the_bearer_token_is_read_as_upstream_reads_it():
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("  bearer \t abc  ") == "abc"
    for header in (None, "", "Bearer", "Basic abc", "Bearer a b", "abc"):
        assert bearer_token(header) is None, header


def test_the_claimed_audiences_and_the_service_account_namespace():
    assert claimed_audiences(_jwt({"aud": ["a", "b"]})) == ["a", "b"]
    assert claimed_audiences(_jwt({"aud": "a"})) == ["a"]
    assert claimed_audiences(_jwt({})) == []
    assert claimed_audiences("not-a-jwt") == [] and claimed_audiences("a.!!!.c") == []
    assert service_account_namespace("system:serviceaccount:team:default") == "team"
    assert service_account_namespace("admin") is None
    assert service_account_namespace("system:serviceaccount:team") is None


# --- the server's answers that need no apiserver ----------------------------------------------------------------


class _Refuses:
    def __init__(self, verdict: Verdict | None) -> None:
        self.verdict = verdict

    def authorize(self, header: str | None, namespace: str, name: str) -> Verdict:
        assert self.verdict is not None, "the token must not be looked at"
        return self.verdict


@pytest.fixture
def server_for(tmp_path: Path):
    pki.ensure_credentials(tmp_path)
    cert, key = pki.ensure_status_server_certificate(tmp_path)
    servers: list[StatusServer] = []

    def make(verdict: Verdict | None) -> StatusServer:
        server = StatusServer(
            client.ApiClient(), port=0, cert_file=str(cert), key_file=str(key), authorizer=_Refuses(verdict)
        )
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


PATH = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/mnist/status"


def test_the_server_answers_metav1_status_failures(server_for):
    idle = server_for(None)
    assert idle.handle("GET", PATH, None, b"").body == {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": "Not found",
        "reason": "NotFound",
        "code": 404,
    }
    assert idle.handle("POST", PATH + "/extra", "Bearer x", b"{}").code == 404
    assert idle.handle("POST", PATH, "Bearer x", None).code == 413
    assert server_for(Verdict.UNAUTHENTICATED).handle("POST", PATH, None, b"{}").body["code"] == 401
    assert server_for(Verdict.FORBIDDEN).handle("POST", PATH, "Bearer x", b"{}").body["reason"] == "Forbidden"
    allowed = server_for(Verdict.ALLOWED)
    reply = allowed.handle("POST", PATH, "Bearer x", b'{"trainerStatus": {"progressPercentage": 101}}')
    assert (reply.code, reply.body["reason"]) == (422, "Invalid")
    assert reply.body["message"].startswith('TrainJob.trainer.kubeflow.org "mnist" is invalid: [')
    assert (
        allowed.handle("POST", PATH, "Bearer x", b"{}").code,
        allowed.handle("POST", PATH, "Bearer x", b"{}").body,
    ) == (200, {})


def test_a_silent_connection_does_not_keep_others_waiting(server_for, tmp_path: Path):
    server = server_for(None)
    server.start()
    silent = socket.create_connection(("127.0.0.1", server.port))  # connects, never says hello
    try:
        context = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
        request = urllib.request.Request(f"https://127.0.0.1:{server.port}{PATH}")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, context=context, timeout=5)
        assert info.value.code == 404
        assert json.loads(info.value.read())["reason"] == "NotFound"
    finally:
        silent.close()


# --- the process kubelet's volumes ------------------------------------------------------------------------------


def _pod(volumes: list[dict[str, Any]], mounts: list[dict[str, Any]], account: str | None = None) -> tuple[dict, dict]:
    container = {"name": "node", "volumeMounts": mounts}
    spec: dict[str, Any] = {"containers": [container], "volumes": volumes}
    if account:
        spec["serviceAccountName"] = account
    return {"metadata": {"namespace": "team", "name": "p"}, "spec": spec}, container


def test_a_projected_token_and_configmap_are_written_and_env_paths_moved(tmp_path: Path):
    volume = ts._token_volume(_trainjob())
    pod, container = _pod([volume], [{"name": volume["name"], "mountPath": ts.MOUNT_PATH, "readOnly": True}], "sa")
    asked: list[tuple[str, str, int]] = []

    def token(account: str, audience: str, expiration: int) -> str:
        asked.append((account, audience, expiration))
        return "TOKEN"

    mounts = materialize_volumes(
        pod,
        container,
        tmp_path,
        get_config_map=lambda ns, name: (
            {"data": {"ca.crt": "PEM", "other": "x"}} if name == "mnist-tls-config" else None
        ),
        request_token=token,
    )
    host = tmp_path / "kubeflow-trainer-token"
    assert mounts == {ts.MOUNT_PATH: str(host)}
    assert asked == [("sa", ts.token_audience("team", "mnist"), 3600)]
    assert (host / "token").read_text() == "TOKEN" and (host / "token").stat().st_mode & 0o777 == 0o600
    assert (host / "ca.crt").read_text() == "PEM" and not (host / "other").exists()
    env = {"A": f"{ts.MOUNT_PATH}/token", "B": ts.MOUNT_PATH, "C": ts.MOUNT_PATH + "x/token", "D": "plain"}
    assert rewrite_env_paths(env, mounts) == {"A": f"{host}/token", "B": str(host), "C": env["C"], "D": "plain"}


def test_a_missing_configmap_waits_and_unsupported_volumes_are_ignored(tmp_path: Path):
    volumes = [{"name": "cm", "configMap": {"name": "gone"}}, {"name": "scratch", "emptyDir": {}}]
    mounts = [{"name": "cm", "mountPath": "/etc/cm"}, {"name": "scratch", "mountPath": "/scratch"}]
    pod, container = _pod(volumes, mounts)

    def materialize() -> dict[str, str]:
        return materialize_volumes(
            pod, container, tmp_path, get_config_map=lambda ns, name: None, request_token=lambda *a: "t"
        )

    with pytest.raises(ContainerConfigError, match='configmap "gone" not found'):
        materialize()
    pod["spec"]["volumes"][0]["configMap"]["optional"] = True
    assert materialize() == {"/etc/cm": str(tmp_path / "cm")}


def test_a_job_pod_projecting_a_token_names_the_default_service_account():
    job = {
        "metadata": {"name": "j", "namespace": "team", "uid": "u"},
        "spec": {"template": {"spec": {"containers": []}}},
    }
    assert "serviceAccountName" not in build_pod(job, 0)["spec"]
    job["spec"]["template"]["spec"]["volumes"] = [ts._token_volume(_trainjob())]
    assert build_pod(job, 0)["spec"]["serviceAccountName"] == "default"
    job["spec"]["template"]["spec"]["serviceAccountName"] = "trainer"
    assert build_pod(job, 0)["spec"]["serviceAccountName"] == "trainer"


# --- the gate and the port ----------------------------------------------------------------------------------------


def test_the_feature_gates_flag():
    assert _feature_gates("") == {"TrainJobStatus": True}
    assert _feature_gates("TrainJobStatus=false") == {"TrainJobStatus": False}
    for bad in ("TrainJobStatus", "Other=true", "TrainJobStatus=maybe"):
        with pytest.raises(argparse.ArgumentTypeError):
            _feature_gates(bad)


def test_the_status_server_port_is_the_clusters_own(tmp_path: Path):
    assert Ports.from_base(29443).status_server == 29447
    on = LocalCluster(tmp_path, Ports.from_base(29443))
    controller = next(x for x in on.components() if x.name == "controller")
    assert controller.ports == (29447,) and controller.ready is not None
    assert controller.argv[controller.argv.index("--status-server-port") + 1] == "29447"
    off = LocalCluster(tmp_path, Ports.from_base(29443), feature_gates="TrainJobStatus=false")
    controller = next(x for x in off.components() if x.name == "controller")
    assert controller.ready is None and controller.argv[-2:] == ("--feature-gates", "TrainJobStatus=false")
