"""Which Airflow task instance a job belongs to, told by labels on the job.

Every job this provider creates carries its task instance's identity (dag_id, task_id, run_id,
map_index, try_number) as labels. That is how a retry finds the job of an earlier try, and how
cleanup makes sure it only ever deletes what is its own. The keys are read under either prefix
(:func:`~airflow_trainjob.domain.own_keys.read_own_key`): a job an earlier release created is still this
task instance's after an upgrade.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.constants import (
    ANNOTATION_DAG_ID,
    ANNOTATION_MAP_INDEX,
    ANNOTATION_RUN_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_TRY_NUMBER,
    LABEL_DAG_ID,
    LABEL_MAP_INDEX,
    LABEL_PREFIX,
    LABEL_RUN_ID,
    LABEL_TASK_ID,
    LABEL_TRY_NUMBER,
)
from airflow_trainjob.domain.names import sanitize_label_value
from airflow_trainjob.domain.own_keys import read_own_key

#: The try that follows the job now, when it is not the one that created it (a retry attached or reconnected to it).
ANNOTATION_FOLLOWED_BY_TRY = f"{LABEL_PREFIX}/followed-by-try"

#: The labels that identify the task instance, whatever its try.
_INSTANCE_KEYS = (LABEL_DAG_ID, LABEL_TASK_ID, LABEL_RUN_ID, LABEL_MAP_INDEX)
RESERVED_LABELS = (*_INSTANCE_KEYS, LABEL_TRY_NUMBER)
#: The annotations that name the task instance and try unsanitised (:meth:`TaskInstanceIdentity.annotations`).
RESERVED_ANNOTATIONS = (
    ANNOTATION_DAG_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_RUN_ID,
    ANNOTATION_MAP_INDEX,
    ANNOTATION_TRY_NUMBER,
)


@dataclass(frozen=True)
class TaskInstanceIdentity:
    """The task instance a job is created for.

    :param dag_id: the task instance's DAG id (a label of the job, sanitised: :data:`~airflow_trainjob.constants.LABEL_DAG_ID`).
    :param task_id: its task id.
    :param run_id: its DAG run id.
    :param map_index: ``-1`` for an unmapped task.
    :param try_number: the try that creates the job (1 for the first).
    """

    dag_id: str
    task_id: str
    run_id: str
    map_index: int
    try_number: int

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> TaskInstanceIdentity:
        """Read the identity from an Airflow task context's ``ti``.

        :param context: the Airflow task context (``ti``: ``dag_id``, ``task_id``, ``run_id``, ``map_index``,
            ``try_number``).
        """
        ti = context["ti"]
        map_index = getattr(ti, "map_index", -1)
        return cls(
            dag_id=ti.dag_id,
            task_id=ti.task_id,
            run_id=ti.run_id,
            map_index=-1 if map_index is None else int(map_index),
            try_number=int(ti.try_number or 1),
        )

    def labels(self) -> dict[str, str]:
        """The labels to put on the job (values sanitised to label rules)."""
        return {
            LABEL_DAG_ID: sanitize_label_value(self.dag_id),
            LABEL_TASK_ID: sanitize_label_value(self.task_id),
            LABEL_RUN_ID: sanitize_label_value(self.run_id),
            # "-1" is no valid label value (it must start with a letter or digit).
            LABEL_MAP_INDEX: str(self.map_index) if self.map_index >= 0 else "none",
            LABEL_TRY_NUMBER: str(self.try_number),
        }

    def annotations(self) -> dict[str, str]:
        """The annotations to put on the job: the identity as Airflow spells it (label values are sanitised, so a
        reader cannot tell the DAG, run or task from them). ``map-index`` is ``-1`` for an unmapped task."""
        return {
            ANNOTATION_DAG_ID: self.dag_id,
            ANNOTATION_TASK_ID: self.task_id,
            ANNOTATION_RUN_ID: self.run_id,
            ANNOTATION_MAP_INDEX: str(self.map_index),
            ANNOTATION_TRY_NUMBER: str(self.try_number),
        }

    def instance_selector(self) -> str:
        """A label selector matching this task instance's jobs of any try."""
        labels = self.labels()
        return ",".join(f"{k}={labels[k]}" for k in _INSTANCE_KEYS)

    def instance_labels(self) -> dict[str, str]:
        """The labels of this task instance whatever its try: what a job of any of its tries carries (the
        ``owner_labels`` of its trigger)."""
        labels = self.labels()
        return {k: labels[k] for k in _INSTANCE_KEYS}

    def owns(self, job: Mapping[str, Any]) -> bool:
        """True when ``job`` carries this task instance's labels (any try).

        :param job: the job, an API JSON dict (its ``metadata.labels``).
        """
        return carries_labels(job, self.instance_labels())

    def created_by_this_try(self, job: Mapping[str, Any]) -> bool:
        """True when ``job`` is this task instance's and was created by this very try.

        :param job: the job, an API JSON dict (its ``metadata.labels``).
        """
        return self.owns(job) and created_by_try(job) == str(self.try_number)

    def follows(self, job: Mapping[str, Any]) -> bool:
        """True when ``job`` is this task instance's and this try follows it now (it created it, or attached or
        reconnected to it since): what a killed try may delete. An older try killed late (a clear races the
        next try) leaves a job that a newer try follows.

        :param job: the job, an API JSON dict (its ``metadata.labels`` and ``metadata.annotations``).
        """
        return why_not_followed(job, self.instance_labels(), try_number=self.try_number) is None


