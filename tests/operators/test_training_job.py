"""TrainingJobOperator, end to end against the local cluster (real apiserver, controller, kubelet)."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_trainjob.constants import GROUP, LABEL_JOB_NAME, LABEL_TRY_NUMBER, VERSION
from airflow_trainjob.domain.cleanup_hold import ANNOTATION_HELD_RUN_POLICY
from airflow_trainjob.domain.ownership import ANNOTATION_FOLLOWED_BY_TRY
from airflow_trainjob.exceptions import (
    InvalidJobSpecError,
    JobDeletedError,
    JobNotOwnedError,
    TrainingJobError,
    TrainingJobStoppedError,
    TrainingJobTimeoutError,
)
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.jobs import (
    EXIT_1,
    OK,
    SLEEP,
    TaskInstanceStandIn,
    TaskStateStoreStandIn,
    jobs,
    python_container,
    pytorch_specs,
    run_in_thread,
)
from tests.support.legacy import as_legacy

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

SIGKILL_SELF = "import os, signal; print('about to die'); os.kill(os.getpid(), signal.SIGKILL)"


def make(replica_specs, **kwargs) -> TrainingJobOperator:
    kwargs.setdefault("poll_interval", 0.5)
    return TrainingJobOperator(
        task_id="train", kind=kwargs.pop("kind", "PyTorchJob"), replica_specs=replica_specs, **kwargs
    )


def pods(core_v1, namespace, job_name):
    return core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL_JOB_NAME}={job_name}").items


def test_success_returns_summary_streams_lead_log_and_deletes_job(ti, namespace, custom_objects, capfd):
    # The Master outlives the Workers: PyTorchJob succeeds with its Master, and both workers'
    # success should be counted by then.
    operator = make(pytorch_specs("import time; time.sleep(2)\n" + OK, OK, workers=2))
    summary = operator.execute({"ti": ti})
    task_log = capfd.readouterr().out  # Airflow's task logger writes to stdout here
    assert summary["kind"] == "PyTorchJob" and summary["namespace"] == namespace
    assert summary["name"] == ti.xcom["job_name"] and ti.xcom["job_namespace"] == namespace
    assert [c["type"] for c in summary["conditions"] if c["status"] == "True"][-1] == "Succeeded"
    assert summary["replicaStatuses"]["Worker"]["succeeded"] == 2
    assert summary["duration"] is not None and summary["duration"] >= 0
    assert "[Master-0] hello from rank 0 of 3" in task_log
    assert "Succeeded (PyTorchJobSucceeded" in task_log
    assert jobs(custom_objects, namespace) == []  # delete_succeeded_job


def test_permanent_failure_is_not_retried_and_says_why(ti, namespace, custom_objects):
    operator = make(pytorch_specs(EXIT_1, workers=0))
    with pytest.raises(AirflowFailException) as raised:
        operator.execute({"ti": ti})
    message = str(raised.value)
    assert "PyTorchJobFailed" in message
    assert "Master-0" in message and "exit code 1" in message and "permanent" in message
    assert "| bad input" in message  # the failed replica's log tail, read before cleanup
    assert "Recent events:" in message
    (kept,) = jobs(custom_objects, namespace)  # delete_succeeded_job keeps a failed job
    assert kept["metadata"]["name"] == ti.xcom["job_name"]


def test_killed_replica_137_is_retryable(ti, namespace):
    operator = make(pytorch_specs(SIGKILL_SELF, workers=0))
    with pytest.raises(TrainingJobError) as raised:
        operator.execute({"ti": ti})
    assert not isinstance(raised.value, AirflowFailException)
    assert "exit code 137" in str(raised.value) and "retryable" in str(raised.value)


def test_exit_code_policy_restarts_then_succeeds(ti, namespace, tmp_path):
    marker = tmp_path / "first-run-done"
    code = (
        f"import os, pathlib, signal; m = pathlib.Path({str(marker)!r})\n"
        "if not m.exists():\n    m.touch(); os.kill(os.getpid(), signal.SIGKILL)\n"
        "print('second run ok')"
    )
    operator = make(pytorch_specs(code, workers=0, restartPolicy="ExitCode"))
    summary = operator.execute({"ti": ti})
    assert summary["conditions"][-1]["type"] == "Succeeded"
    assert marker.exists()


def test_active_deadline_fails_the_job(ti, namespace):
    operator = make(pytorch_specs(SLEEP, workers=0), run_policy={"activeDeadlineSeconds": 2})
    with pytest.raises(TrainingJobError) as raised:
        operator.execute({"ti": ti})
    assert "Deadline" in str(raised.value) or "deadline" in str(raised.value)


def test_startup_timeout_cites_pending_and_deletes_the_job(ti, namespace, custom_objects):
    # A gang larger than the local node's pod slots: the controller never creates its pods.
    operator = make(
        pytorch_specs(OK, workers=1), run_policy={"schedulingPolicy": {"minAvailable": 500}}, startup_timeout=3
    )
    with pytest.raises(TrainingJobTimeoutError) as raised:
        operator.execute({"ti": ti})
    assert "startup_timeout of 3 s passed" in str(raised.value)
    wait_for(lambda: jobs(custom_objects, namespace) == [], what="the timed-out job to be deleted")


def test_timeout_deletes_the_running_job(ti, namespace, custom_objects, core_v1):
    operator = make(pytorch_specs(SLEEP, workers=1), timeout=4)
    with pytest.raises(TrainingJobTimeoutError):
        operator.execute({"ti": ti})
    wait_for(lambda: jobs(custom_objects, namespace) == [], what="job deletion")
    wait_for(lambda: pods(core_v1, namespace, ti.xcom["job_name"]) == [], what="pod garbage collection")


@pytest.mark.parametrize(("policy", "left"), [("All", set()), ("Running", {"master"}), ("None", {"master", "worker"})])
def test_clean_pod_policy_leaves_exactly_the_right_pods(ti, namespace, core_v1, policy, left):
    # The Master fails at once while the Worker is still running.
    operator = make(
        pytorch_specs(EXIT_1, SLEEP, workers=1), run_policy={"cleanPodPolicy": policy}, on_finish="keep_job"
    )
    with pytest.raises(AirflowFailException):
        operator.execute({"ti": ti})
    name = ti.xcom["job_name"]

    def remaining():
        return {
            p.metadata.labels["training.kubeflow.org/replica-type"]
            for p in pods(core_v1, namespace, name)
            if p.metadata.deletion_timestamp is None
        }

    wait_for(lambda: remaining() == left, what=f"pods left by cleanPodPolicy={policy}: {left}")
    time.sleep(1.5)
    assert remaining() == left  # and nothing more goes away afterwards


@pytest.mark.parametrize(
    ("on_finish", "code", "kept"),
    [
        ("keep_job", OK, True),
        ("delete_job", OK, False),
        ("delete_succeeded_job", OK, False),
        ("keep_job", EXIT_1, True),
        ("delete_job", EXIT_1, False),
        ("delete_succeeded_job", EXIT_1, True),
    ],
)
def test_end_of_task_options(ti, namespace, custom_objects, on_finish, code, kept):
    operator = make(pytorch_specs(code, workers=0), on_finish=on_finish)
    try:
        operator.execute({"ti": ti})
    except AirflowFailException:
        assert code == EXIT_1
    wait_for(lambda: (len(jobs(custom_objects, namespace)) == 1) == kept, what=f"job kept={kept}")


def test_job_owned_by_someone_else_is_refused_and_untouched(ti, namespace, custom_objects):
    foreign = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "shared-name", "labels": {"team": "other"}},
        "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": [python_container(SLEEP)]}}}}},
    }
    created = custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", foreign)
    operator = make(pytorch_specs(OK, workers=0), job_name="shared-name")
    with pytest.raises(JobNotOwnedError) as raised:
        operator.execute({"ti": ti})
    assert "not labelled as this task instance's" in str(raised.value)
    (still,) = jobs(custom_objects, namespace)
    assert still["metadata"]["uid"] == created["metadata"]["uid"]
    assert still["metadata"]["labels"] == {"team": "other"}


def _running(custom_objects, namespace):
    items = jobs(custom_objects, namespace)
    return bool(items) and any(
        c["type"] == "Running" and c["status"] == "True" for c in (items[0].get("status") or {}).get("conditions") or []
    )


def test_on_kill_deletes_the_running_job(ti, namespace, custom_objects, core_v1):
    operator = make(pytorch_specs(SLEEP, workers=1))
    thread, outcome = run_in_thread(operator, {"ti": ti})
    wait_for(lambda: _running(custom_objects, namespace), what="job running")
    operator.on_kill()
    wait_for(lambda: jobs(custom_objects, namespace) == [], what="job deleted by on_kill")
    thread.join(30)
    # The try ends saying Airflow stopped it and that it deleted its job, not that someone else did.
    error = outcome.get("error")
    assert isinstance(error, TrainingJobStoppedError) and not isinstance(error, JobDeletedError)
    assert "stopped by Airflow" in str(error) and "deleted the job" in str(error)
    assert "deleted outside this task" not in str(error)


def test_job_deleted_outside_the_task(ti, namespace, custom_objects):
    operator = make(pytorch_specs(SLEEP, workers=0))
    thread, outcome = run_in_thread(operator, {"ti": ti})
    wait_for(lambda: _running(custom_objects, namespace), what="job running")
    name = jobs(custom_objects, namespace)[0]["metadata"]["name"]
    custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", name)
    thread.join(30)
    assert isinstance(outcome.get("error"), JobDeletedError)
    assert "deleted outside this task" in str(outcome["error"])


@pytest.mark.parametrize(("reattach", "same_uid"), [(True, True), (False, False)])
def test_retry_after_a_lost_worker_leaves_one_job(namespace, custom_objects, reattach, same_uid):
    """Try 1's worker dies mid-job (its job keeps running); try 2 attaches to it, or replaces it."""
    first = TaskInstanceStandIn(try_number=1)
    abandoned = make(pytorch_specs("import time; time.sleep(4); print('done')", workers=0), get_logs=False)
    # Try 1 creates its job, then its worker is gone: nothing of it runs any more (a SIGKILLed worker does no
    # cleanup). The real SIGKILL is in test_process_faults.py.
    abandoned.submit_job({"ti": first})
    wait_for(lambda: _running(custom_objects, namespace), what="try 1's job running")
    original = jobs(custom_objects, namespace)[0]

    second = TaskInstanceStandIn(run_id=first.run_id, try_number=2)
    summary = make(
        pytorch_specs("import time; time.sleep(4); print('done')", workers=0),
        reattach_on_restart=reattach,
        durable=reattach,
    ).execute({"ti": second})
    assert summary["name"] == original["metadata"]["name"]
    all_jobs = jobs(custom_objects, namespace)
    assert len(all_jobs) <= 1
    assert (
        summary["conditions"][0]["lastTransitionTime"] == original["status"]["conditions"][0]["lastTransitionTime"]
    ) == same_uid


