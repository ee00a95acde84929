"""TrainJobOperator's input built into one try's request (operators/trainjob_request.py): the TrainJob manifest, its
identity labels and annotations, the pod token, the provider's runtime patch, the queue label, the notes, the name,
and templating. No cluster: the request is built before any API call (the hook only answers for the connection)."""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import pytest
import yaml
from kubeflow_trainer_api.models import TrainerV1alpha1Trainer, TrainerV1alpha1TrainJob  # type: ignore[import-untyped]

from airflow_trainjob.constants import LABEL_KUEUE_QUEUE_NAME, LABEL_POD_TOKEN, LABEL_TRY_NUMBER, RUNTIME_PATCH_MANAGER
from airflow_trainjob.domain.ownership import RESERVED_ANNOTATIONS, RESERVED_LABELS
from airflow_trainjob.domain.params import TRAINJOB, read_by
from airflow_trainjob.domain.records import spec_digest
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.operators.request import TrainingJobRequest
from airflow_trainjob.operators.trainjob import TrainJobOperator
from tests.support.jobs import TaskInstanceStandIn

TRAINER = {"numNodes": 2, "command": ["python", "-c", "print('trained')"]}
WHOLE = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "digits", "namespace": "vision", "uid": "u-1", "labels": {"team": "a"}},
    "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": TRAINER},
    "status": {"conditions": []},
}
REF = {"name": "torch-distributed", "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org"}


class ConnectionHook:
    """The hook's calls while a request is built: the connection exists, its namespace is ``from-connection``."""

    def require_connection(self) -> None:
        pass

    def resolve_namespace(self, namespace: str | None = None) -> str:
        return namespace or "from-connection"


def operator(**arguments: Any) -> TrainJobOperator:
    op = TrainJobOperator(task_id="train", **arguments)
    op.__dict__["hook"] = ConnectionHook()
    return op


def request_of(ti: TaskInstanceStandIn | None = None, context: dict[str, Any] | None = None, **arguments: Any):
    """The request rendering builds for one try (its manifest is what ``execute`` sends)."""
    op = operator(**arguments)
    op.render_template_fields({"ti": ti or TaskInstanceStandIn(), **(context or {})})
    assert op._request is not None
    return op._request


def refused(**arguments: Any) -> list[str]:
    with pytest.raises(InvalidJobSpecError) as raised:
        operator(**arguments)._build_request({"ti": TaskInstanceStandIn()})
    return raised.value.problems


# ---- the manifest ---------------------------------------------------------------------------------------------------


def test_a_minimal_trainjob_and_everything_the_provider_adds():
    ti = TaskInstanceStandIn()
    request = request_of(ti, runtime="torch-distributed", trainer=TRAINER)
    assert isinstance(request, TrainingJobRequest) and request.kind == "TrainJob"
    manifest = request.manifest
    assert (manifest["apiVersion"], manifest["kind"]) == ("trainer.kubeflow.org/v1alpha1", "TrainJob")
    metadata = manifest["metadata"]
    assert metadata["namespace"] == "from-connection" == request.namespace
    assert re.fullmatch(r"retrain-train-[0-9a-f]{8}", metadata["name"]) and request.name == metadata["name"]
    identity = request.identity.labels()
    assert metadata["labels"] == identity and set(identity) == set(RESERVED_LABELS)
    token = metadata["annotations"][LABEL_POD_TOKEN]
    assert re.fullmatch(r"[0-9a-f]{12}", token)
    assert metadata["annotations"] == {**request.identity.annotations(), LABEL_POD_TOKEN: token}
    assert set(metadata["annotations"]) == {*RESERVED_ANNOTATIONS, LABEL_POD_TOKEN}
    assert manifest["spec"] == {
        "runtimeRef": REF,
        "trainer": TRAINER,
        "runtimePatches": [provider_patch(identity, token)],
    }


def provider_patch(labels: dict[str, str], token: str) -> dict[str, Any]:
    """The provider's patch as upstream's RuntimePatch shape holds pod labels, written out by hand."""
    pod_labels = {**labels, LABEL_POD_TOKEN: token}
    node = {"name": "node", "template": {"spec": {"template": {"metadata": {"labels": pod_labels}}}}}
    return {"manager": RUNTIME_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [node]}}}}


