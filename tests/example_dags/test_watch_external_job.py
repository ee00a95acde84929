"""The sensor example, run end to end on the local cluster in a run without a logical date (as the REST API makes one:
nothing in this DAG reads the date, so the run with one, covered by retrain_digits and queued_training, adds nothing)."""

from __future__ import annotations

import hashlib
import re

from tests.support.examples import EXAMPLES, assert_logical_date, output_of


def test_watch_external_job_end_to_end(run_example, custom_objects, namespace):
    output = output_of(run_example("watch_external_job", None))
    assert_logical_date(output, "watch_external_job", None)
    run_id = re.search(r"DagRun Finished: dag_id=watch_external_job, logical_date=[^,]*, run_id=([^,]+),", output)
    name = "external-" + hashlib.sha256(run_id.group(1).encode()).hexdigest()[:12]  # one job per run
    assert f"Returned value was: {name}" in output
    assert re.search(rf"XGBoostJob {namespace}/{name}: Succeeded", output)  # what the sensor saw
    job = custom_objects.get_namespaced_custom_object("kubeflow.org", "v1", namespace, "xgboostjobs", name)
    assert job["metadata"]["name"] == name  # the sensor leaves the job it watched


def test_submit_elsewhere_again_in_the_same_run_finds_its_job(kubernetes_default_conn, namespace, custom_objects):
    """A retry of ``submit_elsewhere``, or its run cleared, finds the job the run submitted (no 409 failure)."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(EXAMPLES / "watch_external_job.py"))
    submit = bag.dags["watch_external_job"].get_task("submit_elsewhere").python_callable
    first = submit(run_id="manual__2026-11-29T00:00:00+00:00")
    assert submit(run_id="manual__2026-11-29T00:00:00+00:00") == first
    second = submit(run_id="manual__2026-12-06T00:00:00+00:00")
    assert second != first  # another run, another job
    jobs = custom_objects.list_namespaced_custom_object("kubeflow.org", "v1", namespace, "xgboostjobs")["items"]
    assert sorted(j["metadata"]["name"] for j in jobs) == sorted([first, second])
