"""A container's environment and argv, computed from the pod the way the real kubelet does.

Ports of ``third_party/forked/golang/expansion`` (``$(VAR)`` expansion) and of
``Kubelet.makeEnvironmentVariables`` / ``ExpandContainerCommandAndArgs`` from Kubernetes 1.20
(``pkg/kubelet/kubelet_pods.go``), working on the pod as a plain dict (the API's camelCase JSON).

What differs, because there is no image: the process starts from a small *base* environment instead of the
image's ``ENV`` (``PATH`` with the kubelet's own Python bin dir first, ``HOME``, ``LANG``/``LC_ALL``/``TZ`` of the
host, ``HOSTNAME`` = pod name); service-link variables (``<SVC>_SERVICE_HOST`` ...) are not injected.
"""

from __future__ import annotations

import base64
import json
import math
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.utils import parse_quantity

from airflow_trainjob_local.kubelet.status import HOST_IP, POD_IP

_OPERATOR = "$"
_OPENER = "("
_CLOSER = ")"

# Host variables a process may reasonably expect from an image; the rest of the kubelet's environment
# (credentials, Airflow connections, ...) must not leak into pods.
_HOST_PASSTHROUGH = ("HOME", "LANG", "LC_ALL", "TZ")


class ContainerConfigError(Exception):
    """The container's configuration cannot be resolved (missing ConfigMap/Secret key, bad fieldRef).

    The kubelet reports it as ``waiting`` with reason ``CreateContainerConfigError`` and retries, as the real one does.
    """


