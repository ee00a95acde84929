"""OpenLineage events of real runs: ``airflow dags test`` of :mod:`tests.integration.lineage_dag` on the local cluster,
with the openlineage provider's file transport; the START and COMPLETE/FAIL events of a succeeded and a failed
PyTorchJob and TrainJob, field by field, both modes; and without the openlineage provider, nothing emitted and the
same DAG run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from airflow_trainjob.constants import TRAINER_GROUP, TRAINER_VERSION
from tests.support.examples import airflow_command, migrated_database
from tests.support.lineage_events import (
    DAG_FILE,
    DAG_ID,
    SECRET,
    TASKS,
    all_task_events,
    check_pytorch_fails,
    check_pytorch_ok,
    check_trainjob_fails,
    check_trainjob_ok,
    initializer_runtime_body,
    print_trimmed,
    task_events,
)

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")


@pytest.fixture(scope="module")
def airflow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return migrated_database(tmp_path_factory.mktemp("lineage-airflow-home"))


@pytest.fixture
def initializer_runtime(custom_objects, namespace):
    """A ClusterTrainingRuntime with initializer steps (:func:`initializer_runtime_body`); deleted afterwards."""
    body = initializer_runtime_body(f"lineage-{namespace}"[:63])
    custom_objects.create_cluster_custom_object(TRAINER_GROUP, TRAINER_VERSION, "clustertrainingruntimes", body)
    yield body["metadata"]["name"]
    custom_objects.delete_cluster_custom_object(
        TRAINER_GROUP, TRAINER_VERSION, "clustertrainingruntimes", body["metadata"]["name"]
    )


def dags_test(tmp_path: Path, airflow_db: Path, runtime: str, *, deferrable: bool, env: dict | None = None):
    """``airflow dags test lineage_events`` in an Airflow home of its own, events to ``tmp_path/events.jsonl``.

    :returns: the completed process and the events file."""
    home, dags, events = tmp_path / "airflow", tmp_path / "dags", tmp_path / "events.jsonl"
    home.mkdir()
    dags.mkdir()
    (home / "airflow.db").write_bytes(airflow_db.read_bytes())
    (dags / DAG_FILE.name).write_text(DAG_FILE.read_text())
    run_env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(events), "append": True}),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "lineage-tests",
        "LINEAGE_DEFERRABLE": "1" if deferrable else "0",
        "LINEAGE_RUNTIME": runtime,
        "LINEAGE_PYTHON": sys.executable,
        **(env or {}),
    }
    ran = subprocess.run(
        [airflow_command(), "dags", "test", DAG_ID, "2026-12-01"],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return ran, events


@pytest.mark.parametrize("deferrable", [False, True], ids=["sync", "deferred"])
def test_the_events_of_a_succeeded_and_a_failed_job_of_each_family(
    tmp_path, airflow_db, namespace, initializer_runtime, deferrable
):
    ran, events_file = dags_test(tmp_path, airflow_db, initializer_runtime, deferrable=deferrable)
    output = ran.stdout + ran.stderr
    assert events_file.exists(), output[-5000:]
    assert SECRET not in events_file.read_text()
    by_task = {t: task_events(events_file, t) for t in TASKS}
    for task in by_task:
        # A deferred task's first process and the one that resumes it each send a START (the provider's way).
        types = [e["eventType"] for e in all_task_events(events_file, task)]
        assert types[:-1] == ["START"] * (2 if deferrable else 1), f"{task}: {types}\n{output[-5000:]}"
    check_pytorch_ok(by_task["pytorch_ok"], namespace)
    check_pytorch_fails(by_task["pytorch_fails"], namespace)
    check_trainjob_ok(by_task["trainjob_ok"], namespace, initializer_runtime)
    check_trainjob_fails(by_task["trainjob_fails"], namespace)
    if not deferrable:
        print_trimmed(by_task["pytorch_ok"])
        print_trimmed(by_task["pytorch_fails"])


#: A ``sitecustomize`` put first on the path of a process: there the openlineage provider and the OpenLineage client
#: are as if not installed -- importing them fails, and their distributions are not listed (Airflow discovers
#: providers by their distributions' entry points).
BLOCKER = textwrap.dedent(
    """
    import importlib.metadata
    import sys

    import importlib_metadata

    HIDDEN = ("openlineage", "airflow.providers.openlineage")

    class NoOpenLineage:
        def find_spec(self, name, path=None, target=None):
            if any(name == h or name.startswith(h + ".") for h in HIDDEN):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None

    def hidden(dist):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        return name == "apache-airflow-providers-openlineage" or name.startswith("openlineage-")

    def without_openlineage(module):
        listed = module.distributions
        module.distributions = lambda **kw: (d for d in listed(**kw) if not hidden(d))

    sys.meta_path.insert(0, NoOpenLineage())
    without_openlineage(importlib.metadata)
    without_openlineage(importlib_metadata)
    """
)


def test_without_the_openlineage_provider_nothing_is_emitted_and_the_dag_runs(
    tmp_path, airflow_db, namespace, initializer_runtime
):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "sitecustomize.py").write_text(BLOCKER)
    path = os.pathsep.join([str(blocked), os.environ.get("PYTHONPATH", "")])
    check = subprocess.run(
        [sys.executable, "-c", METHODS_WITHOUT_OPENLINEAGE],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0 and "lineage: None None None" in check.stdout, check.stdout + check.stderr
    ran, events_file = dags_test(tmp_path, airflow_db, initializer_runtime, deferrable=False, env={"PYTHONPATH": path})
    output = ran.stdout + ran.stderr
    assert not events_file.exists()
    for task in ("pytorch_ok", "pytorch_fails", "trainjob_ok", "trainjob_fails"):
        assert f"[DAG TEST] end task task_id={task} " in output, output[-5000:]
    # The two that succeed did (their jobs too); the two that fail failed as usual.
    assert output.count("new_state=success") == 2, output[-5000:]
    assert re.search(r"PyTorchJob \S+/lineage-events-pytorch-ok-\w+ succeeded", output), output[-5000:]
    assert re.search(r"TrainJob \S+/lineage-events-trainjob-\w+ succeeded", output), output[-5000:]
    assert (
        "First failure (permanent: not retried): Master-0" in output
        and "First failure (permanent: not retried): node-0" in output
    )


METHODS_WITHOUT_OPENLINEAGE = textwrap.dedent(
    """
    import importlib.util
    try:
        import airflow.providers.openlineage
    except ImportError:
        pass
    else:
        raise SystemExit("the openlineage provider was importable")
    from airflow_trainjob.operators.training_job import TrainingJobOperator
    from airflow_trainjob.operators.trainjob import TrainJobOperator
    op = TrainJobOperator(task_id="t", runtime="torch-distributed", trainer={"numNodes": 1})
    v1 = TrainingJobOperator(task_id="v", kind="PyTorchJob", replica_specs={"Master": {"template": {"spec": {}}}})
    print("lineage:", op.get_openlineage_facets_on_start(), op.get_openlineage_facets_on_complete(None),
          v1.get_openlineage_facets_on_failure(None))
    """
)