def test_a_retry_after_an_upgrade_reattaches_to_the_job_an_earlier_release_created(
    namespace, custom_objects, core_v1, capfd
):
    """Try 1 ran on a release before 1.0: its job carries the provider's keys under the legacy prefix, its cleanup
    held there too. Try 2, on this release, attaches to that job, follows it to its end and cleans it up."""
    code = "import time; time.sleep(4); print('done')"
    first = TaskInstanceStandIn(try_number=1)
    earlier = make(pytorch_specs(code, workers=1), run_policy={"cleanPodPolicy": "All"}, get_logs=False)
    manifest = as_legacy(earlier._prepare({"ti": first}))  # as the earlier release sent it
    created = custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", manifest)
    name = created["metadata"]["name"]
    wait_for(lambda: _running(custom_objects, namespace), what="the earlier release's job running")

    second = TaskInstanceStandIn(run_id=first.run_id, try_number=2)
    summary = make(pytorch_specs(code, workers=1), run_policy={"cleanPodPolicy": "All"}).execute({"ti": second})
    assert summary["name"] == name and summary["conditions"][-1]["type"] == "Succeeded"
    assert f"Attaching to PyTorchJob {namespace}/{name}, still Running, created by try 1" in capfd.readouterr().out
    assert jobs(custom_objects, namespace) == []  # delete_succeeded_job
    wait_for(lambda: pods(core_v1, namespace, name) == [], what="the job's pods gone")


