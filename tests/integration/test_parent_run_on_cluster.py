"""The OpenLineage parent run in the training containers, end to end: ``airflow dags test`` runs a PyTorchJob and a
TrainJob on the local cluster with ``openlineage_inject_parent_job_info=True``; each lead container prints its
``OPENLINEAGE_*`` environment and the parent run facet the OpenLineage client builds from it, and both equal what the
openlineage provider's macros give for that task instance (rendered into the job's annotations by the same task)."""

from __future__ import annotations

import json
import re
import textwrap
from importlib.util import find_spec
from pathlib import Path

from tests.support.examples import LOGICAL_DATE, ExampleRunner, output_of

DAG_ID = "lineage_parent"
OL_NAMESPACE = "s28d-lineage"

#: What each lead container runs: its OpenLineage environment, then the parent facet the client's own env reading
#: (openlineage-integration-common) builds, one ``lineage-*`` line each, tagged with the job's family.
CONTAINER_CODE = textwrap.dedent(
    """
    import json, os, sys
    tag = sys.argv[1]
    for name in ("OPENLINEAGE_PARENT_ID", "OPENLINEAGE_ROOT_PARENT_ID", "OPENLINEAGE_CONTEXT"):
        print(f"lineage-env {tag} {name}={os.environ.get(name)}", flush=True)
    try:
        from openlineage.common.provider.dbt.utils import get_parent_run_metadata
    except ImportError:
        print(f"lineage-facet {tag} unavailable", flush=True)
    else:
        f = get_parent_run_metadata().to_openlineage()
        ids = [f.job.namespace, f.job.name, f.run.runId, f.root.job.namespace, f.root.job.name, f.root.run.runId]
        print(f"lineage-facet {tag} " + json.dumps(ids, separators=(",", ":")), flush=True)
    """
)

DAG_FILE = """
import sys
from datetime import datetime

from airflow.providers.openlineage.plugins import macros
from airflow.sdk import DAG

from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.operators.trainjob import TrainJobOperator

CODE = {code!r}
EXPECT = {{
    "lineage-test/parent": "{{{{ lineage_parent_id(task_instance) }}}}",
    "lineage-test/root": "{{{{ lineage_root_parent_id(task_instance) }}}}",
}}


def container(tag):
    return {{"name": "pytorch", "image": "python:3.11-slim", "command": [sys.executable, "-c", CODE, tag]}}


# The macros the openlineage plugin adds (macros.OpenLineagePlugin.*), given to the DAG directly: the task runner of
# `airflow dags test` loads no plugin macros.
PROVIDER_MACROS = {{
    "lineage_parent_id": macros.lineage_parent_id,
    "lineage_root_parent_id": macros.lineage_root_parent_id,
}}

with DAG(
    "{dag_id}",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    user_defined_macros=PROVIDER_MACROS,
):
    TrainingJobOperator(
        task_id="v1",
        kind="PyTorchJob",
        replica_specs={{
            "Master": {{"template": {{"spec": {{"containers": [container("v1")]}}}}}},
            "Worker": {{"replicas": 1, "template": {{"spec": {{"containers": [container("v1-worker")]}}}}}},
        }},
        annotations=EXPECT,
        on_finish="keep_job",
        openlineage_inject_parent_job_info=True,
    ) >> TrainJobOperator(
        task_id="v2",
        runtime="torch-distributed",
        trainer={{"command": [sys.executable, "-c", CODE, "v2"], "env": [{{"name": "EPOCHS", "value": "1"}}]}},
        annotations=EXPECT,
        on_finish="keep_job",
        openlineage_inject_parent_job_info=True,
    )
"""


def _printed(output: str, kind: str, tag: str) -> list[str]:
    return re.findall(rf"lineage-{kind} {tag} (\S+)", output)  # the task log's line, the value has no spaces


def _emitted_runs(output: str) -> dict[str, str]:
    """The runs the openlineage provider's listener emitted events of (its console transport), the tasks' and the DAG
    run's: ``namespace/job name`` -> run id (one per job: its START and COMPLETE name the same)."""
    events = re.findall(r"\] (\{.*\}) \[openlineage\.client\.transport\.console\]", output)
    runs: dict[str, set[str]] = {}
    for event in map(json.loads, events):
        runs.setdefault(f"{event['job']['namespace']}/{event['job']['name']}", set()).add(event["run"]["runId"])
    assert all(len(ids) == 1 for ids in runs.values()), runs
    return {job: ids.pop() for job, ids in runs.items()}


