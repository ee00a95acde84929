"""``TrainingJobSensor``: wait for a training job created elsewhere to reach a target condition."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import time

from airflow.providers.common.compat.sdk import BaseSensorOperator, conf
from kubernetes.client.exceptions import ApiException

from airflow_trainjob import conditions
from airflow_trainjob.constants import CONDITION_SUCCEEDED, JOB_KINDS
from airflow_trainjob.exceptions import InvalidJobSpecError, JobDeletedError, TrainingJobError, TrainingJobTimeoutError
from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.triggers.training_job import DELETED, FINISHED, TIMED_OUT, TrainingJobTrigger
from airflow_trainjob.verdict import failure_exception, job_ref


class TrainingJobSensor(BaseSensorOperator):
    """Succeeds when the job has a target condition; fails, with the operator's message, when it failed.

    Works in ``poke`` and ``reschedule`` modes. A job that does not exist (yet) keeps the sensor waiting.

    :param kind: the job's kind (``PyTorchJob``, ``TFJob``, ...).
    :param job_name: ``metadata.name`` of the job; templated.
    :param namespace: default: the connection's namespace, else in-cluster, else ``default``; templated.
    :param target_conditions: condition types, any of which (status ``"True"``) ends the wait
        successfully; default ``("Succeeded",)``. ``Failed`` always fails the sensor.
    :param kubernetes_conn_id: the cncf.kubernetes connection.
    :param log_tail_lines: on failure, lines quoted from each failed replica's log (count).
    :param deferrable: wait in the triggerer (a watch) instead of poking; default: Airflow's
        ``[operators] default_deferrable``. The sensor's ``timeout`` (seconds) still applies.
    :raises AirflowFailException: the job failed permanently (exit code 1-127).
    :raises TrainingJobError: the job failed in a retryable way.
    """

    template_fields: Sequence[str] = ("job_name", "namespace")

    def __init__(
        self,
        *,
        kind: str,
        job_name: str,
        namespace: str | None = None,
        target_conditions: Sequence[str] = (CONDITION_SUCCEEDED,),
        kubernetes_conn_id: str = "kubernetes_default",
        log_tail_lines: int = 50,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.deferrable = deferrable
        self.kind = kind
        self.job_name = job_name
        self.namespace = namespace
        self.target_conditions = tuple(target_conditions)
        self.kubernetes_conn_id = kubernetes_conn_id
        self.log_tail_lines = log_tail_lines

    @cached_property
    def hook(self) -> TrainingJobHook:
        return TrainingJobHook(kubernetes_conn_id=self.kubernetes_conn_id)

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        self._check()
        self.defer(
            trigger=TrainingJobTrigger(
                kind=self.kind,
                name=self.job_name,
                namespace=self.hook.resolve_namespace(self.namespace),
                kubernetes_conn_id=self.kubernetes_conn_id,
                target_conditions=self.target_conditions,
                timeout_at=time.time() + self.timeout if self.timeout else None,
                poll_interval=self.poke_interval,
                wait_for_creation=True,
            ),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Any, event: dict[str, Any]) -> None:
        """Resume after the trigger fired: succeed, or fail as :meth:`poke` would."""
        job = event.get("job")
        if event["outcome"] == FINISHED and job is not None:
            self.log.info("%s", event["message"])
            if conditions.is_failed(job.get("status")):
                raise failure_exception(self.hook, job, self.log_tail_lines, event.get("pods") or [])
            return
        if event["outcome"] == DELETED:
            raise JobDeletedError(event["message"])
        if event["outcome"] == TIMED_OUT:
            raise TrainingJobTimeoutError(f"sensor timeout of {self.timeout} s: {event['message']}")
        raise TrainingJobError(event["message"])

    def _check(self) -> None:
        if self.kind not in JOB_KINDS:
            raise InvalidJobSpecError([f"kind: {self.kind!r} is not a training job kind; allowed: {', '.join(JOB_KINDS)}"])
        if not isinstance(self.job_name, str) or not self.job_name:
            raise InvalidJobSpecError([f"job_name: must be a non-empty string, got {self.job_name!r}"])

    def poke(self, context: Any) -> bool:
        self._check()
        namespace = self.hook.resolve_namespace(self.namespace)
        try:
            job = self.hook.get_job(self.kind, self.job_name, namespace)
        except ApiException as e:
            if e.status == 404:
                self.log.info("%s %s/%s does not exist (yet)", self.kind, namespace, self.job_name)
                return False
            raise
        status = job.get("status")
        self.log.info("%s: %s", job_ref(job), conditions.summary(status))
        if conditions.is_failed(status):
            raise failure_exception(self.hook, job, self.log_tail_lines)
        return any(conditions.has_condition(status, t) for t in self.target_conditions)
