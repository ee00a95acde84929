"""What the user asked of a job's cleanup (:class:`UserRunPolicy`): what the port
(:meth:`~airflow_trainjob.domain.family.JobFamily.user_run_policy`) answers, and
:mod:`~airflow_trainjob.domain.cleanup_hold` decides with. Its own module: both import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UserRunPolicy:
    """What the user asked of the job's cleanup.

    :param clean_pod_policy: ``All``, ``Running`` or ``None`` (``spec.runPolicy.cleanPodPolicy``).
    :param ttl_seconds_after_finished: seconds after completion before the job is deleted, or None (kept)
        (``spec.runPolicy.ttlSecondsAfterFinished``).
    :param held: True while the provider holds them (the controller was sent ``None`` and no TTL).
    """

    clean_pod_policy: str
    ttl_seconds_after_finished: int | None
    held: bool
