"""``domain/records.py`` and ``operators/recorder.py``: what a task records of each try's job, and its manifest as
text. Pure: no cluster, no Airflow run (the store is a stand-in with the real accessor's ``get``/``set(...,
retention=...)``; Airflow's own secrets masker, config and rendered-field serialization are the real ones)."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest
import yaml

from airflow_trainjob.constants import LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from airflow_trainjob.domain import records as job_records
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.records import (
    MAX_EVENTS,
    MAX_PODS,
    MAX_TRIES,
    RECORD_KEY,
    JobRecord,
    chosen_pods,
    newest_events,
    outcome_of,
    read_records,
    trim_event,
    trim_job,
    trim_pod,
)
from airflow_trainjob.exceptions import (
    JobDeletedError,
    KubernetesAccessError,
    TrainingJobError,
    TrainingJobStoppedError,
    TrainingJobTimeoutError,
)
from airflow_trainjob.families import family_of
from airflow_trainjob.operators import recorder as job_recorder
from airflow_trainjob.operators.recorder import (
    NEVER_EXPIRE,
    JobRecorder,
    manifest_text,
    rendered_manifest,
)

LOG = logging.getLogger("tests.job_record")
SECRET = "hfSECRETrecord0123456789"


class Store:
    """``task_state_store`` as the task sees it (Airflow 3.3's ``TaskStateStoreAccessor``): ``get`` and
    ``set(key, value, *, retention=None)``; values go through JSON as they do to the database."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.retention: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return json.loads(self.values[key]) if key in self.values else default

    def set(self, key: str, value: Any, *, retention: Any = None) -> None:
        self.values[key] = json.dumps(value)
        self.retention[key] = retention


def identity(try_number: int = 1) -> TaskInstanceIdentity:
    return TaskInstanceIdentity(
        dag_id="retrain", task_id="train", run_id="manual__1", map_index=-1, try_number=try_number
    )


def job(uid: str = "u-1", try_number: int = 1, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "train-job",
            "namespace": "ml",
            "uid": uid,
            "resourceVersion": "7",
            "managedFields": [{"manager": "x"}],
            "creationTimestamp": "2026-12-02T05:00:00Z",
            "labels": identity(try_number).labels(),
            "annotations": {
                "owner": "me",
                "kubectl.kubernetes.io/last-applied-configuration": '{"spec": "the whole manifest again"}',
            },
        },
        "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": [{"name": "pytorch"}]}}}}},
        "status": status or {"conditions": [{"type": "Running", "status": "True"}]},
    }


def pod(name: str, replica: str = "master", index: int = 0, exit_code: int | None = None) -> dict[str, Any]:
    state = {"terminated": {"exitCode": exit_code, "reason": "Error"}} if exit_code is not None else {"running": {}}
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-12-02T05:00:01Z",
            "labels": {LABEL_JOB_NAME: "train-job", LABEL_REPLICA_TYPE: replica, LABEL_REPLICA_INDEX: str(index)},
            "ownerReferences": [{"uid": "u-1"}],
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": "pytorch", "env": [{"name": "K", "value": "v"}]}]},
        "status": {
            "phase": "Failed" if exit_code else "Running",
            "startTime": "2026-12-02T05:00:02Z",
            "conditions": [{"type": "Ready"}],
            "containerStatuses": [
                {"name": "pytorch", "restartCount": 0, "state": state, "volumeMounts": [{"name": "a"}] * 10}
            ],
        },
    }


def event(n: int, involved: str = "train-job") -> dict[str, Any]:
    return {
        "metadata": {"name": f"e{n}", "namespace": "ml", "uid": f"ev-{n}"},
        "type": "Normal",
        "reason": f"Reason{n}",
        "message": f"message {n}",
        "lastTimestamp": f"2026-12-02T05:{n // 60:02d}:{n % 60:02d}Z",
        "count": 1,
        "source": {"component": "kubelet"},
        "involvedObject": {"kind": "Pod", "name": involved, "uid": "x", "namespace": "ml"},
    }


def recorder(store: Any, try_number: int = 1) -> JobRecorder:
    return JobRecorder(store, identity(try_number), "kubernetes_default", LOG)


# ---- reading -------------------------------------------------------------------------------------------------


def test_read_records_is_tolerant_and_sorts_latest_first():
    older = {"try_number": 1, "kind": "PyTorchJob", "namespace": "ml", "name": "n", "created_at": "t"}
    newer = {
        **older,
        "try_number": 2,
        "from_a_newer_provider": {"x": 1},
        "final": {"ended_at": "t", "outcome": "failed", "new": 1},
    }
    records = read_records([older, "not a record", {"try_number": "x"}, newer])
    assert [r.try_number for r in records] == [2, 1]
    assert records[0].final is not None and records[0].final.outcome == "failed"
    # Unknown keys are kept, so a write by this version does not drop what a newer one wrote.
    dumped = records[0].model_dump(mode="json")
    assert dumped["from_a_newer_provider"] == {"x": 1} and dumped["final"]["new"] == 1
    assert read_records(None) == [] and read_records({"a": 1}) == []


