"""What a task instance recorded of its tries' jobs, read from Airflow's metadata database in the api-server.

The task writes the record (:mod:`airflow_trainjob.job_record`) to its ``task_state_store`` under
``airflow_trainjob_tries``; the api-server reads the row through Airflow's own model
(:class:`~airflow.models.task_state_store.TaskStateStoreModel`). With a custom worker-side state store backend
(``[workers] state_store_backend``) the row holds only a reference, ``{"__airflow_state_ref__": "<ref>"}``, which the
same backend, configured in the api-server too, resolves (``deserialize_task_state_store_from_ref``), as the task
SDK does. The record is the only source of a job's namespace and name on the task instance page.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from airflow.models.task_state_store import TaskStateStoreModel
from airflow.providers.common.compat.module_loading import import_string
from airflow.providers.common.compat.sdk import conf
from sqlalchemy import select
from sqlalchemy.orm import Session

from airflow_trainjob.job_record import RECORD_KEY, read_records

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
    records = read_records(resolve(stored))
    return [r.model_dump(mode="json") for r in records]