def _env(output: str, tag: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in _printed(output, "env", tag))


def _job(custom_objects, namespace: str, group: str, version: str, plural: str, task_id: str) -> dict:
    jobs = custom_objects.list_namespaced_custom_object(group, version, namespace, plural)["items"]
    (job,) = [j for j in jobs if j["metadata"]["annotations"].get("airflow-trainjob/task-id") == task_id]
    return job


def _env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env") or [] if e["name"].startswith("OPENLINEAGE_")}


def test_the_training_containers_get_the_tasks_run_as_their_parent(
    kubernetes_default_conn, namespace, custom_objects, tmp_path: Path
):
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "lineage_parent.py").write_text(DAG_FILE.format(code=CONTAINER_CODE, dag_id=DAG_ID))
    runner = ExampleRunner(tmp_path)
    runner.env.update(
        {
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__OPENLINEAGE__TRANSPORT": '{"type": "console"}',
            "AIRFLOW__OPENLINEAGE__NAMESPACE": OL_NAMESPACE,
        }
    )
    run = runner(DAG_ID, LOGICAL_DATE)
    output = output_of(run)

    v1 = _job(custom_objects, namespace, "kubeflow.org", "v1", "pytorchjobs", "v1")
    v2 = _job(custom_objects, namespace, "trainer.kubeflow.org", "v1alpha1", "trainjobs", "v2")
    client_reads_env = find_spec("openlineage.common") is not None  # the process kubelet runs this interpreter
    emitted = _emitted_runs(output)
    run_ids = set()
    for tag, job in (("v1", v1), ("v2", v2)):
        annotations = job["metadata"]["annotations"]
        parent, root = annotations["lineage-test/parent"], annotations["lineage-test/root"]  # the provider's macros
        assert parent.startswith(f"{OL_NAMESPACE}/{DAG_ID}.{tag}/") and root.startswith(f"{OL_NAMESPACE}/{DAG_ID}/")
        env = _env(output, tag)
        assert env["OPENLINEAGE_PARENT_ID"] == parent and env["OPENLINEAGE_ROOT_PARENT_ID"] == root, output[-3000:]
        context = json.loads(env["OPENLINEAGE_CONTEXT"])["parent"]
        assert [context["job"]["namespace"], context["job"]["name"], context["run"]["runId"]] == parent.split("/")
        root_ids = [
            context["root"]["job"]["namespace"],
            context["root"]["job"]["name"],
            context["root"]["run"]["runId"],
        ]
        assert root_ids == root.split("/")
        if client_reads_env:
            (facet,) = _printed(output, "facet", tag)
            assert json.loads(facet) == [*parent.split("/"), *root.split("/")]
        run_ids.add(parent.split("/")[2])
        assert emitted[f"{OL_NAMESPACE}/{DAG_ID}.{tag}"] == parent.split("/")[2]  # the run the listener reported
        assert emitted[f"{OL_NAMESPACE}/{DAG_ID}"] == root.split("/")[2]  # and the DAG run's, the root
    assert len(run_ids) == 2  # each task its own run, under the one DAG run
    assert v1["metadata"]["annotations"]["lineage-test/root"] == v2["metadata"]["annotations"]["lineage-test/root"]

    # What was sent: every v1 container (the Worker's too), the TrainJob's trainer.env after the DAG's own.
    for replica in v1["spec"]["pytorchReplicaSpecs"].values():
        for container in replica["template"]["spec"]["containers"]:
            assert _env_of(container)["OPENLINEAGE_PARENT_ID"] == v1["metadata"]["annotations"]["lineage-test/parent"]
    trainer_env = v2["spec"]["trainer"]["env"]
    assert trainer_env[0] == {"name": "EPOCHS", "value": "1"}
    assert (
        _env_of(v2["spec"]["trainer"])["OPENLINEAGE_PARENT_ID"] == v2["metadata"]["annotations"]["lineage-test/parent"]
    )