def test_an_unknown_outcome_is_not_a_record():
    entry = {"try_number": 1, "kind": "K", "namespace": "n", "name": "x", "created_at": "t"}
    assert read_records([{**entry, "final": {"ended_at": "t", "outcome": "exploded"}}]) == []


# ---- trimming ------------------------------------------------------------------------------------------------


def test_trim_job_keeps_identity_and_status_never_the_spec():
    trimmed = trim_job(job())
    assert set(trimmed) == {"kind", "metadata", "status"}
    assert set(trimmed["metadata"]) == {"name", "namespace", "uid", "labels", "annotations", "creationTimestamp"}
    assert trimmed["metadata"]["annotations"] == {"owner": "me"}  # kubectl's copy of the manifest is left out
    assert trimmed["status"] == job()["status"]


def test_trim_pod_keeps_what_the_tab_shows():
    trimmed = trim_pod(pod("p-0", exit_code=1))
    assert trimmed == {
        "metadata": {
            "name": "p-0",
            "labels": {LABEL_JOB_NAME: "train-job", LABEL_REPLICA_TYPE: "master", LABEL_REPLICA_INDEX: "0"},
            "creationTimestamp": "2026-12-02T05:00:01Z",
            "uid": "uid-p-0",
        },
        "spec": {"nodeName": "node-1"},
        "status": {
            "phase": "Failed",
            "startTime": "2026-12-02T05:00:02Z",
            "containerStatuses": [
                {"name": "pytorch", "restartCount": 0, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
            ],
        },
    }


def test_trim_event():
    assert trim_event(event(3)) == {
        "type": "Normal",
        "reason": "Reason3",
        "message": "message 3",
        "lastTimestamp": "2026-12-02T05:00:03Z",
        "count": 1,
        "involvedObject": {"kind": "Pod", "name": "train-job"},
    }


def _stars(text: str) -> str:
    """A stand-in for Airflow's masker that knows :data:`SECRET`."""
    return text.replace(SECRET, "***")


def test_every_string_a_record_keeps_goes_through_the_redaction_it_is_given():
    """Trimming is pure: the redaction is a parameter (the task's and the trigger's records pass Airflow's masker,
    :func:`~airflow_trainjob.operators.recorder.redact`). Every string kept goes through it, at any depth; the keys,
    numbers and the shape do not change; without one, the strings are kept as they are."""
    secret_job = job(conditions=[{"type": "Failed", "status": "True", "message": f"token {SECRET} refused"}])
    secret_job["metadata"]["annotations"]["note"] = SECRET
    secret_pod = pod("p-0", exit_code=1)
    secret_pod["status"]["message"] = f"evicted: {SECRET}"
    secret_event = {**event(3), "message": f"pulled with {SECRET}"}
    final = job_records.final_state(
        "failed",
        secret_job,
        [secret_pod],
        [secret_event],
        message=f"failed: {SECRET}",
        summary={"metrics": [f"{SECRET}-loss", 0.5]},
        redact=_stars,
    )
    dumped = json.dumps(final.model_dump(mode="json"))
    assert SECRET not in dumped and dumped.count("***") == 6
    assert final.message == "failed: ***" and final.summary == {"metrics": ["***-loss", 0.5]}
    assert final.job == trim_job(secret_job, redact=_stars) != trim_job(secret_job)
    assert final.job["status"]["conditions"][0]["message"] == "token *** refused"
    assert (
        final.pods
        == chosen_pods([secret_pod], family_of("PyTorchJob"), redact=_stars)
        == [trim_pod(secret_pod, redact=_stars)]
    )
    assert (
        final.pods[0]["status"]["message"] == "evicted: ***"
        and final.pods[0]["metadata"] == trim_pod(pod("p-0"))["metadata"]
    )
    assert final.events == newest_events([secret_event], redact=_stars) == [trim_event(secret_event, redact=_stars)]
    assert final.events[0]["message"] == "pulled with ***" and final.events[0]["count"] == 1
    # No redaction given: kept as they are.
    assert trim_event(secret_event)["message"] == f"pulled with {SECRET}"
    assert job_records.redacted({"a": [SECRET, 1, None]}, None) == {"a": [SECRET, 1, None]}
    assert job_records.redacted({"a": [SECRET, 1, None]}, _stars) == {"a": ["***", 1, None]}


def test_the_newest_events_oldest_first():
    events = [event(n) for n in reversed(range(80))]
    kept = newest_events(events)
    assert len(kept) == MAX_EVENTS == 50
    assert [e["reason"] for e in kept] == [f"Reason{n}" for n in range(30, 80)]


def test_a_large_job_keeps_its_lead_and_failed_pods():
    pods = [pod(f"w-{i:03d}", "worker", i) for i in range(100)]
    pods += [pod("w-fail", "worker", 200, exit_code=137), pod("m-0", "master", 0)]
    kept = chosen_pods(pods, family_of("PyTorchJob"))
    names = [p["metadata"]["name"] for p in kept]
    assert len(kept) == MAX_PODS == 64
    assert "m-0" in names and "w-fail" in names and names == sorted(names)


@pytest.mark.parametrize(
    ("error", "stopped", "outcome"),
    [
        (None, False, "succeeded"),
        (TrainingJobError("exit code 1"), False, "failed"),
        (KubernetesAccessError("403"), False, "failed"),
        (TrainingJobTimeoutError("timeout"), False, "timed_out"),
        (JobDeletedError("gone"), False, "deleted"),
        (TrainingJobStoppedError("stopped"), False, "stopped"),
        (JobDeletedError("on_kill deleted it"), True, "stopped"),
        (None, True, "stopped"),
    ],
)
def test_outcome_of(error, stopped, outcome):
    assert outcome_of(error, stopped=stopped) == outcome


# ---- the manifest as text ------------------------------------------------------------------------------------


def manifest(script: str, env_value: str = "plain") -> dict[str, Any]:
    container = {
        "name": "pytorch",
        "command": ["python", "-c", script],
        "env": [{"name": "HF_TOKEN", "value": env_value}],
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train-job", "namespace": "ml", "labels": {"team": "ml"}},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None"},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [{**container, "name": "pytorch"}]}}},
            },
        },
    }


