"""``AsyncTrainingJobHook``: the sync hook's requests, timeouts, retries and errors, awaited — against the local
cluster, plus the pieces that need none."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException

import airflow_trainjob.triggers
from airflow_trainjob.exceptions import KubernetesAccessError
from airflow_trainjob.hooks import retries
from airflow_trainjob.hooks.api_errors import QuietApiException
from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook, TrainingJobHook
from airflow_trainjob.models import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from airflow_trainjob.triggers.training_job import TrainingJobTrigger
from airflow_trainjob.watching.job_stream import JobStream, StreamSource, stream_hook
from tests.support.jobs import pytorch_specs

SECRET = "not-a-real-token-async-5e2d"


# --- no cluster ------------------------------------------------------------------------------------


def test_is_the_sync_hook_with_the_same_connection():
    hook = AsyncTrainingJobHook(kubernetes_conn_id="prod", cluster_context="ctx", config_file="/k", in_cluster=False)
    assert isinstance(hook, TrainingJobHook)
    auth = hook._auth  # the cncf.kubernetes async hook that loads the config
    assert (auth.conn_id, auth.cluster_context, auth.config_file, auth.in_cluster) == ("prod", "ctx", "/k", False)
    assert AsyncTrainingJobHook(kubernetes_conn_id=None)._auth.conn_id is None  # no connection stays none
    assert not hook.connected


def test_the_triggers_stream_uses_the_async_hook():
    trigger = TrainingJobTrigger(kind="PyTorchJob", name="a", namespace="ml", kubernetes_conn_id="prod")
    source = trigger.shared_stream_key()
    assert isinstance(stream_hook(source), AsyncTrainingJobHook) and stream_hook(source).conn_id == "prod"
    assert isinstance(JobStream(source).hook, AsyncTrainingJobHook)
    assert StreamSource.from_trigger_kwargs(trigger.serialize()[1]) == source


def test_the_triggers_build_no_client_of_their_own():
    """No module of the triggers package imports a Kubernetes client: every request goes through the hook."""
    for path in Path(airflow_trainjob.triggers.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
        }
        assert not {m for m in imported if m.split(".")[0] in ("kubernetes", "kubernetes_asyncio", "aiohttp")}, path


def test_async_calls_retry_transient_answers_of_the_async_client():
    answers = [
        AsyncApiException(status=503, reason="Service Unavailable"),
        AsyncApiException(status=429, reason="x"),
        "ok",
    ]
    answers[1].headers = {"Retry-After": "2"}
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    @retries.retry_transient
    async def call():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert asyncio.run(call.retry_with(sleep=no_sleep)()) == "ok"
    assert len(waits) == 2 and waits[1] == 2.0  # Retry-After of the async client's answer is honoured too


def test_async_refusals_are_not_retried():
    calls = []

    @retries.retry_transient
    async def call():
        calls.append(1)
        raise AsyncApiException(status=403, reason="Forbidden")

    with pytest.raises(AsyncApiException):
        asyncio.run(call())
    assert calls == [1]


# --- against the local cluster --------------------------------------------------------------------


def test_async_calls_roundtrip(kubernetes_default_conn, namespace):
    sync = TrainingJobHook()
    spec = TrainingJobSpec.parse("PyTorchJob", pytorch_specs("import time; time.sleep(60)", workers=0))
    created = sync.create_job(build_manifest(spec=spec, name="async-crud", namespace=namespace))
    uid = created["metadata"]["uid"]

    async def main():
        hook = AsyncTrainingJobHook()
        async with hook.connect():
            assert hook.connected
            job = await hook.get_job_async("PyTorchJob", "async-crud", namespace)
            page = await hook.list_jobs_async("PyTorchJob", namespace, limit=10)
            events = []
            patched = asyncio.create_task(
                asyncio.to_thread(
                    sync.patch_job, "PyTorchJob", "async-crud", namespace, {"metadata": {"labels": {"seen": "yes"}}}
                )
            )
            async for event in hook.watch_jobs(
                "PyTorchJob", namespace, page["metadata"]["resourceVersion"], timeout_seconds=5, name="async-crud"
            ):
                events.append(event)
                if (event["raw_object"]["metadata"].get("labels") or {}).get("seen") == "yes":
                    break  # (the controller's status updates may come first)
            await patched
            with pytest.raises(QuietApiException) as wrong_uid:
                await hook.delete_job_async(
                    "PyTorchJob", "async-crud", namespace, uid="00000000-0000-0000-0000-000000000000"
                )
            deleted = await hook.delete_job_async("PyTorchJob", "async-crud", namespace, uid=uid)
            again = await hook.delete_job_async("PyTorchJob", "async-crud", namespace)
            assert await hook.delete_pod_async("no-such-pod", namespace) is False  # for pods too
            with pytest.raises(QuietApiException) as gone:
                await hook.get_job_async("PyTorchJob", "async-crud", namespace)
        assert not hook.connected
        # Outside connect(): a client of its own.
        pods = await hook.list_job_pods_async("async-crud", namespace, kind="PyTorchJob")
        return job, page, events, wrong_uid.value, deleted, again, gone.value, pods

    job, page, events, wrong_uid, deleted, again, gone, pods = asyncio.run(main())
    assert job["metadata"]["uid"] == uid
    assert [j["metadata"]["name"] for j in page["items"]] == ["async-crud"]
    assert events[-1]["type"] == "MODIFIED" and events[-1]["raw_object"]["metadata"]["labels"]["seen"] == "yes"
    assert wrong_uid.status == 409  # the uid precondition protects a same-named successor
    assert deleted is True and again is False  # 404 counts as done
    assert gone.status == 404 and str(gone) == f"PyTorchJob {namespace}/async-crud does not exist (404 NotFound)"
    assert isinstance(pods, list)


def test_a_list_page_as_text_is_the_answer_and_an_error_answer_raises_its_status(kubernetes_default_conn, namespace):
    """The shared stream reads list pages undecoded (JobCache decodes them item by item): the same answer as the
    decoded page, and an error answer still raises the client's ApiException with its status, as a decoded one does."""
    sync = TrainingJobHook()
    spec = TrainingJobSpec.parse("PyTorchJob", pytorch_specs("import time; time.sleep(60)", workers=0))
    for name in ("text-a", "text-b"):
        sync.create_job(build_manifest(spec=spec, name=name, namespace=namespace))

    async def main():
        hook = AsyncTrainingJobHook()
        async with hook.connect():
            first = json.loads(await hook.list_jobs_text_async("PyTorchJob", namespace, limit=1))
            rest = await hook.list_jobs_async("PyTorchJob", namespace, continue_token=first["metadata"]["continue"])
            with pytest.raises(AsyncApiException) as bad_token:
                await hook.list_jobs_text_async("PyTorchJob", namespace, limit=1, continue_token="not-a-token")
        return first, rest, bad_token.value

    first, rest, bad_token = asyncio.run(main())
    assert [j["metadata"]["name"] for j in first["items"] + rest["items"]] == ["text-a", "text-b"]
    assert first["kind"] == "PyTorchJobList" and not rest["metadata"].get("continue")
    assert bad_token.status == 400 and "continue" in str(bad_token.body)


