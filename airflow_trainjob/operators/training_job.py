"""``TrainingJobOperator``: run one Kubeflow training job to its end from an Airflow task.

The operator holds the task's parameters and renders them; :mod:`~airflow_trainjob.operators.request` checks them
and builds the try's manifest, once (:class:`~airflow_trainjob.operators.request.TrainingJobRequest`); one
:class:`~airflow_trainjob.operators.run.TrainingJobRun` per try does the rest (create or attach, wait, verdict,
cleanup, summary), called by the entry points below in the order :mod:`airflow_trainjob.operators.run` states.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import jinja2
import yaml
from airflow.providers.common.compat.sdk import BaseOperator, ResumableJobMixin, conf

from airflow_trainjob.constants import CONDITION_FAILED
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.params import DEFAULTS, OPERATOR, RunSettings, values_of
from airflow_trainjob.domain.records import TrySeries
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.families import success_conditions
from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.links.training_job import TrainingJobLink
from airflow_trainjob.models.job import to_plain
from airflow_trainjob.operators.lineage import lineage_at_end, lineage_on_start
from airflow_trainjob.operators.parent_run import with_parent_run
from airflow_trainjob.operators.recorder import JobRecorder, rendered_manifest
from airflow_trainjob.operators.request import TrainingJobRequest, build_request
from airflow_trainjob.operators.run import JOB_GONE, JOB_NOT_REUSED, TrainingJobRun


class TrainingJobOperator(ResumableJobMixin, BaseOperator):
    """Create a Kubeflow training job, follow it to ``Succeeded`` or ``Failed``, and clean up.

    Give the job in parts (``kind``, ``replica_specs``, ``run_policy``, ``kind_fields``) or whole (``job`` or
    ``job_template_file``), not both.

    :param kind: ``PyTorchJob``, ``TFJob``, ``MPIJob``, ``XGBoostJob``, ``PaddleJob`` or ``JAXJob``; with a whole
        job, taken from it (if given too, it must match).
    :param replica_specs: replica type -> ``ReplicaSpec`` or dict (``replicas``, ``template``,
        ``restartPolicy``), or that mapping as a YAML/JSON string; the Kubeflow SDK's ``KubeflowOrgV1ReplicaSpec``
        too. ``spec.<kind>ReplicaSpecs``. Replica types in lower case (``master``) are read as the operator does.
    :param job: a whole ``kubeflow.org/v1`` job: a dict, its YAML/JSON text, or a Kubeflow SDK model
        (``KubeflowOrgV1PyTorchJob`` ...); templated. Validated as the parts are; the provider still names it
        (``job_name``, else the generated name: never its own ``metadata.name``, which every run would share), sets
        the namespace (``namespace``,
        else its ``metadata.namespace``, else the connection's), adds its ownership labels and holds the cleanup
        (see below), and logs each field it overrides or drops (``status``, server-set metadata).
    :param job_template_file: path of a YAML/JSON file holding a whole job, rendered with Jinja like any
        Airflow template file: absolute, or relative to the DAG's folder / ``template_searchpath``; templated.
    :param job_name: ``metadata.name``; default: generated from dag_id and task_id plus a hash of
        the task instance, the same on every try.
    :param namespace: default: the connection's ``namespace`` extra, else the worker pod's
        namespace when in-cluster, else ``default``.
    :param run_policy: ``RunPolicy``, dict or YAML/JSON string (``spec.runPolicy``); the SDK's
        ``KubeflowOrgV1RunPolicy`` too.
    :param kind_fields: the kind's own spec fields (e.g. ``{"nprocPerNode": "auto"}``).
    :param labels: extra ``metadata.labels`` (key -> value); templated.
    :param annotations: extra ``metadata.annotations`` (key -> value); templated. The provider's own keys
        (``airflow-trainjob/...``: the task instance's identity, as labels and unsanitised as annotations; also
        under ``airflow-trainjob.apache.org/``, the prefix of release 0.1.0) are refused in ``labels`` and
        ``annotations`` and dropped from a whole job.
    :param queue_name: the Kueue ``LocalQueue`` to submit to: sets the label ``kueue.x-k8s.io/queue-name``; Kueue's
        webhook then creates the job suspended (``runPolicy.suspend``) until the queue admits it. Templated.
    :param queue_timeout: seconds the job may wait in its queue (suspended) each time it enters it, counted
        from then; then the task fails (retryable) and the job is deleted. None: no limit.
    :param kubernetes_conn_id: the cncf.kubernetes connection; an id that names no connection is refused
        before any API call (``kubernetes_default`` may be undefined: in-cluster or default kubeconfig).
    :param poll_interval: seconds between status reads when watching the job keeps failing (or is not
        allowed); the wait watches the job, so this is a fallback, not the detection delay.
    :param timeout: seconds the whole job may take, counted from when this try created (or
        attached to) it; then the task fails and the job is deleted. None: no limit
        (``runPolicy.activeDeadlineSeconds`` still applies).
    :param startup_timeout: seconds from admission (from creation, for a job no queue holds) until the job
        must reach ``Running``; time spent queued (suspended) does not count. None: no limit.
    :param get_logs: follow the lead replica's log into the task log (deferred: the triggerer copies its new
        lines about once a minute while the task waits, the resumed task the rest, up to 8 MiB:
        :data:`~airflow_trainjob.domain.lead_log.LEAD_LOG_MAX_BYTES`).
    :param log_tail_lines: lines quoted from each failed replica's log on failure, and from the end of the
        lead replica's when a deferred task's copy of it passed 8 MiB (count; 0: none).
    :param on_finish: ``keep_job``, ``delete_job`` or ``delete_succeeded_job`` (default: keep a
        failed job for inspection). A job still running when the task ends is always deleted.
    :param reattach_on_restart: when this task instance's job from an earlier try is still running,
        follow it instead of starting over (a finished one is always replaced). ``False`` needs
        ``durable=False`` too (a durable retry reconnects); the two together are refused.
    :param durable: (``ResumableJobMixin``, Airflow 3.3+) store the job's identity in
        ``task_state_store`` so a retry after a worker crash reconnects to it, and a try that Airflow runs after the
        job succeeded (its scheduler's race, apache/airflow#72716; a worker lost after the cleanup) returns that
        success instead of training again, until the task is cleared (see
        :mod:`~airflow_trainjob.domain.earlier_success`); default True. False: every try creates its job.
    :param deferrable: wait in the triggerer (a shared watch, no worker slot) instead of watching from the
        worker; default: Airflow's ``[operators] default_deferrable``. The verdict, messages and
        cleanup are the same; the lead replica's log is copied in batches instead of streamed.
    :param openlineage_inject_parent_job_info: give every training container (each replica type's ``containers``,
        not ``initContainers``) the task's OpenLineage run as its parent, in the environment variables the
        OpenLineage clients read (``OPENLINEAGE_PARENT_ID``, ``OPENLINEAGE_ROOT_PARENT_ID``, ``OPENLINEAGE_CONTEXT``),
        so the training's own lineage events link to this task; a container that sets any of them keeps its own.
        None (default): the openlineage provider's ``[openlineage] spark_inject_parent_job_info`` (default False).
        Nothing without the openlineage provider, or with OpenLineage disabled. See
        :mod:`~airflow_trainjob.operators.parent_run`.

    Returns (XCom ``return_value``) a JSON-safe summary: kind, name, namespace, conditions,
    replicaStatuses, startTime, completionTime, duration (seconds). Pushes ``job_name`` and
    ``job_namespace`` at once, and the ``Training job`` extra link as soon as the job exists (see
    :class:`~airflow_trainjob.links.training_job.TrainingJobLink`). Records each try's job in
    ``task_state_store`` (see :mod:`airflow_trainjob.operators.recorder`), for the task instance's Training job tab.
    The rendered ``manifest`` field is the job as sent, as YAML, within Airflow's
    ``[core] max_templated_field_length`` (its longest strings shortened, and marked, when it is longer).

    :raises InvalidJobSpecError: bad input, before any API call (not retried).
    :raises JobNotOwnedError: a job of that name belongs to something else (not retried).
    :raises AirflowFailException: the job failed permanently (first failure exit code 1-127).
    :raises TrainingJobError: the job failed in a retryable way (128-255, OOMKilled, evicted).
    :raises TrainingJobTimeoutError: ``timeout``, ``startup_timeout`` or ``queue_timeout`` passed (saying so
        when no controller ever acted on the job, and which queue a queued job waited in).
    :raises JobDeletedError: the job was deleted (or replaced) outside this task before it finished.
    :raises TrainingJobStoppedError: Airflow stopped the task (cleared, marked, worker shutdown); its
        ``on_kill`` deleted the job.
    :raises KindNotServedError, NamespaceNotFoundError, JobRejectedError: the API refused the job (no
        CRD, no namespace, invalid or denied by admission); not retried. ``QuotaExceededError`` and
        ``KubernetesAccessError`` (RBAC, credentials) are retried. See :mod:`airflow_trainjob.hooks.api_errors`.

    ``cleanPodPolicy`` and ``ttlSecondsAfterFinished`` are held (sent as ``None`` and unset) and applied by
    the task once it has read the logs and the verdict: see :mod:`airflow_trainjob.domain.cleanup_hold`.
    """

    #: task_state_store key of the job's identity ({name, namespace, uid}); renaming it breaks in-flight retries.
    external_id_key = "airflow_trainjob_job"

    template_fields: Sequence[str] = (
        "job_name",
        "namespace",
        "replica_specs",
        "run_policy",
        "kind_fields",
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
        "replica_specs": "yaml",
        "run_policy": "yaml",
        "kind_fields": "yaml",
        "labels": "json",
        "annotations": "json",
    }
    ui_color = "#e4f0e8"
    operator_extra_links = (TrainingJobLink(),)
    #: The template fields that hold (parts of) the job: stored as YAML text once rendered (see _fields_as_text).
    _job_fields: Sequence[str] = ("replica_specs", "run_policy", "kind_fields", "job")

    def __init__(
        self,
        *,
        kind: str | None = None,
        replica_specs: Any = None,
        job: Any = None,
        job_template_file: str | None = None,
        job_name: str | None = None,
        namespace: str | None = None,
        run_policy: Any = None,
        kind_fields: Any = None,
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
        super().__init__(**kwargs)
        self.kind = kind
        self.replica_specs = to_plain(replica_specs, dump_models=True)  # plain data: Jinja renders inside it
        self.job = to_plain(job, dump_models=True)
        self.job_template_file = job_template_file
        self._job_from_file = False  # self.job was read from job_template_file (as rendered: see the request)
        self.job_name = job_name
        self.namespace = namespace
        self.run_policy = to_plain(run_policy, dump_models=True)
        self.kind_fields = to_plain(kind_fields, dump_models=True)
        self.labels = labels
        self.annotations = annotations
        self.queue_name = queue_name
        self.queue_timeout = queue_timeout
        self.kubernetes_conn_id = kubernetes_conn_id
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.get_logs = get_logs
        self.log_tail_lines = log_tail_lines
        self.on_finish = on_finish
        self.reattach_on_restart = reattach_on_restart
        self.deferrable = deferrable
        self.openlineage_inject_parent_job_info = openlineage_inject_parent_job_info
        #: The job object this task sends, as YAML text, for the rendered template view; set after rendering. Text,
        #: not a dict: Airflow's secret masker stops a few levels deep in a dict, a container's env is deeper.
        self.manifest: str | None = None
        #: The request of the try rendered last (or prepared: see :meth:`_prepare`), its manifest the one shown.
        self._request: TrainingJobRequest | None = None
        #: The current try's run (create or attach, wait, verdict, cleanup): see :meth:`_run_for`.
        self._run: TrainingJobRun | None = None

    @cached_property
    def hook(self) -> TrainingJobHook:
        return TrainingJobHook(kubernetes_conn_id=self.kubernetes_conn_id)

    # ---- input: one TrainingJobRequest per try (operators/request.py) ----------------------------------------

    @property
    def _manifest(self) -> dict[str, Any] | None:
        """The job as sent by the try of the request kept (the rendered one, or the one :meth:`_prepare` built); None
        before one, or when the input is invalid. Read by the ``Training job`` link."""
        return self._request.manifest if self._request is not None else None

    def _build_request(self, context: Mapping[str, Any], namespace: str | None = None) -> TrainingJobRequest:
        """The request of the try ``context`` names, from the parameters as rendered: checked and parsed once.

        :raises InvalidJobSpecError: bad input, naming each field."""
        rendered = {**values_of(self, OPERATOR), "job_name": self.job_name}
        return build_request(
            rendered,
            TaskInstanceIdentity.from_context(context),
            self.hook,
            job_from_file=self._job_from_file,
            namespace=namespace,
        )

    def _try_request(self, context: Mapping[str, Any]) -> TrainingJobRequest:
        """The request the try sends: :meth:`_build_request`'s, with the try's OpenLineage parent run in its training
        containers when asked (:func:`~airflow_trainjob.operators.parent_run.with_parent_run`).

        :raises InvalidJobSpecError: bad input, naming each field."""
        request = self._build_request(context)
        return with_parent_run(request, context, self.openlineage_inject_parent_job_info, self.log)

    def build_job(self, context: Mapping[str, Any], namespace: str) -> dict[str, Any]:
        """The manifest for this task instance (validated), with the cleanup held.

        :param context: the Airflow task context (its ``ti`` names the job and labels it as this try's).
        :param namespace: the job's ``metadata.namespace``.
        :raises InvalidJobSpecError: bad input, naming each field.
        """
        return self._build_request(context, namespace).manifest

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """Render as usual (and the file of ``job_template_file``), then build the manifest so the rendered template
        view shows the exact object sent. Invalid input leaves it empty here; ``execute`` raises the error."""
        super().render_template_fields(context, jinja_env)
        if self.job_template_file is not None and self.job is None:
            self.job = self._render_job_template_file(context, jinja_env)
            self._job_from_file = True
        self._fields_as_text()
        if "ti" not in context:
            return
        try:
            self._keep(self._try_request(context))  # execute sends it: built once per try
        except InvalidJobSpecError:
            self.manifest, self._request = None, None

    def _fields_as_text(self) -> None:
        """The rendered job fields as YAML text, which they are parsed from the same way. Airflow masks the secrets
        it knows of in what it stores of each rendered field, but in a dict only a few levels down: a container's
        ``env`` value sits deeper, and would be shown in clear."""
        for field in self._job_fields:
            value = getattr(self, field)
            if isinstance(value, (Mapping, list)):
                try:
                    setattr(self, field, yaml.safe_dump(value, sort_keys=False, default_flow_style=False))
                except yaml.YAMLError:
                    pass  # not plain data: left as it is, and refused by name when parsed

    def _keep(self, request: TrainingJobRequest) -> None:
        """Keep the try's request, and show its manifest in the rendered template view."""
        self._request = request
        # Within [core] max_templated_field_length: beyond it Airflow would cut the text mid-structure. The record
        # of the try keeps the whole manifest (the Training job tab).
        self.manifest = rendered_manifest(request.manifest)

    def _render_job_template_file(self, context: Any, jinja_env: Any = None) -> str:
        """The text of ``job_template_file``, rendered with the task's context as Airflow renders template files.

        :raises InvalidJobSpecError: no such file, or its Jinja does not render."""
        path = self.job_template_file
        if not isinstance(path, str) or not path:
            raise InvalidJobSpecError([f"job_template_file: must be a path (a string), got {path!r}"])
        env = jinja_env or self.get_template_env()
        try:
            if os.path.isabs(path):
                with open(path, encoding="utf-8") as f:
                    template = env.from_string(f.read())
            elif env.loader is None:
                raise jinja2.TemplateNotFound(f"{path} (a relative path is searched beside a DAG; this task has none)")
            else:
                template = env.get_template(path)  # the DAG's folder and template_searchpath
            return template.render(**context)
        except (OSError, jinja2.TemplateNotFound) as e:
            raise InvalidJobSpecError(
                [
                    f"job_template_file: cannot read {path!r} ({type(e).__name__}: {e}); give "
                    "an absolute path, or one relative to the DAG's folder or template_searchpath"
                ]
            ) from None
        except jinja2.TemplateError as e:
            raise InvalidJobSpecError([f"job_template_file: {path!r} does not render: {e}"]) from None

    # ---- the try: one TrainingJobRun, called in the order airflow_trainjob.operators.run states ----------

    def _run_for(self, context: Any) -> TrainingJobRun:
        """The run of the try ``context`` names: the one already under way for it, else a new one (which builds
        the manifest, through :meth:`_prepare`, when it first needs it)."""
        identity = TaskInstanceIdentity.from_context(context)
        if self._run is None or self._run.identity != identity:
            recorder = JobRecorder(
                context.get("task_state_store"),
                identity,
                self.kubernetes_conn_id,
                self.log,
                series=TrySeries.from_context(context),
            )
            self._run = TrainingJobRun(
                self.hook,
                identity,
                RunSettings.of(self),
                manifest=functools.partial(self._prepare, context),
                log=self.log,
                recorder=recorder,
            )
        return self._run

    def _push_link(self, context: Any) -> None:
        """Push the ``Training job`` extra link now the job exists: Airflow's task runner stores it only when the
        task ends, and the UI reads it from XCom (``XComOperatorLink``), so a synchronous run would show none while
        it runs. The runner's own push at the end writes the same URL again."""
        link = TrainingJobLink()
        try:
            url = link.get_link(self, ti_key=context["ti"])
        except ValueError as e:  # a URL template with an unknown placeholder: said, and the task goes on
            self.log.warning("No %s link: %s", link.name, e)
            return
        if url:
            context["ti"].xcom_push(key=link.xcom_key, value=url)

    def _prepare(self, context: Any) -> dict[str, Any]:
        """This try's manifest: the request rendering built for this try, else one built now (checked and parsed
        once); log its input notes; push ``job_name``/``job_namespace``. Called once per try, by its run."""
        request = self._request  # built by render_template_fields
        if request is None or request.identity != TaskInstanceIdentity.from_context(context):
            request = self._try_request(context)
            self._keep(request)
        for note in request.notes:
            self.log.info("Input: %s", note)
        context["ti"].xcom_push(key="job_name", value=request.name)
        context["ti"].xcom_push(key="job_namespace", value=request.namespace)
        return request.manifest

    def execute(self, context: Any) -> dict[str, Any]:
        run = self._run_for(context)
        # Airflow may run the task again after its job succeeded (apache/airflow#72716, a worker lost after the
        # cleanup): a retry of the same series returns that success instead of training again (earlier_success).
        reused = run.earlier_success() if getattr(self, "durable", False) else None
        if reused is not None:
            self._push_link(context)
            return reused
        if self.deferrable:
            run.create_or_attach()
            self._push_link(context)
            # Hand the wait to TrainingJobTrigger, with the deadlines counted from now (see admission).
            self.defer(trigger=run.trigger(), method_name="execute_complete")
        return self.execute_resumable(context)

    # ---- ResumableJobMixin: a retry after a worker crash reconnects to the job in task_state_store ----

    def submit_job(self, context: Any) -> dict[str, Any]:
        """Create this task instance's job (or attach to / replace the one it left): its identity,
        persisted by Airflow in ``task_state_store``."""
        run = self._run_for(context)
        run.create_or_attach()
        self._push_link(context)
        return run.external_id

    def get_job_status(self, external_id: Any, context: Any) -> str:
        """The stored job's phase (see :mod:`conditions`), ``Gone`` when it no longer exists as this task
        instance's job, or ``Succeeded, not this try's result`` for one that succeeded under an earlier try that
        ``execute`` did not reuse (a clear since: it is replaced)."""
        status = self._run_for(context).reconnect(external_id)
        if status not in (JOB_GONE, JOB_NOT_REUSED):
            self._push_link(context)
        return status

    def is_job_active(self, status: str) -> bool:
        return status not in (*success_conditions(), CONDITION_FAILED, JOB_GONE, JOB_NOT_REUSED)

    def is_job_succeeded(self, status: str) -> bool:
        return status in success_conditions()

    def poll_until_complete(self, external_id: Any, context: Any) -> Any:  # execute_resumable returns it on reconnect
        """Follow the job to its end, give the verdict, and clean up on every way out."""
        return self._run_for(context).wait(external_id)

    def get_job_result(self, external_id: Any, context: Any) -> dict[str, Any]:
        """The summary of the wait (a job that succeeded under an earlier try of the same series is returned by
        ``execute`` before the mixin runs: see :meth:`TrainingJobRun.earlier_success`)."""
        return self._run_for(context).result()

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the trigger fired: the same verdict, messages and cleanup as ``execute``.

        :param context: the Airflow task context.
        :param event: the trigger's event payload (``outcome``, ``message``, ``job``...; see
            :class:`~airflow_trainjob.triggers.training_job.TrainingJobTrigger`).
        """
        return self._run_for(context).complete(event)

    # ---- OpenLineage (the openlineage provider's listener calls these; see docs/lineage.md) ----------------------

    def get_openlineage_facets_on_start(self) -> Any:
        """The START event's lineage: the job facet of this try's manifest, the datasets (a TrainJob's initializer
        ``storageUri`` values and ``inlets`` as inputs, ``outlets`` as outputs). None without the openlineage provider.
        See :mod:`airflow_trainjob.operators.lineage`."""
        return lineage_on_start(self._manifest, self.inlets, self.outlets)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The COMPLETE event's lineage: as at the start, with the run facet of the job at its end.

        :param task_instance: the task instance (unused: the try's run holds what is described)."""
        return lineage_at_end(self._manifest, self._run, self.inlets, self.outlets)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """The FAIL event's lineage: as on completion, with the failure facet when the job failed (its failed
        replicas' exit codes and classes).

        :param task_instance: the task instance (unused: the try's run holds what is described)."""
        return lineage_at_end(self._manifest, self._run, self.inlets, self.outlets)

    def on_kill(self) -> None:
        """The task was killed (marked failed/success, cleared, or timed out): delete the job."""
        if self._run is not None:
            self._run.kill()
