"""``TriggerArgs``: the one definition of :class:`~airflow_trainjob.triggers.training_job.TrainingJobTrigger`'s
keyword arguments (names, types, defaults), which the trigger is made from and serializes back to.

Airflow stores a deferred task's trigger as its ``serialize()`` kwargs and makes it again from them, in the
triggerer and after its restarts, with the kwargs an earlier version of the provider wrote: a field added later keeps
its default when absent, and a field is never renamed. Light to import: the triggerer imports it on its event loop.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_trainjob.domain.params import RunSettings


@dataclass(frozen=True)
class TriggerArgs:
    """What a :class:`~airflow_trainjob.triggers.training_job.TrainingJobTrigger` waits for, and how; kept in the
    forms Airflow stores (JSON: lists and dicts) whatever was given.

    :param kind: the job's kind, a kind of one of the families (``PyTorchJob``; its adapter:
        :func:`~airflow_trainjob.families.family_of`).
    :param name: the job's ``metadata.name``.
    :param namespace: the job's ``metadata.namespace``.
    :param uid: the job object this wait is about (``metadata.uid``; a same-named successor is "deleted"); None: any.
    :param kubernetes_conn_id: the cncf.kubernetes connection; None: no connection (in-cluster or default
        kubeconfig). The connection is resolved exactly as the synchronous hook resolves it.
    :param cluster_context: the kubeconfig context to use; None: the connection's.
    :param config_file: path of a kubeconfig file; None: the connection's.
    :param in_cluster: use the pod's service account; None: the connection's setting.
    :param target_conditions: condition types that end the wait successfully; kept as a list. Empty: the job's
        success (:attr:`~airflow_trainjob.domain.family.JobFamily.success_condition`: an operator's wait).
    :param started_at: epoch seconds the deadlines count from (when the task created or attached to the job);
        None: when the arguments are made (then kept, so a trigger made again from its kwargs counts from the same
        moment).
    :param timeout: seconds after ``started_at`` when the wait ends with a ``timeout`` event (or None).
    :param startup_timeout: seconds from admission (``started_at`` for a job no queue holds) until ``Running``.
    :param queue_timeout: seconds the job may stay suspended in its queue each time it enters it (or None).
    :param poll_interval: seconds between lists when watches keep failing (the stream takes it from the
        first trigger of its source).
    :param wait_for_creation: a job that does not exist yet is waited for (sensor), not "deleted".
    :param owner_labels: labels the job must carry for the trigger's ``on_kill`` to delete it, and for the trigger to
        stop its running pods when it turns terminal (a job whose cleanup the operator holds); None or empty: none.
    :param try_number: the task try that deferred: ``on_kill`` leaves a job that a later try follows now
        (a clear that raced the next try); None: any try's.
    :param log_tail_lines: after the size bound cut the copy of the lead replica's log, lines of its end added
        when the trigger stops the lead's pod (count; 0: none).
    :param follow_lead_log: copy the lead replica's log into the task log while waiting; None: as an
        earlier version of the trigger did, when ``log_tail_lines`` is not 0.
    :param secret_spans: where the task's secrets masker found secrets in the job it sent
        (:func:`~airflow_trainjob.domain.lead_log.secret_spans`: places, not values); the trigger has the triggerer mask
        them before it copies any line, as the task's own log would; kept as a list of lists. None or empty: none.
    :param failed_tails: read the last ``log_tail_lines`` lines of each failed run's log when the pod watch first
        sees it fail (the first :data:`~airflow_trainjob.domain.failed_tails.TAILS_QUOTED`; the controller may
        delete the pod with the job's failure, log and all), masked, for the event's ``tails``; only for a wait
        that owns its job (``owner_labels``). An operator's try sets it when it quotes tails, with the
        ``secret_spans`` found then; False: a trigger stored by an earlier version (its spans may be missing).
    """

    kind: str
    name: str
    namespace: str
    uid: str | None = None
    kubernetes_conn_id: str | None = "kubernetes_default"
    cluster_context: str | None = None
    config_file: str | None = None
    in_cluster: bool | None = None
    target_conditions: Sequence[str] = ()
    started_at: float = field(default_factory=time.time)
    timeout: float | None = None
    startup_timeout: float | None = None
    queue_timeout: float | None = None
    poll_interval: float = 10.0
    wait_for_creation: bool = False
    owner_labels: Mapping[str, str] = field(default_factory=dict)
    try_number: int | None = None
    log_tail_lines: int = 0
    follow_lead_log: bool | None = None
    secret_spans: Sequence[Sequence[Any]] = ()
    failed_tails: bool = False

    def __post_init__(self) -> None:
        # The stored forms, fixed once (None as given by an older caller included): kwargs() gives back what the
        # trigger is made from again.
        set_field = object.__setattr__  # frozen
        set_field(self, "target_conditions", list(self.target_conditions))
        set_field(self, "started_at", time.time() if self.started_at is None else self.started_at)
        set_field(self, "owner_labels", dict(self.owner_labels or {}))
        set_field(self, "secret_spans", list(self.secret_spans or []))

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments, as the trigger serializes them (every field, by name)."""
        return asdict(self)

    @classmethod
    def for_run(
        cls,
        settings: RunSettings,
        *,
        kind: str,
        metadata: Mapping[str, Any],
        owner_labels: Mapping[str, str],
        try_number: int,
        started_at: float,
        secret_spans: Sequence[Sequence[Any]] | None,
    ) -> TriggerArgs:
        """The wait of an operator's try for the job it took up: the try's settings of the same name (its
        ``get_logs`` as ``follow_lead_log``; ``failed_tails`` when its ``log_tail_lines`` is not 0), and the job's
        name, namespace and uid.

        :param settings: the try's :class:`~airflow_trainjob.domain.params.RunSettings`.
        :param kind: the job's kind.
        :param metadata: the job's ``metadata`` (``name``, ``namespace``, ``uid``).
        :param owner_labels: the labels that make the job this task instance's.
        :param try_number: the try that defers.
        :param started_at: epoch seconds the deadlines count from.
        :param secret_spans: where the secrets of the job sent are (None: none, no log is copied nor tail read).
        """
        shared = {f.name: getattr(settings, f.name) for f in fields(settings) if f.name in _NAMES}
        return cls(
            **shared,
            follow_lead_log=settings.get_logs,
            failed_tails=settings.log_tail_lines > 0 and secret_spans is not None,
            kind=kind,
            name=metadata["name"],
            namespace=metadata["namespace"],
            uid=metadata.get("uid"),
            owner_labels=owner_labels,
            try_number=try_number,
            started_at=started_at,
            secret_spans=secret_spans or (),
        )

    @classmethod
    def for_sensor(cls, sensor: Any, *, namespace: str, started_at: float) -> TriggerArgs:
        """The wait of a :class:`~airflow_trainjob.sensors.training_job.TrainingJobSensor`: its job
        (``job_name``), waited for until it exists; its ``poke_interval`` as the polling fallback and its
        ``timeout`` (0: none) as the wait's.

        :param sensor: the sensor, rendered and checked.
        :param namespace: the job's namespace, resolved (the parameter, else the connection's).
        :param started_at: epoch seconds the sensor's timeout counts from.
        """
        return cls(
            kind=sensor.kind,
            name=sensor.job_name,
            namespace=namespace,
            kubernetes_conn_id=sensor.kubernetes_conn_id,
            target_conditions=sensor.target_conditions,
            started_at=started_at,
            timeout=sensor.timeout or None,
            poll_interval=sensor.poke_interval,
            wait_for_creation=True,
        )


_NAMES = frozenset(f.name for f in fields(TriggerArgs))
