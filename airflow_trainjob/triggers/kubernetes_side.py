"""The trigger's Kubernetes side (its shared stream, the async hook, the API's errors), imported in a worker thread.

Airflow's triggerer imports a trigger's module on its event loop (``TriggerRunner.get_trigger_by_classpath``), and
what this provider's hook stands on takes about a second to import (the ``kubernetes`` client package, which
``kubernetes.client.exceptions`` alone pulls in whole; ``kubernetes_asyncio``; the cncf.kubernetes hooks): that
import was the ``Triggerer's async thread was blocked for 1.8 seconds`` users saw at the first trigger of a
triggerer. So :mod:`~airflow_trainjob.triggers.training_job` and :mod:`~airflow_trainjob.watching.stream_source`
import only light modules, and reach the Kubernetes side as attributes of this module (``kubernetes_side.JobStream``)
once the trigger's entry points have awaited :func:`load`. It runs the import in a thread: module code is Python
bytecode, so the thread hands the GIL back every few milliseconds (``sys.getswitchinterval()``) and the loop keeps
running meanwhile, which one long C call would not allow.

The attributes are typed as the originals (for mypy, through the ``TYPE_CHECKING`` imports below). Read on a running
event loop before :func:`load` has finished, one raises RuntimeError rather than stall the loop with the import;
read anywhere else (a test, a synchronous caller), it imports the Kubernetes side there and then.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
import sys
import threading
from typing import TYPE_CHECKING, Any

from airflow_trainjob.triggers import heap

if TYPE_CHECKING:
    from airflow_trainjob.hooks.api_errors import (
        RAISED_ERRORS,
        TRANSIENT_ERRORS,
        TRANSIENT_STATUS_CODES,
        ApiCall,
        QuietApiException,
        one_line,
    )
    from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook
    from airflow_trainjob.watching.job_stream import JobStream, live_stream, registered, stream_hook

#: The trigger's shared stream (it imports the hook, the clients and the API's errors too).
JOB_STREAM = "airflow_trainjob.watching.job_stream"
#: What the triggers use of the Kubernetes side: name -> the module that defines it (:func:`load` imports them all).
DEFINED_IN = {
    "JobStream": JOB_STREAM,
    "live_stream": JOB_STREAM,
    "registered": JOB_STREAM,
    "stream_hook": JOB_STREAM,
    "AsyncTrainingJobHook": "airflow_trainjob.hooks.training_job",
    "ApiCall": "airflow_trainjob.hooks.api_errors",
    "QuietApiException": "airflow_trainjob.hooks.api_errors",
    "RAISED_ERRORS": "airflow_trainjob.hooks.api_errors",
    "one_line": "airflow_trainjob.hooks.api_errors",
    "TRANSIENT_ERRORS": "airflow_trainjob.hooks.api_errors",
    "TRANSIENT_STATUS_CODES": "airflow_trainjob.hooks.api_errors",
}

__all__ = [  # noqa: RUF022 (as DEFINED_IN lists them)
    "JobStream",
    "live_stream",
    "registered",
    "stream_hook",
    "AsyncTrainingJobHook",
    "ApiCall",
    "QuietApiException",
    "RAISED_ERRORS",
    "one_line",
    "TRANSIENT_ERRORS",
    "TRANSIENT_STATUS_CODES",
    "load",
]


async def load() -> None:
    """Import the Kubernetes side in a worker thread, once per process: every trigger that starts while the import
    runs awaits the same one; later calls return at once.

    :raises ImportError: and whatever else importing it raised (every later call raises it again).
    """
    importing = _importing()
    if not importing.done():
        await asyncio.wrap_future(importing)
    importing.result()


@functools.cache
def _importing() -> concurrent.futures.Future[None]:
    # A thread of its own with a loop-independent future, not asyncio.to_thread: all the triggers that start at once
    # wait on this one import (from whichever event loop), and none of them takes a thread of the loop's default
    # executor for it (the hooks load their kubeconfig there).
    done: concurrent.futures.Future[None] = concurrent.futures.Future()
    # Running from the start, so it cannot be cancelled: a trigger cancelled while it waits (its task marked failed,
    # the triggerer stopping) cancels only its own wait, not the import every other trigger of the process awaits.
    done.set_running_or_notify_cancel()

    def run() -> None:
        try:
            with heap.importing_quietly():  # the import's 70,000 objects would bring a full collection due
                for module in dict.fromkeys(DEFINED_IN.values()):
                    importlib.import_module(module)
        except BaseException as e:  # handed to the awaiting triggers, which raise it
            done.set_exception(e)
        else:
            done.set_result(None)

    threading.Thread(target=run, name="airflow_trainjob: import the trigger's Kubernetes side", daemon=True).start()
    return done


if not TYPE_CHECKING:  # (mypy reads the imports above instead: a misspelt name is an error, not Any)

    def __getattr__(name: str) -> Any:
        where = DEFINED_IN.get(name)
        if where is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        module = sys.modules.get(where)
        if module is not None and hasattr(module, name):  # imported (or far enough along to have defined it)
            return getattr(module, name)
        if _on_event_loop():
            raise RuntimeError(f"{name} was read on the event loop before `await kubernetes_side.load()` had finished")
        return getattr(importlib.import_module(where), name)


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