def expand(text: str, mapping: Callable[[str], str]) -> str:
    """Expand ``$(VAR)`` references in ``text`` with ``mapping``; ``$$`` escapes a ``$``.

    ``mapping`` returns the replacement for a name (see :func:`mapping_for`, which leaves unknown names as
    ``$(NAME)``). Same rules as Kubernetes' ``expansion.Expand``.
    """
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == _OPERATOR and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            read, is_var, advance = _read_variable_name(text[cursor + 1 :])
            out.append(mapping(read) if is_var else read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def _read_variable_name(text: str) -> tuple[str, bool, int]:
    if text[0] == _OPERATOR:
        return _OPERATOR, False, 1
    if text[0] == _OPENER:
        end = text.find(_CLOSER, 1)
        if end != -1:
            return text[1:end], True, end + 1
        return _OPERATOR + _OPENER, False, 1
    return _OPERATOR + text[0], False, 1


def mapping_for(*contexts: Mapping[str, str]) -> Callable[[str], str]:
    """A mapping for :func:`expand` that looks names up in ``contexts`` in order, else keeps ``$(NAME)``."""

    def lookup(name: str) -> str:
        for context in contexts:
            if name in context:
                return context[name]
        return f"{_OPERATOR}{_OPENER}{name}{_CLOSER}"

    return lookup


def kubelet_bin_dir() -> str:
    """The bin dir of the Python running the kubelet (a venv's ``bin``; symlinks are not resolved on purpose)."""
    return os.path.dirname(sys.executable)


def base_environment(pod: Mapping[str, Any]) -> dict[str, str]:
    """The environment a container starts from before its ``env``: what an image would otherwise provide."""
    env = {name: os.environ[name] for name in _HOST_PASSTHROUGH if name in os.environ}
    host_path = os.environ.get("PATH", os.defpath)
    env["PATH"] = os.pathsep.join([kubelet_bin_dir(), host_path])
    env["HOSTNAME"] = pod["metadata"]["name"]
    return env


def container_environment(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    get_config_map: Callable[[str, str], Mapping[str, Any] | None],
    get_secret: Callable[[str, str], Mapping[str, Any] | None],
    node_allocatable: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The variables the container's spec declares (``envFrom`` then ``env``), resolved and ``$(VAR)``-expanded.

    :param get_config_map: ``(namespace, name) -> ConfigMap dict``, or ``None`` when it does not exist.
    :param get_secret: ``(namespace, name) -> Secret dict`` (``data`` base64-encoded), or ``None`` when missing.
    :param node_allocatable: the node's allocatable quantities, used by ``resourceFieldRef`` when the container
        has no limit (as the real kubelet defaults limits to allocatable for the downward API).
    :raises ContainerConfigError: a referenced object or key is missing and not ``optional``, or a field path is
        not supported.
    """
    namespace = pod["metadata"]["namespace"]
    config_maps: dict[str, Mapping[str, Any] | None] = {}
    secrets: dict[str, Mapping[str, Any] | None] = {}

    def config_map(name: str) -> Mapping[str, Any] | None:
        if name not in config_maps:
            config_maps[name] = get_config_map(namespace, name)
        return config_maps[name]

    def secret_data(name: str) -> dict[str, str] | None:
        if name not in secrets:
            secrets[name] = get_secret(namespace, name)
        found = secrets[name]
        if found is None:
            return None
        return {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (found.get("data") or {}).items()}

    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix") or ""
        if ref := source.get("configMapRef"):
            found = config_map(ref["name"])
            if found is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f'configmap "{ref["name"]}" not found')
            data = found.get("data") or {}
        elif ref := source.get("secretRef"):
            data = secret_data(ref["name"])
            if data is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f'secret "{ref["name"]}" not found')
        else:
            continue
        env.update({prefix + k: v for k, v in data.items()})

    mapping = mapping_for(env)
    for var in container.get("env") or []:
        name = var["name"]
        value = var.get("value") or ""
        value_from = var.get("valueFrom")
        if value:
            value = expand(value, mapping)
        elif value_from:
            resolved = _value_from(pod, container, value_from, config_map, secret_data, node_allocatable or {})
            if resolved is None:  # optional and missing: the variable is skipped, like the real kubelet
                continue
            value = resolved
        env[name] = value
    return env


def _value_from(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    value_from: Mapping[str, Any],
    config_map: Callable[[str], Mapping[str, Any] | None],
    secret_data: Callable[[str], dict[str, str] | None],
    node_allocatable: Mapping[str, str],
) -> str | None:
    if field_ref := value_from.get("fieldRef"):
        return field_value(pod, field_ref["fieldPath"])
    if resource_ref := value_from.get("resourceFieldRef"):
        return resource_value(pod, container, resource_ref, node_allocatable)
    if ref := value_from.get("configMapKeyRef"):
        found = config_map(ref["name"])
        data = None if found is None else (found.get("data") or {})
        kind = "ConfigMap"
    elif ref := value_from.get("secretKeyRef"):
        data = secret_data(ref["name"])
        kind = "Secret"
    else:
        return ""
    if data is None or ref["key"] not in data:
        if ref.get("optional"):
            return None
        if data is None:
            raise ContainerConfigError(f'{kind.lower()} "{ref["name"]}" not found')
        namespace = pod["metadata"]["namespace"]
        raise ContainerConfigError(f"couldn't find key {ref['key']} in {kind} {namespace}/{ref['name']}")
    return data[ref["key"]]


def field_value(pod: Mapping[str, Any], field_path: str) -> str:
    """The downward-API value of ``field_path`` (``metadata.name``, ``metadata.labels['k']``, ``status.podIP``...).

    :raises ContainerConfigError: the path is not one the downward API supports for env.
    """
    metadata = pod["metadata"]
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": metadata.get("name", ""),
        "metadata.namespace": metadata.get("namespace", ""),
        "metadata.uid": metadata.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.hostIP": HOST_IP,
        "status.podIP": POD_IP,
        "status.podIPs": POD_IP,
    }
    if field_path in simple:
        return simple[field_path]
    if field_path.endswith("']") and "['" in field_path:
        path, key = field_path[:-2].split("['", 1)
        if path == "metadata.labels":
            return (metadata.get("labels") or {}).get(key, "")
        if path == "metadata.annotations":
            return (metadata.get("annotations") or {}).get(key, "")
    if field_path in ("metadata.labels", "metadata.annotations"):
        values = metadata.get(field_path.split(".")[1]) or {}
        # Go's %q quoting; json.dumps matches it for the printable strings labels/annotations hold.
        return "\n".join(f"{k}={json.dumps(values[k])}" for k in sorted(values))
    raise ContainerConfigError(f"unsupported fieldPath: {field_path}")


def resource_value(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    ref: Mapping[str, Any],
    node_allocatable: Mapping[str, str],
) -> str:
    """The downward-API value of a ``resourceFieldRef`` (``limits.cpu``, ``requests.memory``...).

    The quantity divided by ``divisor`` (default 1), rounded up.

    :raises ContainerConfigError: an unsupported resource.
    """
    target = container
    if ref.get("containerName"):
        everything = (pod["spec"].get("containers") or []) + (pod["spec"].get("initContainers") or [])
        target = next((c for c in everything if c["name"] == ref["containerName"]), container)
    kind, _, name = ref["resource"].partition(".")
    if kind not in ("limits", "requests") or name not in ("cpu", "memory", "ephemeral-storage"):
        raise ContainerConfigError(f"unsupported container resource : {ref['resource']}")
    resources = target.get("resources") or {}
    quantity = (resources.get(kind) or {}).get(name)
    if quantity is None and kind == "limits":
        quantity = node_allocatable.get(name)
    if quantity is None:
        quantity = "0"
    divisor = parse_quantity(str(ref.get("divisor") or "1"))
    if divisor == 0:
        divisor = parse_quantity("1")
    return str(math.ceil(parse_quantity(str(quantity)) / divisor))


def container_argv(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """``command + args`` with ``$(VAR)`` expanded from the container's ``env`` (``ExpandContainerCommandAndArgs``)."""
    mapping = mapping_for(env)
    return [expand(part, mapping) for part in (container.get("command") or []) + (container.get("args") or [])]


def resolve_executable(argv0: str, env: Mapping[str, str], cwd: str) -> str | None:
    """The file ``argv0`` names: a path as given (relative to ``cwd``), else the first match on ``env['PATH']``."""
    if os.sep in argv0:
        path = argv0 if os.path.isabs(argv0) else os.path.join(cwd, argv0)
        return path if os.access(path, os.X_OK) and os.path.isfile(path) else None
    return shutil.which(argv0, path=env.get("PATH", os.defpath))
