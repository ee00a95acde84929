"""The built-in ClusterTrainingRuntimes that ``up`` installs once the CRDs are established.

- ``torch-distributed``, in the shape of kubeflow/trainer v2.3.0 ``manifests/base/runtimes/torch_distributed.yaml``:
  label ``trainer.kubeflow.org/framework: torch``, ``mlPolicy`` with ``numNodes: 1`` and an empty ``torch``
  policy (the torch plugin sets ``PET_*``), one replicated job ``node`` labelled as the trainer's ancestor step,
  whose one container is ``node``.
- ``plainml``: the same shape without a framework in its ``mlPolicy`` (``numNodes: 1`` only), which upstream's
  ``PlainML`` plugin (``pkg/runtime/framework/plugins/plainml``) runs: the TrainJob's ``numNodes`` and ``env``
  applied to the ``node`` container, nothing else. Upstream ships no such runtime; its name and its
  ``trainer.kubeflow.org/framework: plainml`` label are this cluster's (the label makes the Kubeflow SDK list it,
  which skips runtimes without one; a framework other than ``torchtune`` is a custom trainer to the SDK).

The images are upstream's kind of image names; the process kubelet ignores images (it runs ``command`` on the
host), so a TrainJob on these runtimes must give the ``command`` (``spec.trainer.command``), as the runtimes have
none. A runtime of one of these names that exists already (e.g. a user's edit) is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow_trainjob_local.trainer import constants as c

TORCH_DISTRIBUTED = "torch-distributed"
PLAINML = "plainml"

#: The framework label values (``trainer.kubeflow.org/framework``).
_FRAMEWORK_TORCH = "torch"
_FRAMEWORK_PLAINML = "plainml"
_TORCH_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
_PLAINML_IMAGE = "python:3.11-slim"


def _runtime(name: str, framework: str, ml_policy: dict[str, Any], image: str) -> dict[str, Any]:
    """A ClusterTrainingRuntime with one replicated job ``node`` (the trainer step) of one container ``node``."""
    node = {
        "name": c.NODE,
        "template": {
            "metadata": {"labels": {c.LABEL_ANCESTOR_STEP: c.ANCESTOR_TRAINER}},
            "spec": {"template": {"spec": {"containers": [{"name": c.NODE, "image": image}]}}},
        },
    }
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.CLUSTER_TRAINING_RUNTIME_KIND,
        "metadata": {"name": name, "labels": {c.LABEL_FRAMEWORK: framework}},
        "spec": {"mlPolicy": ml_policy, "template": {"spec": {"replicatedJobs": [node]}}},
    }


def builtin_runtimes() -> list[dict[str, Any]]:
    """The built-in ClusterTrainingRuntimes, as plain dicts: ``torch-distributed`` and ``plainml``."""
    return [
        _runtime(TORCH_DISTRIBUTED, _FRAMEWORK_TORCH, {"numNodes": 1, "torch": {}}, _TORCH_IMAGE),
        _runtime(PLAINML, _FRAMEWORK_PLAINML, {"numNodes": 1}, _PLAINML_IMAGE),
    ]


def install_builtin_runtimes(api_client: Any, say: Callable[[str], None]) -> list[str]:
    """Create each built-in runtime that does not exist; leave one that does exist as it is.

    :param api_client: a ``kubernetes.client.ApiClient`` of the cluster (the CRDs established).
    :param say: where to write one line per runtime (installed, or left as it is).
    :returns: the names of the runtimes it created.
    :raises kubernetes.client.exceptions.ApiException: the apiserver refused a runtime (not for "exists").
    """
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = client.CustomObjectsApi(api_client)
    created = []
    for runtime in builtin_runtimes():
        name = runtime["metadata"]["name"]
        try:
            api.create_cluster_custom_object(c.GROUP, c.VERSION, c.CLUSTER_TRAINING_RUNTIMES, runtime)
        except ApiException as e:
            if e.status != 409:
                raise
            say(f"ClusterTrainingRuntime {name}: exists, left as it is")
            continue
        created.append(name)
        say(f"ClusterTrainingRuntime {name}: installed")
    return created
