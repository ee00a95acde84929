"""The operator's input parsed once: rendering builds one frozen TrainingJobRequest per try, and the try sends that
one. No cluster: the request is built before any API call (the hook only answers for the connection)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

import airflow_trainjob.operators.request as request_module
from airflow_trainjob.constants import LABEL_TRY_NUMBER
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.operators.request import TrainingJobRequest
from airflow_trainjob.operators.training_job import TrainingJobOperator
from tests.support.jobs import TaskInstanceStandIn

SPECS = {"Master": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "python:3.12"}]}}}}
WHOLE_TFJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "digits", "namespace": "vision"},
    "spec": {"tfReplicaSpecs": SPECS},
}


class ConnectionHook:
    """The hook's calls while a request is built: the connection exists, its namespace is ``from-connection``."""

    def require_connection(self) -> None:
        pass

    def resolve_namespace(self, namespace: str | None = None) -> str:
        return namespace or "from-connection"


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every call of params.problems by the request builder (its one check of the parameters)."""
    calls: list[Any] = []
    real = request_module.problems

    def counted(values: Any, face: str) -> list[str]:
        calls.append(face)
        return real(values, face)

    monkeypatch.setattr(request_module, "problems", counted)
    return calls


def operator(**arguments: Any) -> TrainingJobOperator:
    op = TrainingJobOperator(task_id="train", **arguments)
    op.__dict__["hook"] = ConnectionHook()
    return op


def test_one_check_per_render_and_execute_of_the_same_try(checks):
    op = operator(kind="TFJob", replica_specs=SPECS)
    ti = TaskInstanceStandIn()
    op.render_template_fields({"ti": ti})
    assert len(checks) == 1
    rendered = op._manifest
    assert op._prepare({"ti": ti}) is rendered  # the try sends what its render built, unchecked again
    assert len(checks) == 1
    assert ti.xcom["job_name"] == rendered["metadata"]["name"] and ti.xcom["job_namespace"] == "from-connection"
    # Another try (its identity differs): a request of its own, checked once.
    other = TaskInstanceStandIn(run_id=ti.run_id, try_number=2)
    assert op._prepare({"ti": other})["metadata"]["labels"][LABEL_TRY_NUMBER] == "2"
    assert len(checks) == 2 and yaml.safe_load(op.manifest) == op._manifest


def test_a_whole_job_leaves_kind_as_the_dag_gave_it(checks):
    op = operator(job=WHOLE_TFJOB)
    ti = TaskInstanceStandIn()
    op.render_template_fields({"ti": ti})
    request = op._request
    assert request is not None and op.kind is None  # not overwritten by the job's kind
    assert (request.kind, request.namespace, request.name) == ("TFJob", "vision", op._manifest["metadata"]["name"])
    op._prepare({"ti": ti})
    assert op.kind is None and len(checks) == 1


def test_the_request_is_frozen():
    op = operator(kind="TFJob", replica_specs=SPECS)
    op.render_template_fields({"ti": TaskInstanceStandIn()})
    request = op._request
    assert isinstance(request, TrainingJobRequest)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.notes = ()


def test_invalid_input_renders_no_manifest_and_the_try_raises_its_error(checks):
    op = operator(job=WHOLE_TFJOB, kind="PyTorchJob")
    ti = TaskInstanceStandIn()
    op.render_template_fields({"ti": ti})
    assert op.manifest is None and op._request is None and op._manifest is None
    with pytest.raises(InvalidJobSpecError) as raised:
        op._prepare({"ti": ti})
    assert raised.value.problems == [
        "kind: 'PyTorchJob' differs from the job's kind 'TFJob'; leave kind unset with a whole job"
    ]
    assert ti.xcom == {} and len(checks) == 2  # the render's, and the try's own


def test_the_try_logs_the_input_notes_of_its_request(capfd):
    op = operator(job=WHOLE_TFJOB, queue_name="ml")
    ti = TaskInstanceStandIn()
    op.render_template_fields({"ti": ti})
    capfd.readouterr()
    op._prepare({"ti": ti})
    task_log = "".join(capfd.readouterr())
    request = op._request
    assert request is not None and len(request.notes) == 6
    positions = [task_log.find(f"Input: {note}") for note in request.notes]
    assert -1 not in positions and positions == sorted(positions)  # each note, in the request's order
    assert "job: metadata.namespace: 'vision' from the job (the namespace parameter overrides it)" in request.notes
    assert request.notes[-1] == "metadata.labels: kueue.x-k8s.io/queue-name=ml (queue_name)"


def test_build_job_returns_the_manifest_and_keeps_nothing(checks):
    op = operator(kind="TFJob", replica_specs=SPECS)
    manifest = op.build_job({"ti": TaskInstanceStandIn()}, "elsewhere")
    assert manifest["metadata"]["namespace"] == "elsewhere" and manifest["kind"] == "TFJob"
    assert op._request is None and op.manifest is None and len(checks) == 1
