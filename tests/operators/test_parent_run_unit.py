"""The OpenLineage parent run given to a job's training containers: off by default, switched on per task or by
``[openlineage] spark_inject_parent_job_info``, read through the openlineage provider's macros, nothing (and no
error) without the provider or with OpenLineage disabled. No cluster: the manifest is built before any API call."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from airflow.providers.openlineage.plugins import macros

from airflow_trainjob.domain.parent_run import PARENT_RUN_ENV_NAMES
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.operators.parent_run import injection_enabled, parent_run_of, with_parent_run
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.operators.trainjob import TrainJobOperator
from tests.support.jobs import TaskInstanceStandIn

SPECS = {
    "Master": {"template": {"spec": {"containers": [{"name": "pytorch", "image": "python:3.12"}]}}},
    "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "pytorch", "image": "python:3.12"}]}}},
}
SWITCH = "AIRFLOW__OPENLINEAGE__SPARK_INJECT_PARENT_JOB_INFO"
OL_MODULES = (
    "airflow.providers.openlineage",
    "airflow.providers.openlineage.conf",
    "airflow.providers.openlineage.plugins",
    "airflow.providers.openlineage.plugins.macros",
)


@dataclass
class LineageTaskInstance(TaskInstanceStandIn):
    """A task instance the openlineage provider's macros can read: its DAG run (date, conf, clear number) too."""

    dag_run: Any = field(
        default_factory=lambda: SimpleNamespace(
            logical_date=datetime(2026, 11, 29, tzinfo=timezone.utc),
            run_after=datetime(2026, 11, 29, tzinfo=timezone.utc),
            conf={},
            clear_number=0,
        )
    )

    def get_template_context(self) -> dict[str, Any]:
        return {"dag_run": self.dag_run}


class ConnectionHook:
    def require_connection(self) -> None:
        pass

    def resolve_namespace(self, namespace: str | None = None) -> str:
        return namespace or "ml"