def test_templated_specs_render_into_the_created_job(ti, namespace, custom_objects):
    operator = make(
        {
            "Master": {
                "template": {"spec": {"containers": [python_container("print('{{ ds }}')")]}},
            }
        },
        run_policy="activeDeadlineSeconds: {{ params.deadline }}",
        labels={"dataset-date": "{{ ds }}"},
        on_finish="keep_job",
        params={"deadline": 600},
    )
    operator.render_template_fields({"ds": "2026-11-29", "params": {"deadline": 600}, "ti": ti})
    shown = yaml.safe_load(operator.manifest)  # what the rendered template view shows: the job, as YAML
    assert shown["spec"]["runPolicy"]["activeDeadlineSeconds"] == 600
    operator.execute({"ti": ti})
    (job,) = jobs(custom_objects, namespace)
    container = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert container["command"][-1] == "print('2026-11-29')"
    assert job["spec"]["runPolicy"]["activeDeadlineSeconds"] == 600
    assert job["metadata"]["labels"]["dataset-date"] == "2026-11-29"
    assert job["metadata"]["labels"][LABEL_TRY_NUMBER] == "1"
    # Sent held (cleanPodPolicy None, the user's choice on the job); kept, the job gets the user's runPolicy back.
    assert shown["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    assert json.loads(shown["metadata"]["annotations"][ANNOTATION_HELD_RUN_POLICY]) == {"cleanPodPolicy": "Running"}
    # (suspend: false is the CRD's default, written by the API server as on a real cluster.)
    released = {
        **shown["spec"],
        "runPolicy": {**shown["spec"]["runPolicy"], "cleanPodPolicy": "Running", "suspend": False},
    }
    assert job["spec"] == released and job["metadata"]["labels"] == shown["metadata"]["labels"]
    assert ANNOTATION_HELD_RUN_POLICY not in (job["metadata"].get("annotations") or {})


def test_namespace_comes_from_the_connection(ti, namespace, custom_objects):
    make(pytorch_specs(OK, workers=0), on_finish="keep_job").execute({"ti": ti})
    assert ti.xcom["job_namespace"] == namespace
    assert len(jobs(custom_objects, namespace)) == 1


def test_bad_input_is_refused_before_any_api_call(ti, namespace, custom_objects):
    with pytest.raises(InvalidJobSpecError) as raised:
        make(pytorch_specs(OK, workers=0), on_finish="delete_everything").execute({"ti": ti})
    assert "on_finish" in str(raised.value) and "keep_job, delete_job, delete_succeeded_job" in str(raised.value)
    with pytest.raises(InvalidJobSpecError):
        make({"Master": {"replicas": 2, "template": {"spec": {"containers": [python_container(OK)]}}}}).execute(
            {"ti": ti}
        )
    assert jobs(custom_objects, namespace) == []
    assert ti.xcom == {}


def test_extra_link_from_the_connection_template(ti, namespace, monkeypatch, local_cluster):
    import json

    from airflow_trainjob.links.training_job import TrainingJobLink

    extra = {
        "kube_config_path": str(local_cluster.kubeconfig),
        "namespace": namespace,
        "job_url_template": "https://kubeflow.example.com/jobs/{namespace}/{plural}/{name}",
    }
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps({"conn_type": "kubernetes", "extra": extra}))
    operator = make(pytorch_specs(OK, workers=0))
    operator.execute({"ti": ti})
    # What Airflow's task runner asks for when the task ends, and stores for the UI.
    assert TrainingJobLink().get_link(operator, ti_key=None) == (
        f"https://kubeflow.example.com/jobs/{namespace}/pytorchjobs/{ti.xcom['job_name']}"
    )


