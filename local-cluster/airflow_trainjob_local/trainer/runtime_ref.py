"""Resolving a TrainJob's ``runtimeRef``: which kinds the trainer supports (``pkg/runtime/core/registry.go``), the
messages upstream writes when it cannot (``pkg/controller/trainjob_controller.go``,
``pkg/runtime/core/{trainingruntime,clustertrainingruntime}.go``), and the runtime snapshot ConfigMap that freezes
the runtime a TrainJob was first built from (``pkg/runtime/core/snapshot.go``). Pure; the reads are the
reconciler's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from airflow_trainjob_local.trainer import constants as c

__all__ = [
    "RuntimeKind",
    "SnapshotError",
    "not_found_message",
    "read_snapshot",
    "registry_key",
    "snapshot_configmap",
    "supported_kind",
]


@dataclass(frozen=True)
class RuntimeKind:
    """A runtime kind the trainer resolves.

    :param kind: ``TrainingRuntime`` or ``ClusterTrainingRuntime``.
    :param plural: its resource name.
    :param namespaced: read from the TrainJob's namespace (else cluster-scoped).
    """

    kind: str
    plural: str
    namespaced: bool


_KINDS = {
    c.TRAINING_RUNTIME_KIND: RuntimeKind(c.TRAINING_RUNTIME_KIND, c.TRAINING_RUNTIMES, True),
    c.CLUSTER_TRAINING_RUNTIME_KIND: RuntimeKind(c.CLUSTER_TRAINING_RUNTIME_KIND, c.CLUSTER_TRAINING_RUNTIMES, False),
}


class SnapshotError(ValueError):
    """A runtime snapshot ConfigMap that cannot be used (another owner, no data, the wrong runtime)."""


def registry_key(api_group: str, kind: str) -> str:
    """The runtime registry's key for a reference, as Go's ``schema.GroupKind.String()`` writes it: ``Kind.group``,
    or ``Kind`` alone with an empty group."""
    return f"{kind}.{api_group}" if api_group else kind


def supported_kind(api_group: str, kind: str) -> RuntimeKind | None:
    """The runtime kind of a ``runtimeRef`` (group and kind as the CRD defaulted them), ``None`` when unsupported
    (the TrainJob then fails with ``TrainingRuntimeNotSupported``, "unsupported runtime: <key>")."""
    if api_group != c.GROUP:
        return None
    return _KINDS.get(kind)


def not_found_message(kind: RuntimeKind, name: str) -> str:
    """Upstream's error text for a runtime that does not exist (the event message quotes it)."""
    api_error = f'{kind.plural}.{c.GROUP} "{name}" not found'
    if kind.namespaced:
        return f"TrainingRuntime specified in TrainJob is not found: {api_error}"
    return f"not found ClusterTrainingRuntime specified in TrainJob: {api_error}"


def snapshot_configmap(
    trainjob_name: str, namespace: str, owner: dict[str, Any], runtime: dict[str, Any]
) -> dict[str, Any]:
    """The ConfigMap ``<trainjob>-runtime-snapshot`` holding ``runtime`` as YAML under ``runtime``, owned by the
    TrainJob (so the garbage collector deletes it with it).

    :param owner: the TrainJob's controller ownerReference.
    :param runtime: the runtime object as read (its managedFields are left out).
    """
    runtime = {
        **runtime,
        "metadata": {k: v for k, v in (runtime.get("metadata") or {}).items() if k != "managedFields"},
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": trainjob_name + c.RUNTIME_SNAPSHOT_SUFFIX,
            "namespace": namespace,
            "ownerReferences": [owner],
        },
        "data": {c.RUNTIME_SNAPSHOT_KEY: yaml.safe_dump(runtime, sort_keys=True)},
    }


def read_snapshot(configmap: dict[str, Any], trainjob_uid: str, api_group: str, kind: str, name: str) -> dict[str, Any]:
    """The runtime frozen in a snapshot ConfigMap.

    :param configmap: the ConfigMap as read.
    :param trainjob_uid: the TrainJob's uid (the snapshot must be controlled by it).
    :param api_group: ``runtimeRef.apiGroup``; :param kind: ``runtimeRef.kind``; :param name: ``runtimeRef.name``.
    :raises SnapshotError: with upstream's message.
    """
    owners = [ref for ref in (configmap.get("metadata") or {}).get("ownerReferences") or [] if ref.get("controller")]
    if not owners or owners[0].get("uid") != trainjob_uid:
        raise SnapshotError("invalid runtime snapshot: a snapshot configmap exists but is owned by another object")
    text = (configmap.get("data") or {}).get(c.RUNTIME_SNAPSHOT_KEY)
    if text is None:
        raise SnapshotError(f'invalid runtime snapshot: snapshot ConfigMap missing "{c.RUNTIME_SNAPSHOT_KEY}" data key')
    try:
        runtime = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SnapshotError(f"invalid runtime snapshot: unable to unmarshal the snapshot: {exc}") from exc
    if not isinstance(runtime, dict):
        raise SnapshotError("invalid runtime snapshot: unable to unmarshal the snapshot: not an object")
    found_group = str(runtime.get("apiVersion") or "").rpartition("/")[0]
    found_kind, found_name = runtime.get("kind"), (runtime.get("metadata") or {}).get("name")
    if found_kind != kind or found_group != api_group or found_name != name:
        raise SnapshotError(
            "invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a runtime with name, "
            f'api group and kind of "{name}", "{api_group}", "{kind}" but found runtime with name, api group and '
            f'kind of "{found_name}", "{found_group}", "{found_kind}"'
        )
    return runtime
