"""The OpenLineage parent run a training job's containers are given: the Airflow task's run, as environment variables.

Training code that emits OpenLineage events links its runs to the Airflow task that launched it through the
``parent`` run facet; the OpenLineage Python client's integrations build that facet from the environment (the
``openlineage-integration-common`` package: ``OPENLINEAGE_CONTEXT`` first, else ``OPENLINEAGE_PARENT_ID`` and
``OPENLINEAGE_ROOT_PARENT_ID``). :func:`parent_run_env` gives all three, from the values the openlineage provider's
macros give (``lineage_parent_id``, ``lineage_root_parent_id``), and :func:`with_parent_run_env` puts them in every
training container of a manifest:

- a ``kubeflow.org/v1`` job: each container (not the init containers) of each replica type's pod template;
- a ``TrainJob``: ``spec.trainer.env``, which the trainer merges into the runtime's trainer containers (those named
  ``node``, in the replicated jobs of ancestor ``trainer``; kubeflow/trainer v2.3.0
  ``pkg/runtime/framework/plugins/jobset/builder.go``), also when the DAG set no ``trainer``. Not the initializers
  (``spec.initializer``): they fetch the dataset and the model, they run no training code.

A container where the DAG's author set any of the three names keeps what they set and gets none of them: the three
say one parent, and the client reads ``OPENLINEAGE_CONTEXT`` before the other two, so one of ours beside one of
theirs would name another parent than theirs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.constants import TRAINJOB_KIND

#: The parent run's identity: ``namespace/job name/run id`` (the openlineage provider's ``lineage_parent_id``).
ENV_PARENT_ID = "OPENLINEAGE_PARENT_ID"
#: The root run's (the DAG run's, unless the DAG run's conf names another): ``lineage_root_parent_id``.
ENV_ROOT_PARENT_ID = "OPENLINEAGE_ROOT_PARENT_ID"
#: Both as the JSON of a ``parent`` run facet (``{"parent": {"run", "job", "root"}}``): the client reads it first.
ENV_CONTEXT = "OPENLINEAGE_CONTEXT"
#: Every name the provider sets, in the order it sets them.
PARENT_RUN_ENV_NAMES = (ENV_PARENT_ID, ENV_ROOT_PARENT_ID, ENV_CONTEXT)


@dataclass(frozen=True)
class ParentRun:
    """An OpenLineage run and the root of its hierarchy, as the openlineage provider's macros give them.

    :param namespace: the job's namespace (``lineage_job_namespace()``: ``[openlineage] namespace``).
    :param job_name: the job's name (``lineage_job_name``: ``<dag_id>.<task_id>``).
    :param run_id: the run's id, a UUID (``lineage_run_id``: the task instance's try).
    :param root_namespace: the root job's namespace (``lineage_root_job_namespace``).
    :param root_job_name: the root job's name (``lineage_root_job_name``: the dag_id, unless the DAG run's conf
        names another root).
    :param root_run_id: the root run's id, a UUID (``lineage_root_run_id``: the DAG run's).
    """

    namespace: str
    job_name: str
    run_id: str
    root_namespace: str
    root_job_name: str
    root_run_id: str

    @property
    def parent_id(self) -> str:
        """``namespace/job name/run id``, as the ``lineage_parent_id`` macro gives it."""
        return f"{self.namespace}/{self.job_name}/{self.run_id}"

    @property
    def root_parent_id(self) -> str:
        """The root's ``namespace/job name/run id``, as the ``lineage_root_parent_id`` macro gives it."""
        return f"{self.root_namespace}/{self.root_job_name}/{self.root_run_id}"

    def facet(self) -> dict[str, Any]:
        """The ``parent`` run facet's fields (OpenLineage's ``ParentRunFacet``: ``run``, ``job``, ``root``)."""
        return {
            "run": {"runId": self.run_id},
            "job": {"namespace": self.namespace, "name": self.job_name},
            "root": {
                "run": {"runId": self.root_run_id},
                "job": {"namespace": self.root_namespace, "name": self.root_job_name},
            },
        }


