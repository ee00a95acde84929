"""``TrainJobOperator``: run one Kubeflow Trainer v2 ``TrainJob`` (``trainer.kubeflow.org/v1alpha1``) to its end from an
Airflow task, with ``TrainingJobOperator``'s run: the same create-or-attach, wait, verdict, cleanup and summary.

Only the input differs: the TrainJob's own parameters, checked and built into the try's request by
:mod:`~airflow_trainjob.operators.trainjob_request`.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.providers.common.compat.sdk import conf

from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.params import DEFAULTS, TRAINJOB, values_of
from airflow_trainjob.models.trainjob.strict import api_form
from airflow_trainjob.operators.request import TrainingJobRequest
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.operators.trainjob_request import build_trainjob_request

#: TrainingJobOperator's parameters of a kubeflow.org/v1 job, which a TrainJob has none of.
V1_PARTS = ("kind", "replica_specs", "run_policy", "kind_fields")
#: Bytes of the pod token (:data:`~airflow_trainjob.constants.LABEL_POD_TOKEN`): 12 hex characters, a label value.
POD_TOKEN_BYTES = 6


def _refuse_v1_parts(kwargs: Mapping[str, Any]) -> None:
    """TrainingJobOperator's constructor would take a v1 part, and the TrainJob ignore it: refused. :raises TypeError:"""
    given = [name for name in V1_PARTS if name in kwargs]
    if given:
        raise TypeError(
            f"{', '.join(given)}: a TrainingJobOperator parameter (kubeflow.org/v1 jobs); a TrainJob takes "
            "runtime, trainer, initializer, runtime_patches, suspend, managed_by, active_deadline_seconds"
        )


