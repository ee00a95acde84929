"""Jobs written as upstream writes them (tests/data/upstream) parse, rebuild and keep their meaning.

Each file holds whole job documents in the shapes of the training operator's ``examples/``, its SDK
and ``kubectl get``. Every ``kubeflow.org/v1`` job in them is read with :func:`parse_whole_job` and
rebuilt with :func:`build_manifest`; the rebuilt spec must equal the input after the documented
normalisations, which :func:`normalised` applies independently of the code under test.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_trainjob.constants import JOB_KINDS
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.models import parse_whole_job
from airflow_trainjob.models.manifest import build_manifest

UPSTREAM = Path(__file__).parent.parent / "data" / "upstream"
FILES = sorted(UPSTREAM.glob("*.yaml"))

# Server- and kubectl-written metadata dropped by parse_whole_job.
SERVER_METADATA = {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def jobs_in(path: Path) -> list[dict[str, Any]]:
    """The kubeflow.org/v1 jobs of a file, as ``kubectl apply -f`` would pick them."""
    return [
        d
        for d in yaml.safe_load_all(path.read_text())
        if isinstance(d, dict) and d.get("apiVersion") == "kubeflow.org/v1" and d.get("kind") in JOB_KINDS
    ]


DOCUMENTS = [(f"{p.name}#{i}", job) for p in FILES for i, job in enumerate(jobs_in(p))]


def normalised(job: dict[str, Any]) -> dict[str, Any]:
    """The spec the provider must send for ``job``: the input with the documented normalisations."""
    kind = JOB_KINDS[job["kind"]]
    spec = copy.deepcopy(job["spec"])
    run_policy = spec.pop("runPolicy", None) or {}
    if kind.kind == "MPIJob" and "cleanPodPolicy" in spec:
        # Deprecated field: moved to runPolicy, whose own value wins when both are set.
        deprecated = spec.pop("cleanPodPolicy")
        run_policy.setdefault("cleanPodPolicy", deprecated)
    run_policy.setdefault("cleanPodPolicy", "Running")  # the provider's written default
    replica_specs = {}
    for key, replica in spec.pop(kind.replica_specs_key).items():
        canonical = next(t for t in kind.replica_types if t.lower() == key.lower())  # matched regardless of case
        replica = copy.deepcopy(replica)
        replica["template"] = {k: v for k, v in replica["template"].items() if k not in ("apiVersion", "kind")}
        replica.setdefault("replicas", 1)
        replica.setdefault("restartPolicy", "Never")
        replica_specs[canonical] = replica
    if isinstance(spec.get("nprocPerNode"), int):
        spec["nprocPerNode"] = str(spec["nprocPerNode"])  # the API types it as a string
    return {"runPolicy": run_policy, kind.replica_specs_key: replica_specs, **spec}


def differences(expected: Any, actual: Any, path: str = "spec") -> list[str]:
    """Every path at which ``actual`` differs from ``expected``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in expected.keys() | actual.keys():
            if key not in actual:
                found.append(f"{path}.{key}: missing")
            elif key not in expected:
                found.append(f"{path}.{key}: added ({actual[key]!r})")
            else:
                found += differences(expected[key], actual[key], f"{path}.{key}")
        return found
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [
            d for i, (e, a) in enumerate(zip(expected, actual, strict=False)) for d in differences(e, a, f"{path}[{i}]")
        ]
    return [] if expected == actual and type(expected) is type(actual) else [f"{path}: {expected!r} != {actual!r}"]


