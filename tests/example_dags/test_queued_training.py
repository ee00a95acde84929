"""The Kueue example: a whole job from a YAML file beside the DAG, labelled for its queue, run end to end."""

from __future__ import annotations

import re

from tests.support.examples import BOTH_WAYS, assert_logical_date, output_of


@BOTH_WAYS
def test_queued_training_end_to_end(run_example, logical_date, custom_objects, namespace):
    output = output_of(run_example("queued_training", logical_date))
    assert_logical_date(output, "queued_training", logical_date)
    assert "Input: job_template_file: metadata.labels: " in output
    name = re.search(rf"Created PyTorchJob {namespace}/(\S+)", output).group(1)
    job = custom_objects.get_namespaced_custom_object("kubeflow.org", "v1", namespace, "pytorchjobs", name)
    labels = job["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "team-a" and labels["team"] == "vision"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", labels["run-after"])  # rendered from the run's context
    assert [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"][-1] == "Succeeded"
    assert re.search(r"\[Master-0\] rank 0 of 2 master \S+", output)
