"""Exceptions raised by this provider.

All derive from Airflow's exceptions so that Airflow's retry logic reads them the usual way:
``AirflowFailException`` subclasses end the task without retries (retrying cannot help),
``AirflowException`` subclasses fail the try and let Airflow retry.
"""

from __future__ import annotations

from typing import Any, Protocol

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException


class TrainingJobError(AirflowException):
    """Base class of this provider's retryable errors."""


class InvalidJobSpecError(AirflowFailException):
    """A job spec, name or parameter is invalid; raised before any API call.

    The message names each offending field by its API path (e.g.
    ``replicaSpecs.Worker.replicas``) and says what is allowed. Not retried: the same input
    fails the same way on every try.

    :param problems: one line per problem, each naming the field by its API path; one problem makes a one-line
        message, several a list (kept as :attr:`problems`).
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        if len(self.problems) == 1:
            message = f"invalid training job spec: {self.problems[0]}"
        else:
            message = "invalid training job spec:\n" + "\n".join(f"- {p}" for p in self.problems)
        super().__init__(message)


class KubernetesAccessError(TrainingJobError):
    """The API server refused the connection's credentials (401) or their permissions (403)."""


class QuotaExceededError(TrainingJobError):
    """A ResourceQuota of the namespace has no room for the request (403 ``exceeded quota``); the message names
    the quota and what was requested, used and limited. Retryable: a later try may fit."""


class KindNotServedError(AirflowFailException):
    """The cluster does not serve the job's kind (404 on the resource's path: its CustomResourceDefinition is
    not installed, usually because the Kubeflow training operator is not). Not retried."""


class NamespaceNotFoundError(AirflowFailException):
    """The namespace to create the job in does not exist (404 naming the namespace). Not retried."""


class JobRejectedError(AirflowFailException):
    """The API server refused the request as invalid (422, naming each field of ``details.causes``) or an
    admission webhook denied it (its message); nothing was created. Not retried: the same request is refused
    the same way on every try."""


class RuntimeNotFoundError(JobRejectedError):
    """The object a job names to run on does not exist (a TrainJob's ``ClusterTrainingRuntime`` or
    ``TrainingRuntime``): read before the create, nothing was created. Not retried: the name is the task's."""


class JobNotOwnedError(AirflowFailException):
    """A job with the wanted name exists but was not created by this task instance; it is left untouched."""


class JobDeletedError(TrainingJobError):
    """The job disappeared (deleted outside this task) before it reached a terminal condition."""


class TrainingJobStoppedError(TrainingJobError):
    """Airflow stopped the task (cleared, marked failed or success, worker shutdown) while its job ran; the
    task's ``on_kill`` deleted the job. Retryable: a worker shutdown is no verdict on the job."""


class TrainingJobTimeoutError(TrainingJobError):
    """``timeout`` or ``startup_timeout`` passed before the job finished; the job was deleted."""


class Judged(Protocol):
    """What :func:`exception_for` reads of a decision (:class:`airflow_trainjob.domain.verdict.Verdict`)."""

    @property
    def permanent(self) -> bool:
        """Retrying cannot help."""
        ...

    @property
    def message(self) -> str:
        """What Airflow shows."""
        ...


def exception_for(decision: Judged) -> AirflowFailException | TrainingJobError:
    """The exception Airflow sees for a decision: ``AirflowFailException`` when retrying cannot help (Airflow ends
    the task without retries), else :class:`TrainingJobError` (Airflow may retry); its message is the decision's.
    The one place a decision's retry class becomes an exception class.

    :param decision: a :class:`~airflow_trainjob.domain.verdict.Verdict` (``permanent``, ``message``); kept on the
        exception (:func:`decision_of`).
    """
    error = AirflowFailException(decision.message) if decision.permanent else TrainingJobError(decision.message)
    vars(error)[_DECISION] = decision
    return error


#: The attribute of an exception :func:`exception_for` made that holds its decision.
_DECISION = "_airflow_trainjob_decision"


def decision_of(error: BaseException | None) -> Any:
    """The decision :func:`exception_for` made ``error`` from (a :class:`~airflow_trainjob.domain.verdict.Verdict`:
    what the task's OpenLineage failure facet reads of the failed runs); None for any other exception, or None.

    :param error: the task's exception, or None.
    """
    return None if error is None else vars(error).get(_DECISION)
