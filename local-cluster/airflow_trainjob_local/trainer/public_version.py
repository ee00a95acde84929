"""The trainer's public version ConfigMap, as upstream's Helm chart installs it
(kubeflow/trainer v2.3.0 ``charts/kubeflow-trainer/templates/manager/public-configmap.yaml`` and
``templates/rbac/public_configmap_role*.yaml``): ``kubeflow-trainer-public`` in the trainer's namespace, with the
version under ``kubeflow_trainer_version``, readable by every authenticated user. The Kubeflow SDK reads it when a
``TrainerClient`` starts (a missing one costs a warning with the whole 404 in every client's log).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The namespace upstream's manifests install the trainer in.
NAMESPACE = "kubeflow-system"
NAME = "kubeflow-trainer-public"
#: The release this local trainer follows.
TRAINER_VERSION = "v2.3.0"


def manifests() -> list[dict[str, Any]]:
    """The namespace, the ConfigMap, and the Role and RoleBinding that let ``system:authenticated`` read it."""
    meta = {"name": NAME, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/managed-by": "airflow-trainjob-local"}}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {"kubeflow_trainer_version": TRAINER_VERSION},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [NAME], "verbs": ["get"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}],
        },
    ]


def install_public_version(api_client: Any, say: Callable[[str], None]) -> bool:
    """Create what :func:`manifests` lists where it is missing; what exists is left as it is.

    :param api_client: a ``kubernetes.client.ApiClient`` of the cluster.
    :param say: where to write one line when something was created.
    :returns: whether anything was created.
    :raises kubernetes.client.exceptions.ApiException: the apiserver refused an object (not for "exists").
    """
    from kubernetes import utils
    from kubernetes.utils import FailToCreateError

    created = False
    for manifest in manifests():
        try:
            utils.create_from_dict(api_client, manifest)
        except FailToCreateError as e:
            if any(getattr(cause, "status", None) != 409 for cause in e.api_exceptions):
                raise e.api_exceptions[0] from e
            continue
        created = True
    if created:
        say(f"ConfigMap {NAMESPACE}/{NAME}: installed (kubeflow_trainer_version {TRAINER_VERSION})")
    return created