def test_without_a_template_the_link_is_the_training_job_tab(ti, namespace):
    from airflow_trainjob.links.training_job import TrainingJobLink

    operator = make(pytorch_specs(OK, workers=0))
    operator.execute({"ti": ti})
    tab = f"/dags/retrain/runs/{ti.run_id}/tasks/train/plugin/training-job"  # [api] base_url unset: relative
    assert TrainingJobLink().get_link(operator, ti_key=ti) == tab  # what the task runner pushes at the end
    assert ti.xcom[TrainingJobLink().xcom_key] == tab  # pushed already when the job was created
    assert TrainingJobLink().get_link(make(pytorch_specs(OK, workers=0)), ti_key=ti) == ""  # no job built: none


def test_retry_after_a_worker_crash_reconnects_through_task_state_store(namespace, custom_objects, capfd):
    """Try 1 stores its job's identity, then its worker dies; try 2 reconnects instead of submitting."""
    store = TaskStateStoreStandIn()
    first = TaskInstanceStandIn(try_number=1)
    code = "import time; time.sleep(4); print('done')"
    abandoned = make(pytorch_specs(code, workers=0), get_logs=False)
    # Try 1 submits and stores its job's identity as ResumableJobMixin does, then its worker is gone (no cleanup).
    store.set(TrainingJobOperator.external_id_key, abandoned.submit_job({"ti": first, "task_state_store": store}))
    wait_for(lambda: _running(custom_objects, namespace), what="try 1's job running")
    stored = store[TrainingJobOperator.external_id_key]
    assert stored["name"] == first.xcom["job_name"] and stored["uid"]

    second = TaskInstanceStandIn(run_id=first.run_id, try_number=2)
    summary = make(pytorch_specs(code, workers=0)).execute({"ti": second, "task_state_store": store})
    assert "Reconnecting to existing job" in capfd.readouterr().out
    assert summary["name"] == stored["name"]
    assert summary["conditions"][-1]["type"] == "Succeeded"
    assert jobs(custom_objects, namespace) == []  # cleaned up by the try that saw it finish