def created_by_try(job: Mapping[str, Any]) -> str | None:
    """The try number that created ``job`` (its label :data:`~airflow_trainjob.constants.LABEL_TRY_NUMBER`), or None.

    :param job: the job, an API JSON dict (its ``metadata.labels``).
    """
    return read_own_key((job.get("metadata") or {}).get("labels"), LABEL_TRY_NUMBER)


def following_try(job: Mapping[str, Any]) -> str | None:
    """The try number that follows ``job`` now: the one that attached last, else the one that created it.

    :param job: the job, an API JSON dict (the annotation :data:`ANNOTATION_FOLLOWED_BY_TRY`, else the try label).
    """
    return read_own_key((job.get("metadata") or {}).get("annotations"), ANNOTATION_FOLLOWED_BY_TRY) or created_by_try(
        job
    )


def carries_labels(job: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """True when ``job`` has every one of ``labels`` with the same value (and ``labels`` is not empty). The
    provider's own keys count under either prefix, on either side: the job's, or a trigger's ``owner_labels``
    serialised by an earlier release.

    :param job: the job, an API JSON dict (its ``metadata.labels``).
    :param labels: label key -> value the job must carry.
    """
    job_labels = (job.get("metadata") or {}).get("labels") or {}
    return bool(labels) and all(read_own_key(job_labels, k) == v for k, v in labels.items())


def why_not_followed(
    job: Mapping[str, Any],
    owner_labels: Mapping[str, str],
    *,
    uid: str | None = None,
    try_number: int | str | None = None,
) -> str | None:
    """ "Is this still my job": why ``job`` is not the job a task's try may treat as its own now (delete it when the
    try is killed), or None when it is. The one decision behind :meth:`TaskInstanceIdentity.follows`, for a holder
    of an identity's labels rather than the identity itself (the trigger, whose kwargs are primitives).

    :param job: the job as the API has it now (a JSON dict).
    :param owner_labels: the task instance's labels the job must carry (:meth:`TaskInstanceIdentity.instance_labels`);
        empty: the holder owns no job (a sensor's wait on a job made elsewhere).
    :param uid: the job object the holder knows (a same-named successor is not its job); None: any.
    :param try_number: the try asking: a job that a later try follows now (:func:`following_try`, a clear that raced
        the next try) is that try's to decide on; None: any try's.
    :returns: a few words for a log line (``not the job this task created``, ``try 3 of this task follows it now,
        not try 2``), or None.
    """
    if not owner_labels:
        return "this wait does not own the job"
    meta = job.get("metadata") or {}
    if (uid and meta.get("uid") != uid) or not carries_labels(job, owner_labels):
        return "not the job this task created"
    following = following_try(job)
    if try_number is not None and following != str(try_number):
        return f"try {following} of this task follows it now, not try {try_number}"
    return None
