"""Pydantic v2 models of the kubeflow/common v1 API and of the per-kind job spec fields.

Models of what we write (``ReplicaSpec``, ``RunPolicy``, ``SchedulingPolicy`` and the kind fields)
refuse unknown fields; models of what we read (``JobStatus`` and its parts) keep them.
Attributes are snake_case; JSON uses the API's camelCase (``model_dump(by_alias=True)``). The enums
of API values are :mod:`airflow_trainjob.constants`'s, re-exported here.
:func:`parse_whole_job` reads a whole job document (dict, YAML/JSON, Kubeflow SDK object).
"""

from airflow_trainjob.models.common import (
    CleanPodPolicy,
    JobCondition,
    JobConditionType,
    JobStatus,
    ManagedBy,
    ReplicaSpec,
    ReplicaStatus,
    RestartPolicy,
    RunPolicy,
    SchedulingPolicy,
)
from airflow_trainjob.models.job import TrainingJobSpec
from airflow_trainjob.models.kinds import (
    ElasticPolicy,
    MPIJobFields,
    PaddleElasticPolicy,
    PaddleJobFields,
    PyTorchJobFields,
    RDZVBackend,
    RDZVConf,
    SuccessPolicy,
    TFJobFields,
)
from airflow_trainjob.models.whole_job import WholeJob, parse_whole_job

__all__ = [
    "CleanPodPolicy",
    "ElasticPolicy",
    "JobCondition",
    "JobConditionType",
    "JobStatus",
    "MPIJobFields",
    "ManagedBy",
    "PaddleElasticPolicy",
    "PaddleJobFields",
    "PyTorchJobFields",
    "RDZVBackend",
    "RDZVConf",
    "ReplicaSpec",
    "ReplicaStatus",
    "RestartPolicy",
    "RunPolicy",
    "SchedulingPolicy",
    "SuccessPolicy",
    "TFJobFields",
    "TrainingJobSpec",
    "WholeJob",
    "parse_whole_job",
]
