"""The triggerer's heap and Python's garbage collector: keeping full collections off the triggerer's event loop.

A full (generation 2) collection walks every container object the process holds, and runs on whichever thread
allocates when it comes due, holding the GIL: in a triggerer (Airflow's own heap, about 200,000 objects, plus the
Kubernetes clients' 70,000 once a trigger of this provider has run) one took 0.3-0.6 s on the loop, the
``Triggerer's async thread was blocked`` warnings users saw as a training trigger started. The imports at a
triggerer's first training trigger are what bring a full collection due: they add objects that live as long as the
process. So, in the triggerer only (the first import of the trigger's module happens on its running event loop):

- :func:`freeze_long_lived` moves what the process holds when the trigger's module is first imported into the
  collector's permanent generation (``gc.freeze``, a constant-time splice, as Airflow's DAG processor does once it has
  started), so no later collection walks it;
- :func:`importing_quietly` holds automatic collections back while the Kubernetes side is imported in its thread,
  then freezes what the import left (its modules, classes and constants live as long as the process).

Objects frozen are still freed when their last reference goes; only a cycle among them is never collected, which
for modules, classes and the settings read at start-up does not happen. ``[trainjob] triggerer_gc_freeze = False``
turns both off.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
from collections.abc import Iterator

#: The provider's configuration section and the option that turns the freezing off.
CONFIG_SECTION = "trainjob"
CONFIG_KEY = "triggerer_gc_freeze"
#: The module of Airflow's ``TriggerRunner``: loaded in the process that runs triggers.
TRIGGER_RUNNER_MODULE = "airflow.jobs.triggerer_job_runner"


def in_triggerer() -> bool:
    """Whether this is Airflow's trigger runner, on its event loop (where it imports a trigger's module): not a
    worker, nor the api-server (whose UI imports the trigger's stream)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return TRIGGER_RUNNER_MODULE in sys.modules


def enabled() -> bool:
    """Whether ``[trainjob] triggerer_gc_freeze`` (True by default) lets the provider freeze the triggerer's heap."""
    from airflow.configuration import conf

    return conf.getboolean(CONFIG_SECTION, CONFIG_KEY, fallback=True)


def freeze_long_lived() -> bool:
    """Move every object the collector tracks into its permanent generation, if :func:`enabled`.

    :returns: whether it froze.
    """
    if not enabled():
        return False
    gc.freeze()
    return True


@contextlib.contextmanager
def importing_quietly() -> Iterator[None]:
    """Hold automatic collections back for the body (an import of long-lived modules, in a thread), then freeze what
    the process holds; when not :func:`enabled`, do nothing. A collector someone else turned off stays off."""
    if not enabled():
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
