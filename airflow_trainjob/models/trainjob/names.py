"""How long a TrainJob's name may be: its pods' names are built from it.

A TrainJob's JobSet has the TrainJob's name (kubeflow/trainer v2.3.0 ``pkg/runtime/framework/plugins/jobset``); the
JobSet's Jobs are ``<name>-<replicated job>-<job index>`` and, Indexed, their pods ``<job>-<pod index>-<5 random
characters>``, each pod's hostname ``<job>-<pod index>`` (jobset v0.12.0 ``pkg/controllers/placement``). The
JobSet's webhook refuses a JobSet whose longest pod name is no DNS-1035 label of at most 63 characters
(``pkg/webhooks/jobset_webhook.go``): refused there, the TrainJob would stay without pods, the trainer retrying. So::

    len(name) + len("-<step>-0-<numNodes - 1>-abcde") <= 63

(Trainer's runtimes run each step as one Job: job index 0.) The steps are the runtime's, which the provider does not
read before it creates the TrainJob; upstream's runtimes have ``node`` (the trainer, ``numNodes`` pods),
``dataset-initializer`` and ``model-initializer`` (one pod each) and, for MPI, ``launcher`` (one pod). The longest,
``dataset-initializer``, bounds a generated name at 33 characters (the ``node`` step's never does: ``numNodes`` is
an int32, its pods' indexes 10 digits at most); a ``job_name`` given is checked against the steps the TrainJob itself names (``node``, and the initializers it
configures), and a note says when it is too long for a runtime with a dataset initializer.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_trainjob.constants import MAX_NAME_LENGTH, TrainJobStep

__all__ = ["max_generated_name_length", "max_name_length", "pod_name_suffix"]

#: ``-`` and the 5 random characters the API server adds to a Job's pod name (``generateName``), as the JobSet's
#: webhook counts them.
_RANDOM_SUFFIX = "-abcde"


def pod_name_suffix(step: str, highest_pod_index: int) -> str:
    """What a pod's name adds to its TrainJob's name, random part as ``abcde``: ``-node-0-3-abcde``.

    :param step: the replicated job (``node``).
    :param highest_pod_index: the pod's completion index (``numNodes - 1`` for the ``node`` step's last pod).
    """
    return f"-{step}-0-{highest_pod_index}{_RANDOM_SUFFIX}"


def max_name_length(num_nodes: int | None, steps: Iterable[str] = ()) -> int:
    """The longest TrainJob name whose pods' names stay within 63 characters, for the ``node`` step (``num_nodes``
    pods) and ``steps`` (one pod each).

    :param num_nodes: ``trainer.numNodes``; None: 1 (the runtime's count is not known beforehand).
    :param steps: the other replicated jobs counted (``dataset-initializer``...).
    """
    suffixes = [pod_name_suffix(TrainJobStep.NODE.value, max(num_nodes or 1, 1) - 1)]
    suffixes += [pod_name_suffix(step, 0) for step in steps]
    return MAX_NAME_LENGTH - max(len(s) for s in suffixes)


def max_generated_name_length(num_nodes: int | None) -> int:
    """The longest name the provider generates: one that fits every step of upstream's runtimes (33 characters).

    :param num_nodes: ``trainer.numNodes``; None: 1.
    """
    return max_name_length(num_nodes, (step.value for step in TrainJobStep if step is not TrainJobStep.NODE))