def test_every_part_maps_to_its_spec_field_and_the_users_patches_come_first():
    patch = {"manager": "example.com/ml-team"}
    request = request_of(
        runtime={"name": "mine", "kind": "TrainingRuntime"},
        trainer=TrainerV1alpha1Trainer.from_dict(TRAINER),
        initializer={"model": {"storageUri": "hf://org/model"}},
        runtime_patches=[patch],
        suspend=True,
        managed_by="kueue.x-k8s.io/multikueue",
        active_deadline_seconds=600,
        namespace="ml",
        labels={"team": "vision"},
        annotations={"note": "kept"},
    )
    spec, metadata = request.manifest["spec"], request.manifest["metadata"]
    assert spec["runtimeRef"] == {**REF, "name": "mine", "kind": "TrainingRuntime"}
    assert spec["trainer"] == TRAINER and spec["initializer"] == {"model": {"storageUri": "hf://org/model"}}
    assert [p["manager"] for p in spec["runtimePatches"]] == ["example.com/ml-team", RUNTIME_PATCH_MANAGER]
    assert (spec["suspend"], spec["managedBy"], spec["activeDeadlineSeconds"]) == (
        True,
        "kueue.x-k8s.io/multikueue",
        600,
    )
    assert metadata["namespace"] == "ml" and metadata["labels"]["team"] == "vision"
    assert metadata["annotations"]["note"] == "kept"


def test_each_build_has_its_own_pod_token_and_a_new_try_its_own_labels():
    op = operator(runtime="torch-distributed")
    ti = TaskInstanceStandIn()
    first, again = op._build_request({"ti": ti}), op._build_request({"ti": ti})
    tokens = {r.manifest["metadata"]["annotations"][LABEL_POD_TOKEN] for r in (first, again)}
    assert len(tokens) == 2
    second_try = op._build_request({"ti": TaskInstanceStandIn(run_id=ti.run_id, try_number=2)})
    patch = second_try.manifest["spec"]["runtimePatches"][-1]
    pod_labels = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod_labels["metadata"]["labels"][LABEL_TRY_NUMBER] == "2"
    assert second_try.name == first.name  # the same task instance: the same name on every try


def test_two_tries_of_the_same_trainjob_have_the_same_spec_digest():
    """The provider's runtime patch differs per try (labels, pod token): it is not what the job trains, so a retry that
    returns an earlier try's success does not warn that the job changed; a user's own runtime patch still counts."""
    op = operator(runtime="torch-distributed", trainer=TRAINER)
    ti = TaskInstanceStandIn()
    first = op._build_request({"ti": ti})
    second = op._build_request({"ti": TaskInstanceStandIn(run_id=ti.run_id, try_number=2)})
    assert first.manifest["spec"]["runtimePatches"] != second.manifest["spec"]["runtimePatches"]
    assert spec_digest(first.manifest) == spec_digest(second.manifest)
    user_patch = {"manager": "team-a/tuning", "trainingRuntimeSpec": {"template": {"spec": {}}}}
    patched = operator(runtime="torch-distributed", trainer=TRAINER, runtime_patches=[user_patch])
    assert spec_digest(patched._build_request({"ti": ti}).manifest) != spec_digest(first.manifest)


def test_the_queue_label_and_the_notes():
    request = request_of(runtime="torch-distributed", queue_name="team-a")
    assert request.manifest["metadata"]["labels"][LABEL_KUEUE_QUEUE_NAME] == "team-a"
    assert request.notes == (
        f"metadata.labels: {LABEL_KUEUE_QUEUE_NAME}=team-a (queue_name)",
        f"spec.runtimePatches: {RUNTIME_PATCH_MANAGER} appended: the task instance's labels and {LABEL_POD_TOKEN} on "
        "the pods of the replicated job node",
    )


