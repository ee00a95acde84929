"""Text that must hold one YAML/JSON document: a whole job of either API family, or one part of a TrainJob.

A file written for ``kubectl apply -f`` often holds more than the job: kubeflow/trainer v2.3.0's
``examples/yaml/04-volcano-integration.yaml`` and ``05-multi-step.yaml`` put the runtime a TrainJob names before it,
the training operator's examples a volume claim before the job that mounts it. An operator runs one job and creates
nothing else (a runtime is the cluster's, as the installed ones are; a TrainJob's or a job's cleanup would not reach
it), so such text is refused, naming each document and what to do with it. Empty documents (a ``---`` followed by
comments only) do not count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from airflow_trainjob.constants import JOB_KINDS, RUNTIME_PLURALS, TRAINJOB_KIND

__all__ = ["TRAINJOB_TEXT", "V1_JOB_TEXT", "Wanted", "one_document"]

#: Documents named one by one in a refusal; the rest are counted.
_NAMED_AT_MOST = 6


@dataclass(frozen=True)
class Wanted:
    """What a text must hold, for the refusal of one that holds another number of documents.

    :param noun: what the operator takes, in the advice (``TrainJob``, ``job``).
    :param kinds: the ``kind`` values of what it takes.
    :param beforehand: kind -> what such a document is (``runtime``), for one the cluster must hold before the job
        is created.
    :param elsewhere: kind -> the operator that runs a document of that kind (another API family's job).
    """

    noun: str
    kinds: frozenset[str]
    beforehand: Mapping[str, str] = field(default_factory=dict)
    elsewhere: Mapping[str, str] = field(default_factory=dict)


#: ``TrainJobOperator``'s ``job`` and ``job_template_file``.
TRAINJOB_TEXT = Wanted(
    "TrainJob",
    frozenset({TRAINJOB_KIND}),
    beforehand=dict.fromkeys(RUNTIME_PLURALS, "runtime"),
    elsewhere=dict.fromkeys(JOB_KINDS, "TrainingJobOperator"),
)
#: ``TrainingJobOperator``'s ``job`` and ``job_template_file`` (a ``kubeflow.org/v1`` job).
V1_JOB_TEXT = Wanted("job", frozenset(JOB_KINDS), elsewhere={TRAINJOB_KIND: "TrainJobOperator"})


def one_document(text: str, path: str, problems: list[str], wanted: Wanted | None = None) -> Any:
    """The one YAML/JSON document of ``text``; None after adding the problem when it holds another number.

    :param text: YAML or JSON text (a rendered template, a file's content).
    :param path: its name in messages (``job``, ``job_template_file``, ``trainer``).
    :param problems: where the one problem is added: text that is no YAML, or holds no document or several (then
        each is named by ``kind`` and ``metadata.name``, with what to do instead).
    :param wanted: what the text must hold (:data:`TRAINJOB_TEXT`, :data:`V1_JOB_TEXT`); None: a part, whose
        documents are not named.
    """
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        problems.append(f"{path}: not valid YAML/JSON: {exc}".replace("\n", " "))
        return None
    if len(documents) == 1:
        return documents[0]
    what = wanted.noun if wanted else "one"
    if not documents:
        problems.append(f"{path}: holds no YAML/JSON document: pass {'one ' + what if wanted else what}")
    elif wanted is None:
        problems.append(f"{path}: holds {len(documents)} YAML/JSON documents: pass one")
    else:
        named = ", ".join(_describe(d) for d in documents[:_NAMED_AT_MOST])
        more = len(documents) - _NAMED_AT_MOST
        named += f" and {more} more" if more > 0 else ""
        problems.append(f"{path}: holds {len(documents)} documents ({named}): {_advice(documents, wanted)}")
    return None


def _kind(document: Any) -> str | None:
    kind = document.get("kind") if isinstance(document, Mapping) else None
    return kind if isinstance(kind, str) else None


def _describe(document: Any) -> str:
    """``<kind> <metadata.name>`` of a document, else what it is."""
    if not isinstance(document, Mapping):
        return f"a {type(document).__name__}"
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    kind, named = _kind(document), isinstance(name, str)
    if kind:
        return f"{kind} {name}" if named else f"{kind} (no name)"
    return f"{name} (no kind)" if named else "a mapping without kind"


def _advice(documents: list[Any], wanted: Wanted) -> str:
    """What to do with each document of a text that holds several."""
    kinds = [k for k in (_kind(d) for d in documents) if k is not None]
    jobs = [k for k in kinds if k in wanted.kinds]
    if len(jobs) > 1:
        lead = f"give each {wanted.noun} a task of its own"
    elif jobs:
        lead = f"pass the {jobs[0]} alone"
    else:
        lead = f"pass one {wanted.noun}"
    clauses = []
    before = [wanted.beforehand[k] for k in kinds if k in wanted.beforehand]
    for noun in sorted(set(before)):
        plural = "s" if before.count(noun) > 1 else ""
        clauses.append(f"create the {noun}{plural} beforehand (kubectl apply -f), as a cluster's {noun}s are")
    known = wanted.kinds | set(wanted.beforehand) | set(wanted.elsewhere)
    others = sorted({k for k in kinds if k not in known})
    if others:
        clauses.append(f"create the {', '.join(others)} beforehand (kubectl apply -f)")
    clauses += [f"a {k} runs with {wanted.elsewhere[k]}" for k in sorted({k for k in kinds if k in wanted.elsewhere})]
    return "; ".join([f"{lead}, and {clauses[0]}", *clauses[1:]] if clauses else [lead])
