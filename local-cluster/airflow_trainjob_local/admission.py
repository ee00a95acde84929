"""The ServiceAccount admission plugin's refusal of a pod naming a missing service account, applied by the cluster's
own pod creators.

The local apiserver runs without the plugin: no token controller runs, and the plugin of Kubernetes 1.20 refuses
every pod whose service account has no token Secret yet. A real apiserver refuses a pod that names a service
account the namespace lacks (``plugin/pkg/admission/serviceaccount/admission.go``: 403 Forbidden, ``pods "<name>" is
forbidden: error looking up service account <namespace>/<account>: serviceaccount "<account>" not found``), so the
Job controller makes no pod and records ``FailedCreate`` with that message, and retries. The controllers here (the
Jobs of JobSets, the ``kubeflow.org/v1`` stand-in) create their pods through :func:`create_pod`, which asks first, so
a job naming a missing service account (upstream's ``examples/yaml/02-runtime-patches.yaml`` names ``training-sa``)
gets no pods, as on a real cluster.

Not emulated: a pod created directly through the API is still admitted; ``default``, which the serviceaccount
controller makes in each new namespace, is not looked up (a real cluster refuses pods during that moment too).
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from airflow_trainjob_local.kube import ApiException, is_not_found

__all__ = ["create_pod", "service_account_refusal"]

#: The account the plugin names on a pod that names none; every namespace has it (see the module's docstring).
DEFAULT_SERVICE_ACCOUNT = "default"


def service_account_refusal(core: client.CoreV1Api, namespace: str, pod: dict[str, Any]) -> ApiException | None:
    """The apiserver's refusal of ``pod`` for naming a service account ``namespace`` lacks, or None.

    :param core: the client the pod would be created with.
    :param namespace: the pod's namespace.
    :param pod: the pod manifest (``spec.serviceAccountName``, else the deprecated ``spec.serviceAccount``).
    :raises ApiException: reading the service account failed otherwise than with 404.
    """
    spec = pod.get("spec") or {}
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if not account or account == DEFAULT_SERVICE_ACCOUNT:
        return None
    try:
        core.read_namespaced_service_account(account, namespace)
        return None
    except ApiException as exc:
        if not is_not_found(exc):
            raise
    meta = pod.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "Unknown"
    message = (
        f'pods "{name}" is forbidden: error looking up service account {namespace}/{account}: '
        f'serviceaccount "{account}" not found'
    )
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": {"name": name, "kind": "pods"},
        "code": 403,
    }
    refusal = ApiException(status=403, reason="Forbidden")
    refusal.body = json.dumps(status)
    return refusal


def create_pod(core: client.CoreV1Api, namespace: str, pod: dict[str, Any]) -> Any:
    """``core.create_namespaced_pod(namespace, pod)`` unless :func:`service_account_refusal` refuses it.

    :param core: the client.
    :param namespace: the pod's namespace.
    :param pod: the pod manifest.
    :returns: the created pod (a ``V1Pod``).
    :raises ApiException: the refusal (403), or the create's error.
    """
    refusal = service_account_refusal(core, namespace, pod)
    if refusal is not None:
        raise refusal
    return core.create_namespaced_pod(namespace, pod)