def long_script(lines: int = 300) -> str:
    return "import torch\n" + "\n".join(f"print('epoch {i}')  # {'x' * 40}" for i in range(lines)) + "\nprint('done')\n"


@pytest.fixture
def masked():
    from airflow.sdk.log import mask_secret

    mask_secret(SECRET)  # what reading a sensitive Variable or Connection in a template does
    return SECRET


def test_manifest_text_is_the_whole_object_with_scripts_as_blocks(masked):
    m = manifest("import os\nprint(os.environ['RANK'])\n", env_value=masked)
    text = manifest_text(m)
    assert masked not in text and "value: ***" in text
    assert "- |\n              import os\n              print(os.environ['RANK'])\n" in text  # readable as the script
    assert (
        yaml.safe_load(manifest_text(manifest("import os\nprint(1)\n")))["spec"]
        == manifest("import os\nprint(1)\n")["spec"]
    )


def test_a_short_manifest_is_rendered_whole():
    m = manifest("print(1)")
    assert rendered_manifest(m, 4096) == manifest_text(m)


def test_a_long_manifest_is_rendered_whole_in_structure_with_its_script_shortened():
    m = manifest(long_script())
    full = manifest_text(m)
    assert len(full) > 2 * 4096
    text = rendered_manifest(m, 4096)
    assert len(text) <= 4096
    shown = yaml.safe_load(text)
    # Every key and every short value is there: only the long strings are shortened.
    assert shown["metadata"] == m["metadata"] and shown["spec"]["runPolicy"] == m["spec"]["runPolicy"]
    for replica in ("Master", "Worker"):
        container = shown["spec"]["pytorchReplicaSpecs"][replica]["template"]["spec"]["containers"][0]
        assert container["command"][:2] == ["python", "-c"] and container["env"] == [
            {"name": "HF_TOKEN", "value": "plain"}
        ]
        script = container["command"][2]
        head, _, marker = script.rpartition("\n")
        assert long_script().startswith(head + "\n")  # cut after a whole line
        left_out = len(long_script()) - len(head)
        assert marker == (
            f"[... {left_out:,} characters left out here; the Training job tab shows the manifest in full]"
        )


def test_the_cut_never_leaves_part_of_a_secret(masked):
    # One long line of the secret over and over: wherever it is cut, the cut falls inside a copy. Redacted before
    # cutting, no prefix of it remains (a prefix is no longer a secret the masker would find afterwards).
    script = " ".join([masked] * 600)
    text = rendered_manifest(manifest(script), 4096)
    assert len(text) <= 4096 and "*** *** ***" in text and "characters left out here" in text
    assert masked[:3] not in text


def test_the_limit_is_airflows_config(monkeypatch):
    monkeypatch.setenv("AIRFLOW__CORE__MAX_TEMPLATED_FIELD_LENGTH", "3000")
    assert job_recorder.max_rendered_length() == 3000
    assert len(rendered_manifest(manifest(long_script()))) <= 3000


