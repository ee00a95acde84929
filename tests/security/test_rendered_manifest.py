"""A secret rendered into a job stays masked in what Airflow stores for the rendered template view.

Airflow redacts each rendered field with the secrets it was told of (a Variable or Connection read in a template,
``mask_secret``), but in a dict it stops a few levels down: a container's ``env`` in a job sits deeper. So the
``manifest`` field is the job as YAML text, which is redacted whole. The job sent to the cluster keeps the value.
"""

from __future__ import annotations

import json

import pytest

from tests.support.jobs import TaskInstanceStandIn, python_container

SECRET = "hfSECRETvalue0123456789"


@pytest.mark.parametrize("whole", [False, True], ids=["replica_specs", "whole-job"])
def test_a_secret_in_a_containers_env_is_masked_in_the_rendered_fields(whole, closed_port_conn):
    from airflow.sdk.execution_time.task_runner import _serialize_rendered_fields
    from airflow.sdk.log import mask_secret

    from airflow_trainjob.operators.training_job import TrainingJobOperator

    mask_secret(SECRET)  # what reading a sensitive Variable in a template does
    container = {**python_container("print('hi')"), "env": [{"name": "HF_TOKEN", "value": "{{ params.token }}"}]}
    specs = {"Master": {"replicas": 1, "template": {"spec": {"containers": [container]}}}}
    if whole:
        operator = TrainingJobOperator(
            task_id="train",
            job={"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": specs}},
        )
    else:
        operator = TrainingJobOperator(task_id="train", kind="PyTorchJob", replica_specs=specs)
    operator.render_template_fields({"ti": TaskInstanceStandIn(), "params": {"token": SECRET}})
    sent = operator._manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert sent["env"] == [{"name": "HF_TOKEN", "value": SECRET}]  # the cluster gets the value
    stored = _serialize_rendered_fields(operator)
    assert SECRET not in json.dumps(stored)
    assert "name: HF_TOKEN\n" in stored["manifest"] and "value: ***" in stored["manifest"]  # masked, in place
    for field in ("replica_specs", "job"):  # the rendered input fields too, where given
        assert "value: ***" in stored[field] if stored[field] else True
