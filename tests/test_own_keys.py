"""``own_keys``: the provider's keys are written under one prefix and read under either (releases before 1.0 wrote
``airflow-trainjob.apache.org/``). No cluster."""

from __future__ import annotations

import pytest

from airflow_trainjob.constants import LABEL_DAG_ID, LABEL_PREFIX, LABEL_TRY_NUMBER, LEGACY_PREFIX
from airflow_trainjob.domain.own_keys import current_key, is_own_key, legacy_key, own_keys_in, read_own_key
from airflow_trainjob.domain.ownership import RESERVED_ANNOTATIONS, RESERVED_LABELS, TaskInstanceIdentity

LEGACY_DAG_ID = f"{LEGACY_PREFIX}/dag-id"


def test_the_prefix_is_the_projects_own_name_and_every_written_key_uses_it():
    assert LABEL_PREFIX == "airflow-trainjob" and LABEL_DAG_ID == "airflow-trainjob/dag-id"
    identity = TaskInstanceIdentity("dag", "train", "manual__2026", -1, 1)
    written = [*identity.labels(), *identity.annotations(), *RESERVED_LABELS, *RESERVED_ANNOTATIONS]
    assert all(k.startswith(f"{LABEL_PREFIX}/") for k in written)
    assert not any(LEGACY_PREFIX in k for k in written)


def test_keys_move_between_the_prefixes_and_others_stay():
    assert legacy_key(LABEL_DAG_ID) == LEGACY_DAG_ID and current_key(LEGACY_DAG_ID) == LABEL_DAG_ID
    assert legacy_key(LEGACY_DAG_ID) == LEGACY_DAG_ID and current_key(LABEL_DAG_ID) == LABEL_DAG_ID
    for other in ("team", "kueue.x-k8s.io/queue-name", "airflow-trainjob-local/test", "airflow-trainjob.example/x"):
        assert legacy_key(other) == current_key(other) == other and not is_own_key(other)
    assert is_own_key(LABEL_DAG_ID) and is_own_key(LEGACY_DAG_ID) and not is_own_key(3)


@pytest.mark.parametrize(
    ("values", "found"),
    [
        ({LABEL_DAG_ID: "now"}, "now"),
        ({LEGACY_DAG_ID: "before"}, "before"),
        ({LABEL_DAG_ID: "now", LEGACY_DAG_ID: "before"}, "now"),  # the key written now wins
        ({"dag-id": "x"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_a_key_is_read_under_either_prefix(values, found):
    assert read_own_key(values, LABEL_DAG_ID) == found
    assert read_own_key(values, LEGACY_DAG_ID) == found  # asked by its legacy name (an old trigger's kwargs)


def test_reserved_keys_are_found_under_either_prefix():
    given = {LEGACY_DAG_ID: "x", LABEL_TRY_NUMBER: "1", "team": "ml", 7: "not a key"}
    assert own_keys_in(given, RESERVED_LABELS) == sorted([LEGACY_DAG_ID, LABEL_TRY_NUMBER])
    assert own_keys_in({f"{LABEL_PREFIX}/other": "x"}, RESERVED_LABELS) == []