def test_airflow_stores_the_rendered_manifest_untruncated():
    """What Airflow's task runner stores for the rendered template view: the field as the operator set it, not
    its "Truncated..." string cut mid-structure."""
    from airflow.sdk.execution_time.task_runner import _serialize_rendered_fields

    from airflow_trainjob.operators.training_job import TrainingJobOperator
    from tests.support.jobs import TaskInstanceStandIn

    container = {"name": "pytorch", "image": "python:3.11-slim", "command": ["python", "-c", long_script()]}
    specs = {"Master": {"replicas": 1, "template": {"spec": {"containers": [container]}}}}
    operator = TrainingJobOperator(task_id="train", kind="PyTorchJob", replica_specs=specs, namespace="ml")
    operator.render_template_fields({"ti": TaskInstanceStandIn()})
    stored = _serialize_rendered_fields(operator)["manifest"]
    assert not stored.startswith("Truncated") and len(stored) <= job_recorder.max_rendered_length()
    assert yaml.safe_load(stored)["metadata"]["name"] == operator._manifest["metadata"]["name"]
    assert "characters left out here; the Training job tab shows the manifest in full" in stored


# ---- the writer ------------------------------------------------------------------------------------------------


def test_a_try_is_recorded_when_it_starts_and_when_it_ends(masked):
    store = Store()
    rec = recorder(store)
    rec.started(job(), manifest("print(1)", env_value=masked), attached=False)
    (started,) = read_records(store.get(RECORD_KEY))
    assert (started.try_number, started.kind, started.namespace, started.name, started.uid) == (
        1,
        "PyTorchJob",
        "ml",
        "train-job",
        "u-1",
    )
    assert started.kubernetes_conn_id == "kubernetes_default" and started.attached is False
    assert started.final is None and started.created_at.endswith("Z")
    assert started.manifest_yaml and masked not in started.manifest_yaml and "value: ***" in started.manifest_yaml
    assert store.retention[RECORD_KEY] is NEVER_EXPIRE and NEVER_EXPIRE is not None

    done = job(status="x", conditions=[{"type": "Succeeded", "status": "True", "message": f"token {masked}"}])
    rec.ended("succeeded", done, [pod("p-0"), pod("p-1", "worker")], [event(1), event(2)])
    (ended,) = read_records(store.get(RECORD_KEY))
    assert ended.created_at == started.created_at and ended.manifest_yaml == started.manifest_yaml
    assert ended.final is not None and ended.final.outcome == "succeeded" and ended.final.message is None
    assert ended.final.job == trim_job(done, redact=job_recorder.redact) and "spec" not in ended.final.job
    assert [p["metadata"]["name"] for p in ended.final.pods] == ["p-0", "p-1"]
    assert [e["reason"] for e in ended.final.events] == ["Reason1", "Reason2"]
    assert masked not in store.values[RECORD_KEY]  # redacted wherever it shows up


def test_what_a_running_try_saw_and_a_reused_success_are_redacted_by_airflows_masker(masked):
    """Every road into the record goes through Airflow's masker: the last sight of a running try (``seen``) and a
    try that returns an earlier try's success (``reused``: its summary, and the job as read now)."""
    store = Store()
    rec = recorder(store)
    rec.started(job(), None, attached=False)
    secret_pod = pod("train-job-master-0")
    secret_pod["status"]["message"] = f"pulled with {masked}"
    rec.seen(job(conditions=[{"type": "Running", "status": "True", "message": f"token {masked}"}]), [secret_pod])
    (running,) = read_records(store.get(RECORD_KEY))
    assert running.last_seen is not None and running.last_seen.job["status"]["conditions"][0]["message"] == (
        "token ***"
    )
    assert running.last_seen.pods[0]["status"]["message"] == "pulled with ***"
    rec.ended("succeeded", job(**RUNNING), summary={"job_name": "train-job"})
    (source,) = read_records(store.get(RECORD_KEY))
    done = job(conditions=[{"type": "Succeeded", "status": "True", "message": f"done with {masked}"}])
    assert recorder(store, 2).reused(source, 1, {"job_name": "train-job", "note": masked}, done)
    second, _ = read_records(store.get(RECORD_KEY))
    assert second.final is not None and second.final.summary == {"job_name": "train-job", "note": "***"}
    assert second.final.job is not None and second.final.job["status"]["conditions"][0]["message"] == "done with ***"
    assert masked not in store.values[RECORD_KEY]