def parent_run_env(parent: ParentRun) -> dict[str, str]:
    """The environment variables naming ``parent`` to the OpenLineage clients, by name, in
    :data:`PARENT_RUN_ENV_NAMES`' order.

    :param parent: the Airflow task's run.
    """
    return {
        ENV_PARENT_ID: parent.parent_id,
        ENV_ROOT_PARENT_ID: parent.root_parent_id,
        ENV_CONTEXT: json.dumps({"parent": parent.facet()}, separators=(",", ":")),
    }


def merged_env(env: object, additions: Mapping[str, str]) -> list[Any] | None:
    """A container's ``env`` with ``additions`` appended, or None when it sets any of their names already (theirs
    is kept: see the module's docstring).

    :param env: the container's ``env`` as given (a list of ``EnvVar`` dicts; None or missing: none).
    :param additions: name -> value.
    """
    entries = list(env) if isinstance(env, list) else []
    if any(isinstance(e, Mapping) and e.get("name") in additions for e in entries):
        return None
    return [*entries, *({"name": name, "value": value} for name, value in additions.items())]


def with_parent_run_env(manifest: Mapping[str, Any], env: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """``manifest`` with ``env`` in every training container (see the module's docstring), and the API paths of the
    containers that kept the DAG's own values instead. ``manifest`` itself is left as it is.

    :param manifest: the job to send (a ``kubeflow.org/v1`` job or a ``TrainJob``), as an API JSON dict.
    :param env: name -> value (:func:`parent_run_env`).
    """
    job = json.loads(json.dumps(manifest))  # a deep copy of the JSON it is
    spec = job.setdefault("spec", {})
    if job.get("kind") == TRAINJOB_KIND:
        if not isinstance(spec.get("trainer"), dict):
            spec["trainer"] = {}  # the runtime's trainer containers get trainer.env all the same
        targets = [("spec.trainer", spec["trainer"])]
    else:
        targets = list(_v1_containers(spec))
    kept = []
    for path, container in targets:
        merged = merged_env(container.get("env"), env)
        if merged is None:
            kept.append(path)
        else:
            container["env"] = merged
    return job, kept


def _v1_containers(spec: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each container of each replica type's pod template (``spec.<kind>ReplicaSpecs.<type>.template.spec``), with
    its API path."""
    found = []
    for field, replica_specs in spec.items():
        if not field.endswith("ReplicaSpecs") or not isinstance(replica_specs, Mapping):
            continue
        for replica_type, replica in replica_specs.items():
            pod = ((replica or {}).get("template") or {}).get("spec") or {}
            for container in pod.get("containers") or []:
                if isinstance(container, dict):
                    path = f"spec.{field}.{replica_type}.template.spec.containers[{container.get('name')}]"
                    found.append((path, container))
    return found


def without_parent_run_env(manifest: Any) -> Any:
    """``manifest`` without the :data:`PARENT_RUN_ENV_NAMES` entries of any ``env`` list: what a job trains, whichever
    try's run it names as its parent (each try's run id differs). A new object; ``manifest`` is left as it is.

    :param manifest: a job object (an API JSON dict), or any part of one.
    """
    if isinstance(manifest, Mapping):
        stripped = {
            key: _env_without(value) if key == "env" else without_parent_run_env(value)
            for key, value in manifest.items()
        }
        if stripped.get("env") == [] and manifest.get("env"):
            del stripped["env"]  # emptied by the stripping: the container had none before they were injected
        return stripped
    if isinstance(manifest, list):
        return [without_parent_run_env(item) for item in manifest]
    return manifest


def _env_without(env: Any) -> Any:
    """An ``env`` list without the parent run's entries (anything else under that key, as it is)."""
    if not isinstance(env, list):
        return without_parent_run_env(env)
    return [e for e in env if not (isinstance(e, Mapping) and e.get("name") in PARENT_RUN_ENV_NAMES)]
