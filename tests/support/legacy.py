"""Jobs as the releases before 1.0 wrote them: the provider's own labels and annotations under the legacy prefix
(``airflow-trainjob.apache.org/``), for the tests that a job created before an upgrade is still recognised."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from airflow_trainjob.domain.own_keys import legacy_key


def as_legacy(job: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``job`` whose provider keys (labels and annotations) are under the legacy prefix, as an earlier
    release created it; other keys and the values unchanged.

    :param job: a job or manifest, an API JSON dict.
    """
    legacy = copy.deepcopy(dict(job))
    meta = legacy.get("metadata") or {}
    for field in ("labels", "annotations"):
        if meta.get(field):
            meta[field] = {legacy_key(k): v for k, v in meta[field].items()}
    return legacy