def test_the_triggers_parked_end_is_redacted_by_airflows_masker(masked, monkeypatch):
    """A deferred try killed in the triggerer parks its end in XCom (the trigger's ``_park_end``, which imports the
    records' module and Airflow's redaction off its event loop): redacted as the task's own record is."""
    import asyncio
    import types

    from airflow.sdk.execution_time.xcom import XCom

    from airflow_trainjob.triggers import kubernetes_side
    from airflow_trainjob.triggers.training_job import TrainingJobTrigger

    parked: list[tuple[str, Any]] = []

    async def aset(key: str, value: Any, **where: Any) -> None:  # what the triggerer's comms would send
        parked.append((key, json.loads(json.dumps(value))))

    async def list_events_async(namespace: str, names: Any) -> list[dict[str, Any]]:
        return [{**event(1), "message": f"pulled with {masked}"}]

    monkeypatch.setattr(XCom, "aset", aset)
    trigger = TrainingJobTrigger(kind="PyTorchJob", name="train-job", namespace="ml", try_number=1)
    ti = types.SimpleNamespace(dag_id="retrain", task_id="train", run_id="manual__1", map_index=-1)
    running = job(conditions=[{"type": "Running", "status": "True", "message": f"token {masked}"}])
    hook = types.SimpleNamespace(list_events_async=list_events_async)

    async def park() -> None:
        await kubernetes_side.load()
        await trigger._park_end(hook, ti, running, [])

    asyncio.run(park())
    ((key, value),) = parked
    parked_try = job_records.read_parked(value)
    assert key == job_records.PARKED_KEY and parked_try is not None and parked_try[0] == 1
    final = parked_try[1]
    assert final.job is not None and final.job["status"]["conditions"][0]["message"] == "token ***"
    assert [e["message"] for e in final.events] == ["pulled with ***"]
    assert masked not in json.dumps(value)


def test_a_retry_is_added_in_front_and_an_attached_try_keeps_the_manifest_as_sent():
    store = Store()
    recorder(store, 1).started(job(), manifest("print('as sent by try 1')"), attached=False)
    recorder(store, 1).ended("failed", job(), message="exit code 137 (retryable)")
    recorder(store, 2).started(job(), manifest("print('built by try 2')"), attached=True)
    second, first = read_records(store.get(RECORD_KEY))
    assert (second.try_number, second.attached, first.try_number) == (2, True, 1)
    assert "as sent by try 1" in (second.manifest_yaml or "")
    assert first.final is not None and first.final.message == "exit code 137 (retryable)"


def test_at_most_twenty_tries_are_kept():
    store = Store()
    for n in range(1, 26):
        recorder(store, n).started(job(uid=f"u-{n}"), None, attached=False)
    records = read_records(store.get(RECORD_KEY))
    assert len(records) == MAX_TRIES == 20 and [r.try_number for r in records] == list(range(25, 5, -1))


def test_an_end_without_a_recorded_start_still_records_the_job():
    store = Store()
    recorder(store, 2).ended("timed_out", job(try_number=1), message="timeout of 3 s passed")
    (record,) = read_records(store.get(RECORD_KEY))
    assert record.attached is True and record.created_at == "2026-12-02T05:00:00Z"
    assert record.final is not None and record.final.outcome == "timed_out"


def test_the_record_stays_within_the_stores_limit(monkeypatch):
    """Past ``[state_store] max_value_storage_bytes`` the worker's write only warns; the record sheds detail, the
    oldest try's first, and says what it left out."""
    monkeypatch.setenv("AIRFLOW__STATE_STORE__MAX_VALUE_STORAGE_BYTES", "12000")
    store = Store()
    for n in (1, 2):
        recorder(store, n).started(job(uid=f"u-{n}"), manifest("print(1)"), attached=False)
        recorder(store, n).ended(
            "failed", job(uid=f"u-{n}"), [pod(f"p-{i}") for i in range(5)], [event(i) for i in range(40)]
        )
    assert len(store.values[RECORD_KEY]) <= 12000
    latest, oldest = read_records(store.get(RECORD_KEY))
    assert oldest.omitted and oldest.final is not None and oldest.final.events == []
    assert latest.final is not None and latest.final.pods  # the latest try keeps most


def test_a_store_that_fails_is_a_warning_not_the_tries_failure(caplog):
    class Refusing(Store):
        def set(self, key, value, *, retention=None):
            raise RuntimeError("the API server said no")

    caplog.set_level(logging.WARNING, logger=LOG.name)
    recorder(Refusing()).started(job(), None, attached=False)
    assert "Could not record that try 1 follows PyTorchJob train-job in task_state_store" in caplog.text


def test_without_a_store_nothing_is_recorded():
    rec = recorder(None)
    assert not rec.enabled and rec.records() == []
    rec.started(job(), None, attached=False)  # no error


def test_a_write_from_on_kill_waits_a_bounded_time(caplog):
    """``on_kill`` runs in a signal handler: the store may be held by the call it interrupted. The write waits at
    most ``wait_seconds`` and then goes on without it."""
    release = threading.Event()

    class Held(Store):
        def set(self, key, value, *, retention=None):
            release.wait(5)
            super().set(key, value, retention=retention)

    caplog.set_level(logging.WARNING, logger=LOG.name)
    store = Held()
    recorder(store).ended("stopped", job(), wait_seconds=0.05)
    assert "Could not record how try 1 ended (stopped) within 0 s" in caplog.text
    release.set()


def test_the_records_are_json_the_api_server_can_read():
    store = Store()
    recorder(store).started(job(), manifest("print(1)"), attached=False)
    value = json.loads(store.values[RECORD_KEY])
    assert isinstance(value, list) and JobRecord.model_validate(value[0]).name == "train-job"


