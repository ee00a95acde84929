"""The deferred path keeps blocking work off the triggerer's event loop (issue 14): where each piece runs, proven by
the thread it runs in and by what it builds — not by timing it (``benchmarks/loop_stalls.py`` measures the stalls).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
import textwrap
import threading

import pytest
from airflow.providers.cncf.kubernetes.hooks import kubernetes as cncf_hooks
from kubernetes_asyncio import client as async_client
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException

from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook, _watch_event
from airflow_trainjob.watching.job_stream import READERS_PER_TURN, JobStream, StreamSource
from tests.support.jobs import SLEEP, create

# --- no cluster: a watch line as kubernetes_asyncio's Watch gives it -------------------------------------------------


def test_a_watch_line_is_the_event_with_its_raw_object():
    event = _watch_event(b'{"type": "MODIFIED", "object": {"metadata": {"name": "a", "resourceVersion": "7"}}}\n')
    assert isinstance(event, dict)
    assert event["type"] == "MODIFIED" and event["raw_object"] is event["object"]
    assert event["raw_object"]["metadata"] == {"name": "a", "resourceVersion": "7"}


def test_an_expired_watch_raises_410_and_an_error_answer_its_status():
    expired = b'{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}'
    with pytest.raises(AsyncApiException) as gone:
        _watch_event(expired)
    assert gone.value.status == 410 and "too old" in str(gone.value.reason)
    with pytest.raises(AsyncApiException) as forbidden:
        _watch_event(b'{"kind": "Status", "code": 403, "reason": "Forbidden", "message": "no watch"}')
    assert forbidden.value.status == 403


def test_a_line_cut_short_comes_back_as_text():
    assert _watch_event(b'{"type": "ADDED", "obj') == '{"type": "ADDED", "obj'  # the stream calls it a dropped link


def test_readers_take_turns_a_few_per_pass_of_the_event_loop():
    """A list wakes every trigger of the stream at once: they judge their jobs READERS_PER_TURN at a time, with the
    loop's other work (here a task that yields at every pass, as the triggerer's watchdog does) in between."""
    order: list[int | str] = []

    async def main():
        stream = JobStream(StreamSource(None, None, None, None, "ml", "PyTorchJob"))
        readers_done = False

        async def other_work():
            while not readers_done:
                order.append("pass")
                await asyncio.sleep(0)

        async def reader(i: int):
            await stream.take_turn()
            order.append(i)

        ticking = asyncio.create_task(other_work())
        await asyncio.sleep(0)
        await asyncio.gather(*(reader(i) for i in range(300)))
        readers_done = True
        await ticking

    asyncio.run(main())
    assert [x for x in order if x != "pass"] == list(range(300))  # first come, first served
    runs = "".join("|" if x == "pass" else "r" for x in order).split("|")
    assert max(len(run) for run in runs) == READERS_PER_TURN  # never more in one pass
    assert sum(1 for run in runs if run) == 300 // READERS_PER_TURN


# --- no cluster: the trigger's module is light, its Kubernetes side is imported in a worker thread ------------------

#: Modules that take the time of importing the Kubernetes side (about a second in all).
HEAVY_MODULES = [
    "kubernetes",
    "kubernetes_asyncio",
    "airflow.providers.cncf.kubernetes",
    "airflow.providers.cncf.kubernetes.hooks.kubernetes",
    "airflow_trainjob.hooks.api_errors",
    "airflow_trainjob.hooks.training_job",
    "airflow_trainjob.watching.job_stream",
]

#: A fresh process: what the triggerer has imported, then what it does on its event loop with a trigger (import the
#: class, construct it, serialize it, compute its shared-stream key), then the trigger's load of its Kubernetes side.
TRIGGERER_LIKE = textwrap.dedent(
    """
    import asyncio, json, sys, threading

    from airflow.jobs import triggerer_job_runner  # imports what the triggerer runs on (SDK, trigger base classes)

    heavy = json.loads(sys.argv[1])
    had = [m for m in heavy if m in sys.modules]  # the triggerer's own: free for the trigger

    from airflow._shared.module_loading import import_string

    trigger_class = import_string("airflow_trainjob.triggers.training_job.TrainingJobTrigger")
    trigger = trigger_class(kind="PyTorchJob", name="a", namespace="ml", owner_labels={"x": "y"})
    hash(trigger.shared_stream_key()), trigger.serialize()
    event = trigger._event("finished", "a: Succeeded", {"kind": "PyTorchJob", "metadata": {"name": "a"}})
    on_import = [m for m in heavy if m in sys.modules and m not in had]

    imported_in = {}

    class Recorder:  # finds nothing: notes which thread asks for each module first
        def find_spec(self, name, path=None, target=None):
            if name in heavy:
                imported_in.setdefault(name, threading.current_thread().name)

    sys.meta_path.insert(0, Recorder())

    async def main():
        from airflow_trainjob.triggers import kubernetes_side

        try:
            kubernetes_side.JobStream
            early = None
        except RuntimeError as e:
            early = str(e)
        await kubernetes_side.load()
        # What the trigger then does on the loop: a stream (and its hook), a request's name for its errors.
        stream = kubernetes_side.JobStream(trigger.shared_stream_key())
        kubernetes_side.one_line(ConnectionResetError("reset"), trigger._call("get"))
        return threading.current_thread().name, early, type(stream.hook).__module__

    loop_thread, early, loaded = asyncio.run(main())
    print(json.dumps(dict(had=had, on_import=on_import, event=event.payload["outcome"], imported_in=imported_in,
                          loop_thread=loop_thread, early=early, loaded=loaded)))
    """
)


@pytest.fixture(scope="module")
def triggerer_like() -> dict:
    done = subprocess.run(
        [sys.executable, "-c", TRIGGERER_LIKE, json.dumps(HEAVY_MODULES)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_the_triggerer_imports_and_keys_the_trigger_without_the_kubernetes_side(triggerer_like):
    """What the triggerer does on its loop with a trigger (import the class, construct, serialize, key, build an event)
    imports none of the heavy modules the triggerer has not imported itself (it has the cncf provider's package,
    for Airflow's exception shims, but none of its hooks, and no Kubernetes client)."""
    assert "kubernetes" not in triggerer_like["had"] and "kubernetes_asyncio" not in triggerer_like["had"]
    assert triggerer_like["on_import"] == []
    assert triggerer_like["event"] == "finished"


def test_the_kubernetes_side_is_imported_in_a_worker_thread(triggerer_like):
    not_yet_imported = [m for m in HEAVY_MODULES if m not in triggerer_like["had"]]
    threads = triggerer_like["imported_in"]
    assert sorted(threads) == sorted(not_yet_imported)
    assert triggerer_like["loop_thread"] not in threads.values()
    assert set(threads.values()) == {"airflow_trainjob: import the trigger's Kubernetes side"}
    assert triggerer_like["loaded"] == "airflow_trainjob.hooks.training_job"  # the stream's hook, built after the load
    # Read on the loop before the load, a name of the Kubernetes side is an error, not a stall.
    assert "before `await kubernetes_side.load()`" in triggerer_like["early"]


def test_every_name_of_the_kubernetes_side_is_the_original():
    from airflow_trainjob.triggers import kubernetes_side

    for name, where in kubernetes_side.DEFINED_IN.items():
        assert getattr(kubernetes_side, name) is getattr(sys.modules[where], name)
    with pytest.raises(AttributeError):
        kubernetes_side.JobStrem  # noqa: B018


def test_a_trigger_cancelled_while_the_import_runs_leaves_it_to_the_others(monkeypatch):
    """Cancelling one trigger that awaits the import (its task marked failed while the triggerer starts) cancels its
    own wait only: the import finishes, and the triggers that await it, or start later, load."""
    from airflow_trainjob.triggers import kubernetes_side

    release = threading.Event()

    class SlowImport:  # the import thread waits until the test lets it go
        @staticmethod
        def import_module(name):
            release.wait(10)
            return importlib.import_module(name)

    monkeypatch.setattr(kubernetes_side, "importlib", SlowImport)
    kubernetes_side._importing.cache_clear()

    async def main():
        cancelled = asyncio.create_task(kubernetes_side.load())
        waiting = asyncio.create_task(kubernetes_side.load())
        await asyncio.sleep(0.01)
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        release.set()
        await waiting
        await kubernetes_side.load()  # a trigger that starts later
        return cancelled.cancelled()

    try:
        assert asyncio.run(main()) is True
        assert kubernetes_side._importing().result() is None
    finally:
        release.set()
        kubernetes_side._importing.cache_clear()


# --- against the local cluster ---------------------------------------------------------------------------------------


def test_connect_reads_the_connection_on_the_loop_and_the_kubeconfig_in_a_worker_thread(
    kubernetes_default_conn, namespace, monkeypatch
):
    threads: dict[str, threading.Thread] = {}
    lookup, load = cncf_hooks.get_async_connection, cncf_hooks.async_config.load_kube_config

    async def recorded_lookup(*args, **kwargs):
        threads["connection"] = threading.current_thread()
        return await lookup(*args, **kwargs)

    async def recorded_load(*args, **kwargs):
        threads["kubeconfig"] = threading.current_thread()
        return await load(*args, **kwargs)

    monkeypatch.setattr(cncf_hooks, "get_async_connection", recorded_lookup)
    monkeypatch.setattr(cncf_hooks.async_config, "load_kube_config", recorded_load)

    async def main():
        hook = AsyncTrainingJobHook()
        async with hook.connect():
            page = await hook.list_jobs_async("PyTorchJob", namespace, limit=1)
        return threading.current_thread(), page

    loop_thread, page = asyncio.run(main())
    # The lookup stays on the loop: in the triggerer it is a request to the supervisor, made from the loop.
    assert threads["connection"] is loop_thread
    assert threads["kubeconfig"] is not loop_thread  # parsed and its certificates written in a worker thread
    assert page["items"] == [] and page["metadata"]["resourceVersion"]  # the client works on the loaded config


def test_a_watch_builds_no_client_of_its_own(kubernetes_default_conn, namespace, custom_objects, monkeypatch):
    create(custom_objects, namespace, "watched", SLEEP)
    built: list[threading.Thread] = []
    init = async_client.ApiClient.__init__

    def counted(self, *args, **kwargs):
        built.append(threading.current_thread())
        init(self, *args, **kwargs)

    monkeypatch.setattr(async_client.ApiClient, "__init__", counted)

    async def main():
        hook = AsyncTrainingJobHook()
        async with hook.connect():
            connected = len(built)
            async for event in hook.watch_jobs("PyTorchJob", namespace, None, timeout_seconds=5):
                if event["raw_object"]["metadata"]["name"] == "watched":
                    break
        return connected, event

    connected, event = asyncio.run(main())
    assert event["type"] == "ADDED"  # a watch from no resourceVersion starts with the existing jobs
    assert len(built) == connected  # the watch ran on the connected client: no TLS context built at every watch