def test_stored_job_that_already_succeeded_is_not_run_again(namespace, custom_objects):
    store = TaskStateStoreStandIn()
    first = TaskInstanceStandIn(try_number=1)
    make(pytorch_specs(OK, workers=0), on_finish="keep_job").execute({"ti": first, "task_state_store": store})
    (job,) = jobs(custom_objects, namespace)
    second = TaskInstanceStandIn(run_id=first.run_id, try_number=2)
    summary = make(pytorch_specs(OK, workers=0), on_finish="keep_job").execute(
        {"ti": second, "task_state_store": store}
    )
    (still,) = jobs(custom_objects, namespace)
    assert still["metadata"]["uid"] == job["metadata"]["uid"]  # not resubmitted
    assert summary["conditions"][-1]["type"] == "Succeeded"


def test_a_late_on_kill_of_an_earlier_try_leaves_the_job_the_next_try_follows(namespace, custom_objects):
    code = "import time; time.sleep(3); print('done')"
    first = TaskInstanceStandIn(try_number=1)
    old = make(pytorch_specs(code, workers=0), get_logs=False)
    old.submit_job({"ti": first})
    wait_for(lambda: _running(custom_objects, namespace), what="try 1's job running")
    second = TaskInstanceStandIn(run_id=first.run_id, try_number=2)
    thread, outcome = run_in_thread(make(pytorch_specs(code, workers=0)), {"ti": second})
    wait_for(
        lambda: jobs(custom_objects, namespace)[0]["metadata"].get("annotations", {}).get(ANNOTATION_FOLLOWED_BY_TRY),
        what="try 2 attached",
    )
    old.on_kill()  # try 1's kill arrives after try 2 attached: it must leave the job
    thread.join(60)
    assert outcome.get("result", {}).get("conditions", [{}])[-1].get("type") == "Succeeded", outcome