# ---- the last sight of a running try, and an end recorded outside the store ----------------------------------


RUNNING = {"conditions": [{"type": "Running", "status": "True"}], "replicaStatuses": {"Master": {"active": 1}}}
TWO_RUNNING = {
    "conditions": [{"type": "Running", "status": "True"}],
    "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 1}},
}
RESTARTING = {"conditions": [{"type": "Restarting", "status": "True"}], "replicaStatuses": {"Master": {"active": 1}}}


def test_a_running_try_records_what_it_sees_at_each_phase_and_holds_back_mere_counts(monkeypatch):
    """``last_seen`` is written at once when the phase changes; changes of replica counts alone go at once
    ``SEEN_BURST`` times, then once every ``SEEN_WRITE_SECONDS`` (a job of hundreds of replicas changes them at each
    pod), and ``seen_due_in`` tells the wait when to look again so that the last change is written too."""
    clock = [1000.0]
    monkeypatch.setattr(job_recorder.time, "monotonic", lambda: clock[0])
    store, writes = Store(), []
    original = store.set
    store.set = lambda key, value, *, retention=None: (writes.append(key), original(key, value, retention=retention))
    rec = recorder(store)
    rec.started(job(), None, attached=False)
    rec.seen(job(**RUNNING), [pod("train-job-master-0")])
    (record,) = read_records(store.get(RECORD_KEY))
    assert record.last_seen is not None and record.last_seen.job["status"] == RUNNING
    assert [p["metadata"]["name"] for p in record.last_seen.pods] == ["train-job-master-0"]
    assert len(writes) == 2 and rec.seen_due_in() is None
    rec.seen(job(**RUNNING))  # nothing changed: nothing written
    assert len(writes) == 2
    counts = [TWO_RUNNING, RUNNING] * job_recorder.SEEN_BURST
    for status in counts[: job_recorder.SEEN_BURST - 1]:  # the burst, less the phase change's write
        rec.seen(job(**status))
    assert len(writes) == 2 + job_recorder.SEEN_BURST - 1 and rec.seen_due_in() is None
    held = counts[job_recorder.SEEN_BURST - 1]
    rec.seen(job(**held))  # past the burst: held back
    assert len(writes) == 2 + job_recorder.SEEN_BURST - 1
    assert rec.seen_due_in() == pytest.approx(job_recorder.SEEN_WRITE_SECONDS)
    clock[0] += job_recorder.SEEN_WRITE_SECONDS / 2
    rec.seen(job(**held))
    assert rec.seen_due_in() == pytest.approx(job_recorder.SEEN_WRITE_SECONDS / 2)
    clock[0] += job_recorder.SEEN_WRITE_SECONDS / 2
    rec.seen(job(**held))  # due now
    assert len(writes) == 2 + job_recorder.SEEN_BURST and rec.seen_due_in() is None
    (record,) = read_records(store.get(RECORD_KEY))
    assert record.last_seen is not None and record.last_seen.job["status"] == held
    rec.seen(job(**RESTARTING))  # a new phase: at once, whatever the allowance
    assert len(writes) == 3 + job_recorder.SEEN_BURST
    (record,) = read_records(store.get(RECORD_KEY))
    assert record.last_seen is not None and record.last_seen.job["status"] == RESTARTING
    rec.ended("failed", job(**RESTARTING))
    (record,) = read_records(store.get(RECORD_KEY))
    assert record.final is not None and record.last_seen is None  # the end supersedes the last sight
    clock[0] += 3600
    rec.seen(job(**RUNNING))  # never over the try's end
    (record,) = read_records(store.get(RECORD_KEY))
    assert record.final is not None and record.last_seen is None


def test_a_try_whose_end_is_refused_still_says_what_it_saw_last():
    """A clear replaces the task instance's id: the killed try's write of its end is refused (the execution API's
    404); what it saw while it ran stays in the record."""

    class ClearedMeanwhile(Store):
        refusing = False

        def set(self, key, value, *, retention=None):
            if self.refusing:
                raise RuntimeError("404: Task instance 0196... not found")
            super().set(key, value, retention=retention)

    store = ClearedMeanwhile()
    rec = recorder(store)
    rec.started(job(), None, attached=False)
    rec.seen(job(**RUNNING), [pod("train-job-master-0")])
    store.refusing = True
    rec.ended("stopped", job(**RUNNING), wait_seconds=1)
    (record,) = read_records(store.get(RECORD_KEY))
    assert record.final is None
    assert record.last_seen is not None and record.last_seen.job["status"] == RUNNING


