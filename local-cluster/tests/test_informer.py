"""The list-then-watch loop (:class:`airflow_trainjob_local.informer.Informer`) without a cluster: a fake client
list function plays the apiserver, answering lists and watches from a script. The loop against a real
apiserver is covered by the controller's and the kubelet's tests (and the 410 test in test_controller.py)."""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

import pytest

from airflow_trainjob_local.informer import SYNC, Informer
from airflow_trainjob_local.kube import ApiException


def pod(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def listing(rv: str, *names: str) -> dict[str, Any]:
    return {"kind": "PodList", "metadata": {"resourceVersion": rv}, "items": [pod(n, rv) for n in names]}


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


def bookmark(rv: str) -> dict[str, Any]:
    return event("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": rv}})


def expired() -> dict[str, Any]:
    return event("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"})


class FakeResponse:
    """What the client returns with ``_preload_content=False``: a list body, or a watch stream of events."""

    def __init__(self, content: Any, block: bool = False) -> None:
        self.data = json.dumps(content).encode() if isinstance(content, dict) else b""
        self._events = content if isinstance(content, list) else []
        self._block = block
        self.closed = threading.Event()

    def stream(self, amt=None, decode_content=False):
        for item in self._events:
            yield (json.dumps(item) + "\n").encode()
        if self._block:  # a watch with nothing to say until it is shut down
            self.closed.wait(10)

    def shutdown(self) -> None:
        self.closed.set()

    def release_conn(self) -> None:
        pass


class FakeApi:
    """A client list function answering from two scripts (a body / a list of events, or an exception to raise).

    When a script runs out, the informer is stopped (and that request answered empty), so a test ends by itself.
    """

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists, self.watches = list(lists), list(watches)
        self.calls: list[dict[str, Any]] = []
        self.informer: Informer | None = None

    def __call__(self, **kwargs: Any) -> FakeResponse:
        self.calls.append(kwargs)
        script = self.watches if kwargs.get("watch") else self.lists
        if not script:
            assert self.informer is not None
            self.informer.stop()
            return FakeResponse([] if kwargs.get("watch") else listing("0"))
        outcome = script.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome if isinstance(outcome, FakeResponse) else FakeResponse(outcome)

    def requests(self) -> list[str]:
        """``list`` / ``watch@<rv>`` per call, in order."""
        return [f"watch@{c['resource_version']}" if c.get("watch") else "list" for c in self.calls]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.lists: list[list[str]] = []

    def on_event(self, kind: str, obj: dict[str, Any]) -> None:
        self.events.append((kind, obj["metadata"]["name"]))

    def on_list(self, items: list[dict[str, Any]]) -> None:
        self.lists.append([i["metadata"]["name"] for i in items])


def run(api: FakeApi, **kwargs: Any) -> Informer:
    """Run an informer over ``api`` until ``api`` stops it; fast retries, no resync unless asked."""
    kwargs.setdefault("on_event", lambda kind, obj: None)
    kwargs = {"retry_seconds": 0.01, "max_retry_seconds": 0.04, "resync_seconds": 3600, **kwargs}
    informer = Informer("pods", api, **kwargs)
    api.informer = informer
    informer.start()
    informer.join(10)
    assert not informer.is_alive(), "the informer did not stop"
    return informer


def retry_delays(caplog: pytest.LogCaptureFixture) -> list[float]:
    return [float(m.group(1)) for r in caplog.records if (m := re.search(r"retrying in ([\d.]+)s", r.getMessage()))]


def test_lists_then_watches_from_the_lists_version_following_events_and_bookmarks():
    seen = Recorder()
    api = FakeApi(
        lists=[listing("10", "a", "b")],
        watches=[
            [event("ADDED", pod("c", "11")), bookmark("15"), event("MODIFIED", pod("a", "16"))],
            [bookmark("20")],
            [event("DELETED", pod("b", "21"))],
        ],
    )
    informer = run(
        api, on_event=seen.on_event, on_list=seen.on_list, field_selector="spec.nodeName=n", label_selector="app=x"
    )
    assert informer.synced.is_set()
    # A watch that ends is resumed from the last version seen (a bookmark's too), without a list.
    assert api.requests() == ["list", "watch@10", "watch@16", "watch@20", "watch@21"]
    assert seen.lists == [["a", "b"]]
    assert seen.events == [("ADDED", "c"), ("MODIFIED", "a"), ("DELETED", "b")], "bookmarks are not delivered"
    for call in api.calls:
        assert call["field_selector"] == "spec.nodeName=n" and call["label_selector"] == "app=x"
        assert call["_preload_content"] is False and call["_request_timeout"]
    watch = api.calls[1]
    assert watch["allow_watch_bookmarks"] is True and 1 <= watch["timeout_seconds"] <= 60
    assert watch["_request_timeout"][1] > watch["timeout_seconds"], "the client waits longer than the server"


def test_without_on_list_every_listed_object_is_an_event_of_type_sync():
    seen = Recorder()
    run(FakeApi(lists=[listing("5", "a", "b")], watches=[]), on_event=seen.on_event)
    assert seen.events == [(SYNC, "a"), (SYNC, "b")]


