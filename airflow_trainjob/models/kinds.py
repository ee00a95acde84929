"""Each job kind's own ``spec`` fields, besides ``runPolicy`` and the replica specs.

Mirrors ``pytorch_types.go``, ``tensorflow_types.go``, ``mpi_types.go`` and ``paddlepaddle_types.go``
of the training operator's v1 API. XGBoostJob and JAXJob have no fields of their own.

Each kind's fields model is the one list of its fields (:func:`kind_field_names`); the per-kind table
(:data:`airflow_trainjob.constants.JOB_KINDS`) does not repeat them.
"""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from airflow_trainjob.constants import CleanPodPolicy, RDZVBackend, SuccessPolicy
from airflow_trainjob.models.base import NonNegativeInt32, Port, PositiveInt32, WriteModel


class RDZVConf(WriteModel):
    """One ``elasticPolicy.rdzvConf`` entry: an extra rendezvous option ``key=value``.

    :param key: ``key``, the option's name (torchrun's ``--rdzv-conf`` key, e.g. ``timeout``).
    :param value: ``value``, its value as text.
    """

    key: str | None = None
    value: str | None = None


class _ElasticBounds(WriteModel):
    min_replicas: PositiveInt32 | None = None
    max_replicas: PositiveInt32 | None = None
    max_restarts: NonNegativeInt32 | None = None
    #: autoscaling/v2 MetricSpec dicts, passed through unmodelled (the HPA's own API).
    metrics: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _min_not_above_max(self) -> _ElasticBounds:
        if self.min_replicas is not None and self.max_replicas is not None:
            if self.min_replicas > self.max_replicas:
                raise ValueError(f"minReplicas ({self.min_replicas}) must not exceed maxReplicas ({self.max_replicas})")
        return self


class ElasticPolicy(_ElasticBounds):
    """PyTorchJob ``spec.elasticPolicy``: elastic training with torchrun.

    :param min_replicas: ``minReplicas``, fewest workers the job may scale down to (count).
    :param max_replicas: ``maxReplicas``, most workers the job may scale up to (count). Either unset
        is written as nothing; training-operator v1.9 gives it the other's value, or both the
        ``Worker`` replica count when neither is set.
    :param rdzv_backend: ``rdzvBackend``, ``c10d``, ``etcd`` or ``etcd-v2``.
    :param rdzv_port: ``rdzvPort``, the rendezvous port (1-65535).
    :param rdzv_host: ``rdzvHost``, the rendezvous host.
    :param rdzv_id: ``rdzvId``, the rendezvous id shared by the job's workers.
    :param rdzv_conf: ``rdzvConf``, extra rendezvous options.
    :param standalone: ``standalone``, run a local c10d rendezvous on port 29400.
    :param n_proc_per_node: ``nProcPerNode``, deprecated by the API in favour of ``spec.nprocPerNode``.
    :param max_restarts: ``maxRestarts``, worker-group restarts torchrun allows (count).
    :param metrics: ``metrics``, autoscaling/v2 MetricSpec dicts for an HPA.
    """

    rdzv_backend: RDZVBackend | None = None
    rdzv_port: Port | None = None
    rdzv_host: str | None = None
    rdzv_id: str | None = None
    rdzv_conf: list[RDZVConf] | None = None
    standalone: bool | None = None
    n_proc_per_node: PositiveInt32 | None = None


class PaddleElasticPolicy(_ElasticBounds):
    """PaddleJob ``spec.elasticPolicy``: ``minReplicas``, ``maxReplicas``, ``maxRestarts``, ``metrics``.

    :param min_replicas: ``minReplicas``, fewest workers the job may scale down to (count).
    :param max_replicas: ``maxReplicas``, most workers the job may scale up to (count). Either unset is
        defaulted by training-operator v1.9 as for :class:`ElasticPolicy`.
    :param max_restarts: ``maxRestarts``, restarts allowed (count).
    :param metrics: ``metrics``, autoscaling/v2 MetricSpec dicts for an HPA.
    """