def test_a_parked_end_fills_the_try_that_recorded_none_and_never_the_tasks_own():
    """The end a deferred try's trigger leaves in XCom (``parked_end``) is read back (``read_parked``) as the
    ``final`` of that try when the task recorded none; what the task wrote itself wins."""
    store = Store()
    for n in (1, 2):
        recorder(store, n).started(job(uid=f"u-{n}"), None, attached=False)
    recorder(store, 1).ended("failed", job(uid="u-1"))
    records = read_records(store.get(RECORD_KEY))
    by_trigger = job_records.final_state("stopped", job(uid="u-2", **RUNNING), [pod("p")], recorded_by="trigger")
    value = json.loads(json.dumps(job_records.parked_end(2, by_trigger)))  # as XCom keeps it
    parked = job_records.read_parked(value)
    assert parked is not None and parked[0] == 2
    second, first = job_records.with_parked(records, parked)
    assert second.final is not None and (second.final.outcome, second.final.recorded_by) == ("stopped", "trigger")
    assert second.final.job is not None and second.final.job["status"] == RUNNING
    assert first.final is not None and first.final.outcome == "failed" and first.final.recorded_by is None
    # the task's own end of try 2 wins over the trigger's
    recorder(store, 2).ended("succeeded", job(uid="u-2"))
    second, _ = job_records.with_parked(read_records(store.get(RECORD_KEY)), parked)
    assert second.final is not None and second.final.outcome == "succeeded"
    for junk in (None, "ref://elsewhere", {"try_number": "2"}, {"try_number": 2, "final": {"outcome": "?"}}):
        assert job_records.read_parked(junk) is None


def test_the_last_sight_is_shed_before_the_manifests(monkeypatch):
    monkeypatch.setenv("AIRFLOW__STATE_STORE__MAX_VALUE_STORAGE_BYTES", "9000")
    store = Store()
    for n in (1, 2):
        rec = recorder(store, n)
        rec.started(job(uid=f"u-{n}"), manifest("print(1)"), attached=False)
        rec.seen(job(uid=f"u-{n}", **RUNNING), [pod(f"p-{i}") for i in range(8)])
    assert len(store.values[RECORD_KEY]) <= 9000
    latest, oldest = read_records(store.get(RECORD_KEY))
    assert "last_seen" in oldest.omitted and oldest.last_seen is None and oldest.manifest_yaml
    assert latest.last_seen is not None


# ---- the training's own progress over the try ----------------------------------------------------------------


def trainjob(percent: int, at: str, **metrics: str) -> dict[str, Any]:
    trainer = {
        "progressPercentage": percent,
        "estimatedRemainingSeconds": 100 - percent,
        "lastUpdatedTime": at,
        "metrics": [{"name": k, "value": v} for k, v in metrics.items()],
    }
    running = [{"name": "node", "active": 1, "ready": 1, "succeeded": 0, "failed": 0, "suspended": 0}]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "train-job", "namespace": "ml", "uid": "u-1", "labels": identity().labels()},
        "status": {"jobsStatus": running, "trainerStatus": trainer},
    }


def test_a_running_try_records_a_point_each_time_the_progress_changes_and_its_end_keeps_them():
    store = Store()
    rec = recorder(store)
    rec.started(trainjob(0, "2026-12-07T10:00:00Z"), None, attached=False)
    rec.seen(trainjob(10, "2026-12-07T10:00:10Z", loss="0.9"))
    rec.seen(trainjob(10, "2026-12-07T10:00:20Z", loss="0.9"))  # reported again, unchanged: no new point
    rec.seen(trainjob(40, "2026-12-07T10:00:30Z", loss="0.5"))
    (running,) = read_records(store.get(RECORD_KEY))
    assert running.last_seen is not None
    assert [(p["percentage"], p["metrics"]) for p in running.last_seen.progress] == [
        (10, {"loss": "0.9"}),
        (40, {"loss": "0.5"}),
    ]
    done = trainjob(100, "2026-12-07T10:01:00Z", loss="0.1")
    rec.ended("succeeded", done)
    (ended,) = read_records(store.get(RECORD_KEY))
    assert ended.final is not None and ended.last_seen is None
    assert [p["at"] for p in ended.final.progress] == [
        "2026-12-07T10:00:10Z",
        "2026-12-07T10:00:30Z",
        "2026-12-07T10:01:00Z",
    ]


def test_a_deferred_try_records_the_points_its_trigger_kept():
    store = Store()
    rec = recorder(store)
    from_trigger = [
        {"at": "2026-12-07T10:00:10Z", "percentage": 10, "estimated_remaining_seconds": 90, "metrics": {"l": "1"}},
        {"at": "2026-12-07T10:00:30Z", "percentage": 60, "estimated_remaining_seconds": 40, "metrics": {"l": "2"}},
    ]
    rec.took_over(from_trigger)
    rec.took_over(None)  # an event without points (an earlier trigger's)
    rec.ended("failed", trainjob(60, "2026-12-07T10:00:30Z", l="2"), message="boom")
    (ended,) = read_records(store.get(RECORD_KEY))
    assert ended.final is not None and ended.final.progress == from_trigger, "the job's last point is the trigger's"


