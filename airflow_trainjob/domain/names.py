"""Kubernetes naming rules for jobs, namespaces and labels, and deterministic job names.

A job's name is also the prefix of every pod and headless Service the training operator creates
for it (``<name>-<replica type>-<index>``), so a valid job name must leave room for the longest
of those within Kubernetes' 63-character limit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from airflow_trainjob.constants import MAX_NAME_LENGTH

_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_HASH_LENGTH = 8


def replica_pod_suffix(replica_type: str, highest_index: int) -> str:
    """The suffix the operator appends to a job name for one replica: ``-worker-12``.

    :param replica_type: the replica type (``Worker``), lowercased in the suffix.
    :param highest_index: the replica's pod index.
    """
    return f"-{replica_type.lower()}-{highest_index}"


def max_job_name_length(highest_indexes: Mapping[str, int]) -> int:
    """Longest job name whose pods still fit in 63 characters.

    :param highest_indexes: replica type -> highest pod index the job may have (replicas - 1,
        or more under elastic scaling). Types with no pods are left out.
    """
    longest_suffix = max((len(replica_pod_suffix(t, i)) for t, i in highest_indexes.items()), default=0)
    return MAX_NAME_LENGTH - longest_suffix


def job_name_problem(name: object, max_length: int) -> str | None:
    """Why ``name`` cannot name a job (DNS-1035 label within ``max_length`` characters), or None.

    :param name: the wanted ``metadata.name``, as given (any type).
    :param max_length: the longest name allowed (characters; see :func:`max_job_name_length`).
    """
    if not isinstance(name, str) or not name:
        return f"must be a non-empty string, got {name!r}"
    if not _DNS1035_LABEL.match(name):
        return (
            f"{name!r} is not a DNS-1035 label: use lowercase letters, digits and '-', "
            "start with a letter and end with a letter or digit"
        )
    if len(name) > max_length:
        return (
            f"{name!r} is {len(name)} characters; at most {max_length} are allowed so that the longest "
            f"pod name the operator derives from it stays within {MAX_NAME_LENGTH}"
        )
    return None


def namespace_problem(namespace: object) -> str | None:
    """Why ``namespace`` cannot name a namespace (DNS-1123 label, 63 characters at most), or None.

    :param namespace: the wanted ``metadata.namespace``, as given (any type).
    """
    if not isinstance(namespace, str) or not namespace:
        return f"must be a DNS-1123 label (a non-empty string), got {namespace!r}"
    if len(namespace) > MAX_NAME_LENGTH or not _DNS1123_LABEL.match(namespace):
        return (
            f"{namespace!r} is not a DNS-1123 label: at most {MAX_NAME_LENGTH} lowercase letters, "
            "digits and '-', starting and ending with a letter or digit"
        )
    return None


def label_key_problem(key: object) -> str | None:
    """Why ``key`` cannot be a label or annotation key (``[prefix/]name``), or None.

    :param key: a key of ``metadata.labels`` or ``metadata.annotations``, as given (any type).
    """
    if not isinstance(key, str) or not key:
        return f"key must be a non-empty string, got {key!r}"
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return f"key {key!r}: the prefix must be a DNS subdomain (lowercase, at most 253 characters)"
    if len(name) > MAX_NAME_LENGTH or not _LABEL_NAME.match(name):
        return (
            f"key {key!r}: the name must be at most {MAX_NAME_LENGTH} characters of letters, digits, "
            "'-', '_' and '.', starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: object) -> str | None:
    """Why ``value`` cannot be a label value, or None.

    :param value: a value of ``metadata.labels``, as given (any type).
    """
    if not isinstance(value, str):
        return f"value must be a string, got {type(value).__name__} {value!r}"
    if len(value) > MAX_NAME_LENGTH or not _LABEL_VALUE.match(value):
        return (
            f"value {value!r} must be at most {MAX_NAME_LENGTH} characters of letters, digits, '-', '_' "
            "and '.', starting and ending with a letter or digit (or be empty)"
        )
    return None


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x00".join(str(p) for p in parts).encode()).hexdigest()[:_HASH_LENGTH]


def sanitize_label_value(value: object) -> str:
    """``value`` as a valid label value: unchanged when already valid, else cleaned and tagged.

    Invalid characters become ``-``; when anything had to change or be cut, a short hash of the
    original is appended so two different originals never map to the same label.

    :param value: anything; its ``str()`` is made a label value.
    """
    text = str(value)
    if label_value_problem(text) is None:
        return text
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)
    cleaned = cleaned[: MAX_NAME_LENGTH - _HASH_LENGTH - 1].strip("-_.")
    tag = _digest(text)
    return f"{cleaned}-{tag}" if cleaned else tag


def generate_job_name(dag_id: str, task_id: str, run_id: str, map_index: int, max_length: int) -> str:
    """A DNS-1035 job name for one task instance, the same on every try of it.

    Readable part from ``dag_id`` and ``task_id``, then a hash of the whole task instance identity
    (dag_id, task_id, run_id, map_index), so that different runs and mapped instances never share
    a name while a retry finds its earlier try's job.

    :param dag_id: the task instance's DAG id.
    :param task_id: its task id.
    :param run_id: its DAG run id (only in the hash).
    :param map_index: its map index, ``-1`` for an unmapped task (only in the hash).
    :param max_length: the longest name allowed (see :func:`max_job_name_length`).
    """
    readable = re.sub(r"[^a-z0-9]+", "-", f"{dag_id}-{task_id}".lower())
    readable = re.sub(r"^[^a-z]+", "", readable)  # must start with a letter
    readable = readable[: max(0, max_length - _HASH_LENGTH - 1)].strip("-")
    tag = _digest(dag_id, task_id, run_id, map_index)
    if not readable:
        # Nothing readable left: a letter first, then as much of the hash as fits.
        return ("j" + tag)[: max(1, max_length)]
    return f"{readable}-{tag}"
