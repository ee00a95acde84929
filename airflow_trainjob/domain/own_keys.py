"""The provider's own label and annotation keys, read under either of its prefixes.

The provider writes its keys under :data:`~airflow_trainjob.constants.LABEL_PREFIX` only. Release 0.1.0
wrote them under :data:`~airflow_trainjob.constants.LEGACY_PREFIX`, and a job such a release created may still be
running when the provider is upgraded: the retry after the upgrade must find it its own, its held cleanup and its
lead-log cursor. So every reader of a key the provider writes asks :func:`read_own_key`, never the mapping itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_trainjob.constants import LABEL_PREFIX, LEGACY_PREFIX

_CURRENT = f"{LABEL_PREFIX}/"
_LEGACY = f"{LEGACY_PREFIX}/"


def current_key(key: str) -> str:
    """``key`` under the prefix the provider writes (``airflow-trainjob.apache.org/dag-id`` ->
    ``airflow-trainjob/dag-id``); any other key unchanged.

    :param key: a label or annotation key.
    """
    return _CURRENT + key[len(_LEGACY) :] if key.startswith(_LEGACY) else key


def legacy_key(key: str) -> str:
    """``key`` under the prefix release 0.1.0 wrote (``airflow-trainjob/dag-id`` ->
    ``airflow-trainjob.apache.org/dag-id``); any other key unchanged.

    :param key: a label or annotation key.
    """
    return _LEGACY + key[len(_CURRENT) :] if key.startswith(_CURRENT) else key


def is_own_key(key: object) -> bool:
    """True when ``key`` is under either of the provider's prefixes.

    :param key: a label or annotation key (anything: a non-string is no key of the provider's).
    """
    return isinstance(key, str) and key.startswith((_CURRENT, _LEGACY))


def read_own_key(values: Mapping[str, Any] | None, key: str) -> Any:
    """The value of the provider's ``key`` in ``values``: under the prefix written now if there, else under the
    legacy prefix (a job an earlier release created); None when under neither.

    :param values: a job's ``metadata.labels`` or ``metadata.annotations`` (None: none).
    :param key: the key, under either prefix.
    """
    values = values or {}
    current = current_key(key)
    return values[current] if current in values else values.get(legacy_key(current))


def own_keys_in(given: Iterable[object], keys: Iterable[str]) -> list[str]:
    """The keys of ``given`` that are one of ``keys`` under either prefix, sorted: what a user may not set.

    :param given: the keys the user gave (a labels or annotations mapping iterates its keys).
    :param keys: the provider's keys, under either prefix.
    """
    wanted = {current_key(k) for k in keys}
    return sorted(k for k in given if isinstance(k, str) and current_key(k) in wanted)