class TrainJobOperator(TrainingJobOperator):
    """Create a Kubeflow Trainer v2 ``TrainJob``, follow it to ``Complete`` or ``Failed``, and clean up.

    Give the TrainJob in parts (``runtime`` and ``trainer``, ``initializer``, ``runtime_patches``, ``suspend``,
    ``managed_by``, ``active_deadline_seconds``) or whole (``job`` or ``job_template_file``), not both. Each part is
    checked with the ``kubeflow_trainer_api`` models (kubeflow/trainer v2.3.0's API) before any API call: a field
    they do not know is refused (``trainer.numNode: unknown field; did you mean numNodes?``), and so is what the
    Trainer's CRD and webhook refuse without reading the runtime (``numNodes`` below 1, a ``runtimeRef`` kind other
    than ``ClusterTrainingRuntime``/``TrainingRuntime``, another ``managedBy``...). A part given as a mapping takes the
    API's keys (``numNodes``) or the models' attribute names (``num_nodes``), and is sent with the API's; an integer
    given as a string of digits (what Jinja renders) is sent as its number.

    Parameter -> TrainJob field: ``runtime`` -> ``spec.runtimeRef``; ``trainer`` -> ``spec.trainer``;
    ``initializer`` -> ``spec.initializer``; ``runtime_patches`` -> ``spec.runtimePatches`` (the provider's own
    appended); ``suspend`` -> ``spec.suspend``; ``managed_by`` -> ``spec.managedBy``; ``active_deadline_seconds`` ->
    ``spec.activeDeadlineSeconds``; ``job_name`` -> ``metadata.name``; ``namespace`` -> ``metadata.namespace``;
    ``labels``, ``queue_name`` -> ``metadata.labels``; ``annotations`` -> ``metadata.annotations``.

    :param runtime: the runtime to run on: a ``ClusterTrainingRuntime``'s name (``"torch-distributed"``), or a
        ``runtimeRef`` (``{"name": ..., "kind": "TrainingRuntime"}``, its YAML/JSON text, or a
        ``TrainerV1alpha1RuntimeRef``) whose unset ``kind`` is ``ClusterTrainingRuntime`` and ``apiGroup``
        ``trainer.kubeflow.org``. ``spec.runtimeRef``; required with parts. Templated.
    :param trainer: the trainer step's overrides: ``image``, ``command``, ``args``, ``env``, ``numNodes`` (nodes),
        ``numProcPerNode`` (processes per node), ``resourcesPerNode`` (a ``ResourceRequirements``: quantities as
        strings such as ``"2Gi"``, or numbers); a mapping, its YAML/JSON text, or a ``TrainerV1alpha1Trainer``.
        ``spec.trainer``. Templated.
    :param initializer: ``dataset`` and ``model``, each with ``storageUri`` (``scheme://...``), ``env``,
        ``secretRef``; a mapping, its YAML/JSON text, or a ``TrainerV1alpha1Initializer``. ``spec.initializer``; the
        runtime must have the step (``dataset-initializer``, ``model-initializer``). Templated.
    :param runtime_patches: a list of runtime patches (each a mapping with ``manager``, a domain-prefixed path such as
        ``example.com/my-team``, and ``trainingRuntimeSpec``; or a ``TrainerV1alpha1RuntimePatch``), or its YAML/JSON
        text; at most 15. ``spec.runtimePatches``. The manager ``airflow-trainjob/manager`` is the provider's: its
        patch, appended to yours, labels the pods of the replicated job ``node`` with the task instance's labels and
        the TrainJob's pod token (``airflow-trainjob/pod-token``); a patch of yours with it is refused. Templated.
    :param suspend: create the TrainJob suspended (True) or not (False); ``spec.suspend``. None: unset (False; Kueue
        suspends a TrainJob it queues itself).
    :param managed_by: ``spec.managedBy``: ``trainer.kubeflow.org/trainjob-controller`` or
        ``kueue.x-k8s.io/multikueue``; None: unset (the first). Templated.
    :param active_deadline_seconds: seconds the TrainJob may be active, counted by the trainer from its start (again
        from each resume); then it fails with reason ``DeadlineExceeded``. An integer, 1 or more;
        ``spec.activeDeadlineSeconds``. None: no limit. Templated.
    :param job: a whole ``trainer.kubeflow.org/v1alpha1`` TrainJob: a mapping, its YAML/JSON text, or a
        ``TrainerV1alpha1TrainJob``; templated. Checked as the parts are (problems named by API path:
        ``job.spec.trainer.numNodes``); the provider names it (``job_name``, else the generated name, never its own
        ``metadata.name``), sets the namespace (``namespace``, else its ``metadata.namespace``, else the
        connection's), labels it, and drops and logs ``status``, server-written metadata, its own labels, annotations
        and runtime patch (a copy of a TrainJob it made), and the patches' ``time``.
    :param job_template_file: path of a YAML/JSON file holding a whole TrainJob, rendered with Jinja like any Airflow
        template file: absolute, or relative to the DAG's folder / ``template_searchpath``; templated.
    :param job_name: ``metadata.name``; default: generated from dag_id and task_id plus a hash of the task instance,
        the same on every try, at most 33 characters (its pods' names, ``<name>-<step>-0-<index>-<5 characters>``,
        stay within 63 on every upstream runtime: see :mod:`~airflow_trainjob.models.trainjob.names`).
    :param namespace: ``metadata.namespace``; default: the connection's ``namespace`` extra, else the worker pod's
        namespace when in-cluster, else ``default``. Templated.
    :param labels: extra ``metadata.labels`` of the TrainJob (key -> value; they do not reach its pods); templated.
    :param annotations: extra ``metadata.annotations`` (key -> value); templated. The provider's own keys
        (``airflow-trainjob/...``) are refused in ``labels`` and ``annotations``.
    :param queue_name: the Kueue ``LocalQueue`` to submit to: sets the label ``kueue.x-k8s.io/queue-name``; Kueue
        then holds the TrainJob suspended until the queue admits it. Templated.
    :param queue_timeout: seconds the TrainJob may wait in its queue (suspended) each time it enters it; then the task
        fails (retryable) and the TrainJob is deleted. None: no limit.
    :param kubernetes_conn_id: the cncf.kubernetes connection (as for ``TrainingJobOperator``).
    :param poll_interval: seconds between status reads when watching keeps failing.
    :param timeout: seconds the whole TrainJob may take from this try's create or attach; then the task fails and
        the TrainJob is deleted. None: no limit (``active_deadline_seconds`` still applies).
    :param startup_timeout: seconds from admission until the TrainJob runs; None: no limit.
    :param get_logs: follow node 0's ``node`` container's log into the task log.
    :param log_tail_lines: lines quoted from each failed node's log (count; 0: none).
    :param on_finish: ``keep_job``, ``delete_job`` or ``delete_succeeded_job`` (default: keep a failed TrainJob for
        inspection). A TrainJob has no ``cleanPodPolicy``: deleting it deletes its JobSet and pods with it (owner
        references), keeping it keeps them.
    :param reattach_on_restart: when this task instance's TrainJob from an earlier try is still running, follow it
        instead of starting over (it keeps its own pod token).
    :param durable: (``ResumableJobMixin``, Airflow 3.3+) as for ``TrainingJobOperator``.
    :param deferrable: wait in the triggerer instead of the worker; default: ``[operators] default_deferrable``.
    :param openlineage_inject_parent_job_info: give the trainer the task's OpenLineage run as its parent, in the
        environment variables the OpenLineage clients read (``OPENLINEAGE_PARENT_ID``, ``OPENLINEAGE_ROOT_PARENT_ID``,
        ``OPENLINEAGE_CONTEXT``), appended to ``trainer.env`` (``spec.trainer.env``, created when ``trainer`` is not
        given), which the trainer merges into the runtime's trainer containers (named ``node``), so the training's
        own lineage events link to this task. Not the initializers' containers, nor a runtime container of another
        name; a ``trainer.env`` that sets any of the three keeps its own, and a value the runtime sets is
        overridden, as ``trainer.env`` always overrides it. None (default): the openlineage provider's
        ``[openlineage] spark_inject_parent_job_info`` (default False). Nothing without the openlineage provider,
        or with OpenLineage disabled. See :mod:`~airflow_trainjob.operators.parent_run`.

    Returns, pushes and records what ``TrainingJobOperator`` does; the rendered ``manifest`` field is the TrainJob as
    sent, as YAML.

    :raises InvalidJobSpecError: bad input, before any API call (not retried): each problem names its field by
        parameter (``trainer.numNodes``) or API path (``job.spec.trainer.numNodes``).
    :raises TypeError: a ``kubeflow.org/v1`` part given (``kind``, ``replica_specs``, ``run_policy``, ``kind_fields``).
    :raises JobNotOwnedError: a TrainJob of that name belongs to something else (not retried).
    :raises AirflowFailException, TrainingJobError, TrainingJobTimeoutError, JobDeletedError,
        TrainingJobStoppedError, KindNotServedError, NamespaceNotFoundError, JobRejectedError: as for
        ``TrainingJobOperator`` (``KindNotServedError``: Trainer v2 is not installed; ``JobRejectedError``: the
        Trainer webhook refused the TrainJob, e.g. its runtime does not exist).
    """

    template_fields: Sequence[str] = (
        "job_name",
        "namespace",
        "runtime",
        "trainer",
        "initializer",
        "runtime_patches",
        "managed_by",
        "active_deadline_seconds",
        "job",
        "job_template_file",
        "queue_name",
        "labels",
        "annotations",
        "manifest",
    )
    template_fields_renderers = {
        "manifest": "yaml",
        "job": "yaml",
        "runtime": "yaml",
        "trainer": "yaml",
        "initializer": "yaml",
        "runtime_patches": "yaml",
        "labels": "json",
        "annotations": "json",
    }
    _job_fields: Sequence[str] = ("runtime", "trainer", "initializer", "runtime_patches", "job")

    def __init__(
        self,
        *,
        runtime: Any = None,
        trainer: Any = None,
        initializer: Any = None,
        runtime_patches: Any = None,
        suspend: bool | None = None,
        managed_by: str | None = None,
        active_deadline_seconds: int | None = None,
        job: Any = None,
        job_template_file: str | None = None,
        job_name: str | None = None,
        namespace: str | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        queue_name: str | None = None,
        queue_timeout: float | None = DEFAULTS.queue_timeout,
        kubernetes_conn_id: str | None = DEFAULTS.kubernetes_conn_id,
        poll_interval: float = DEFAULTS.poll_interval,
        timeout: float | None = DEFAULTS.timeout,
        startup_timeout: float | None = DEFAULTS.startup_timeout,
        get_logs: bool = DEFAULTS.get_logs,
        log_tail_lines: int = DEFAULTS.log_tail_lines,
        on_finish: str = DEFAULTS.on_finish,
        reattach_on_restart: bool = DEFAULTS.reattach_on_restart,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        openlineage_inject_parent_job_info: bool | None = None,
        **kwargs: Any,
    ) -> None:
        _refuse_v1_parts(kwargs)
        super().__init__(
            job_template_file=job_template_file,
            job_name=job_name,
            namespace=namespace,
            labels=labels,
            annotations=annotations,
            queue_name=queue_name,
            queue_timeout=queue_timeout,
            kubernetes_conn_id=kubernetes_conn_id,
            poll_interval=poll_interval,
            timeout=timeout,
            startup_timeout=startup_timeout,
            get_logs=get_logs,
            log_tail_lines=log_tail_lines,
            on_finish=on_finish,
            reattach_on_restart=reattach_on_restart,
            deferrable=deferrable,
            openlineage_inject_parent_job_info=openlineage_inject_parent_job_info,
            **kwargs,
        )
        # Plain data (models as their API form): Jinja renders inside it.
        self.runtime = api_form(runtime)
        self.trainer = api_form(trainer)
        self.initializer = api_form(initializer)
        self.runtime_patches = api_form(runtime_patches)
        self.job = api_form(job)
        self.suspend = suspend
        self.managed_by = managed_by
        self.active_deadline_seconds = active_deadline_seconds

    def _build_request(self, context: Mapping[str, Any], namespace: str | None = None) -> TrainingJobRequest:
        """The request of the try ``context`` names, from the parameters as rendered, with a new pod token (a
        TrainJob this try attaches to keeps its own).

        :raises InvalidJobSpecError: bad input, naming each field."""
        rendered = {**values_of(self, TRAINJOB), "job_name": self.job_name}
        return build_trainjob_request(
            rendered,
            TaskInstanceIdentity.from_context(context),
            self.hook,
            job_from_file=self._job_from_file,
            namespace=namespace,
            pod_token=secrets.token_hex(POD_TOKEN_BYTES),
        )