def test_bad_token_is_a_clear_401_without_the_token(local_cluster, monkeypatch, namespace):
    config = yaml.safe_load(local_cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": SECRET}
    monkeypatch.setenv(
        "AIRFLOW_CONN_TRAINJOB_ASYNC", json.dumps({"conn_type": "kubernetes", "extra": {"kube_config": config}})
    )

    async def main():
        with pytest.raises(KubernetesAccessError) as raised:
            await AsyncTrainingJobHook(kubernetes_conn_id="trainjob_async").get_job_async("PyTorchJob", "x", namespace)
        return raised.value

    error = asyncio.run(main())
    message = str(error)
    assert "401" in message and "trainjob_async" in message and f"get PyTorchJob {namespace}/x" in message
    assert error.__cause__ is None and error.__suppress_context__  # raised from None: no headers in a chain
    assert SECRET not in message and SECRET not in repr(error)


def test_timestamped_log_reads_keep_the_rules_the_lead_log_copy_relies_on(kubernetes_default_conn, namespace):
    """What :class:`~airflow_trainjob.domain.lead_log.LeadLogCopy` assumes of ``pods/log``, read through both hooks via the
    real apiserver and kubelet: each line led by its RFC 3339 time; ``sinceTime`` keeps whole seconds and returns the
    lines at or after it; ``limitBytes`` cuts the answer (within a line); ``tailLines``; a ``previous`` run that does
    not exist and an unknown pod are 400 and 404, the statuses of ``LOG_NOT_THERE``. And the async patch (the cursor's
    record) merges an annotation, with a uid precondition."""
    import time

    from airflow_trainjob.domain.lead_log import LOG_NOT_THERE, since_time, timestamp_ns
    from tests.support.jobs import create

    code = (
        "import time\nfor i in range(12):\n    print(f'line {i:02d}', flush=True)\n    time.sleep(0.25)\ntime.sleep(60)"
    )
    job = create(TrainingJobHook().custom_object_client, namespace, "logs", code)
    pod = "logs-master-0"
    hook = TrainingJobHook()
    deadline = time.monotonic() + 90
    while True:
        try:
            if hook.read_timestamped_log(pod, namespace, "pytorch").count(b"\n") >= 12:
                break
        except Exception:
            pass
        assert time.monotonic() < deadline, "the pod's 12 lines did not come"
        time.sleep(0.5)
    whole = hook.read_timestamped_log(pod, namespace, "pytorch").decode().splitlines()
    stamps = [line.split(" ", 1)[0] for line in whole]
    assert [line.split(" ", 1)[1] for line in whole] == [f"line {i:02d}" for i in range(12)]
    assert all(timestamp_ns(s) is not None for s in stamps) and stamps == sorted(stamps, key=timestamp_ns)
    since = since_time(stamps[6])
    later = hook.read_timestamped_log(pod, namespace, "pytorch", since_time=since).decode().splitlines()
    expected = [line for line, s in zip(whole, stamps, strict=True) if timestamp_ns(s) >= timestamp_ns(since)]
    assert later == expected and whole[6] in later  # at or after the whole second
    cut = hook.read_timestamped_log(pod, namespace, "pytorch", limit_bytes=50)
    assert len(cut) == 50 and not cut.endswith(b"\n")  # within the second line
    assert hook.read_timestamped_log(pod, namespace, "pytorch", tail_lines=2).decode().splitlines() == whole[-2:]

    async def read_async():
        async_hook = AsyncTrainingJobHook()
        async with async_hook.connect():
            tail = await async_hook.read_timestamped_log_async(pod, namespace, "pytorch", tail_lines=3)
            statuses = []
            for name, previous in ((pod, True), ("no-such-pod", False)):
                try:
                    await async_hook.read_timestamped_log_async(name, namespace, "pytorch", previous=previous)
                except Exception as e:
                    statuses.append(getattr(e, "status", None))
            patched = await async_hook.patch_job_async(
                "PyTorchJob",
                "logs",
                namespace,
                {"metadata": {"uid": job["metadata"]["uid"], "annotations": {"example.org/cursor": "x"}}},
            )
            try:
                await async_hook.patch_job_async(
                    "PyTorchJob", "logs", namespace, {"metadata": {"uid": "0000", "annotations": {"a": "b"}}}
                )
            except Exception as e:
                statuses.append(getattr(e, "status", None))
            return tail, statuses, patched

    tail, statuses, patched = asyncio.run(read_async())
    assert tail.decode().splitlines() == whole[-3:]
    assert statuses[:2] == [400, 404] and set(statuses[:2]) == LOG_NOT_THERE  # the log is not there
    assert statuses[2] in (409, 422)  # a uid that is not the object's: refused, never applied to a successor
    assert patched["metadata"]["annotations"]["example.org/cursor"] == "x"
