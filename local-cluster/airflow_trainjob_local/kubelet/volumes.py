"""The few volumes the process kubelet materializes: ``configMap`` volumes and ``projected`` volumes of
``serviceAccountToken`` and ``configMap`` sources -- what Kubeflow Trainer's ``TrainJobStatus`` feature mounts in
trainer containers (a token with a TrainJob-specific audience and the status server's CA certificate).

There is no mount namespace: a volume's files are written under the pod's directory
(``pods/<ns>_<pod>_<uid>/volumes/<volume>/``) when a container that mounts it starts, and a container's env value
that names a path under one of its ``volumeMounts[].mountPath`` is rewritten to the same path under that directory
(e.g. ``KUBEFLOW_TRAINER_SERVER_TOKEN=/var/run/secrets/kubeflow/trainer/token``). Paths in ``command``/``args``
or read by a program from its own configuration are not rewritten.

A ``serviceAccountToken`` is requested from the apiserver (TokenRequest for the pod's service account, ``default``
when it names none, with the source's audience and ``expirationSeconds``, bound to the pod), as the real kubelet
does; unlike it, the token is written once per container start and never refreshed (the real one renews it at 80 %
of its lifetime). Other volume types (emptyDir, secret, PVC, hostPath, downwardAPI, ...) are still ignored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from airflow_trainjob_local.kubelet.environment import ContainerConfigError

__all__ = ["DEFAULT_TOKEN_EXPIRATION_SECONDS", "TokenRequester", "materialize_volumes", "rewrite_env_paths"]

#: ``serviceAccountToken.expirationSeconds`` when the source sets none (the API's default).
DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600
#: ``(service account, audience, expiration seconds) -> token``, for the pod being started.
TokenRequester = Callable[[str, str, int], str]


def materialize_volumes(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    volumes_dir: Path,
    *,
    get_config_map: Callable[[str, str], Mapping[str, Any] | None],
    request_token: TokenRequester,
) -> dict[str, str]:
    """Write the files of the supported volumes ``container`` mounts; return ``mountPath -> host directory``.

    :param pod: the pod (``spec.volumes``, ``spec.serviceAccountName``, ``metadata.namespace``).
    :param container: the container (``volumeMounts``).
    :param volumes_dir: the pod's volumes directory (created as needed).
    :param get_config_map: ``(namespace, name) -> ConfigMap dict``, or ``None`` when it does not exist.
    :param request_token: mints a service-account token for this pod.
    :raises ContainerConfigError: a ConfigMap or key that is not optional is missing, or a token cannot be had
        (the kubelet retries the start, as the real one does for an unready volume).
    """
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    mounts: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name"))
        files = None if volume is None else _volume_files(pod, volume, get_config_map, request_token)
        if files is None:
            continue  # an unsupported type: ignored, as before volumes were supported at all
        host = volumes_dir / str(volume["name"])  # type: ignore[index]  # volume is set when files is
        for relative, (data, mode) in files.items():
            _write(host, relative, data, mode)
        sub_path = mount.get("subPath") or ""
        mounts[str(mount["mountPath"]).rstrip("/") or "/"] = str(host / sub_path) if sub_path else str(host)
    return mounts


def rewrite_env_paths(env: Mapping[str, str], mounts: Mapping[str, str]) -> dict[str, str]:
    """``env`` with each value that is a mount path, or a path under one, moved to the mount's host directory.

    :param env: the container's environment.
    :param mounts: ``mountPath -> host directory`` (:func:`materialize_volumes`).
    """
    by_length = sorted(mounts, key=len, reverse=True)
    out = dict(env)
    for name, value in env.items():
        for mount_path in by_length:
            if value == mount_path or value.startswith(mount_path + "/"):
                out[name] = mounts[mount_path] + value[len(mount_path) :]
                break
    return out


def _volume_files(
    pod: Mapping[str, Any],
    volume: Mapping[str, Any],
    get_config_map: Callable[[str, str], Mapping[str, Any] | None],
    request_token: TokenRequester,
) -> dict[str, tuple[str, int]] | None:
    namespace = pod["metadata"]["namespace"]
    if "configMap" in volume:
        source = volume["configMap"]
        return _config_map_files(source, get_config_map(namespace, source.get("name", "")), namespace)
    if "projected" not in volume:
        return None
    files: dict[str, tuple[str, int]] = {}
    for source in (volume["projected"] or {}).get("sources") or []:
        if token := source.get("serviceAccountToken"):
            account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
            expiration = int(token.get("expirationSeconds") or DEFAULT_TOKEN_EXPIRATION_SECONDS)
            files[token["path"]] = (request_token(account, token.get("audience") or "", expiration), 0o600)
        elif config := source.get("configMap"):
            files.update(_config_map_files(config, get_config_map(namespace, config.get("name", "")), namespace))
    return files


def _config_map_files(
    source: Mapping[str, Any], config_map: Mapping[str, Any] | None, namespace: str
) -> dict[str, tuple[str, int]]:
    name = source.get("name", "")
    if config_map is None:
        if source.get("optional"):
            return {}
        raise ContainerConfigError(f'configmap "{name}" not found')
    data = config_map.get("data") or {}
    items = source.get("items")
    if items is None:
        return {key: (value, 0o644) for key, value in data.items()}
    files = {}
    for item in items:
        if item["key"] not in data:
            if source.get("optional"):
                continue
            raise ContainerConfigError(f"couldn't find key {item['key']} in ConfigMap {namespace}/{name}")
        files[item["path"]] = (data[item["key"]], int(item.get("mode") or 0o644))
    return files


def _write(directory: Path, relative: str, data: str, mode: int) -> None:
    parts = PurePosixPath(relative).parts
    if not parts or ".." in parts or PurePosixPath(relative).is_absolute():
        raise ContainerConfigError(f"invalid volume file path {relative!r}")
    path = directory.joinpath(*parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
