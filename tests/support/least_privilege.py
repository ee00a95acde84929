"""Least-privilege test support: the shipped Role applied for a ServiceAccount, and an Airflow
``kubernetes`` connection that authenticates only with that account's token.

The Role comes from ``airflow_trainjob/rbac.yaml`` (the file the README shows), never a copy.
"""

from __future__ import annotations

import base64
import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT = "airflow-worker"


def rbac_documents() -> list[dict[str, Any]]:
    """The Role and the RoleBinding of ``airflow_trainjob/rbac.yaml``, then its optional ClusterRole and
    ClusterRoleBinding (reading ClusterTrainingRuntimes), in that order."""
    text = resources.files("airflow_trainjob").joinpath("rbac.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d]


def role_rules() -> list[dict[str, Any]]:
    return rbac_documents()[0]["rules"]


def apply_rbac(
    api_client: Any, namespace: str, service_account: str = SERVICE_ACCOUNT, rules: list[dict[str, Any]] | None = None
) -> None:
    """Create (or replace) the shipped Role in ``namespace`` — with ``rules`` instead of its own,
    if given — and bind it to ``service_account`` of that namespace. ``api_client``: the admin's."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    role, binding = copy.deepcopy(rbac_documents()[:2])
    role["metadata"]["namespace"] = binding["metadata"]["namespace"] = namespace
    if rules is not None:
        role["rules"] = rules
    binding["subjects"] = [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}]
    rbac = client.RbacAuthorizationV1Api(api_client)
    try:
        rbac.create_namespaced_role(namespace, role)
    except ApiException as e:
        if e.status != 409:
            raise
        rbac.replace_namespaced_role(role["metadata"]["name"], namespace, role)
    try:
        rbac.create_namespaced_role_binding(namespace, binding)
    except ApiException as e:
        if e.status != 409:
            raise


def apply_cluster_rbac(api_client: Any, namespace: str, service_account: str = SERVICE_ACCOUNT) -> str:
    """Create (or keep) the shipped optional ClusterRole and bind it to ``service_account`` of ``namespace``, by a
    ClusterRoleBinding named for that namespace (cluster-wide: another test's namespace has its own). Returns the
    binding's name, for :func:`remove_cluster_binding`. ``api_client``: the admin's."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    cluster_role, binding = copy.deepcopy(rbac_documents()[2:])
    binding["metadata"]["name"] = f"{binding['metadata']['name']}-{namespace}"
    binding["subjects"] = [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}]
    rbac = client.RbacAuthorizationV1Api(api_client)
    for create, body in ((rbac.create_cluster_role, cluster_role), (rbac.create_cluster_role_binding, binding)):
        try:
            create(body)
        except ApiException as e:
            if e.status != 409:
                raise
    return binding["metadata"]["name"]


def remove_cluster_binding(api_client: Any, name: str) -> None:
    """Delete the ClusterRoleBinding :func:`apply_cluster_rbac` made (404: gone already)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        client.RbacAuthorizationV1Api(api_client).delete_cluster_role_binding(name)
    except ApiException as e:
        if e.status != 404:
            raise


def kubeconfig_with_token(
    local_cluster: Any, token: str, namespace: str, client_cert: tuple[bytes, bytes] | None = None
) -> dict[str, Any]:
    """A kubeconfig for the local cluster: its server and CA, the user ``token`` (and, if given, a
    client certificate and key as PEM, which this apiserver does not ask for)."""
    user: dict[str, Any] = {"token": token}
    if client_cert is not None:
        user["client-certificate-data"] = base64.b64encode(client_cert[0]).decode()
        user["client-key-data"] = base64.b64encode(client_cert[1]).decode()
    ca_data = base64.b64encode(Path(local_cluster.ca_cert).read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": local_cluster.server, "certificate-authority-data": ca_data}}
        ],
        "users": [{"name": "airflow-worker", "user": user}],
        "contexts": [
            {"name": "local", "context": {"cluster": "local", "user": "airflow-worker", "namespace": namespace}}
        ],
        "current-context": "local",
    }


def connection_uri(extra: dict[str, Any]) -> str:
    """An ``AIRFLOW_CONN_*`` value (JSON form) of a ``kubernetes`` connection with ``extra``."""
    return json.dumps({"conn_type": "kubernetes", "extra": extra})


def unused_port() -> int:
    """A loopback port nothing listens on (bound, read and released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port_connection(local_cluster: Any, namespace: str) -> str:
    """An ``AIRFLOW_CONN_*`` value: the local cluster's kubeconfig with its server moved to :func:`unused_port`,
    and ``namespace`` as the connection's namespace. Any API call through it fails to connect."""
    config = kubeconfig_with_token(local_cluster, "closed-port", namespace)
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{unused_port()}"
    return connection_uri({"kube_config": yaml.safe_dump(config), "namespace": namespace})


def token_of(api_client: Any) -> str:
    """The bearer token an ``ApiClient`` from the ``service_account_api_client`` fixture sends."""
    return api_client.configuration.api_key["BearerToken"]


def wait_until_allowed(sa_client, namespace):
    """RBAC changes reach the authorizer through an informer: wait until the Role's pod listing works."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from airflow_trainjob_local.testing.waiting import wait_for

    def allowed():
        try:
            client.CoreV1Api(sa_client).list_namespaced_pod(namespace)
            return True
        except ApiException as e:
            if e.status == 403:
                return False
            raise

    wait_for(allowed, what="the Role to take effect")
