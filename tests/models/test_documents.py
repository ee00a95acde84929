"""The one home of the "one document" rule (airflow_trainjob/models/documents.py): what a refusal names and advises,
for either API family's whole job and for a TrainJob's part. No cluster."""

from __future__ import annotations

import pytest
import yaml

from airflow_trainjob.models.documents import TRAINJOB_TEXT, V1_JOB_TEXT, one_document


def problem_of(text: str, wanted=TRAINJOB_TEXT, path: str = "job") -> str:
    problems: list[str] = []
    assert one_document(text, path, problems, wanted) is None
    (problem,) = problems
    return problem


def doc(kind: str | None, name: str | None = None) -> dict:
    return {**({"kind": kind} if kind else {}), **({"metadata": {"name": name}} if name else {})}


def test_one_document_and_empty_ones_around_it_is_that_document():
    problems: list[str] = []
    assert one_document("---\n# a comment\n---\nkind: TrainJob\n---\n", "job", problems, TRAINJOB_TEXT) == {
        "kind": "TrainJob"
    }
    assert problems == []


def test_two_runtimes_before_the_trainjob_are_counted_in_the_advice():
    text = yaml.safe_dump_all([doc("ClusterTrainingRuntime", "a"), doc("TrainingRuntime", "b"), doc("TrainJob", "j")])
    assert problem_of(text, path="job_template_file") == (
        "job_template_file: holds 3 documents (ClusterTrainingRuntime a, TrainingRuntime b, TrainJob j): pass the "
        "TrainJob alone, and create the runtimes beforehand (kubectl apply -f), as a cluster's runtimes are"
    )


def test_a_runtime_alone_with_another_kind_says_to_pass_a_trainjob():
    text = yaml.safe_dump_all([doc("TrainingRuntime", "r"), doc("LocalQueue", "q"), ["not", "a", "mapping"]])
    assert problem_of(text) == (
        "job: holds 3 documents (TrainingRuntime r, LocalQueue q, a list): pass one TrainJob, and create the "
        "runtime beforehand (kubectl apply -f), as a cluster's runtimes are; create the LocalQueue beforehand "
        "(kubectl apply -f)"
    )


def test_several_jobs_are_each_given_a_task_and_a_long_list_is_cut():
    text = yaml.safe_dump_all([doc("PyTorchJob", f"j{i}") for i in range(8)])
    assert problem_of(text, V1_JOB_TEXT) == (
        "job: holds 8 documents (PyTorchJob j0, PyTorchJob j1, PyTorchJob j2, PyTorchJob j3, PyTorchJob j4, "
        "PyTorchJob j5 and 2 more): give each job a task of its own"
    )


@pytest.mark.parametrize(
    ("document", "described"),
    [(doc("TrainJob"), "TrainJob (no name)"), (doc(None, "x"), "x (no kind)"), (doc(None), "a mapping without kind")],
)
def test_a_document_without_kind_or_name_is_described_by_what_it_has(document, described):
    text = yaml.safe_dump_all([document, doc("TrainJob", "j")])
    assert problem_of(text).startswith(f"job: holds 2 documents ({described}, TrainJob j): ")


def test_a_part_is_counted_not_described():
    assert problem_of("numNodes: 1\n---\nnumNodes: 2\n", None, "trainer") == (
        "trainer: holds 2 YAML/JSON documents: pass one"
    )
    assert problem_of("", None, "trainer") == "trainer: holds no YAML/JSON document: pass one"


def test_text_that_is_not_yaml():
    assert problem_of("a: [1\n").startswith("job: not valid YAML/JSON: ")
