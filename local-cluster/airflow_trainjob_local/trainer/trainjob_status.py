"""The ``TrainJobStatus`` plugin (kubeflow/trainer ``v2.3.0``
``pkg/runtime/framework/plugins/trainjobstatus/trainjobstatus.go``), pure: what the trainer adds to a TrainJob's
JobSet and objects when the feature gate is on, so that its trainer containers can report progress to the status
server (:mod:`.status_server`).

Every container of the ``trainer`` ancestor's pods gets upstream's three env vars (the server's URL for this
TrainJob, the paths of the CA certificate and of the token) and the read-only mount of one projected volume: a
service-account token with the TrainJob-specific audience (1 h) and the ``ca.crt`` of the ConfigMap
``<trainjob>-tls-config``, which the trainer writes beside the JobSet. Locally the URL names ``127.0.0.1`` and the
status server's port instead of the webhook Service; the process kubelet materializes the volume
(:mod:`airflow_trainjob_local.kubelet.volumes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.merge import upsert_env, upsert_volume_mounts, upsert_volumes
from airflow_trainjob_local.trainer.spec import TrainJobView
from airflow_trainjob_local.trainer.template import ancestor_of, owner_reference, pod_spec

__all__ = [
    "ENV_CA_CERT",
    "ENV_SERVER_URL",
    "ENV_TOKEN",
    "FEATURE_GATE",
    "StatusServerSettings",
    "enforce_trainjob_status",
    "status_path",
    "tls_configmap",
    "tls_configmap_name",
    "token_audience",
]

#: The feature gate's name (``pkg/features/features.go``).
FEATURE_GATE = "TrainJobStatus"

ENV_SERVER_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"

MOUNT_PATH = "/var/run/secrets/kubeflow/trainer"
CA_CERT_FILE = "ca.crt"
TOKEN_FILE = "token"
TOKEN_VOLUME = "kubeflow-trainer-token"
TOKEN_EXPIRY_SECONDS = 3600
#: The key of the CA certificate in the ``<trainjob>-tls-config`` ConfigMap.
CA_CERT_KEY = "ca.crt"
TLS_CONFIGMAP_SUFFIX = "-tls-config"
#: Prefix of a token's audience (``pkg/statusserver/utils.go``).
TOKEN_AUDIENCE_PREFIX = "trainer.kubeflow.org"


@dataclass(frozen=True)
class StatusServerSettings:
    """Where the trainer containers reach the status server.

    :param base_url: scheme, host and port, e.g. ``https://127.0.0.1:29447`` (upstream:
        ``https://<webhook service>.<namespace>.svc:<port>``).
    :param ca_cert_pem: the PEM of the CA that signed the server's certificate (upstream: ``ca.crt`` of the
        webhook's TLS Secret), copied into each TrainJob's ``<trainjob>-tls-config`` ConfigMap.
    """

    base_url: str
    ca_cert_pem: str


def status_path(namespace: str, name: str) -> str:
    """The path a TrainJob's status is posted to (upstream's ``StatusUrl``).

    :param namespace: the TrainJob's namespace.
    :param name: the TrainJob's name.
    """
    return f"/apis/{c.GROUP}/{c.VERSION}/namespaces/{namespace}/trainjobs/{name}/status"


def token_audience(namespace: str, name: str) -> str:
    """The audience of a token that may update this TrainJob's status (upstream's ``TokenAudience``).

    :param namespace: the TrainJob's namespace.
    :param name: the TrainJob's name.
    """
    return f"{TOKEN_AUDIENCE_PREFIX}/{c.VERSION}/namespaces/{namespace}/trainjobs/{name}/status"


def tls_configmap_name(trainjob_name: str) -> str:
    """``<trainjob>-tls-config``: the ConfigMap holding the CA certificate for the trainer containers."""
    return trainjob_name + TLS_CONFIGMAP_SUFFIX


def enforce_trainjob_status(spec: dict[str, Any], trainjob: TrainJobView, settings: StatusServerSettings) -> None:
    """Add the env vars, the volume mount and the projected volume to the trainer's pods (in place).

    :param spec: the JobSet spec being built (``replicatedJobs[]``); the ``trainer`` ancestor's pod template changes.
    :param trainjob: the TrainJob (its namespace and name make the URL, the audience and the ConfigMap name).
    :param settings: where the status server is.
    """
    env = [
        {"name": ENV_SERVER_URL, "value": settings.base_url + status_path(trainjob.namespace, trainjob.name)},
        {"name": ENV_CA_CERT, "value": f"{MOUNT_PATH}/{CA_CERT_FILE}"},
        {"name": ENV_TOKEN, "value": f"{MOUNT_PATH}/{TOKEN_FILE}"},
    ]
    mount = {"name": TOKEN_VOLUME, "mountPath": MOUNT_PATH, "readOnly": True}
    for replicated_job in spec.get("replicatedJobs") or []:
        if ancestor_of(replicated_job) != c.ANCESTOR_TRAINER:
            continue
        pod = pod_spec(replicated_job)
        for container in pod.get("containers") or []:
            upsert_env(container, env)
            upsert_volume_mounts(container, [mount])
        upsert_volumes(pod, [_token_volume(trainjob)])


def _token_volume(trainjob: TrainJobView) -> dict[str, Any]:
    return {
        "name": TOKEN_VOLUME,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "audience": token_audience(trainjob.namespace, trainjob.name),
                        "expirationSeconds": TOKEN_EXPIRY_SECONDS,
                        "path": TOKEN_FILE,
                    }
                },
                {
                    "configMap": {
                        "name": tls_configmap_name(trainjob.name),
                        "items": [{"key": CA_CERT_KEY, "path": CA_CERT_FILE}],
                    }
                },
            ]
        },
    }


def tls_configmap(trainjob: TrainJobView, settings: StatusServerSettings) -> dict[str, Any]:
    """The ``<trainjob>-tls-config`` ConfigMap (key ``ca.crt``), controlled by the TrainJob.

    :param trainjob: its owner.
    :param settings: the CA certificate to copy.
    """
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": tls_configmap_name(trainjob.name),
            "namespace": trainjob.namespace,
            "ownerReferences": [owner_reference(trainjob)],
        },
        "data": {CA_CERT_KEY: settings.ca_cert_pem},
    }
