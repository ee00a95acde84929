"""The API families a training job may belong to, each behind the port the lifecycle core reads
(:class:`~airflow_trainjob.domain.family.JobFamily`): what counts as terminal, failed or succeeded, the condition
vocabulary, the replica types and the lead replica, the replicas asked for. Today one: :mod:`.kubeflow_v1`.
"""

from __future__ import annotations

from airflow_trainjob.domain.family import JobFamily

__all__ = ["JobFamily"]
