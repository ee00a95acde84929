"""``TrainingJobSensor``: wait for a training job created elsewhere to reach a target condition."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import BaseSensorOperator, conf
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.constants import CONDITION_SUCCEEDED
from airflow_trainjob.domain.deadlines import look_again_in
from airflow_trainjob.domain.lifecycle import Finished, Gone, judge_gone, one_look
from airflow_trainjob.domain.names import namespace_problem
from airflow_trainjob.domain.params import (
    DEFAULTS,
    SENSOR,
    kind_problem,
    problems,
    refuse,
    target_conditions_problem,
    values_of,
)
from airflow_trainjob.domain.verdict import job_ref
from airflow_trainjob.exceptions import InvalidJobSpecError, JobDeletedError, TrainingJobError, TrainingJobTimeoutError
from airflow_trainjob.families import family_of, family_or_none, known_kinds
from airflow_trainjob.hooks.evidence import announced_end, failure_exception
from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.triggers.args import TriggerArgs
from airflow_trainjob.triggers.events import DELETED, FINISHED, TIMED_OUT
from airflow_trainjob.triggers.training_job import TrainingJobTrigger


def _every_target() -> tuple[str, ...]:
    """The condition types a sensor may wait for, of every family (for a kind no family holds)."""
    return tuple(dict.fromkeys(t for kind in known_kinds() for t in family_of(kind).target_conditions))


class TrainingJobSensor(BaseSensorOperator):
    """Succeeds when the job has a target condition; fails, with the operator's message, when it failed.

    Works in ``poke`` and ``reschedule`` modes. A job that does not exist (yet) keeps the sensor waiting; a
    kind the cluster does not serve (its CRD is not installed) fails it at the first look, in every mode. A job
    that the sensor saw and that is then gone (poke and deferrable modes) gets the verdict its last state, or the
    training operator's ``<Kind>Succeeded``/``<Kind>Failed`` event, gives; without one it was deleted before it
    finished (:class:`JobDeletedError`). In reschedule mode each poke starts afresh: a gone job is waited for.
    A job suspended in a queue (Kueue; ``runPolicy.suspend``) keeps the sensor waiting, and says so. The sensor's
    ``timeout`` fails it just after its time in every mode: poke and reschedule look again then, however long
    ``poke_interval``.

    :param kind: the job's kind (``PyTorchJob``, ``TFJob``, ... , or ``TrainJob``: Kubeflow Trainer v2).
    :param job_name: ``metadata.name`` of the job; templated.
    :param namespace: default: the connection's namespace, else in-cluster, else ``default``; templated.
    :param target_conditions: condition types, any of which (status ``"True"``) ends the wait
        successfully: for a ``kubeflow.org/v1`` kind a list of ``Created``, ``Pending``, ``Running``, ``Restarting``,
        ``Succeeded``, ``Scaling``, ``Suspended``, default ``("Succeeded",)``; for a ``TrainJob`` of ``Complete``,
        ``Suspended``, default ``("Complete",)``. ``Failed`` always fails the sensor.
    :param kubernetes_conn_id: the cncf.kubernetes connection; an id that names no connection is refused
        before any API call (``kubernetes_default`` may be undefined: in-cluster or default kubeconfig).
    :param log_tail_lines: on failure, lines quoted from each failed replica's log (count).
    :param deferrable: wait in the triggerer (a watch) instead of poking; default: Airflow's
        ``[operators] default_deferrable``. The sensor's ``timeout`` (seconds) still applies.
    :raises InvalidJobSpecError: a parameter is invalid (after rendering), before any API call; not retried.
    :raises KindNotServedError: the cluster does not serve ``kind`` (the Kubeflow training operator's CRD is
        missing); not retried.
    :raises KubernetesAccessError: the API refused the credentials (401) or RBAC forbids reading the job (403,
        naming verb, resource and namespace); retryable.
    :raises AirflowFailException: the job failed permanently (exit code 1-127).
    :raises TrainingJobError: the job failed in a retryable way, or the deferred wait could not read it.
    """

    template_fields: Sequence[str] = ("job_name", "namespace")

    def __init__(
        self,
        *,
        kind: str,
        job_name: str,
        namespace: str | None = None,
        target_conditions: Sequence[str] | None = None,
        kubernetes_conn_id: str | None = DEFAULTS.kubernetes_conn_id,
        log_tail_lines: int = DEFAULTS.log_tail_lines,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.deferrable = deferrable
        self.kind = kind
        self.job_name = job_name
        self.namespace = namespace
        if target_conditions is None:  # the job's success: its family's word for it
            family = family_or_none(kind)
            target_conditions = (family.success_condition if family is not None else CONDITION_SUCCEEDED,)
        # A single string stays one (refused by _check), never a tuple of its characters.
        self.target_conditions = (
            tuple(target_conditions) if isinstance(target_conditions, (list, tuple)) else target_conditions
        )
        self.kubernetes_conn_id = kubernetes_conn_id
        self.log_tail_lines = log_tail_lines
        #: The job as the previous poke saw it (poke mode keeps the instance between pokes; reschedule does not).
        self._last_seen: dict[str, Any] | None = None

    @cached_property
    def hook(self) -> TrainingJobHook:
        return TrainingJobHook(kubernetes_conn_id=self.kubernetes_conn_id)

    def execute(self, context: Any) -> Any:
        self._check()
        if not self.deferrable:
            return super().execute(context)
        args = TriggerArgs.for_sensor(self, namespace=self._resolved_namespace(), started_at=time.time())
        self.defer(trigger=TrainingJobTrigger(**args.kwargs()), method_name="execute_complete")

    def execute_complete(self, context: Any, event: dict[str, Any]) -> None:
        """Resume after the trigger fired: succeed, or fail as :meth:`poke` would.

        :param context: the Airflow task context.
        :param event: the trigger's event payload (``outcome``, ``message``, ``job``, ``pods``; see
            :class:`~airflow_trainjob.triggers.training_job.TrainingJobTrigger`).
        """
        job = event.get("job")
        if event["outcome"] == FINISHED and job is not None:
            self.log.info("%s", event["message"])
            if family_of(self.kind).is_failed(job.get("status")):
                raise failure_exception(
                    self.hook, job, self.log_tail_lines, event.get("pods") or [], event.get("tails")
                )
            return
        if event["outcome"] == DELETED:
            raise JobDeletedError(event["message"])
        if event["outcome"] == TIMED_OUT:
            raise TrainingJobTimeoutError(f"sensor timeout of {self.timeout} s: {event['message']}")
        self._raise_refusal()
        raise TrainingJobError(event["message"])

    def _final_state(self, last_seen: dict[str, Any]) -> dict[str, Any]:
        """The job this sensor saw in an earlier poke is gone: its verdict is the terminal condition the training
        operator announced in its events, else it was deleted before it finished
        (:func:`~airflow_trainjob.domain.lifecycle.judge_gone`, by its state last seen).

        :raises JobDeletedError: no terminal condition was announced."""
        family = family_of(self.kind)
        job = announced_end(self.hook, last_seen)
        if job is None:
            gone = judge_gone(job_ref(last_seen), last_seen, family, self.target_conditions, said_of_task=False)
            if isinstance(gone, Gone):
                raise JobDeletedError(gone.message)
            return last_seen  # it had finished when last seen: judged as it was
        self.log.info(
            "%s is gone; the training operator's events say it ended: %s",
            job_ref(last_seen),
            family.summary(job.get("status")),
        )
        return job

    def _raise_refusal(self) -> None:
        """The trigger could not watch the job: look once from here, so that a refusal is raised as what it is
        (a kind the cluster does not serve is not retried) rather than as the event's retryable error.
        Returns when the look raises no refusal (the job, or its absence, or an answer that says nothing more)."""
        try:
            self.hook.get_job(self.kind, self.job_name, self._resolved_namespace())
        except ApiException:
            pass  # 404 of the job, spent retries...: the event's message says more

    def _check(self) -> None:
        """Refuse invalid parameters (as rendered) before any API call: one error per field, naming what is allowed
        (``kind`` and ``target_conditions`` by the families: every kind a sensor may watch, and the conditions of
        its own family)."""
        found = problems(values_of(self, SENSOR), SENSOR)
        named_first = [p for p in found if p.startswith(("job_name:", "namespace:"))]
        kind = kind_problem(self.kind, allowed=known_kinds())
        family = family_or_none(self.kind)
        allowed = family.target_conditions if family is not None else _every_target()
        targets = target_conditions_problem("target_conditions", self.target_conditions, allowed)
        ordered = [*([kind] if kind else []), *named_first, *([targets] if targets else [])]
        refuse(ordered + found[len(named_first) :], self.hook)

    def _resolved_namespace(self) -> str:
        """The namespace to read from (parameter, else the connection's), refused before use if invalid."""
        namespace = self.hook.resolve_namespace(self.namespace)
        issue = namespace_problem(namespace)
        if issue:
            raise InvalidJobSpecError(
                [f"namespace: {issue} (the namespace extra of connection {self.kubernetes_conn_id!r})"]
            )
        return namespace

    def _get_next_poke_interval(self, started_at: Any, run_duration: Callable[[], float], poke_count: int) -> float:
        """Airflow's next poke interval (``poke_interval``, or its exponential backoff), never past the sensor's
        ``timeout``: the poke (poke mode) or the rescheduled try (reschedule mode) that fails it comes just after it,
        not up to ``poke_interval`` later (:func:`~airflow_trainjob.domain.deadlines.look_again_in`).

        :param started_at: when the sensor started (monotonic seconds in poke mode, a datetime in reschedule mode).
        :param run_duration: seconds the sensor has run so far, as Airflow counts them for its timeout.
        :param poke_count: the pokes so far (count).
        """
        interval = super()._get_next_poke_interval(started_at, run_duration, poke_count)
        look = look_again_in(interval, self.timeout - run_duration() if self.timeout else None)
        return interval if look is None else look

    def poke(self, context: Any) -> bool:
        self._check()
        namespace = self._resolved_namespace()
        try:
            job = self.hook.get_job(self.kind, self.job_name, namespace)
        except ApiException as e:  # the hook raises refusals (missing kind, access) as they are, not as this
            if e.status != 404:
                raise
            if self._last_seen is None:  # the job, not its kind: it may be created later
                self.log.info("%s %s/%s does not exist (yet)", self.kind, namespace, self.job_name)
                return False
            job = self._final_state(self._last_seen)
        self._last_seen = job
        look = one_look(job_ref(job), job, family_of(self.kind), self.target_conditions, time.time())
        self.log.info("%s", look.lines.progress)
        if look.lines.queue is not None:  # Kueue holds it: waiting, not failed
            self.log.info("%s", look.lines.queue)
        if isinstance(look, Finished) and look.failed:
            raise failure_exception(self.hook, job, self.log_tail_lines)
        return isinstance(look, Finished)
