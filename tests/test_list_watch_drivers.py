"""The two drivers of the list-then-watch policy without a cluster: what each requests, in order, and how long it
waits, on a script of the API's answers. The synchronous wait's job watch (a scripted watch, the hook's GET) and the
shared stream (a scripted hook's LIST and WATCH); their clocks are fake, their waits recorded, not slept."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import types
from collections.abc import Generator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException

from airflow_trainjob.watching import job_stream, job_watch
from airflow_trainjob.watching.job_stream import JobStream, StreamSource

LOG = logging.getLogger("tests.list_watch_drivers")
JOB: dict[str, Any] = {
    "kind": "PyTorchJob",
    "metadata": {"name": "train", "namespace": "ml", "uid": "u1", "resourceVersion": "5"},
}


class Done(BaseException):
    """The script is over: ends the driver's loop (no except clause of the drivers catches it)."""


class Script:
    """The API's answers in order, what the driver asked, and a clock that a watch that lasts moves on."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.trail: list[str] = []
        self.now = 1000.0

    def answer(self, request: str) -> str:
        if not self.answers:
            raise Done
        answer = self.answers.pop(0)
        self.trail.append(f"{request} -> {answer}")
        if answer == "lasts":
            self.now += 900.0
        return answer


# ---- the synchronous wait's job watch -------------------------------------------------------------------------


class Waits:
    """A stop event whose waits are recorded, not slept."""

    def __init__(self, trail: list[str]) -> None:
        self.trail = trail

    def wait(self, seconds: float) -> bool:
        self.trail.append(f"wait {seconds:g}")
        return False

    def is_set(self) -> bool:
        return False

    def set(self) -> None:
        pass


class ScriptedHook:
    def __init__(self, script: Script) -> None:
        self.script = script

    def get_job(self, kind: str, name: str, namespace: str) -> dict:
        answer = self.script.answer("get")
        if answer == "500":
            raise ApiException(status=500)
        return {**JOB, "metadata": {**JOB["metadata"], "resourceVersion": answer}}


class ScriptedJobWatch(job_watch.JobWatch):
    def __init__(self, script: Script) -> None:
        super().__init__(ScriptedHook(script), JOB, poll_interval=60, outage_tolerance=math.inf, log=LOG)
        self.script = script
        self._stopped = Waits(script.trail)  # type: ignore[assignment]

    def _watch(self, window: float) -> Generator[job_watch.Seen, None, None]:
        self.stats["watches"] += 1
        answer = self.script.answer(f"watch from {self._policy.resource_version}")
        if answer in ("410", "500", "403"):
            raise ApiException(status=int(answer))
        if answer == "reset":
            raise ConnectionResetError("reset")
        if answer.isdigit():  # an event of the job at that version
            self._policy.saw(answer)
            yield self._event("MODIFIED", {**JOB, "metadata": {**JOB["metadata"], "resourceVersion": answer}})


def job_watch_trail(answers: list[str], monkeypatch) -> list[str]:
    script = Script(answers)
    monkeypatch.setattr(job_watch, "time", types.SimpleNamespace(monotonic=lambda: script.now))
    with pytest.raises(Done):
        for _ in ScriptedJobWatch(script).follow(lambda: None):
            pass
    return script.trail


def test_the_job_watch_watches_again_from_its_last_version_after_a_failure_and_reads_at_once_after_a_410(monkeypatch):
    assert job_watch_trail(["7", "reset", "ends", "410", "9", "lasts"], monkeypatch) == [
        "watch from 5 -> 7",
        "watch from 7 -> reset",
        "wait 0.5",
        "watch from 7 -> ends",  # at once, with nothing: a failure more
        "wait 1",
        "watch from 7 -> 410",
        "get -> 9",
        "watch from 9 -> lasts",
    ]


def test_the_job_watch_polls_after_three_failures_and_tries_a_watch_every_sixth_read(monkeypatch):
    reads = [str(v) for v in range(10, 16)]
    assert job_watch_trail(["500", "ends", "500", *reads, "500", "500"], monkeypatch) == [
        "watch from 5 -> 500",
        "wait 0.5",
        "watch from 5 -> ends",
        "wait 1",
        "watch from 5 -> 500",
        "wait 2",
        *[line for version in reads for line in ("wait 60", f"get -> {version}")],
        "watch from 15 -> 500",
        "wait 4",
        "wait 60",
        "get -> 500",  # a read that fails counts as a poll; the hook has retried it already: no more waiting
        "wait 60",
    ]


def test_a_refused_job_watch_polls_at_once(monkeypatch):
    assert job_watch_trail(["403", "6", "7"], monkeypatch) == [
        "watch from 5 -> 403",
        "wait 60",
        "get -> 6",
        "wait 60",
        "get -> 7",
        "wait 60",
    ]


# ---- the shared stream ---------------------------------------------------------------------------------------------


class ScriptedAsyncHook:
    def __init__(self, script: Script) -> None:
        self.script = script

    async def list_jobs_text_async(self, kind: str, namespace: str, limit: int, continue_token: str | None) -> str:
        answer = self.script.answer("list")
        if answer in ("410", "500"):
            raise AsyncApiException(status=int(answer))
        return json.dumps({"metadata": {"resourceVersion": answer}, "items": []})

    def watch_jobs(self, kind: str, namespace: str, resource_version: str | None, *, timeout_seconds: int):
        answer = self.script.answer(f"watch from {resource_version}")

        async def events():
            if answer in ("410", "500"):
                raise AsyncApiException(status=int(answer))
            if answer == "reset":
                raise ConnectionResetError("reset")
            if answer.isdigit():
                yield {"type": "BOOKMARK", "raw_object": {"metadata": {"resourceVersion": answer}}}

        return events()


def stream_trail(answers: list[str], monkeypatch) -> tuple[list[str], dict[str, int]]:
    script = Script(answers)
    monkeypatch.setattr(job_stream, "time", types.SimpleNamespace(monotonic=lambda: script.now))
    stream = JobStream(StreamSource(None, None, None, None, "ml", "PyTorchJob"), poll_interval=10.0)
    stream.hook = ScriptedAsyncHook(script)  # type: ignore[assignment]
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        script.trail.append(f"sleep {seconds:g}")
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    with pytest.raises(Done):
        asyncio.run(stream._sync())
    return script.trail, dict(stream.stats)


def test_the_stream_lists_again_after_a_failure_and_slows_down_on_a_410_that_repeats(monkeypatch):
    trail, stats = stream_trail(["7", "8", "ends", "reset", "410", "410", "9", "lasts"], monkeypatch)
    assert trail == [
        "list -> 7",
        "watch from 7 -> 8",
        "watch from 8 -> ends",  # at once, with nothing: a failure, watched again from there
        "sleep 1",
        "watch from 8 -> reset",
        "sleep 2",
        "list -> 410",  # the cache may have missed changes: a list...
        "sleep 0",  # ...which expired: listed again at once...
        "list -> 410",
        "sleep 1",  # ...and again, after a while
        "list -> 9",
        "watch from 9 -> lasts",
    ]
    assert stats == {"lists": 4, "watches": 5, "expired": 2, "failures": 1}  # (the fifth: the one the script ends)


def test_the_stream_lists_and_watches_in_turn_while_watches_keep_failing(monkeypatch):
    trail, _ = stream_trail(["7", "500", "8", "500", "9", "500", "10", "11", "500", "12", "13", "14"], monkeypatch)
    assert trail == [
        "list -> 7",
        "watch from 7 -> 500",
        "sleep 1",
        "list -> 8",
        "watch from 8 -> 500",
        "sleep 2",
        "list -> 9",
        "watch from 9 -> 500",
        "sleep 4",
        "list -> 10",
        "sleep 10",
        "list -> 11",
        "watch from 11 -> 500",
        "sleep 4",  # the same backoff each time while polling
        "list -> 12",
        "sleep 10",
        "list -> 13",
        "watch from 13 -> 14",
    ]
