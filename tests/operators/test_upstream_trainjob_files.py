"""Files in the shapes of kubeflow/trainer v2.3.0's ``examples/yaml/`` (tests/data/upstream_trainjob), given to
TrainJobOperator as a DAG author would: as ``job`` text or as ``job_template_file``. The one-TrainJob files build
the TrainJob they hold (with the provider's runtime patch after the user's); a file that also holds the runtime is
refused, naming each document and what to do. No cluster (the cluster runs: tests/integration/
test_upstream_trainjob_examples.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubeflow_trainer_api.models import (  # type: ignore[import-untyped]
    TrainerV1alpha1ClusterTrainingRuntime,
    TrainerV1alpha1TrainingRuntime,
)

from airflow_trainjob.constants import LABEL_KUEUE_QUEUE_NAME, RUNTIME_PATCH_MANAGER
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.models.trainjob.strict import read_part
from tests.operators.test_trainjob_request import operator, request_of
from tests.support.jobs import TaskInstanceStandIn

DATA = Path(__file__).resolve().parents[1] / "data" / "upstream_trainjob"
FILES = sorted(DATA.glob("*.yaml"))
#: Each file and the upstream example whose shape it follows (its header says so).
SHAPES = {
    "multi-node.yaml": "01-multi-node.yaml",
    "runtime-patches.yaml": "02-runtime-patches.yaml",
    "kueue-queued.yaml": "03-kueue-integration.yaml",
    "volcano-runtime-and-job.yaml": "04-volcano-integration.yaml",
    "dataset-init-runtime-and-job.yaml": "05-multi-step.yaml",
}
RUNTIME_MODELS = {
    "ClusterTrainingRuntime": TrainerV1alpha1ClusterTrainingRuntime,
    "TrainingRuntime": TrainerV1alpha1TrainingRuntime,
}


def documents(name: str) -> list[dict]:
    """The file's documents as the operator reads them: rendered by Jinja first, which drops the text's one trailing
    newline (Airflow's default ``keep_trailing_newline=False``), and with it a last block scalar's final newline."""
    text = (DATA / name).read_text().removesuffix("\n")
    return [d for d in yaml.safe_load_all(text) if d is not None]


def refused_after_render(**arguments) -> list[str]:
    """What ``execute`` raises for these arguments (rendering keeps no request for bad input)."""
    op = operator(**arguments)
    op.render_template_fields({"ti": TaskInstanceStandIn()})
    with pytest.raises(InvalidJobSpecError) as raised:
        op._build_request({"ti": TaskInstanceStandIn()})
    return raised.value.problems


def test_every_file_says_which_upstream_example_it_follows():
    assert sorted(p.name for p in FILES) == sorted(SHAPES)
    for path in FILES:
        header = path.read_text().split("\n", 1)[0]
        assert header.startswith(f"# Shape of kubeflow/trainer v2.3.0 examples/yaml/{SHAPES[path.name]}:"), header


@pytest.mark.parametrize("name", ["volcano-runtime-and-job.yaml", "dataset-init-runtime-and-job.yaml"])
def test_each_runtime_document_is_a_runtime_the_trainer_api_models_read_whole(name):
    runtime = documents(name)[0]
    problems: list[str] = []
    assert read_part(RUNTIME_MODELS[runtime["kind"]], runtime, "runtime", problems) == runtime
    assert problems == []


@pytest.mark.parametrize("source", ["job", "job_template_file"])
@pytest.mark.parametrize("name", ["multi-node.yaml", "runtime-patches.yaml", "kueue-queued.yaml"])
def test_a_one_trainjob_file_builds_the_trainjob_it_holds(name, source):
    path = DATA / name
    (given,) = documents(name)
    argument = str(path) if source == "job_template_file" else path.read_text()
    manifest = request_of(**{source: argument}).manifest
    spec = {k: v for k, v in manifest["spec"].items() if k != "runtimePatches"}
    assert spec == {k: v for k, v in given["spec"].items() if k != "runtimePatches"}
    *users, provider = manifest["spec"]["runtimePatches"]
    assert users == given["spec"].get("runtimePatches", []) and provider["manager"] == RUNTIME_PATCH_MANAGER
    assert (given["metadata"].get("labels") or {}).items() <= manifest["metadata"]["labels"].items()


def test_the_kueue_shape_keeps_its_queue_label_and_stays_suspended():
    manifest = request_of(job=(DATA / "kueue-queued.yaml").read_text()).manifest
    assert manifest["metadata"]["labels"][LABEL_KUEUE_QUEUE_NAME] == "training-queue"
    assert manifest["spec"]["suspend"] is True


@pytest.mark.parametrize(
    ("name", "runtime", "trainjob"),
    [
        ("volcano-runtime-and-job.yaml", "ClusterTrainingRuntime torch-gang-volcano", "gang-of-four"),
        ("dataset-init-runtime-and-job.yaml", "TrainingRuntime torch-with-dataset", "fine-tune-on-dataset"),
    ],
)
@pytest.mark.parametrize("source", ["job", "job_template_file"])
def test_a_runtime_and_trainjob_file_is_refused_saying_to_create_the_runtime_beforehand(
    name, runtime, trainjob, source
):
    path = DATA / name
    argument = str(path) if source == "job_template_file" else path.read_text()
    assert refused_after_render(**{source: argument}) == [
        f"{source}: holds 2 documents ({runtime}, TrainJob {trainjob}): pass the TrainJob alone, and create the "
        "runtime beforehand (kubectl apply -f), as a cluster's runtimes are"
    ]


def test_the_trainjob_of_such_a_file_given_alone_builds():
    (runtime, trainjob) = documents("dataset-init-runtime-and-job.yaml")
    manifest = request_of(job=yaml.safe_dump(trainjob)).manifest
    assert manifest["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "TrainingRuntime",
        "name": runtime["metadata"]["name"],
    }
    assert manifest["spec"]["initializer"] == {"dataset": {"storageUri": "hf://stanfordnlp/imdb"}}
