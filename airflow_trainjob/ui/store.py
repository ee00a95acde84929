"""What a task instance recorded of its tries' jobs, read from Airflow's metadata database in the api-server.

The task writes the record (:mod:`airflow_trainjob.domain.records`) to its ``task_state_store`` under
``airflow_trainjob_tries``; the api-server reads the row through Airflow's own model
(:class:`~airflow.models.task_state_store.TaskStateStoreModel`). With a custom worker-side state store backend
(``[workers] state_store_backend``) the row holds only a reference, ``{"__airflow_state_ref__": "<ref>"}``, which the
same backend, configured in the api-server too, resolves (``deserialize_task_state_store_from_ref``), as the task
SDK does. The record is the only source of a job's namespace and name on the task instance page.

Beside it: what a deferred try's trigger left in the task instance's XCom -- the end it recorded when Airflow killed
it (:data:`~airflow_trainjob.domain.records.PARKED_KEY`, merged into that try's record) and the progress points it
writes while it waits (:data:`~airflow_trainjob.domain.trigger_progress.TRIGGER_PROGRESS_KEY`, handed to that try's
view) -- and Airflow's own state of each try (:func:`load_try_states`: the task instance's, and
``task_instance_history``'s for the earlier tries), which says whether a try is still under way.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from airflow.models.task_state_store import TaskStateStoreModel
from airflow.models.taskinstance import TaskInstance
from airflow.models.taskinstancehistory import TaskInstanceHistory
from airflow.models.xcom import XComModel
from airflow.providers.common.compat.module_loading import import_string
from airflow.providers.common.compat.sdk import conf
from sqlalchemy import select
from sqlalchemy.orm import Session

from airflow_trainjob.domain.records import PARKED_KEY, RECORD_KEY, read_parked, read_records, with_parked
from airflow_trainjob.domain.trigger_progress import TRIGGER_PROGRESS_KEY, read_progress_value, with_trigger_progress

#: The key under which the task SDK marks a value kept by a custom state store backend.
EXTERNAL_REF_KEY = "__airflow_state_ref__"


class RecordUnavailableError(Exception):
    """The task's record exists but cannot be read here (one line saying why and what to do)."""


@cache
def _backend() -> Any:
    """The configured ``[workers] state_store_backend`` instance, or None (the task SDK's rule: one per process)."""
    class_name = conf.get("workers", "state_store_backend", fallback="")
    if not class_name:
        return None
    try:
        return import_string(class_name)()
    except (ImportError, AttributeError) as e:
        raise RecordUnavailableError(
            f"cannot load [workers] state_store_backend {class_name!r} in the api-server to read the task's record: {e}"
        ) from None


def resolve(stored: Any) -> Any:
    """The record's value: ``stored`` itself, or what the custom state store backend keeps for its reference.

    :param stored: the row's ``value``, JSON-decoded.
    :raises RecordUnavailableError: a reference, and no (or a broken) backend in this api-server.
    """
    if not (isinstance(stored, dict) and set(stored) == {EXTERNAL_REF_KEY}):
        return stored
    backend = _backend()
    if backend is None:
        raise RecordUnavailableError(
            "the task's record is kept by a custom state store backend; configure the same "
            "[workers] state_store_backend in the api-server to show it"
        )
    try:
        return backend.deserialize_task_state_store_from_ref(stored[EXTERNAL_REF_KEY])
    except Exception as e:  # a third-party backend: any failure is "cannot read", said in one line
        raise RecordUnavailableError(
            f"the state store backend could not read the task's record: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        ) from None


def load_tries(dag_id: str, run_id: str, task_id: str, map_index: int, *, session: Session) -> list[dict[str, Any]]:
    """The task instance's tries, latest first, as the record's JSON (``try_number``, ``kubernetes_conn_id``,
    ``kind``, ``namespace``, ``name``, ``uid``, ``created_at``, ``attached``, ``manifest_yaml``, ``final``); [] when it
    recorded none (it launched no training job, or the row expired).

    :param dag_id: the DAG id.
    :param run_id: the DAG run id.
    :param task_id: the task id.
    :param map_index: the map index (``-1``: not mapped).
    :param session: a metadata database session.
    :raises RecordUnavailableError: the row is there but cannot be read (custom backend, malformed JSON).
    """
    value = session.scalar(
        select(TaskStateStoreModel.value).where(
            TaskStateStoreModel.dag_id == dag_id,
            TaskStateStoreModel.run_id == run_id,
            TaskStateStoreModel.task_id == task_id,
            TaskStateStoreModel.map_index == map_index,
            TaskStateStoreModel.key == RECORD_KEY,
        )
    )
    if value is None:
        return []
    try:
        stored = json.loads(value)
    except ValueError:
        raise RecordUnavailableError(f"the task's record ({RECORD_KEY}) is not JSON") from None
    parked, progress = _from_trigger(dag_id, run_id, task_id, map_index, session)
    records = with_parked(read_records(resolve(stored)), read_parked(parked))
    return with_trigger_progress([r.model_dump(mode="json") for r in records], read_progress_value(progress))


def _from_trigger(dag_id: str, run_id: str, task_id: str, map_index: int, session: Session) -> tuple[Any, Any]:
    """What a deferred try's trigger left in the task instance's XCom, in one query: the try's end when Airflow
    killed it (:data:`~airflow_trainjob.domain.records.PARKED_KEY`) and its progress points while it waits
    (:data:`~airflow_trainjob.domain.trigger_progress.TRIGGER_PROGRESS_KEY`); None for each one absent."""
    rows = session.execute(
        select(XComModel.key, XComModel.value).where(
            XComModel.dag_id == dag_id,
            XComModel.run_id == run_id,
            XComModel.task_id == task_id,
            XComModel.map_index == map_index,
            XComModel.key.in_((PARKED_KEY, TRIGGER_PROGRESS_KEY)),
        )
    ).all()
    found = {row.key: XComModel.deserialize_value(row) for row in rows}
    return found.get(PARKED_KEY), found.get(TRIGGER_PROGRESS_KEY)


def load_try_states(
    dag_id: str, run_id: str, task_id: str, map_index: int, *, session: Session
) -> dict[int, dict[str, Any]]:
    """Airflow's state of each try of the task instance: try number -> ``state`` (``running``, ``deferred``,
    ``failed``...; None: not set), ``end_date`` (RFC 3339 UTC, or None) and ``current`` (the task instance's own
    try, else one ``task_instance_history`` keeps). {} when the task instance is not in the database.

    :param dag_id: the DAG id.
    :param run_id: the DAG run id.
    :param task_id: the task id.
    :param map_index: the map index (``-1``: not mapped).
    :param session: a metadata database session.
    """
    found: dict[int, dict[str, Any]] = {}
    for model, current in ((TaskInstanceHistory, False), (TaskInstance, True)):
        rows = session.execute(
            select(model.try_number, model.state, model.end_date).where(
                model.dag_id == dag_id,
                model.run_id == run_id,
                model.task_id == task_id,
                model.map_index == map_index,
            )
        )
        for try_number, state, end_date in rows:
            if current and try_number in found:  # a try the history keeps already ended (a clear moved it there)
                continue
            found[int(try_number)] = {
                "state": str(state.value if hasattr(state, "value") else state) if state is not None else None,
                "end_date": end_date.isoformat() if end_date is not None else None,
                "current": current,
            }
    return found
