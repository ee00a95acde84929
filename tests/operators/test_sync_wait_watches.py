"""The synchronous wait follows its job's pods by a watch, against the local cluster (real apiserver, controller,
kubelet): one LIST of the pods and one log stream for a quiet job, restarts in place warned as they happen, and a
Role without ``watch`` on pods (an earlier release's) served by LISTs."""

from __future__ import annotations

import functools
import time

import pytest
import yaml

from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.operators.sync_wait import SynchronousWait
from airflow_trainjob.operators.training_job import TrainingJobOperator
from tests.support.jobs import OK, pytorch_specs
from tests.support.least_privilege import (
    SERVICE_ACCOUNT,
    apply_rbac,
    connection_uri,
    kubeconfig_with_token,
    role_rules,
    token_of,
    wait_until_allowed,
)

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

#: The hook calls that read pods or their logs, counted by :func:`counted_calls`.
COUNTED = ("list_job_pods", "list_job_pods_and_version", "open_pod_log_stream")


@pytest.fixture
def counted_calls(monkeypatch):
    """Each call of the hook's pod reads, as ``(method, monotonic time)``, and the moment the wait saw the job
    terminal (``SynchronousWait.stop_pods_at_terminal`` entered) under ``"terminal"``."""
    calls: list[tuple[str, float]] = []
    for name in COUNTED:
        original = getattr(TrainingJobHook, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            calls.append((_name, time.monotonic()))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(TrainingJobHook, name, functools.wraps(original)(counted))
    stop_pods = SynchronousWait.stop_pods_at_terminal

    def at_terminal(self, job):
        calls.append(("terminal", time.monotonic()))
        return stop_pods(self, job)

    monkeypatch.setattr(SynchronousWait, "stop_pods_at_terminal", at_terminal)
    return calls


def test_a_quiet_job_costs_one_pod_list_and_one_log_stream(ti, counted_calls, capfd):
    # Quiet for 12 s between two lines: before the pod watch, the wait LISTed the pods at each change of the job
    # and the log follower every 2 s until its pod ran.
    code = "import time; print('first line', flush=True); time.sleep(12); print('last line')"
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(code, workers=0), poll_interval=0.5
    )
    operator.execute({"ti": ti})
    task_log = capfd.readouterr().out
    assert "[Master-0] first line" in task_log and "[Master-0] last line" in task_log
    names = [name for name, _ in counted_calls]
    assert names.count("list_job_pods_and_version") == 1  # the pod watch's one LIST
    assert names.count("open_pod_log_stream") == 1  # one stream, open for the whole quiet run
    (terminal_at,) = [at for name, at in counted_calls if name == "terminal"]
    # Every other LIST of the pods is the end of the task's (stopping pods, draining the log, the record, cleanup).
    assert [name for name, at in counted_calls if name == "list_job_pods" and at < terminal_at] == []


def test_a_restart_in_place_is_warned_as_it_happens(ti, tmp_path, capfd):
    # OnFailure: the kubelet restarts the container in place; the job's status does not change, its pod does.
    marker = tmp_path / "first-run-done"
    code = (
        f"import pathlib, sys, time; m = pathlib.Path({str(marker)!r})\n"
        "if not m.exists():\n    m.touch(); sys.exit(3)\n"
        "time.sleep(3); print('second run ok')"
    )
    operator = TrainingJobOperator(
        task_id="train",
        kind="PyTorchJob",
        replica_specs=pytorch_specs(code, workers=0, restartPolicy="OnFailure"),
        poll_interval=0.5,
        get_logs=False,
    )
    summary = operator.execute({"ti": ti})
    task_log = capfd.readouterr().out.splitlines()
    assert [c["type"] for c in summary["conditions"] if c["status"] == "True"][-1] == "Succeeded"
    warned = [i for i, line in enumerate(task_log) if "Replica restarted" in line]
    assert len(warned) == 1 and "restart 1" in task_log[warned[0]] and "exit code 3" in task_log[warned[0]]
    # As it happened: while the job still ran its second run (the job's status did not change for it).
    (succeeded,) = [i for i, line in enumerate(task_log) if ": Succeeded (PyTorchJobSucceeded" in line]
    assert warned[0] < succeeded


def test_a_role_without_watch_on_pods_falls_back_to_listing_them(
    ti, namespace, local_cluster, service_account_api_client, kube_api_client, tmp_path, monkeypatch, capfd
):
    # A Role written for an earlier release (pods: list, delete): the wait lists the pods instead, and succeeds.
    sa_client = service_account_api_client(SERVICE_ACCOUNT)
    rules = [
        {**rule, "verbs": [v for v in rule["verbs"] if v != "watch"]} if rule["resources"] == ["pods"] else rule
        for rule in role_rules()
    ]
    apply_rbac(kube_api_client, namespace, rules=rules)
    wait_until_allowed(sa_client, namespace)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig_with_token(local_cluster, token_of(sa_client), namespace)))
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT", connection_uri({"kube_config_path": str(path), "namespace": namespace})
    )
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(OK, workers=0), poll_interval=0.5
    )
    summary = operator.execute({"ti": ti})
    task_log = capfd.readouterr().out
    assert [c["type"] for c in summary["conditions"] if c["status"] == "True"][-1] == "Succeeded"
    assert "Watching the pods of PyTorchJob" in task_log and "was refused" in task_log
    assert "[Master-0] hello from rank 0 of 1" in task_log  # the lead's log, found by the pods' LIST