# ---- a whole TrainJob -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "job",
    [WHOLE, yaml.safe_dump(WHOLE), json.dumps(WHOLE), TrainerV1alpha1TrainJob.from_dict(WHOLE)],
    ids=["mapping", "yaml", "json", "model"],
)
def test_a_whole_trainjob_is_named_placed_labelled_and_its_changes_noted(job):
    request = request_of(job=job)
    metadata, spec = request.manifest["metadata"], request.manifest["spec"]
    assert metadata["name"] != "digits" and metadata["namespace"] == "vision"
    assert metadata["labels"] == {"team": "a", **request.identity.labels()}
    assert spec["runtimeRef"] == REF and spec["trainer"] == TRAINER
    assert [p["manager"] for p in spec["runtimePatches"]] == [RUNTIME_PATCH_MANAGER]
    notes = request.notes
    assert notes[0].startswith(f"job: metadata.name: {metadata['name']!r} from the generated name")
    assert notes[0].endswith(", not 'digits'")
    assert "job: metadata.namespace: 'vision' from the job (the namespace parameter overrides it)" in notes
    assert "job: dropped: status, metadata.uid (written by the server, kubectl or this provider)" in notes


def test_a_job_template_file_is_rendered_and_its_notes_name_it(tmp_path):
    job = yaml.safe_load(yaml.safe_dump(WHOLE))
    job["spec"]["trainer"]["env"] = [{"name": "DAY", "value": "{{ ds }}"}]
    path = tmp_path / "trainjob.yaml"
    path.write_text(yaml.safe_dump(job))
    request = request_of(context={"ds": "2026-12-07"}, job_template_file=str(path), job_name="digits-1")
    assert request.manifest["spec"]["trainer"]["env"] == [{"name": "DAY", "value": "2026-12-07"}]
    assert request.name == "digits-1"
    assert request.notes[0] == "job_template_file: metadata.name: 'digits-1' from job_name, not 'digits'"


# ---- the checks -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, expected",
    [
        (
            {},
            "runtime: required: the name of the ClusterTrainingRuntime to run on, or a runtimeRef (or a whole TrainJob "
            "in job or job_template_file)",
        ),
        (
            {"job": WHOLE, "trainer": TRAINER, "suspend": True},
            "trainer, suspend: not allowed with job, which holds the whole TrainJob",
        ),
        ({"job": WHOLE, "job_template_file": "/x.yaml"}, "job, job_template_file: give one whole TrainJob, not both"),
        ({"runtime": "torch-distributed", "on_finish": "keep"}, "on_finish: 'keep' is not one of keep_job"),
        (
            {"runtime": "torch-distributed", "labels": {"airflow-trainjob/dag-id": "x"}},
            "labels: airflow-trainjob/dag-id are set by this provider",
        ),
        (
            {"runtime": "torch-distributed", "labels": {LABEL_KUEUE_QUEUE_NAME: "a"}, "queue_name": "b"},
            f"labels: {LABEL_KUEUE_QUEUE_NAME}='a' conflicts with queue_name='b'",
        ),
        ({"runtime": "torch-distributed", "trainer": {"numNode": 2}}, "trainer.numNode: unknown field"),
        ({"job": {**WHOLE, "kind": "PyTorchJob"}}, "job.kind: must be 'TrainJob'"),
        ({"runtime": "torch-distributed", "labels": {"team": "a b"}}, "metadata.labels['team']: value 'a b'"),
        ({"runtime": "torch-distributed", "annotations": {"note": 1}}, "metadata.annotations['note']: value must be"),
        ({"runtime": "torch-distributed", "namespace": "ML"}, "metadata.namespace: 'ML' is not a DNS-1123 label"),
    ],
)
def test_each_refusal_names_its_parameter(arguments, expected):
    found = refused(**arguments)
    assert any(p.startswith(expected) for p in found), found


def test_the_face_reads_the_trainjobs_parameters_and_the_run_settings():
    read = set(read_by(TRAINJOB))
    assert {"runtime", "trainer", "initializer", "runtime_patches", "suspend", "managed_by"} <= read
    assert {"active_deadline_seconds", "job", "job_template_file", "queue_name", "on_finish", "durable"} <= read
    assert {"kind", "replica_specs", "run_policy", "kind_fields", "poke_interval"}.isdisjoint(read)
    # Every parameter the table reads is one the operator takes.
    assert read <= set(inspect.signature(TrainJobOperator.__init__).parameters) | {"durable"}


