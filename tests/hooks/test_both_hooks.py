"""The sync and async hooks send each operation's one request (hooks/requests.py): against the local apiserver and
kubelet, every named method answers the same through both."""

from __future__ import annotations

import asyncio

import pytest

from airflow_trainjob.hooks.api_errors import QuietApiException
from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook, TrainingJobHook
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.jobs import SLEEP, create, pytorch_specs

#: The lead's log: one JSON value, which the clients' own decoding of a log would parse and turn into a repr.
JSON_LINE = '{"loss": 0.5, "step": [1, 2]}'
LEAD = f"import time; print({JSON_LINE!r}, flush=True); time.sleep(120)"


def an_event(namespace: str, name: str, about: str, seconds: int) -> dict:
    at = f"2026-01-01T00:00:{seconds:02d}Z"
    return {
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": "PyTorchJob", "name": about, "namespace": namespace},
        "reason": "BothHooks",
        "message": name,
        "type": "Normal",
        "firstTimestamp": at,
        "lastTimestamp": at,
    }


def ours(events: list[dict]) -> list[str]:
    """The test's own events (the controller and kubelet add theirs while the test runs), in the answer's order."""
    return [e["metadata"]["name"] for e in events if e.get("reason") == "BothHooks"]


def names(pods: list[dict]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def test_both_hooks_answer_the_same(kubernetes_default_conn, namespace, custom_objects, core_v1):
    job = create(custom_objects, namespace, "twin", LEAD, pytorch_specs(LEAD, SLEEP, workers=2))
    uid = job["metadata"]["uid"]
    lead = "twin-master-0"
    # Created out of order: the answer is oldest first. "other" is about another object, never in the answer.
    for name, about, seconds in (
        ("e-late", "twin", 9),
        ("e-other", "other", 1),
        ("e-early", "twin", 2),
        ("e-pod", lead, 5),
    ):
        core_v1.create_namespaced_event(namespace, an_event(namespace, name, about, seconds))
    sync = TrainingJobHook()
    wait_for(
        lambda: names(sync.list_job_pods("twin", namespace, kind="PyTorchJob")),
        lambda n: len(n) == 3,
        timeout=90,
        what="3 pods",
    )
    wait_for(lambda: _log_or_none(sync, lead, namespace), lambda text: text, timeout=90, what="the lead's line")

    def read_sync() -> dict:
        return {
            "job": sync.get_job("PyTorchJob", "twin", namespace)["metadata"]["uid"],
            "pods": names(sync.list_job_pods("twin", namespace, kind="PyTorchJob")),
            "log": sync.read_pod_log(lead, namespace, "pytorch"),
            "tail": sync.read_timestamped_log(lead, namespace, "pytorch", tail_lines=1).split(b" ", 1)[1],
            "events of one": ours(sync.list_events(namespace, {"twin"})),
            "events of two": ours(sync.list_events(namespace, {"twin", lead})),
            "patched": sync.patch_job("PyTorchJob", "twin", namespace, {"metadata": {"labels": {"sync": "1"}}}),
            "unlabelled": sync.patch_job("PyTorchJob", "twin", namespace, {"metadata": {"labels": {"sync": None}}}),
            "gone pod": sync.delete_pod("no-such-pod", namespace),
        }

    async def read_async() -> dict:
        hook = AsyncTrainingJobHook()
        async with hook.connect():
            return {
                "job": (await hook.get_job_async("PyTorchJob", "twin", namespace))["metadata"]["uid"],
                "pods": names(await hook.list_job_pods_async("twin", namespace, kind="PyTorchJob")),
                "log": await hook.read_pod_log_async(lead, namespace, "pytorch"),
                "tail": (await hook.read_timestamped_log_async(lead, namespace, "pytorch", tail_lines=1)).split(
                    b" ", 1
                )[1],
                "events of one": ours(await hook.list_events_async(namespace, {"twin"})),
                "events of two": ours(await hook.list_events_async(namespace, {"twin", lead})),
                "patched": await hook.patch_job_async(
                    "PyTorchJob", "twin", namespace, {"metadata": {"labels": {"async": "1"}}}
                ),
                "unlabelled": await hook.patch_job_async(
                    "PyTorchJob", "twin", namespace, {"metadata": {"labels": {"async": None}}}
                ),
                "gone pod": await hook.delete_pod_async("no-such-pod", namespace),
                "lead replicas": names(
                    await hook.list_job_pods_async("twin", namespace, replica_index=0, kind="PyTorchJob")
                ),
                "second replicas": names(
                    await hook.list_job_pods_async("twin", namespace, replica_index=1, kind="PyTorchJob")
                ),
            }

    by_sync, by_async = read_sync(), asyncio.run(read_async())
    for answers, label in ((by_sync, "sync"), (by_async, "async")):
        assert answers["job"] == uid
        assert answers["pods"] == ["twin-master-0", "twin-worker-0", "twin-worker-1"]
        assert answers["log"] == JSON_LINE + "\n", label  # the text as written, not a repr of its JSON
        assert answers["tail"] == (JSON_LINE + "\n").encode()
        assert answers["events of one"] == ["e-early", "e-late"]
        assert answers["events of two"] == ["e-early", "e-pod", "e-late"]
        assert answers["patched"]["metadata"]["labels"][label] == "1"
        assert label not in (answers["unlabelled"]["metadata"].get("labels") or {})  # a merge patch: None deletes
        assert answers["gone pod"] is False
    assert by_async["lead replicas"] == ["twin-master-0", "twin-worker-0"]
    assert by_async["second replicas"] == ["twin-worker-1"]

    async def delete_async(uid_: str) -> bool:
        return await AsyncTrainingJobHook().delete_job_async("PyTorchJob", "twin", namespace, uid=uid_)

    successor = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(QuietApiException) as by_sync_refused:
        sync.delete_job("PyTorchJob", "twin", namespace, uid=successor)
    with pytest.raises(QuietApiException) as by_async_refused:
        asyncio.run(delete_async(successor))
    assert by_sync_refused.value.status == by_async_refused.value.status == 409
    assert str(by_sync_refused.value) == str(by_async_refused.value)
    assert asyncio.run(delete_async(uid)) is True
    assert sync.delete_job("PyTorchJob", "twin", namespace, uid=uid) is False  # gone already: done


def _log_or_none(hook: TrainingJobHook, pod: str, namespace: str) -> str | None:
    try:
        return hook.read_pod_log(pod, namespace, "pytorch") or None
    except Exception:
        return None  # the container has not started yet (400)
