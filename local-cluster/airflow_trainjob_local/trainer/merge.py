"""The small merges the trainer applies to JSON objects: a strategic merge patch restricted to the shapes a
``runtimePatch`` may touch (``pkg/runtime/core/trainingruntime.go``, ``mergeRuntimePatches``), and the upserts of
``pkg/apply/apply.go`` (env by name, ports by number or name, volumes by name, volume mounts by path).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "MERGE_KEYS",
    "strategic_merge",
    "upsert_env",
    "upsert_ports",
    "upsert_volume_mounts",
    "upsert_volumes",
]

#: The lists of a JobSet spec that a strategic merge merges item by item, by field name -> the item's key (the
#: ``patchMergeKey`` of the JobSet and core/v1 Go types). Every other list is replaced whole (e.g. tolerations).
MERGE_KEYS = {
    "replicatedJobs": "name",
    "dependsOn": "name",
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "env": "name",
    "volumeMounts": "mountPath",
}


def strategic_merge(original: Any, patch: Any, field: str | None = None) -> Any:
    """``patch`` merged into ``original`` (neither is changed): maps merge key by key (a ``None`` value removes
    the key), the lists named in :data:`MERGE_KEYS` merge item by item on their key (original items keep their
    place, new ones are appended), other lists and scalars are replaced.

    :param original: the runtime's JobSet spec (or any part of it).
    :param patch: the patch of the same shape.
    :param field: the name ``original`` has in its parent (selects the list merge key).
    """
    if isinstance(original, dict) and isinstance(patch, dict):
        merged = copy.deepcopy(original)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = strategic_merge(merged[key], value, key)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    merge_key = MERGE_KEYS.get(field or "")
    if merge_key and isinstance(original, list) and isinstance(patch, list):
        merged_list = copy.deepcopy(original)
        for item in patch:
            index = _key_index(merged_list, item, merge_key)
            if index is None:
                merged_list.append(copy.deepcopy(item))
            else:
                merged_list[index] = strategic_merge(merged_list[index], item)
        return merged_list
    return copy.deepcopy(patch)


def _key_index(items: list[Any], item: Any, key: str) -> int | None:
    for i, candidate in enumerate(items):
        if isinstance(candidate, dict) and isinstance(item, dict) and candidate.get(key) == item.get(key):
            return i
    return None


def _upsert(owner: dict[str, Any], field: str, new: Iterable[dict[str, Any]], same: Callable[[Any, Any], bool]) -> None:
    new = list(new)
    if not new:
        return  # an empty upsert leaves the field absent, as an unset apply-configuration field
    items = owner.setdefault(field, [])
    for item in new:
        index = next((i for i, existing in enumerate(items) if same(existing, item)), None)
        if index is None:
            items.append(copy.deepcopy(item))
        else:
            items[index] = copy.deepcopy(item)


def upsert_env(container: dict[str, Any], env: Iterable[dict[str, Any]]) -> None:
    """Set each variable of ``env`` on ``container``: an existing one of the same name is replaced in place, a new
    one appended (``apply.UpsertEnvVars``)."""
    _upsert(container, "env", env, lambda a, b: a.get("name") == b.get("name"))


def upsert_ports(container: dict[str, Any], ports: Iterable[dict[str, Any]]) -> None:
    """Set each port of ``ports`` on ``container``, replacing one with the same number or the same name -- two
    unnamed ports count as the same name, as upstream's ``apply.UpsertPort`` compares them."""
    _upsert(
        container,
        "ports",
        ports,
        lambda a, b: a.get("containerPort") == b.get("containerPort") or a.get("name") == b.get("name"),
    )


def upsert_volumes(pod_spec: dict[str, Any], volumes: Iterable[dict[str, Any]]) -> None:
    """Set each volume of ``volumes`` on ``pod_spec`` by name (``apply.UpsertVolumes``)."""
    _upsert(pod_spec, "volumes", volumes, lambda a, b: a.get("name") == b.get("name"))


def upsert_volume_mounts(container: dict[str, Any], mounts: Iterable[dict[str, Any]]) -> None:
    """Set each mount of ``mounts`` on ``container`` by mount path (``apply.UpsertVolumeMounts``)."""
    _upsert(container, "volumeMounts", mounts, lambda a, b: a.get("mountPath") == b.get("mountPath"))