@pytest.fixture
def openlineage_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenLineage enabled (a console transport), the injection switch left at its default."""
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT", '{"type": "console"}')
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__NAMESPACE", "airflow-test")
    monkeypatch.delenv(SWITCH, raising=False)


@pytest.fixture
def provider_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OL_MODULES:
        monkeypatch.setitem(sys.modules, name, None)  # importing it raises ImportError


def rendered(op: TrainingJobOperator, ti: Any) -> dict[str, Any]:
    op.__dict__["hook"] = ConnectionHook()
    op.render_template_fields({"ti": ti})
    assert op._manifest is not None
    assert yaml.safe_load(op.manifest) == op._manifest  # the rendered field shows what is sent
    return op._manifest


def containers(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    specs = manifest["spec"]["pytorchReplicaSpecs"].values()
    return [c for r in specs for c in r["template"]["spec"]["containers"]]


def lineage_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env") or [] if e["name"] in PARENT_RUN_ENV_NAMES}


def test_off_by_default(openlineage_on):
    assert injection_enabled(None) is False
    manifest = rendered(
        TrainingJobOperator(task_id="train", kind="PyTorchJob", replica_specs=SPECS), LineageTaskInstance()
    )
    assert all(lineage_env(c) == {} for c in containers(manifest))


def test_the_config_switches_it_on_with_the_values_of_the_providers_macros(openlineage_on, monkeypatch):
    monkeypatch.setenv(SWITCH, "true")
    ti = LineageTaskInstance(try_number=2)
    op = TrainingJobOperator(task_id="train", kind="PyTorchJob", replica_specs=SPECS)
    manifest = rendered(op, ti)
    parent, root = macros.lineage_parent_id(ti), macros.lineage_root_parent_id(ti)
    assert parent.startswith("airflow-test/retrain.train/") and root.startswith("airflow-test/retrain/")
    for c in containers(manifest):
        env = lineage_env(c)
        assert (env["OPENLINEAGE_PARENT_ID"], env["OPENLINEAGE_ROOT_PARENT_ID"]) == (parent, root)
    assert f"OpenLineage parent run {parent} (root {root})" in op._request.notes[-1]
    # The task's own parameter wins over the config.
    off = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=SPECS, openlineage_inject_parent_job_info=False
    )
    assert all(lineage_env(c) == {} for c in containers(rendered(off, ti)))


def test_the_identity_is_the_providers_for_the_try(openlineage_on):
    ti = LineageTaskInstance(try_number=3, map_index=4)
    parent = parent_run_of({"ti": ti})
    assert parent.parent_id == macros.lineage_parent_id(ti)
    assert parent.root_parent_id == macros.lineage_root_parent_id(ti)
    assert parent.run_id == macros.lineage_run_id(ti) != parent_run_of({"ti": LineageTaskInstance(try_number=4)}).run_id


def test_a_container_that_sets_its_own_parent_keeps_it_and_the_try_says_so(openlineage_on):
    own = {"name": "OPENLINEAGE_PARENT_ID", "value": "mine/job/01900000-0000-7000-8000-000000000001"}
    specs = {
        **SPECS,
        "Master": {"template": {"spec": {"containers": [{"name": "pytorch", "image": "python:3.12", "env": [own]}]}}},
    }
    op = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=specs, openlineage_inject_parent_job_info=True
    )
    master, worker = containers(rendered(op, LineageTaskInstance()))
    assert master["env"] == [own]
    assert set(lineage_env(worker)) == set(PARENT_RUN_ENV_NAMES)
    assert op._request.notes[-1].startswith("spec.pytorchReplicaSpecs.Master.template.spec.containers[pytorch]: keeps")


def test_a_trainjob_gets_it_in_trainer_env(openlineage_on):
    op = TrainJobOperator(
        task_id="train",
        runtime="torch-distributed",
        trainer={"command": ["python", "-c", "pass"], "env": [{"name": "EPOCHS", "value": "2"}]},
        openlineage_inject_parent_job_info=True,
    )
    ti = LineageTaskInstance()
    env = rendered(op, ti)["spec"]["trainer"]["env"]
    assert env[0] == {"name": "EPOCHS", "value": "2"}
    assert {e["name"]: e["value"] for e in env[1:]}["OPENLINEAGE_PARENT_ID"] == macros.lineage_parent_id(ti)


def test_asked_for_with_openlineage_disabled_nothing_and_one_warning(monkeypatch, capfd):
    for name in ("AIRFLOW__OPENLINEAGE__TRANSPORT", "OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", SWITCH):
        monkeypatch.delenv(name, raising=False)
    ti = LineageTaskInstance()
    op = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=SPECS, openlineage_inject_parent_job_info=True
    )
    capfd.readouterr()
    manifest = rendered(op, ti)
    assert all(lineage_env(c) == {} for c in containers(manifest))
    warnings = [line for line in capfd.readouterr().out.splitlines() if "[warning" in line]
    assert len(warnings) == 1 and "not given to the job's containers: OpenLineage is disabled" in warnings[0]
    # Left to the config (on): no warning, nothing injected.
    monkeypatch.setenv(SWITCH, "true")
    unasked = TrainingJobOperator(task_id="train", kind="PyTorchJob", replica_specs=SPECS)
    assert all(lineage_env(c) == {} for c in containers(rendered(unasked, ti)))
    assert "[warning" not in capfd.readouterr().out


def test_without_the_provider_nothing_and_a_warning_only_when_asked(provider_absent):
    logged: list[str] = []
    log = SimpleNamespace(warning=lambda message, *args: logged.append(message % args))
    op = TrainingJobOperator(task_id="train", kind="PyTorchJob", replica_specs=SPECS)
    op.__dict__["hook"] = ConnectionHook()
    context = {"ti": LineageTaskInstance()}
    request = op._build_request(context)
    assert injection_enabled(None) is False  # the config cannot be read: off
    assert with_parent_run(request, context, None, log) is request and logged == []
    assert with_parent_run(request, context, True, log) is request
    assert len(logged) == 1 and "the openlineage provider is not installed" in logged[0]
    assert all(lineage_env(c) == {} for c in containers(rendered(op, LineageTaskInstance())))


def test_the_parameter_is_true_false_or_none():
    op = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=SPECS, openlineage_inject_parent_job_info="yes"
    )
    op.__dict__["hook"] = ConnectionHook()
    with pytest.raises(InvalidJobSpecError) as raised:
        op._prepare({"ti": LineageTaskInstance()})
    assert raised.value.problems == [
        "openlineage_inject_parent_job_info: must be True, False or None (the config decides), got str 'yes'"
    ]


def test_a_whole_job_gets_it_in_every_replica_types_containers(openlineage_on):
    whole = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": "allreduce"},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"template": {"spec": {"containers": [{"name": "launcher", "image": "mpi:1"}]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "worker", "image": "mpi:1"}]}}},
            }
        },
    }
    ti = LineageTaskInstance()
    op = TrainingJobOperator(task_id="train", job=whole, openlineage_inject_parent_job_info=True)
    specs = rendered(op, ti)["spec"]["mpiReplicaSpecs"]
    for replica in specs.values():
        (container,) = replica["template"]["spec"]["containers"]
        assert lineage_env(container)["OPENLINEAGE_PARENT_ID"] == macros.lineage_parent_id(ti)
