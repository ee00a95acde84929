"""``TrainingJobOperator``: run one Kubeflow training job to its end from an Airflow task."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from functools import cached_property
from typing import Any

import jinja2
import yaml

from airflow.providers.common.compat.sdk import BaseOperator, ResumableJobMixin, conf
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob import conditions
from airflow_trainjob.admission import QUEUE_TIMEOUT, Deadlines, QueueState, queue_line, queue_state
from airflow_trainjob.api_errors import one_line
from airflow_trainjob.constants import (
    CONDITION_FAILED,
    CONDITION_SUCCEEDED,
    GROUP,
    JOB_KINDS,
    LABEL_KUEUE_QUEUE_NAME,
    LABEL_TRY_NUMBER,
)
from airflow_trainjob.cleanup_hold import hold, pods_to_stop, release_patch, user_run_policy
from airflow_trainjob.exceptions import (
    InvalidJobSpecError,
    JobDeletedError,
    JobNotOwnedError,
    TrainingJobError,
    TrainingJobStoppedError,
    TrainingJobTimeoutError,
)
from airflow_trainjob.hooks.retries import is_transient
from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.links.training_job import TrainingJobLink
from airflow_trainjob.job_watch import JobWatch
from airflow_trainjob.log_stream import LeadLogFollower
from airflow_trainjob.manifest import build_manifest
from airflow_trainjob.models.job import TrainingJobSpec, to_plain
from airflow_trainjob.models.whole_job import WholeJob, parse_whole_job
from airflow_trainjob.names import generate_job_name, max_job_name_length
from airflow_trainjob.ownership import (
    ANNOTATION_FOLLOWED_BY_TRY,
    RESERVED_LABELS,
    TaskInstanceIdentity,
    following_try,
)
from airflow_trainjob.pods import (
    container_ends,
    lead_pod,
    log_container,
    owned_by,
    pending_reasons,
    phase_of,
    pods_to_clean,
    replica_of,
    restart_counts,
)
from airflow_trainjob.triggers.training_job import DELETED, ERROR, FINISHED, TIMED_OUT, TrainingJobTrigger
from airflow_trainjob.verdict import announced_end, failure_exception, job_ref

#: What happens to the job object when the task ends (its pods follow ``runPolicy.cleanPodPolicy``).
ON_FINISH_OPTIONS = ("keep_job", "delete_job", "delete_succeeded_job")
#: Status of a stored job that no longer exists as this task instance's (deleted or replaced).
JOB_GONE = "Gone"
#: Seconds to wait for a replaced job to be gone before creating its successor.
REPLACE_TIMEOUT = 120.0
#: Longest time between two looks at a waiting job's pods (seconds): the job's watch wakes the wait at least this often.
POD_LOOK_SECONDS = 60.0
#: Seconds the status polling rides out an API that keeps failing transiently (an apiserver restart, a long
#: run of 5xx/resets) after each call's own retries are spent, before the task fails with the last error.
API_OUTAGE_TOLERANCE = 300.0


def _seconds_until_ttl(job: Mapping[str, Any], ttl: int) -> float | None:
    """Seconds until ``completionTime + ttl`` (negative once passed); None without a completionTime."""
    done = ((job.get("status") or {}).get("completionTime")) or ""
    try:
        finished = datetime.fromisoformat(done.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (finished - datetime.now(timezone.utc)).total_seconds() + ttl


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
    :param labels: extra ``metadata.labels``; ``annotations``: ``metadata.annotations``.
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
    :param get_logs: follow the lead replica's log into the task log (deferred: quote its last
        ``log_tail_lines`` lines at the end).
    :param log_tail_lines: lines quoted from each failed replica's log on failure, and from the lead
        replica's when deferred (count; 0: none).
    :param on_finish: ``keep_job``, ``delete_job`` or ``delete_succeeded_job`` (default: keep a
        failed job for inspection). A job still running when the task ends is always deleted.
    :param reattach_on_restart: when this task instance's job from an earlier try is still running,
        follow it instead of starting over (a finished one is always replaced). ``False`` needs
        ``durable=False`` too (a durable retry reconnects); the two together are refused.
    :param durable: (``ResumableJobMixin``, Airflow 3.3+) store the job's identity in
        ``task_state_store`` so a retry after a worker crash reconnects to it; default True.
    :param deferrable: wait in the triggerer (a shared watch, no worker slot) instead of watching from the
        worker; default: Airflow's ``[operators] default_deferrable``. The verdict, messages and
        cleanup are the same; the lead replica's log is quoted at the end instead of streamed.

    Returns (XCom ``return_value``) a JSON-safe summary: kind, name, namespace, conditions,
    replicaStatuses, startTime, completionTime, duration (seconds). Pushes ``job_name`` and
    ``job_namespace`` at once.

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
        ``KubernetesAccessError`` (RBAC, credentials) are retried. See :mod:`airflow_trainjob.api_errors`.

    ``cleanPodPolicy`` and ``ttlSecondsAfterFinished`` are held (sent as ``None`` and unset) and applied by
    the task once it has read the logs and the verdict: see :mod:`airflow_trainjob.cleanup_hold`.
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
        queue_timeout: float | None = None,
        kubernetes_conn_id: str = "kubernetes_default",
        poll_interval: float = 10.0,
        timeout: float | None = None,
        startup_timeout: float | None = 600.0,
        get_logs: bool = True,
        log_tail_lines: int = 50,
        on_finish: str = "delete_succeeded_job",
        reattach_on_restart: bool = True,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kind = kind
        self.replica_specs = to_plain(replica_specs, dump_models=True)  # plain data: Jinja renders inside it
        self.job = to_plain(job, dump_models=True)
        self.job_template_file = job_template_file
        self._job_from_file = False  # self.job was read from job_template_file
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
        #: The job object this task sends, as YAML text, for the rendered template view; set after rendering. Text,
        #: not a dict: Airflow's secret masker stops a few levels deep in a dict, a container's env is deeper.
        self.manifest: str | None = None
        self._manifest: dict[str, Any] | None = None  # the same, as sent
        self._job: dict[str, Any] | None = None  # the job this task created or attached to
        self._identity: TaskInstanceIdentity | None = None
        self._follower: LeadLogFollower | None = None
        self._seen_pods: dict[str, dict[str, Any]] = {}  # pod name -> last seen, for the verdict
        self._prepared = False
        self._manifest_for: TaskInstanceIdentity | None = None  # whose try self.manifest was rendered for
        self._result: dict[str, Any] | None = None
        self._stopped_by_airflow = False  # on_kill ran: a deletion seen after it is this task's own
        self._input_notes: list[str] = []  # what the provider normalised, dropped or overrode in the input

    @cached_property
    def hook(self) -> TrainingJobHook:
        return TrainingJobHook(kubernetes_conn_id=self.kubernetes_conn_id)

    # ---- input -------------------------------------------------------------------------------

    def _check_parameters(self) -> None:
        problems = []
        if not isinstance(self.namespace, (str, type(None))):
            problems.append(f"namespace: must be a DNS-1123 label (a string), or None for the connection's "
                            f"namespace; got {type(self.namespace).__name__}")
        if self.kubernetes_conn_id is not None and (not isinstance(self.kubernetes_conn_id, str) or not self.kubernetes_conn_id):
            problems.append(f"kubernetes_conn_id: must be the id of a kubernetes connection (a non-empty string), "
                            f"got {self.kubernetes_conn_id!r}")
        for field in ("get_logs", "reattach_on_restart", "deferrable", "durable"):
            value = getattr(self, field, False)
            if not isinstance(value, bool):
                problems.append(f"{field}: must be True or False, got {type(value).__name__} {value!r}")
        if self.reattach_on_restart is False and getattr(self, "durable", False) is True:
            problems.append("reattach_on_restart: False conflicts with durable=True, which makes a retry reconnect to "
                            "the running job it stored; allowed: reattach_on_restart=True, or durable=False with it")
        if not isinstance(self.on_finish, str) or self.on_finish not in ON_FINISH_OPTIONS:
            problems.append(f"on_finish: {self.on_finish!r} is not one of {', '.join(ON_FINISH_OPTIONS)}")
        for field in ("poll_interval", "timeout", "startup_timeout", "queue_timeout"):
            value = getattr(self, field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                problems.append(f"{field}: must be a positive number of seconds, got {value!r}")
        if isinstance(self.log_tail_lines, bool) or not isinstance(self.log_tail_lines, int) or self.log_tail_lines < 0:
            problems.append(f"log_tail_lines: must be a count (0 or more), got {self.log_tail_lines!r}")
        if self.labels is not None and not isinstance(self.labels, Mapping):
            problems.append(f"labels: must be a mapping of strings to strings, got {type(self.labels).__name__}")
        reserved = sorted(set(self.labels or {}) & set(RESERVED_LABELS)) if isinstance(self.labels, Mapping) else []
        if reserved:
            problems.append(f"labels: {', '.join(reserved)} are set by this provider to identify the task instance")
        problems += self._input_problems()
        if problems:
            raise InvalidJobSpecError(problems)
        self.hook.require_connection()

    def _input_problems(self) -> list[str]:
        """The job given in parts or whole, not both; a queue named once."""
        problems = []
        whole = [f for f in ("job", "job_template_file") if getattr(self, f) is not None]
        if self._job_from_file:
            whole = ["job_template_file"]  # self.job holds its rendered text
        parts = [f for f in ("replica_specs", "run_policy", "kind_fields") if getattr(self, f) is not None]
        if len(whole) > 1:
            problems.append("job, job_template_file: give one whole job, not both")
        if whole and parts:
            problems.append(f"{', '.join(parts)}: not allowed with {whole[0]}, which holds the whole job (its "
                            f"spec.<kind>ReplicaSpecs, spec.runPolicy and the kind's fields); give one or the other")
        if not whole and self.replica_specs is None:
            problems.append("replica_specs: required (or a whole job in job or job_template_file)")
        if not whole and self.kind is None:
            problems.append("kind: required with replica_specs (a whole job carries its own)")
        if self.job_template_file is not None and not isinstance(self.job_template_file, str):
            problems.append(f"job_template_file: must be a path (a string), got {type(self.job_template_file).__name__}")
        if self.queue_name is not None and (not isinstance(self.queue_name, str) or not self.queue_name):
            problems.append(f"queue_name: must be the name of a Kueue LocalQueue (a non-empty string), or None; "
                            f"got {self.queue_name!r}")
        if isinstance(self.labels, Mapping) and self.queue_name and LABEL_KUEUE_QUEUE_NAME in self.labels \
                and self.labels[LABEL_KUEUE_QUEUE_NAME] != self.queue_name:
            problems.append(f"labels: {LABEL_KUEUE_QUEUE_NAME}={self.labels[LABEL_KUEUE_QUEUE_NAME]!r} conflicts with "
                            f"queue_name={self.queue_name!r}; set the queue in one of them")
        return problems

    def _parse_input(self) -> tuple[TrainingJobSpec, WholeJob | None]:
        """The validated spec, and the whole job it came from (if given whole). :raises InvalidJobSpecError:"""
        if self.job is None:
            return TrainingJobSpec.parse(self.kind, self.replica_specs, self.run_policy, self.kind_fields), None
        path = "job_template_file" if self._job_from_file else "job"
        whole = parse_whole_job(self.job, path=path)
        if self.kind is not None and self.kind != whole.spec.kind.kind:
            raise InvalidJobSpecError([f"kind: {self.kind!r} differs from the {path}'s kind "
                                       f"{whole.spec.kind.kind!r}; leave kind unset with a whole job"])
        self.kind = whole.spec.kind.kind  # every API call below addresses the job's own kind
        return whole.spec, whole

    def _resolve_namespace(self) -> str:
        """``namespace``, else the whole job's ``metadata.namespace``, else the connection's."""
        if self.namespace is None and self.job is not None:
            _, whole = self._parse_input()
            if whole is not None and whole.namespace:
                return whole.namespace
        return self.hook.resolve_namespace(self.namespace)

    def build_job(self, context: Mapping[str, Any], namespace: str) -> dict[str, Any]:
        """The manifest for this task instance (validated; raises :class:`InvalidJobSpecError`)."""
        self._check_parameters()
        spec, whole = self._parse_input()
        identity = TaskInstanceIdentity.from_context(context)
        # Not a whole job's own metadata.name: copied YAML names every run's job alike (a second run would meet the
        # first one's job); the name rule gives each task instance its own, the same on every try.
        name = self.job_name or generate_job_name(
            identity.dag_id,
            identity.task_id,
            identity.run_id,
            identity.map_index,
            max_job_name_length(spec.highest_indexes()),
        )
        given_labels = {**(whole.labels if whole else {}), **(self.labels or {})}
        queue = {LABEL_KUEUE_QUEUE_NAME: self.queue_name} if self.queue_name else {}
        labels = {**given_labels, **queue, **identity.labels()}
        annotations = self.annotations  # anything but a mapping is refused, by name, in build_manifest
        if whole is not None and isinstance(annotations, (Mapping, type(None))):
            annotations = {**whole.annotations, **(annotations or {})} or None
        self._input_notes = [*spec.warnings, *(self._whole_job_notes(whole, name, namespace, given_labels)
                                               if whole else [])]
        if self.queue_name:
            self._input_notes.append(f"metadata.labels: {LABEL_KUEUE_QUEUE_NAME}={self.queue_name} (queue_name)")
        # Sent with the cleanup held (cleanPodPolicy None, no TTL): see cleanup_hold. The user's policy is applied
        # by the task once the logs and the verdict have been read.
        return hold(build_manifest(spec=spec, name=name, namespace=namespace, labels=labels,
                                   annotations=annotations))

    def _whole_job_notes(self, whole: WholeJob, name: str, namespace: str, labels: Mapping[str, str]) -> list[str]:
        """What the provider does to a whole job it was given, field by field, for the task log."""
        path = "job_template_file" if self._job_from_file else "job"
        notes = []
        if whole.name != name:
            why = "job_name" if self.job_name else ("the generated name, one per task instance and the same on every "
                                                   "try (set job_name to choose it)")
            notes.append(f"metadata.name: {name!r} from {why}" + (f", not {whole.name!r}" if whole.name else ""))
        if whole.namespace and whole.namespace != namespace:
            notes.append(f"metadata.namespace: {namespace!r} from the namespace parameter, not {whole.namespace!r}")
        elif whole.namespace:
            notes.append(f"metadata.namespace: {namespace!r} from the job (the namespace parameter overrides it)")
        overridden = sorted(k for k in RESERVED_LABELS if k in labels)
        if overridden:
            notes.append(f"metadata.labels: {', '.join(overridden)} replaced by this task instance's")
        notes.append(f"metadata.labels: {', '.join(RESERVED_LABELS)} added (this task instance's ownership)")
        notes.append("spec.runPolicy.cleanPodPolicy, ttlSecondsAfterFinished: held until the task has read the logs "
                     "and the verdict, then applied as written")
        if whole.ignored:
            notes.append(f"dropped: {', '.join(whole.ignored)} (written by the server, kubectl or this provider)")
        return [f"{path}: {n}" for n in notes]

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
            self._check_parameters()  # before the connection is read for the namespace
            self._show(self.build_job(context, self._resolve_namespace()))
            self._manifest_for = TaskInstanceIdentity.from_context(context)  # execute uses it: built once per try
        except InvalidJobSpecError:
            self.manifest = self._manifest = None

    def _fields_as_text(self) -> None:
        """The rendered job fields as YAML text, which they are parsed from the same way. Airflow masks the secrets
        it knows of in what it stores of each rendered field, but in a dict only a few levels down: a container's
        ``env`` value sits deeper, and would be shown in clear."""
        for field in ("replica_specs", "run_policy", "kind_fields", "job"):
            value = getattr(self, field)
            if isinstance(value, (Mapping, list)):
                try:
                    setattr(self, field, yaml.safe_dump(value, sort_keys=False, default_flow_style=False))
                except yaml.YAMLError:
                    pass  # not plain data: left as it is, and refused by name when parsed

    def _show(self, manifest: dict[str, Any]) -> None:
        self._manifest = manifest
        self.manifest = yaml.safe_dump(manifest, sort_keys=False, default_flow_style=False)

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
            raise InvalidJobSpecError([f"job_template_file: cannot read {path!r} ({type(e).__name__}: {e}); give "
                                       "an absolute path, or one relative to the DAG's folder or template_searchpath"]
                                      ) from None
        except jinja2.TemplateError as e:
            raise InvalidJobSpecError([f"job_template_file: {path!r} does not render: {e}"]) from None

    # ---- lifecycle ---------------------------------------------------------------------------

    def execute(self, context: Any) -> dict[str, Any]:
        if self.deferrable:
            self._job = self._create_or_attach(self._prepare(context))
            self._defer_to_trigger()
        return self.execute_resumable(context)

    def _prepare(self, context: Any) -> dict[str, Any]:
        """Validate and build this task instance's manifest; push ``job_name``/``job_namespace``. Once per try."""
        if self._prepared:
            return self._manifest
        self._identity = TaskInstanceIdentity.from_context(context)
        if self._manifest is not None and self._manifest_for == self._identity:
            manifest, namespace = self._manifest, self._manifest["metadata"]["namespace"]  # built by render_template_fields
        else:
            self._check_parameters()  # before the connection is read for the namespace
            namespace = self._resolve_namespace()
            manifest = self.build_job(context, namespace)
            self._show(manifest)
        for note in self._input_notes:
            self.log.info("Input: %s", note)
        context["ti"].xcom_push(key="job_name", value=manifest["metadata"]["name"])
        context["ti"].xcom_push(key="job_namespace", value=namespace)
        self._prepared = True
        return manifest

    # ---- ResumableJobMixin: a retry after a worker crash reconnects to the job in task_state_store ----

    def submit_job(self, context: Any) -> dict[str, Any]:
        """Create this task instance's job (or attach to / replace the one it left): its identity,
        persisted by Airflow in ``task_state_store``."""
        self._job = self._create_or_attach(self._prepare(context))
        meta = self._job["metadata"]
        return {"name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid")}

    def get_job_status(self, external_id: dict[str, Any], context: Any) -> str:
        """The stored job's phase (see :mod:`conditions`), or ``Gone`` when it no longer exists as this
        task instance's job."""
        self._prepare(context)
        try:
            job = self.hook.get_job(self.kind, external_id["name"], external_id["namespace"])
        except ApiException as e:
            if e.status == 404:
                return JOB_GONE
            raise
        if job["metadata"].get("uid") != external_id.get("uid") or not self._identity.owns(job):
            return JOB_GONE
        self._job = job
        return conditions.phase(job.get("status"))

    def is_job_active(self, status: str) -> bool:
        return status not in (CONDITION_SUCCEEDED, CONDITION_FAILED, JOB_GONE)

    def is_job_succeeded(self, status: str) -> bool:
        return status == CONDITION_SUCCEEDED

    def poll_until_complete(self, external_id: dict[str, Any], context: Any) -> dict[str, Any]:
        """Follow the job to its end, give the verdict, and clean up on every way out."""
        manifest = self._prepare(context)
        name, namespace = external_id["name"], external_id["namespace"]
        ref = f"{self.kind} {namespace}/{name}"
        outcome = "killed"
        try:
            self._job = self._follow(self._job)  # reconnected through task_state_store: this try follows it now
            if self.get_logs:
                self._follower = LeadLogFollower(self.hook, JOB_KINDS[self.kind], name, namespace, self.log)
                self._follower.start()
            final = self._wait(ref, manifest)
            self._stop_pods_at_terminal(final)
            self._stop_follower(drain=True)
            if not conditions.is_succeeded(final.get("status")):
                outcome = "failed"
                raise failure_exception(self.hook, final, self.log_tail_lines, self._seen_pods.values())
            self.log.info("%s succeeded", ref)
            self._result = self._summary(final)
        except BaseException:
            self._stop_follower()
            self._cleanup_keeping_verdict(outcome)
            raise
        self._cleanup("succeeded")
        return self._result

    def get_job_result(self, external_id: dict[str, Any], context: Any) -> dict[str, Any]:
        """The summary; for a job that already succeeded under an earlier try, also the cleanup that
        try's worker did not live to do."""
        if self._result is not None:
            return self._result
        job = self._job
        try:
            return self._summary(job)
        finally:
            self._cleanup("succeeded")

    def _defer_to_trigger(self) -> None:
        """Hand the wait to :class:`TrainingJobTrigger`, with the deadlines counted from now (see :mod:`admission`)."""
        meta = self._job["metadata"]
        self.defer(
            trigger=TrainingJobTrigger(
                kind=self.kind,
                name=meta["name"],
                namespace=meta["namespace"],
                uid=meta.get("uid"),
                kubernetes_conn_id=self.kubernetes_conn_id,
                started_at=time.time(),
                timeout=self.timeout,
                startup_timeout=self.startup_timeout,
                queue_timeout=self.queue_timeout,
                poll_interval=self.poll_interval,
                owner_labels={k: v for k, v in self._identity.labels().items() if k != LABEL_TRY_NUMBER},
                try_number=self._identity.try_number,
                log_tail_lines=self.log_tail_lines if self.get_logs else 0,
            ),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the trigger fired: the same verdict, messages and cleanup as ``execute``."""
        self._identity = TaskInstanceIdentity.from_context(context)
        job = event.get("job")
        if event["outcome"] == ERROR and job is None:
            # The trigger gave up on watching, not the job on running: read it here. A finished job still gets
            # its verdict; a running one is deleted below with the task's failure, like any synchronous error.
            job = self._read_own_job(context, event["message"])
            if conditions.is_terminal(job.get("status")):
                event = {**event, "outcome": FINISHED, "pods": []}
        if event["outcome"] == DELETED or job is None:
            raise JobDeletedError(event["message"])
        self._job = job
        outcome = "killed"
        try:
            if event["outcome"] == TIMED_OUT:
                name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
                which = event.get("which", "timeout")
                pods = self.hook.list_job_pods(name, namespace)
                raise self._timeout(which, getattr(self, which) or 0, job_ref(job), job.get("status"), pods,
                                    queue_state(job))
            if event["outcome"] != FINISHED:
                raise TrainingJobError(event["message"])
            ref = job_ref(job)
            self.log.info("%s", event["message"])
            # The trigger sends pods only for a failed job (and none if it could not list them): look now.
            pods = event.get("pods") or self._list_pods_if_any(job)
            if self.get_logs:
                self._quote_lead_log(job, pods, event.get("lead_log"))
            if not conditions.is_succeeded(job.get("status")):
                outcome = "failed"
                raise failure_exception(self.hook, job, self.log_tail_lines, pods)
            self.log.info("%s succeeded", ref)
            summary = self._summary(job)
        except BaseException:
            self._cleanup_keeping_verdict(outcome)
            raise
        self._cleanup("succeeded")
        return summary

    def _read_own_job(self, context: Any, message: str) -> dict[str, Any]:
        """This task instance's job as the API has it now. :raises JobDeletedError: it is gone or not ours."""
        meta = self._prepare(context)["metadata"]
        try:
            job = self.hook.get_job(self.kind, meta["name"], meta["namespace"])
        except ApiException as e:
            if e.status == 404:
                raise JobDeletedError(message) from e
            raise
        if not self._identity.owns(job):
            raise JobDeletedError(message)
        return job

    def _list_pods_if_any(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            return self.hook.list_job_pods(job["metadata"]["name"], job["metadata"]["namespace"])
        except ApiException as e:
            self.log.warning("Could not list the pods of %s: %s %s", job_ref(job), e.status, e.reason)
            return []

    def _quote_lead_log(self, job: dict[str, Any], pods: list[dict[str, Any]], read: dict[str, str] | None) -> None:
        """Deferred jobs have no live log: quote the end of the lead replica's log — as the trigger read it before
        stopping its pod, else from the pod (held until the task's cleanup)."""
        kind = JOB_KINDS[job["kind"]]
        if not self.log_tail_lines:  # 0 quotes none, as for failed replicas (not the whole log)
            return
        pod = lead_pod(pods, kind)
        if read:
            name, text = read["pod"], read["text"]
        elif pod is not None:
            name = pod["metadata"]["name"]
            try:
                text = self.hook.read_pod_log(name, job["metadata"]["namespace"], log_container(pod, kind),
                                              tail_lines=self.log_tail_lines)
            except ApiException as e:
                self.log.warning("The lead replica's log is gone (%s): %s", name, one_line(e))
                return
        else:
            self.log.warning("No lead replica's log to quote: %s has no lead pod any more", job_ref(job))
            return
        label = next((f"{t}-{i}" for p in pods if p["metadata"]["name"] == name for t, i in [replica_of(p, kind)]), name)
        self.log.info("Last %d lines of the lead replica's log (%s, pod %s):", self.log_tail_lines, label, name)
        for line in text.splitlines():
            self.log.info("[%s] %s", label, line)

    def on_kill(self) -> None:
        """The task was killed (marked failed/success, cleared, or timed out): delete the job."""
        self._stopped_by_airflow = True
        self._stop_follower()
        self._cleanup("killed")

    def _stop_pods_at_terminal(self, job: dict[str, Any]) -> None:
        """The job is terminal: stop the pods its user's ``cleanPodPolicy`` has the controller stop at that moment
        (Pending and Running ones, for ``Running`` and ``All``), which the held policy kept running. Best effort:
        the cleanup at the end of the task deletes whatever is left."""
        meta = job["metadata"]
        policy = user_run_policy(job)
        try:
            pods = self.hook.list_job_pods(meta["name"], meta["namespace"])
            stopping = [p for p in pods_to_stop(pods, policy) if owned_by(p, meta.get("uid"))]
            for pod in stopping:
                self.hook.delete_pod(pod["metadata"]["name"], meta["namespace"], uid=pod["metadata"].get("uid"))
        except Exception as e:  # noqa: BLE001 - the verdict comes first; the cleanup tries again
            self.log.warning("Could not stop the running pods of %s now (%s); the cleanup will", job_ref(job), one_line(e))
            return
        if stopping:
            self.log.info("%s is %s: stopping %s (pods deleted), as cleanPodPolicy %s asks", job_ref(job),
                          conditions.phase(job.get("status")), ", ".join(p["metadata"]["name"] for p in stopping),
                          policy.clean_pod_policy)

    def _create_or_attach(self, manifest: dict[str, Any]) -> dict[str, Any]:
        meta = manifest["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        try:
            job = self.hook.create_job(manifest)
            self.log.info("Created %s %s/%s", self.kind, namespace, name)
            return job
        except ApiException as e:
            if e.status != 409:
                raise
        try:
            existing = self.hook.get_job(self.kind, name, namespace)
        except ApiException as e:
            if e.status != 404:
                raise
            return self.hook.create_job(manifest)  # deleted between our create and get
        identity = self._identity
        if not identity.owns(existing):
            raise JobNotOwnedError(
                f"A {self.kind} named {namespace}/{name} already exists and is not labelled as this task "
                f"instance's (dag_id={identity.dag_id}, task_id={identity.task_id}, run_id={identity.run_id}, "
                f"map_index={identity.map_index}); it was left untouched. Set another job_name or remove it."
            )
        finished = conditions.is_terminal(existing.get("status"))
        same_try = identity.created_by_this_try(existing)
        deleting = bool(existing["metadata"].get("deletionTimestamp"))  # e.g. by the killed try before this one
        if not finished and not deleting and (same_try or self.reattach_on_restart):
            self.log.info("Attaching to %s %s/%s, still %s, created by try %s", self.kind, namespace, name,
                          conditions.phase(existing.get("status")), existing["metadata"]["labels"].get(LABEL_TRY_NUMBER))
            return self._follow(existing)
        self.log.info("Replacing %s %s/%s left by an earlier try (%s%s)", self.kind, namespace, name,
                      conditions.phase(existing.get("status")), ", being deleted" if deleting else "")
        if not deleting:
            self.hook.delete_job(self.kind, name, namespace, uid=existing["metadata"]["uid"], propagation="Foreground")
        deadline = time.monotonic() + REPLACE_TIMEOUT
        while time.monotonic() < deadline:
            try:
                self.hook.get_job(self.kind, name, namespace)
            except ApiException as e:
                if e.status == 404:
                    job = self.hook.create_job(manifest)
                    self.log.info("Created %s %s/%s", self.kind, namespace, name)
                    return job
                raise
            time.sleep(1.0)
        raise TrainingJobError(f"{self.kind} {namespace}/{name} of an earlier try was not gone after {REPLACE_TIMEOUT:.0f} s")

    def _follow(self, job: dict[str, Any]) -> dict[str, Any]:
        """Record on ``job`` that this try follows it now, so that an earlier try killed late (a clear that races
        this try) leaves it alone (see :meth:`TaskInstanceIdentity.follows`). Returns the job as it is now."""
        if self._identity.follows(job):
            return job
        meta = job["metadata"]
        patch = {"metadata": {"uid": meta.get("uid"),
                              "annotations": {ANNOTATION_FOLLOWED_BY_TRY: str(self._identity.try_number)}}}
        try:
            return self.hook.patch_job(self.kind, meta["name"], meta["namespace"], patch)
        except Exception as e:  # noqa: BLE001 - following it matters more; only a late kill of an older try is unguarded
            self.log.warning("Could not record on %s that try %d follows it (%s)", job_ref(job),
                             self._identity.try_number, one_line(e))
            return job

    def _wait(self, ref: str, manifest: dict[str, Any]) -> dict[str, Any]:
        """Follow the job by a watch until it is terminal; log each change; enforce the timeouts.

        :returns: the job's last state: terminal, also when the job was deleted right after it finished.
        :raises JobDeletedError: the job vanished while its last state seen was not terminal.
        :raises TrainingJobStoppedError: ... because this task's own ``on_kill`` deleted it.
        """
        kind = JOB_KINDS[self.kind]
        desired = {t: s.get("replicas", 1) for t, s in manifest["spec"][kind.replica_specs_key].items()}
        deadlines = Deadlines(started_at=time.time(), timeout=self.timeout, startup_timeout=self.startup_timeout,
                              queue_timeout=self.queue_timeout)
        last_line, last_restarts = None, {}

        def look_within() -> float:
            # The next deadline, and at least every POD_LOOK_SECONDS a look at the pods: a container restarted in
            # place (OnFailure) changes nothing in the job's status.
            left = deadlines.seconds_left(time.time())
            return min(POD_LOOK_SECONDS, left + 0.05) if left is not None else POD_LOOK_SECONDS

        watch = JobWatch(self.hook, self._job, poll_interval=self.poll_interval,
                         outage_tolerance=API_OUTAGE_TOLERANCE, log=self.log)
        for seen in watch.follow(look_within):
            job, status = seen.job, seen.job.get("status")
            if seen.deleted or self._stopped_by_airflow:
                job = self._final_state(ref, seen)
                self.log.info("%s was deleted outside this task right after it finished: %s", ref,
                              conditions.summary(job.get("status")))
                return job
            now = time.time()
            turn = deadlines.observe(job, now)
            line = f"{ref}: {conditions.summary(status, desired)}"
            if line != last_line:
                self.log.info("%s", line)
                last_line = line
            if deadlines.due(turn, now):
                (self.log.warning if turn == "requeued" else self.log.info)("%s", queue_line(ref, deadlines, turn, now))
            pods = self._look_at_pods(manifest)
            if pods is not None:
                self._seen_pods.update((p["metadata"]["name"], p) for p in pods)
                last_restarts = self._warn_on_restarts(pods, last_restarts)
            if conditions.is_terminal(status):
                return job
            passed = deadlines.passed(now)
            if passed is not None:
                raise self._timeout(*passed, ref, status, pods or [], deadlines.state)
        raise JobDeletedError(f"{ref}: the watch ended before the job did")  # follow() ends only on a deletion

    def _final_state(self, ref: str, seen: Any) -> dict[str, Any]:
        """The job's last state, once it is gone: the one seen when it was terminal, else the terminal condition
        the training operator announced in its events (a deletion the watch could not see, e.g. while polling).

        :raises TrainingJobStoppedError: this task's own ``on_kill`` deleted it.
        :raises JobDeletedError: it was deleted (or replaced) before it finished."""
        if self._stopped_by_airflow:
            raise TrainingJobStoppedError(
                f"{ref}: this task was stopped by Airflow (cleared, marked failed or success, or its worker shut "
                f"down) while the job was {conditions.phase(seen.job.get('status'))}; it deleted the job and its "
                "pods on the way out")
        if seen.replaced:
            raise JobDeletedError(f"{ref} was deleted outside this task and replaced by another object")
        if conditions.is_terminal(seen.job.get("status")):
            return seen.job
        try:
            announced = announced_end(self.hook, seen.job)
        except Exception as e:  # noqa: BLE001 - the events only add to what was seen; without them it is a deletion
            self.log.warning("Could not read the events of %s (%s)", ref, one_line(e))
            announced = None
        if announced is not None:
            return announced
        raise JobDeletedError(
            f"{ref} was deleted outside this task before it finished (last seen "
            f"{conditions.summary(seen.job.get('status'))})")

    def _look_at_pods(self, manifest: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The job's pods now, or None when the API cannot say right now (the job's watch decides the wait)."""
        meta = manifest["metadata"]
        try:
            return self.hook.list_job_pods(meta["name"], meta["namespace"])
        except ApiException as e:
            if is_transient(e):
                return None
            raise
        except (HTTPError, OSError):
            return None

    def _warn_on_restarts(self, pods: list[dict[str, Any]], before: dict[str, int]) -> dict[str, int]:
        kind = JOB_KINDS[self.kind]
        now = restart_counts(pods)
        for pod_name, count in now.items():
            if count > before.get(pod_name, 0):
                ends = [e for e in container_ends(pods, kind) if e.pod == pod_name and e.restarted]
                why = ends[-1].describe() if ends else pod_name
                self.log.warning("Replica restarted (restart %d): %s", count, why)
        return now

    def _timeout(self, which: str, seconds: float, ref: str, status: Any, pods: list,
                 queue: QueueState | None = None) -> TrainingJobTimeoutError:
        pending = pending_reasons(pods, JOB_KINDS[self.kind])
        name, namespace = self._job["metadata"]["name"], self._job["metadata"]["namespace"]
        try:
            warnings = [f"{e.get('reason')}: {e.get('message', '')}" for e in self.hook.list_events(namespace, {name})
                        if e.get("type") == "Warning"][-3:]
        except ApiException:
            warnings = []  # the timeout is the news; its explanation is best effort
        if which == QUEUE_TIMEOUT:
            where = queue.where() if queue else "its queue"
            return TrainingJobTimeoutError(
                f"{ref}: queue_timeout of {seconds:g} s passed while the job waited in {where}, suspended and not "
                f"admitted (for Kueue's reason: kubectl get workloads.kueue.x-k8s.io -n {namespace}); the job was "
                "deleted" + (f"; warnings: {' | '.join(warnings)}" if warnings else ""))
        if not conditions.controller_has_acted(status) and not pods:
            return TrainingJobTimeoutError(
                f"{ref}: {which} of {seconds:g} s passed and no controller has acted on the job (no status, no "
                f"pods): the Kubeflow training operator may not be running, or not watching namespace {namespace} "
                f"(its --namespace flag), or not serving {self.kind} (--enable-scheme); the job was deleted"
                + (f"; warnings: {' | '.join(warnings)}" if warnings else ""))
        return TrainingJobTimeoutError(
            f"{ref}: {which} of {seconds:g} s passed; last state: {conditions.summary(status)}"
            + (f"; pending: {' | '.join(pending)}" if pending else "")
            + (f"; warnings: {' | '.join(warnings)}" if warnings else "")
        )

    def _summary(self, job: dict[str, Any]) -> dict[str, Any]:
        status = job.get("status") or {}
        start, end = status.get("startTime"), status.get("completionTime")
        duration = None
        if start and end:
            duration = (datetime.fromisoformat(end.replace("Z", "+00:00"))
                        - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
        return {
            "kind": job["kind"],
            "name": job["metadata"]["name"],
            "namespace": job["metadata"]["namespace"],
            "conditions": status.get("conditions") or [],
            "replicaStatuses": status.get("replicaStatuses") or {},
            "startTime": start,
            "completionTime": end,
            "duration": duration,
        }

    # ---- cleanup -----------------------------------------------------------------------------

    def _stop_follower(self, drain: bool = False) -> None:
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.finish() if drain else follower.stop()

    def _cleanup_keeping_verdict(self, outcome: str) -> None:
        """Clean up after a verdict that is an exception (failed, timed out, killed, an error). A cleanup that fails
        is logged, never raised in the verdict's place: it would turn a permanent failure into a retry that runs
        the job again. (After a success a failed cleanup is raised: the retry reconnects and finishes it.)"""
        job = self._job
        try:
            self._cleanup(outcome)
        except Exception as e:  # noqa: BLE001 - whatever broke the cleanup, the verdict stands
            ref = job_ref(job) if job else "the job"
            self.log.error("Could not clean up %s after the task's verdict (%s): the job and its pods may remain; "
                           "the verdict below stands", ref, one_line(e))

    def _cleanup(self, outcome: str) -> None:
        """Apply ``cleanPodPolicy`` to the job's pods, then ``on_finish`` to the job. A job that is
        still running is deleted whatever ``on_finish`` says. Touches only this task instance's job."""
        job, self._job = self._job, None  # once: on_kill and execute's finally may both get here
        if job is None:
            return
        meta = job["metadata"]
        name, namespace, uid = meta["name"], meta["namespace"], meta.get("uid")
        try:
            current = self.hook.get_job(self.kind, name, namespace)
        except ApiException as e:
            if e.status == 404:
                return
            raise
        if current["metadata"].get("uid") != uid or not self._identity.owns(current):
            self.log.warning("Not cleaning up %s/%s: it is no longer the job this task created", namespace, name)
            return
        if outcome == "killed" and not self._identity.follows(current):
            self.log.warning("Not deleting %s %s/%s: try %s of this task follows it now", self.kind, namespace, name,
                             following_try(current))
            return
        policy = user_run_policy(current)
        running = not conditions.is_terminal(current.get("status"))
        left_running: list[str] = []
        if not running:  # a running job goes whole (its pods by garbage collection): no pod dies before it
            pods = [p for p in self.hook.list_job_pods(name, namespace) if owned_by(p, uid)]
            cleaned = pods_to_clean(pods, policy.clean_pod_policy)
            for pod in cleaned:
                self.hook.delete_pod(pod["metadata"]["name"], namespace, uid=pod["metadata"].get("uid"))
            left_running = [p["metadata"]["name"] for p in pods
                            if p not in cleaned and phase_of(p) in ("Pending", "Running")]
        if running or self.on_finish == "delete_job" or (self.on_finish == "delete_succeeded_job" and outcome == "succeeded"):
            self.log.info("Deleting %s %s/%s (%s)%s", self.kind, namespace, name,
                          "not finished" if running else self.on_finish,
                          f"; its pods still running stop with it: {', '.join(left_running)}" if left_running else "")
            self.hook.delete_job(self.kind, name, namespace, uid=uid)
            return
        patch = release_patch(current)
        if patch is not None:
            # The runPolicy as the user wrote it: the controller now applies ttlSecondsAfterFinished (counted from
            # completionTime) and cleanPodPolicy itself. The uid makes the patch a precondition: never a successor.
            patch["metadata"]["uid"] = uid
            try:
                self.hook.patch_job(self.kind, name, namespace, patch)
            except Exception as e:  # noqa: BLE001 - the job is finished and its pods cleaned: only the TTL is lost
                self.log.warning("Could not give %s %s/%s back its runPolicy (%s): it keeps cleanPodPolicy None and "
                                 "no ttlSecondsAfterFinished", self.kind, namespace, name, one_line(e))
        ttl = policy.ttl_seconds_after_finished
        fate = f"remove it with: kubectl delete {JOB_KINDS[self.kind].plural}.{GROUP} {name} -n {namespace}"
        if ttl is not None:
            left = _seconds_until_ttl(current, ttl)
            fate = (f"the training operator deletes it {ttl} s after it finished (ttlSecondsAfterFinished)"
                    + (f", in about {left:.0f} s" if left and left > 0 else ", now: that time has passed"))
        self.log.info("Keeping %s %s %s/%s for inspection (on_finish=%r; its pods follow cleanPodPolicy %s); %s",
                      conditions.phase(current.get("status")), self.kind, namespace, name, self.on_finish,
                      policy.clean_pod_policy, fate)
