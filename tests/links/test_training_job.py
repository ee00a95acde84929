"""The ``Training job`` extra link: where it points (the Kubeflow dashboard when configured, else the task
instance's Training job tab in the Airflow UI) and how Airflow's api-server finds it (an XCom the operator pushes
when the job is created). No cluster: the real resolution, over a real run's database, is in
``tests/operators/test_recorded_in_airflow.py``."""

from __future__ import annotations

import datetime
from types import SimpleNamespace

import pytest

from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.links.training_job import TAB_ROUTE, TrainingJobLink, task_instance_tab_url

MANIFEST = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "train-job", "namespace": "ml"}}


def operator_with(manifest=MANIFEST, extras=None, run_identity=None):
    """What the link reads of the operator: its manifest, its hook's connection extras, the try it runs."""
    run = SimpleNamespace(identity=run_identity) if run_identity else None
    return SimpleNamespace(_manifest=manifest, manifest=None, hook=SimpleNamespace(conn_extras=extras or {}), _run=run)


def ti_key(map_index=-1):
    return SimpleNamespace(
        dag_id="retrain", run_id="scheduled__2026-12-01T00:00:00+00:00", task_id="g.train", map_index=map_index
    )


def test_the_tab_of_an_unmapped_task_instance_relative_without_a_base_url(monkeypatch):
    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    assert (
        task_instance_tab_url("retrain", "manual__1", "train")
        == "/dags/retrain/runs/manual__1/tasks/train/plugin/training-job"
    )


def test_the_tab_of_a_mapped_task_instance_on_the_base_url(monkeypatch):
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/prefix/")
    assert task_instance_tab_url("retrain", "scheduled__2026-12-01T00:00:00+00:00", "g.train", 3) == (
        "https://airflow.example.com/prefix/dags/retrain/runs/scheduled__2026-12-01T00%3A00%3A00%2B00%3A00"
        "/tasks/g.train/mapped/3/plugin/training-job"
    )
    assert TAB_ROUTE == "training-job"  # the plugin's url_route (the design contract)


def test_ids_are_percent_encoded(monkeypatch):
    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    assert (
        task_instance_tab_url("a/b", "r?x=1#y", "t&u")
        == "/dags/a%2Fb/runs/r%3Fx%3D1%23y/tasks/t%26u/plugin/training-job"
    )


def test_without_a_template_the_link_is_the_tab_of_the_task_instance_asked_for(monkeypatch):
    monkeypatch.delenv("AIRFLOW__TRAINJOB__JOB_URL_TEMPLATE", raising=False)
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "http://127.0.0.1:8080")
    assert TrainingJobLink().get_link(operator_with(), ti_key=ti_key(2)) == (
        "http://127.0.0.1:8080/dags/retrain/runs/scheduled__2026-12-01T00%3A00%3A00%2B00%3A00/tasks/g.train/mapped/2"
        "/plugin/training-job"
    )


def test_without_a_ti_key_the_try_the_operator_runs(monkeypatch):
    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    who = TaskInstanceIdentity(dag_id="retrain", task_id="train", run_id="manual__1", map_index=-1, try_number=2)
    assert TrainingJobLink().get_link(operator_with(run_identity=who), ti_key=None) == (
        "/dags/retrain/runs/manual__1/tasks/train/plugin/training-job"
    )
    assert TrainingJobLink().get_link(operator_with(), ti_key=None) == ""  # no try: no link


@pytest.mark.parametrize("where", ["connection", "config"])
def test_a_dashboard_template_wins(monkeypatch, where):
    template = "https://kubeflow.example.com/#/{kind}/{namespace}/{plural}/{name}"
    extras = {"job_url_template": template} if where == "connection" else {}
    if where == "config":
        monkeypatch.setenv("AIRFLOW__TRAINJOB__JOB_URL_TEMPLATE", template)
    assert TrainingJobLink().get_link(operator_with(extras=extras), ti_key=ti_key()) == (
        "https://kubeflow.example.com/#/TFJob/ml/tfjobs/train-job"
    )


def test_no_manifest_no_link():
    assert TrainingJobLink().get_link(operator_with(manifest=None), ti_key=ti_key()) == ""


def test_the_rendered_manifest_text_is_read_when_the_dict_is_not_there(monkeypatch):
    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    op = operator_with(manifest=None)
    op.manifest = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: train-job\n  namespace: ml\n"
    op.hook.conn_extras = {"job_url_template": "https://kf.example.com/{namespace}/{name}"}
    assert TrainingJobLink().get_link(op, ti_key=ti_key()) == "https://kf.example.com/ml/train-job"


def test_the_api_server_reads_the_link_from_the_xcom_the_operator_pushes():
    """The api-server never runs this class: it deserializes the operator's links as ``XComOperatorLink`` and reads
    the XCom of that link's key, the key the operator pushes the URL under when it creates the job."""
    from airflow.sdk import DAG
    from airflow.serialization.definitions.operatorlink import XComOperatorLink
    from airflow.serialization.serialized_objects import DagSerialization

    from airflow_trainjob.operators.training_job import TrainingJobOperator

    with DAG("links", schedule=None, start_date=datetime.datetime(2026, 1, 1)) as dag:
        TrainingJobOperator(task_id="train", kind="PyTorchJob", replica_specs={"Master": {}})
    served = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag)).get_task("train")
    link = served.operator_extra_link_dict[TrainingJobLink.name]
    assert isinstance(link, XComOperatorLink) and link.xcom_key == TrainingJobLink().xcom_key == "_link_TrainingJobLink"