def test_the_v1_parts_are_no_parameters_of_a_trainjob():
    for v1_part in ("kind", "replica_specs", "run_policy", "kind_fields"):
        with pytest.raises(TypeError, match=f"{v1_part}: a TrainingJobOperator parameter"):
            TrainJobOperator(task_id="train", runtime="torch-distributed", **{v1_part: {}})


# ---- the name -------------------------------------------------------------------------------------------------------


def test_a_generated_name_fits_every_upstream_runtime():
    ti = TaskInstanceStandIn(dag_id="a-very-long-dag-id-for-the-vision-team", task_id="train-the-digits-classifier")
    name = request_of(ti, runtime="torch-distributed").name
    assert len(name) == 33 and re.fullmatch(r"a-very-long-dag-id-for-t-[0-9a-f]{8}", name)


def test_a_given_name_is_checked_against_the_trainjobs_own_steps_and_noted_when_long():
    at_most = "n" * 48  # <name>-node-0-0-abcde: 63
    request = request_of(runtime="torch-distributed", job_name=at_most)
    assert request.name == at_most
    assert request.notes[0] == (
        f"metadata.name: {at_most!r} is 48 characters: a runtime with a dataset-initializer step takes at most 33 "
        "(its pods' names would pass 63)"
    )
    assert refused(runtime="torch-distributed", job_name="n" * 49)[0].startswith(
        f"metadata.name: {'n' * 49!r} is 49 characters; at most 48 are allowed"
    )
    with_dataset = {"runtime": "torch-distributed", "initializer": {"dataset": {"storageUri": "hf://a/b"}}}
    assert refused(**with_dataset, job_name="n" * 34)[0].startswith("metadata.name: 'nnnn")
    assert refused(runtime="torch-distributed", job_name="Digits")[0].startswith(
        "metadata.name: 'Digits' is not a DNS-1035 label"
    )


# ---- templating ----------------------------------------------------------------------------------------------------


def test_jinja_renders_inside_the_parts_and_the_manifest_shows_it():
    op = operator(
        runtime="{{ params.runtime }}",
        trainer={
            "numNodes": "{{ params.nodes }}",
            "command": ["python", "train.py", "--day", "{{ ds }}"],
            "env": [{"name": "DAY", "value": "{{ ds }}"}, {"name": "TOKEN", "value": "s3cr3t"}],
        },
        active_deadline_seconds="{{ params.deadline }}",
        labels={"day": "{{ ds }}"},
    )
    context = {
        "ti": TaskInstanceStandIn(),
        "ds": "2026-12-07",
        "params": {"runtime": "plainml", "nodes": 3, "deadline": 90},
    }
    op.render_template_fields(context)
    manifest = yaml.safe_load(op.manifest)
    assert manifest["spec"]["runtimeRef"]["name"] == "plainml"
    assert manifest["spec"]["trainer"] == {
        "numNodes": 3,
        "command": ["python", "train.py", "--day", "2026-12-07"],
        "env": [{"name": "DAY", "value": "2026-12-07"}, {"name": "TOKEN", "value": "s3cr3t"}],
    }
    assert manifest["spec"]["activeDeadlineSeconds"] == 90
    assert manifest["metadata"]["labels"]["day"] == "2026-12-07"
    # Rendered parts are kept as YAML text: Airflow's secret masker reaches into text, not deep into a dict.
    assert isinstance(op.trainer, str) and yaml.safe_load(op.trainer)["env"][0] == {
        "name": "DAY",
        "value": "2026-12-07",
    }
    assert op._prepare({"ti": context["ti"]}) is op._manifest  # the try sends what its render built


def test_invalid_input_renders_no_manifest_and_the_try_raises_its_error():
    op = operator(runtime="torch-distributed", trainer={"numNodes": 0})
    ti = TaskInstanceStandIn()
    op.render_template_fields({"ti": ti})
    assert op.manifest is None and op._request is None
    with pytest.raises(InvalidJobSpecError, match=r"trainer\.numNodes: must be 1 or more"):
        op._prepare({"ti": ti})