@pytest.mark.parametrize("gone", [expired(), ApiException(status=410, reason="Gone")], ids=["error-event", "http-410"])
def test_gone_relists_at_once(gone, caplog):
    seen = Recorder()
    watch_answer = [event("ADDED", pod("x", "7")), gone] if isinstance(gone, dict) else gone
    api = FakeApi(
        lists=[listing("5", "a"), listing("9", "a", "x")], watches=[watch_answer, [event("ADDED", pod("y", "10"))]]
    )
    with caplog.at_level(logging.INFO, logger="airflow_trainjob_local.informer"):
        run(api, on_event=seen.on_event, on_list=seen.on_list)
    assert api.requests()[:4] == ["list", "watch@5", "list", "watch@9"]
    assert seen.lists == [["a"], ["a", "x"]]
    assert retry_delays(caplog) == [], "no back-off for a first 410"
    assert "410" in caplog.text


def test_gone_again_right_after_the_relist_backs_off(caplog):
    api = FakeApi(
        lists=[listing("5"), listing("6"), listing("7"), listing("8")],
        watches=[[expired()], [expired()], [expired()], [bookmark("9")], [expired()]],
    )
    with caplog.at_level(logging.INFO, logger="airflow_trainjob_local.informer"):
        run(api)
    assert api.requests()[:9] == ["list", "watch@5", "list", "watch@6", "list", "watch@7", "list", "watch@8", "watch@9"]
    # 410 after a relist: back off (growing), until a watch works; the next 410 relists at once again.
    assert retry_delays(caplog) == [0.01, 0.02]


def test_errors_back_off_exponentially_capped_and_reset_after_a_good_watch(caplog):
    boom = ApiException(status=500, reason="Internal Server Error")
    api = FakeApi(
        lists=[OSError("connection refused"), boom, listing("5")],
        watches=[boom, ValueError("bad json"), boom, [bookmark("6")], boom],
    )
    with caplog.at_level(logging.WARNING, logger="airflow_trainjob_local.informer"):
        run(api)
    assert retry_delays(caplog) == [0.01, 0.02, 0.04, 0.04, 0.04, 0.01]
    # After a failed watch the loop watches again from the same version (no relist until resync).
    assert api.requests()[:8] == ["list", "list", "list", "watch@5", "watch@5", "watch@5", "watch@5", "watch@6"]
    assert "HTTP 500 Internal Server Error" in caplog.text and "OSError: connection refused" in caplog.text


def test_an_unexpected_error_is_logged_with_its_traceback_and_the_loop_goes_on(caplog):
    api = FakeApi(lists=[RuntimeError("surprise"), listing("5")], watches=[])
    with caplog.at_level(logging.WARNING, logger="airflow_trainjob_local.informer"):
        informer = run(api)
    assert informer.synced.is_set() and api.requests()[:2] == ["list", "list"]
    (record,) = [r for r in caplog.records if "unexpected" in r.getMessage()]
    assert record.exc_info is not None


def test_a_failing_handler_does_not_stop_the_stream(caplog):
    def on_event(kind: str, obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "bad":
            raise KeyError("spec")
        delivered.append(obj["metadata"]["name"])

    delivered: list[str] = []
    api = FakeApi(
        lists=[listing("1", "bad", "ok")], watches=[[event("ADDED", pod("bad", "2")), event("ADDED", pod("b", "3"))]]
    )
    with caplog.at_level(logging.ERROR, logger="airflow_trainjob_local.informer"):
        run(api, on_event=on_event)
    assert delivered == ["ok", "b"]
    assert api.requests()[:3] == ["list", "watch@1", "watch@3"]
    assert len([r for r in caplog.records if "handler failed" in r.getMessage()]) == 2


def test_resync_relists_and_bounds_the_watch_timeout():
    api = FakeApi(lists=[listing("1"), listing("3")], watches=[[bookmark("2")], [bookmark("4")]])
    run(api, resync_seconds=0.0, watch_seconds=60)
    assert api.requests()[:4] == ["list", "watch@1", "list", "watch@3"]
    assert api.calls[1]["timeout_seconds"] == 1, "a watch lasts until the next resync (at least 1 s)"


def test_stop_aborts_the_watch_in_flight_and_ends_the_thread():
    blocking = FakeResponse([event("ADDED", pod("a", "2"))], block=True)
    api = FakeApi(lists=[listing("1")], watches=[blocking])
    watching = threading.Event()
    informer = Informer("pods", api, on_event=lambda kind, obj: watching.set())
    api.informer = informer
    informer.start()
    assert watching.wait(5), "the watch never delivered its event"
    informer.stop()
    informer.join(5)
    assert not informer.is_alive() and blocking.closed.is_set()
    assert api.requests() == ["list", "watch@1"], "nothing after stop"


def test_stop_during_a_back_off_ends_the_loop_at_once():
    api = FakeApi(lists=[OSError("down")], watches=[])
    informer = Informer("pods", api, on_event=lambda kind, obj: None, retry_seconds=30)
    api.informer = informer
    informer.start()
    for _ in range(100):
        if api.calls:
            break
        threading.Event().wait(0.01)
    informer.stop()
    informer.join(5)
    assert not informer.is_alive() and not informer.synced.is_set()


def test_thread_names():
    noop = FakeApi([], [])
    assert Informer("binder", noop, on_event=print).name == "informer-binder"
    assert Informer("pods", noop, on_event=print, thread_name="watch-pods").name == "watch-pods"
    assert Informer("pods", noop, on_event=print).daemon
