"""Run one try of a TrainingJobOperator task, or one trigger until its first event, in a process of its own —
the process the SIGKILL fault tests kill.

``python -m tests.support.run_try '<json>'`` with ``{"mode": "task", "run_id", "try_number", "replica_specs",
"store", "out"}`` (``"die_when_storing": true``: SIGKILL itself instead of
storing the job's identity; ``"deferrable": true``: ``execute`` up to its deferral) or ``{"mode": "resume", ...}``
(the same keys and ``"event"``: ``execute_complete`` with the trigger's event, as a resumed deferred task) or
``{"mode": "trigger", "classpath", "kwargs", "out"}``. A ``"trainer"`` (``spec.trainer``) instead of
``"replica_specs"`` runs a ``TrainJobOperator`` on the local cluster's ``torch-distributed`` runtime. With ``"die_after_cleanup": true`` the task SIGKILLs itself
right after its cleanup deleted the job, before it returns: a worker lost before it reported the success.
``"clear_number"`` and ``"max_tries"`` go to the context's DAG run and task instance, as Airflow's task runner sets
them. The result (the task's return value, or the trigger's event payload) is written as JSON to ``out``. The
connection comes from the environment (``AIRFLOW_CONN_KUBERNETES_DEFAULT``), as in a worker.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


class FileTaskStateStore:
    """Airflow 3.3's ``task_state_store`` as a JSON file: what a try stores is there for the next try, in
    another process (written atomically, like a database commit)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _load(self) -> dict[str, Any]:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def get(self, key: str, default: Any = None) -> Any:
        return self._load().get(key, default)

    def set(self, key: str, value: Any, *, retention: Any = None) -> None:  # retention: as Airflow's store
        data = self._load()
        data[key] = value
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(self.path)


class StoreThatKillsTheProcess(FileTaskStateStore):
    """Kills its own process (SIGKILL) when asked to store anything: the worker dies after the job was created and
    before its identity reached ``task_state_store`` — the window Airflow's ``ResumableJobMixin`` cannot close."""

    def set(self, key: str, value: Any, *, retention: Any = None) -> None:  # retention: as Airflow's store
        import os
        import signal

        print(f"storing {key}: killing this process first", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def die_after_the_jobs_deletion() -> None:
    """SIGKILL this process right after the hook has deleted a job (the task's cleanup), before the task returns."""
    import os
    import signal

    from airflow_trainjob.hooks.training_job import TrainingJobHook

    delete_job = TrainingJobHook.delete_job

    def then_die(self: Any, *args: Any, **kwargs: Any) -> Any:
        deleted = delete_job(self, *args, **kwargs)
        print("the cleanup deleted the job: killing this process", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        return deleted

    TrainingJobHook.delete_job = then_die  # type: ignore[method-assign]


def task_context(args: dict[str, Any]) -> dict[str, Any]:
    """What the task runner hands the task: its task instance, DAG run and ``task_state_store``."""
    from types import SimpleNamespace

    from tests.support.jobs import TaskInstanceStandIn

    ti = TaskInstanceStandIn(run_id=args["run_id"], try_number=args["try_number"])
    context: dict[str, Any] = {"ti": ti}
    if "max_tries" in args:
        ti.max_tries = args["max_tries"]  # type: ignore[attr-defined]
    if "clear_number" in args:
        context["dag_run"] = SimpleNamespace(clear_number=args["clear_number"])
    store_class = StoreThatKillsTheProcess if args.get("die_when_storing") else FileTaskStateStore
    context["task_state_store"] = store_class(Path(args["store"]))
    return context


def main(argv: list[str]) -> None:
    args = json.loads(argv[1])
    out = Path(args["out"])
    if args["mode"] in ("task", "resume"):
        from airflow_trainjob.operators.training_job import TrainingJobOperator

        if args.get("die_after_cleanup"):
            die_after_the_jobs_deletion()
        common = dict(
            task_id="train",
            poll_interval=0.5,
            on_finish=args.get("on_finish", "delete_job"),
            deferrable=bool(args.get("deferrable")),
        )
        if "trainer" in args:  # a TrainJob on the local cluster's torch-distributed runtime
            from airflow_trainjob.operators.trainjob import TrainJobOperator

            operator: TrainingJobOperator = TrainJobOperator(
                runtime="torch-distributed", trainer=args["trainer"], **common
            )
        else:
            operator = TrainingJobOperator(kind="PyTorchJob", replica_specs=args["replica_specs"], **common)
        context = task_context(args)
        if args["mode"] == "resume":
            result = operator.execute_complete(context, args["event"])
        else:
            result = operator.execute(context)
        out.write_text(json.dumps(result))
    else:
        import asyncio
        import importlib

        module, _, name = args["classpath"].rpartition(".")
        trigger = getattr(importlib.import_module(module), name)(**args["kwargs"])

        async def first_event():
            async for event in trigger.run():
                return event.payload

        out.write_text(json.dumps(asyncio.run(first_event())))


if __name__ == "__main__":
    main(sys.argv)
