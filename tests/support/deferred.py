"""Running the deferred path as Airflow does: a trigger until its first event (as the triggerer runs it), a
trigger rebuilt from its serialized form (a triggerer restart), shared-stream triggers under Airflow's own
``SharedStreamManager``, and one task in either mode.
"""

from __future__ import annotations

import asyncio
import importlib
import time

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

#: The two ways a task waits: synchronously in ``execute``, or deferred to a trigger.
MODES = ("sync", "deferred")


def first_event(trigger, timeout: float = 60.0) -> dict:
    """Run the trigger until its first event, as the triggerer does; the event's payload."""

    async def run():
        async for event in trigger.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")

    return asyncio.run(asyncio.wait_for(run(), timeout))


def rebuild(trigger):
    """What a triggerer (re)start does: import the classpath, construct from the kwargs."""
    classpath, kwargs = trigger.serialize()
    module, _, name = classpath.rpartition(".")
    return getattr(importlib.import_module(module), name)(**kwargs)


def operator_for(mode: str, replica_specs: dict, **kwargs):
    """A PyTorchJob ``TrainingJobOperator`` that waits in ``mode`` (one of :data:`MODES`)."""
    from airflow_trainjob.operators.training_job import TrainingJobOperator

    return TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=replica_specs, deferrable=mode == "deferred", **kwargs
    )


def defer(operator, ti):
    """``execute`` a deferrable operator up to its deferral; the trigger, rebuilt as a triggerer would."""
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    return rebuild(deferred.value.trigger)


async def in_triggerer(manager, trigger_id: int, trigger) -> dict:
    """Run one trigger as the triggerer's ``run_trigger`` does with a shared-stream trigger: subscribe under its
    key, feed the shared stream through its ``filter_shared_stream``, unsubscribe when it has fired."""
    key = trigger.shared_stream_key()
    try:
        async for event in trigger.filter_shared_stream(
            manager.subscribe(trigger_id=trigger_id, trigger=trigger, key=key)
        ):
            return event.payload | {"fired_at": time.time()}
        raise AssertionError("the trigger ended without an event")
    finally:
        await manager.unsubscribe(trigger_id, key)


async def synced_stream(trigger):
    """The running stream of ``trigger``'s source, once it has listed its jobs (a trigger of it must be waiting)."""
    from airflow_trainjob.watching.job_stream import live_stream

    source = trigger.shared_stream_key()
    while (stream := live_stream(source)) is None or not stream.synced:
        await asyncio.sleep(0.05)
    return stream