def rebuild(job: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    whole = parse_whole_job(copy.deepcopy(job))
    manifest = build_manifest(
        spec=whole.spec,
        name=whole.name,
        namespace=whole.namespace or "ml",
        labels=whole.labels,
        annotations=whole.annotations,
    )
    return whole, manifest


# What each document is expected to warn about and drop; every other document neither warns nor drops.
WARNINGS = {
    "mpijob-deprecated-clean-pod-policy.yaml#0": [
        "job.spec.cleanPodPolicy: deprecated; moved to job.spec.runPolicy.cleanPodPolicy ('Running'), "
        "where the operator reads it"
    ],
    "mpijob-both-clean-pod-policies.yaml#0": [
        "job.spec.cleanPodPolicy: deprecated; 'All' ignored because job.spec.runPolicy.cleanPodPolicy ('None') "
        "is set and wins, as the MPIJob controller decides"
    ],
    "xgboostjob-pod-kind-template.yaml#0": [
        f"job.spec.xgbReplicaSpecs.{t}.template: dropped apiVersion, kind "
        "(a pod template has only metadata and spec; the cluster's schema prunes them)"
        for t in ("Master", "Worker")
    ],
}
IGNORED = {
    "jaxjob-from-kubectl-get.yaml#0": (
        f"metadata.annotations[{LAST_APPLIED!r}]",
        "metadata.creationTimestamp",
        "metadata.generation",
        "metadata.managedFields",
        "metadata.resourceVersion",
        "metadata.uid",
        "status",
    ),
}


def test_the_corpus_covers_every_kind_and_shape():
    kinds = {job["kind"] for _, job in DOCUMENTS}
    assert kinds == set(JOB_KINDS)
    texts = "\n".join(p.read_text() for p in FILES)
    for shape in (
        "elasticPolicy",
        "nprocPerNode",
        "successPolicy",
        "enableDynamicWorker",
        "slotsPerWorker",
        "mainContainer",
        "suspend",
        "managedBy",
        "schedulingPolicy",
        "kind: Pod",
        "\n---\n",
        "    master:",
        "    worker:",
        "    ps:",
        "    chief:",
        "    evaluator:",
        "    launcher:",
    ):
        assert shape in texts, shape


@pytest.mark.parametrize(("name", "job"), DOCUMENTS, ids=[d[0] for d in DOCUMENTS])
def test_upstream_job_keeps_its_meaning(name, job):
    whole, manifest = rebuild(job)
    assert differences(normalised(job), manifest["spec"]) == []
    assert list(whole.spec.warnings) == WARNINGS.get(name, [])
    assert manifest["kind"] == job["kind"] and manifest["apiVersion"] == "kubeflow.org/v1"

    metadata = job["metadata"]
    assert manifest["metadata"]["name"] == metadata["name"]
    assert whole.namespace == metadata.get("namespace")
    assert manifest["metadata"].get("labels", {}) == metadata.get("labels", {})
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k != LAST_APPLIED}
    assert manifest["metadata"].get("annotations", {}) == annotations
    assert sorted(whole.ignored) == sorted(IGNORED.get(name, ()))


@pytest.mark.parametrize(("name", "job"), DOCUMENTS, ids=[d[0] for d in DOCUMENTS])
def test_a_rebuilt_job_reads_back_as_itself_with_no_warnings(name, job):
    _whole, manifest = rebuild(job)
    again, rebuilt = rebuild(manifest)
    assert rebuilt == manifest
    assert again.spec.warnings == () and again.ignored == ()


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_file_as_text_parses_when_it_holds_one_document(path):
    text = path.read_text()
    count = sum(1 for d in yaml.safe_load_all(text) if d is not None)
    if count == 1:
        assert parse_whole_job(text).spec.kind.kind == jobs_in(path)[0]["kind"]
    else:
        with pytest.raises(InvalidJobSpecError) as raised:
            parse_whole_job(text)
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
        named = ", ".join(f"{d['kind']} {d['metadata']['name']}" for d in documents)
        (job,) = jobs_in(path)  # the corpus's files hold one job and what it needs, as kubectl applies them
        needs = ", ".join(sorted({d["kind"] for d in documents if d["kind"] != job["kind"]}))
        assert raised.value.problems == [
            f"job: holds {count} documents ({named}): pass the {job['kind']} alone, and create the {needs} "
            "beforehand (kubectl apply -f)"
        ]


def test_corpus_figures(capsys):
    parsed = 0
    for _, job in DOCUMENTS:
        rebuild(job)
        parsed += 1
    with capsys.disabled():
        print(f"\nupstream-shaped jobs: {len(DOCUMENTS)} in {len(FILES)} files, {parsed} parsed and rebuilt")
    assert parsed == len(DOCUMENTS) >= len(JOB_KINDS)