class PyTorchJobFields(WriteModel):
    """PyTorchJob's own spec fields.

    :param elastic_policy: ``elasticPolicy``, see :class:`ElasticPolicy`.
    :param nproc_per_node: ``nprocPerNode``, processes per pod: ``auto``, ``cpu``, ``gpu`` or a
        positive integer (given as int or string). Unset is written as nothing; training-operator v1.9
        defaults it to ``auto`` unless ``elasticPolicy.nProcPerNode`` is set.
    """

    elastic_policy: ElasticPolicy | None = None
    nproc_per_node: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _nproc_as_string(cls, data: Any) -> Any:
        # The API types nprocPerNode as a string; an int from a DAG is what the user means.
        if isinstance(data, dict):
            for key in ("nprocPerNode", "nproc_per_node"):
                value = data.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    data = {**data, key: str(value)}
        return data

    @model_validator(mode="after")
    def _check(self) -> PyTorchJobFields:
        value = self.nproc_per_node
        if value is not None and value not in ("auto", "cpu", "gpu"):
            if not (value.isdigit() and int(value) >= 1):
                raise ValueError(f"nprocPerNode must be 'auto', 'cpu', 'gpu' or a positive integer, got {value!r}")
        if value is not None and self.elastic_policy and self.elastic_policy.n_proc_per_node is not None:
            raise ValueError("set nprocPerNode or elasticPolicy.nProcPerNode, not both (the latter is deprecated)")
        return self


class TFJobFields(WriteModel):
    """TFJob's own spec fields.

    :param success_policy: ``successPolicy``, see :class:`SuccessPolicy`. Unset is written as nothing;
        training-operator v1.9 defaults it to ``""``.
    :param enable_dynamic_worker: ``enableDynamicWorker``, True lets workers join and leave while the
        job runs (the operator then gives each pod only the chief and PS addresses).
    """

    success_policy: SuccessPolicy | None = None
    enable_dynamic_worker: bool | None = None


class MPIJobFields(WriteModel):
    """MPIJob's own spec fields.

    :param slots_per_worker: ``slotsPerWorker``, MPI slots per worker in the hostfile (count, >= 1);
        unset, training-operator v1.9 writes 1 slot per worker.
    :param main_container: ``mainContainer``, the container that runs the MPI program.

    The deprecated ``spec.cleanPodPolicy`` is read by :class:`MPIJobDeprecatedFields`, not here.
    """

    slots_per_worker: PositiveInt32 | None = None
    main_container: str | None = None


class MPIJobDeprecatedFields(WriteModel):
    """MPIJob spec fields the API deprecates but training-operator v1.9 still honours; read, never written.

    :param clean_pod_policy: ``spec.cleanPodPolicy``, deprecated in favour of ``runPolicy.cleanPodPolicy``.
        The v1.9 MPIJob controller uses it when ``runPolicy.cleanPodPolicy`` is unset and ignores it
        when that is set; :meth:`TrainingJobSpec.parse` moves it there the same way, with a warning,
        so that the provider's cleanup hold covers it.
    """

    clean_pod_policy: CleanPodPolicy | None = None


class PaddleJobFields(WriteModel):
    """PaddleJob's own spec field.

    :param elastic_policy: ``elasticPolicy``, see :class:`PaddleElasticPolicy`.
    """

    elastic_policy: PaddleElasticPolicy | None = None


class NoFields(WriteModel):
    """XGBoostJob and JAXJob: no fields of their own; anything given is refused."""


KIND_FIELDS_MODELS: dict[str, type[WriteModel]] = {
    "PyTorchJob": PyTorchJobFields,
    "TFJob": TFJobFields,
    "MPIJob": MPIJobFields,
    "XGBoostJob": NoFields,
    "PaddleJob": PaddleJobFields,
    "JAXJob": NoFields,
}

#: Per kind: the model of its deprecated ``spec`` fields, taken out of the kind fields before they are
#: validated and moved to where the operator reads them now.
DEPRECATED_FIELDS_MODELS: dict[str, type[WriteModel]] = {
    "MPIJob": MPIJobDeprecatedFields,
}


def kind_field_names(kind: str, *, deprecated: bool = False) -> tuple[str, ...]:
    """The kind's own ``spec`` fields in the API's spelling (``elasticPolicy``, ``nprocPerNode``...), besides
    ``runPolicy`` and the replica specs: the aliases of its fields model, in the model's order.

    :param kind: a key of :data:`airflow_trainjob.constants.JOB_KINDS`.
    :param deprecated: also the deprecated fields the kind still reads (an MPIJob's ``cleanPodPolicy``).
    :raises KeyError: ``kind`` is not a job kind.
    """
    models = [KIND_FIELDS_MODELS[kind]]
    if deprecated and kind in DEPRECATED_FIELDS_MODELS:
        models.append(DEPRECATED_FIELDS_MODELS[kind])
    return tuple(f.alias or name for model in models for name, f in model.model_fields.items())
