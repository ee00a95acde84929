"""Airflow's triggerer as a trigger's ``on_kill`` meets it, for tests without a deployment.

Modelled on apache-airflow 3.3.2 ``airflow/jobs/triggerer_job_runner.py``: the supervisor answers every
``TriggerStateChanges`` with ``to_cancel=cancelling_triggers``, a set it empties only when the runner reports the
trigger finished; the runner's loop calls ``cancel_triggers`` at every pass (about once a second), which cancels each
listed trigger still running with the user-action message; ``run_trigger`` runs ``on_kill`` in its
``except CancelledError`` under ``asyncio.wait_for(..., on_kill_timeout)`` and swallows a ``CancelledError`` from it.
So while ``on_kill`` runs, its trigger's task is cancelled again and again.
"""

from __future__ import annotations

import asyncio
from typing import Any

#: The message the triggerer cancels a trigger with when a user acted on its task (``_USER_ACTION_CANCEL_MSG``).
USER_ACTION = "__airflow_user_action__"


async def kill_as_the_triggerer_does(trigger: Any, *, timeout: float, every: float, linger: float = 0.0) -> str:
    """Cancel ``trigger``'s wait as the triggerer does when its task is marked failed, then again every ``every``
    seconds until the trigger has finished; ``on_kill`` runs within ``timeout`` seconds. Then the loop runs on for
    ``linger`` seconds, as the triggerer's does (what the trigger left running goes on).

    :param trigger: anything with an ``async on_kill()``.
    :param timeout: ``[triggerer] on_kill_timeout`` (seconds).
    :param every: seconds between two cancellations (the triggerer's loop: about 1).
    :param linger: seconds the loop runs on after the trigger finished.
    :returns: how ``on_kill`` ended: ``returned``, ``timed out``, ``cut`` (cancelled again before it returned),
        ``raised: <exception>``.
    """
    ended: list[str] = []

    async def run_trigger() -> None:
        try:
            await asyncio.Event().wait()  # the trigger, waiting for its job
        except asyncio.CancelledError as e:
            if e.args and e.args[0] == USER_ACTION:
                try:
                    await asyncio.wait_for(trigger.on_kill(), timeout)  # (Airflow's own code)
                    ended.append("returned")
                except asyncio.TimeoutError:
                    ended.append("timed out")
                except asyncio.CancelledError:
                    ended.append("cut")
                except Exception as error:
                    ended.append(f"raised: {error!r}")
            raise

    task = asyncio.ensure_future(run_trigger())
    await asyncio.sleep(0)
    while not task.done():
        task.cancel(USER_ACTION)
        await asyncio.sleep(every)
    await asyncio.sleep(linger)
    return ended[0] if ended else "never ran"
