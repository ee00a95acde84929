"""``ownership``: "is this still my job" — one decision for the task (``TaskInstanceIdentity``) and the trigger
(:func:`why_not_followed` on its primitive kwargs). No cluster."""

from __future__ import annotations

import pytest

from airflow_trainjob.constants import LABEL_TRY_NUMBER
from airflow_trainjob.domain.ownership import (
    ANNOTATION_FOLLOWED_BY_TRY,
    TaskInstanceIdentity,
    carries_labels,
    following_try,
    why_not_followed,
)
from tests.support.legacy import as_legacy

TRY_2 = TaskInstanceIdentity(dag_id="dag", task_id="train", run_id="manual__2026", map_index=-1, try_number=2)


def job_of(identity: TaskInstanceIdentity, uid: str = "u-1", followed_by: int | None = None, **labels: str) -> dict:
    meta = {"name": "train", "namespace": "ml", "uid": uid, "labels": {**identity.labels(), **labels}}
    if followed_by is not None:
        meta["annotations"] = {ANNOTATION_FOLLOWED_BY_TRY: str(followed_by)}
    return {"kind": "PyTorchJob", "metadata": meta}


def owner_labels(identity: TaskInstanceIdentity) -> dict[str, str]:
    """What the operator puts in the trigger's kwargs."""
    return {k: v for k, v in identity.labels().items() if k != LABEL_TRY_NUMBER}


def test_the_trigger_is_given_the_instance_labels():
    assert TRY_2.instance_labels() == owner_labels(TRY_2)


def test_the_job_of_this_try_is_followed():
    job = job_of(TRY_2)
    assert why_not_followed(job, owner_labels(TRY_2), uid="u-1", try_number=2) is None
    assert why_not_followed(job, owner_labels(TRY_2)) is None  # no uid, any try
    assert TRY_2.follows(job) and TRY_2.owns(job) and TRY_2.created_by_this_try(job)


def test_a_same_named_successor_is_not_ours():
    assert (
        why_not_followed(job_of(TRY_2, uid="u-2"), owner_labels(TRY_2), uid="u-1", try_number=2)
        == "not the job this task created"
    )


@pytest.mark.parametrize(
    "other",
    [
        TaskInstanceIdentity("dag", "other-task", "manual__2026", -1, 2),
        TaskInstanceIdentity("dag", "train", "manual__2027", -1, 2),
        TaskInstanceIdentity("dag", "train", "manual__2026", 3, 2),
    ],
)
def test_another_task_instances_job_is_not_ours(other):
    job = job_of(other)
    assert why_not_followed(job, owner_labels(TRY_2), try_number=2) == "not the job this task created"
    assert not TRY_2.owns(job) and not TRY_2.follows(job)


def test_a_job_without_labels_is_not_ours():
    bare = {"metadata": {"name": "train", "uid": "u-1"}}
    assert why_not_followed(bare, owner_labels(TRY_2)) == "not the job this task created"
    assert not carries_labels(bare, owner_labels(TRY_2))


def test_a_wait_without_owner_labels_owns_nothing():
    assert why_not_followed(job_of(TRY_2), {}) == "this wait does not own the job"
    assert not carries_labels(job_of(TRY_2), {})


def test_a_job_a_later_try_follows_is_left_to_it():
    """A clear raced the next try: try 3 attached to the job try 2 created; try 2, killed late, must leave it."""
    job = job_of(TRY_2, followed_by=3)
    assert following_try(job) == "3"
    assert (
        why_not_followed(job, owner_labels(TRY_2), uid="u-1", try_number=2)
        == "try 3 of this task follows it now, not try 2"
    )
    assert not TRY_2.follows(job)
    try_3 = TaskInstanceIdentity("dag", "train", "manual__2026", -1, 3)
    assert try_3.follows(job) and why_not_followed(job, owner_labels(try_3), try_number="3") is None
    assert TRY_2.owns(job) and not try_3.created_by_this_try(job)


def test_the_task_and_the_trigger_decide_alike():
    """Every case through both doors: ``follows`` is ``why_not_followed(...) is None``."""
    jobs = [
        job_of(TRY_2),
        job_of(TRY_2, followed_by=3),
        job_of(TRY_2, followed_by=2),
        job_of(TaskInstanceIdentity("dag", "x", "manual__2026", -1, 2)),
        {"metadata": {}},
    ]
    for job in jobs:
        assert TRY_2.follows(job) == (why_not_followed(job, owner_labels(TRY_2), try_number=2) is None)


def test_a_job_an_earlier_release_created_is_still_ours():
    """Labelled under the legacy prefix (before 1.0): a retry after the upgrade owns it and follows it; a trigger
    serialised by that release (its ``owner_labels`` under the legacy prefix) owns a job labelled now."""
    legacy = as_legacy(job_of(TRY_2))
    assert TRY_2.owns(legacy) and TRY_2.follows(legacy) and TRY_2.created_by_this_try(legacy)
    assert why_not_followed(legacy, owner_labels(TRY_2), uid="u-1", try_number=2) is None
    assert carries_labels(job_of(TRY_2), as_legacy({"metadata": {"labels": owner_labels(TRY_2)}})["metadata"]["labels"])
    try_3 = TaskInstanceIdentity("dag", "train", "manual__2026", -1, 3)
    followed = as_legacy(job_of(TRY_2, followed_by=3))
    assert following_try(followed) == "3" and try_3.follows(followed) and not TRY_2.follows(followed)
    assert not try_3.created_by_this_try(followed)
    other = as_legacy(job_of(TaskInstanceIdentity("dag", "other-task", "manual__2026", -1, 2)))
    assert not TRY_2.owns(other)


def test_the_annotation_written_now_wins_over_a_legacy_one():
    """A retry after the upgrade records that it follows the job under the new prefix; the legacy record is older."""
    job = as_legacy(job_of(TRY_2, followed_by=3))
    job["metadata"]["annotations"][ANNOTATION_FOLLOWED_BY_TRY] = "4"
    assert following_try(job) == "4"