def test_a_v1_job_keeps_no_points():
    store = Store()
    rec = recorder(store)
    rec.seen(job())
    rec.ended("succeeded", job(conditions=[{"type": "Succeeded", "status": "True"}]))
    (ended,) = read_records(store.get(RECORD_KEY))
    assert ended.final is not None and ended.final.progress == []


def test_a_deferred_try_killed_in_the_triggerer_parks_its_progress_points_with_its_end(monkeypatch):
    """The trigger's points, and the one the job read at ``on_kill`` reports: the tab shows them after the kill."""
    import asyncio
    import types

    from airflow.sdk.execution_time.xcom import XCom

    from airflow_trainjob.triggers import kubernetes_side
    from airflow_trainjob.triggers.training_job import TrainingJobTrigger

    parked: list[Any] = []

    async def aset(key: str, value: Any, **where: Any) -> None:
        parked.append(json.loads(json.dumps(value)))

    async def list_events_async(namespace: str, names: Any) -> list[dict[str, Any]]:
        return []

    monkeypatch.setattr(XCom, "aset", aset)
    trigger = TrainingJobTrigger(kind="TrainJob", name="train-job", namespace="ml", try_number=1)
    trigger._judge_seen(trainjob(10, "2026-12-07T10:00:10Z", loss="0.9"))  # what its wait saw
    trigger._judge_seen(trainjob(10, "2026-12-07T10:00:20Z", loss="0.9"))  # reported again: no point
    ti = types.SimpleNamespace(dag_id="retrain", task_id="train", run_id="manual__1", map_index=-1)
    hook = types.SimpleNamespace(list_events_async=list_events_async)

    async def park() -> None:
        await kubernetes_side.load()
        await trigger._park_end(hook, ti, trainjob(30, "2026-12-07T10:00:30Z", loss="0.7"), [])

    asyncio.run(park())
    parked_try = job_records.read_parked(parked[0])
    assert parked_try is not None
    assert [(p["percentage"], p["metrics"]) for p in parked_try[1].progress] == [
        (10, {"loss": "0.9"}),
        (30, {"loss": "0.7"}),
    ]


def test_progress_reports_are_written_at_the_sights_rate_yet_every_point_reaches_the_end(monkeypatch):
    """A trainer reporting every second writes the record no faster than other changes do (``SEEN_BURST``, then one
    per ``SEEN_WRITE_SECONDS``); the points held back meanwhile are in the next write, and all of them in the end."""
    clock = [1000.0]
    monkeypatch.setattr(job_recorder.time, "monotonic", lambda: clock[0])
    store, writes = Store(), []
    original = store.set
    store.set = lambda key, value, *, retention=None: (writes.append(key), original(key, value, retention=retention))
    rec = recorder(store)
    rec.started(trainjob(0, "2026-12-07T10:00:00Z"), None, attached=False)
    for second in range(1, 21):
        rec.seen(trainjob(second * 4, f"2026-12-07T10:00:{second:02d}Z", loss=str(1 / second)))
    assert len(writes) == 1 + job_recorder.SEEN_BURST, "the start, then the burst: the rest held back"
    clock[0] += job_recorder.SEEN_WRITE_SECONDS
    rec.seen(trainjob(80, "2026-12-07T10:00:20Z", loss=str(1 / 20)))  # the wait looks again when the write is due
    (running,) = read_records(store.get(RECORD_KEY))
    assert running.last_seen is not None and len(running.last_seen.progress) == 20
    rec.ended("succeeded", trainjob(100, "2026-12-07T10:00:30Z", loss="0.01"))
    (ended,) = read_records(store.get(RECORD_KEY))
    assert ended.final is not None and [p["percentage"] for p in ended.final.progress] == [*range(4, 84, 4), 100]


def test_an_older_tries_progress_is_shed_after_its_pods_and_before_its_manifest(monkeypatch):
    monkeypatch.setenv("AIRFLOW__STATE_STORE__MAX_VALUE_STORAGE_BYTES", "9000")
    store = Store()
    for n in (1, 2):
        rec = recorder(store, n)
        rec.started(trainjob(0, "2026-12-07T10:00:00Z"), manifest("print(1)"), attached=False)
        for second in range(1, 40):
            rec.note_progress(trainjob(second, f"2026-12-07T10:00:{second:02d}Z", loss=f"0.{second:04d}"))
        rec.ended("failed", trainjob(40, "2026-12-07T10:00:40Z", loss="0.0040"), message="boom")
    assert len(store.values[RECORD_KEY]) <= 9000
    latest, oldest = read_records(store.get(RECORD_KEY))
    assert "progress" in oldest.omitted and oldest.final is not None and oldest.final.progress == []
    assert oldest.manifest_yaml and latest.final is not None and len(latest.final.progress) == 40
