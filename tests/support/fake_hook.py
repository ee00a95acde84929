"""An in-memory stand-in for :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook`, for unit tests of the
operator's branches without a cluster.

A dict-backed store of jobs, pods, events and logs with the hook's method names and answers: ``create_job`` of an
existing name raises ``ApiException(409)``, ``get_job`` of a missing one ``ApiException(404)``, ``delete_job`` and
``delete_pod`` return False for a missing object and raise 409 when a ``uid`` precondition does not hold, a job's
deletion takes its pods with it (garbage collection). Tests script the rest:

- :meth:`FakeTrainingJobHook.fail` queues errors that the next calls of a method raise, in order;
- :meth:`FakeTrainingJobHook.on_get` queues steps run before the next ``get_job`` answers (a job that changes
  between two looks, or vanishes between a 409 and the read);
- ``calls`` records each call as ``(method, args...)``.

The hook's watch clients (``custom_object_client``, ``core_v1_client``) refuse every watch with 403, so a real
:class:`~airflow_trainjob.watching.job_watch.JobWatch` on this hook reads the job with ``get_job`` every ``poll_interval``,
and a real :class:`~airflow_trainjob.watching.job_watch.PodFeed` lists the pods once, then every ``POD_LOOK_SECONDS``.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from kubernetes.client.exceptions import ApiException

from airflow_trainjob.constants import JOB_KINDS, LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE

#: Epoch seconds of the first line of a fake pod's log (:meth:`FakeTrainingJobHook.read_timestamped_log`).
LOG_START = 1_796_000_000

REASONS = {
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def api_error(status: int) -> ApiException:
    """An ``ApiException`` as the client raises it for an answer with this HTTP status."""
    return ApiException(status=status, reason=REASONS.get(status, "Error"))


def condition(
    condition_type: str, status: str = "True", reason: str = "", message: str = "", at: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    return {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
        "lastUpdateTime": at,
    }


def job_status(
    *types: str,
    kind: str = "PyTorchJob",
    replica_statuses: dict | None = None,
    start: str | None = "2026-01-01T00:00:00Z",
    end: str | None = None,
) -> dict[str, Any]:
    """A status whose conditions are ``types``, each true (``Created``, ``Running``, ``Succeeded``...)."""
    status: dict[str, Any] = {
        "conditions": [condition(t, reason=f"{kind}{t}", message=f"{kind} is {t.lower()}") for t in types]
    }
    if replica_statuses is not None:
        status["replicaStatuses"] = replica_statuses
    if start:
        status["startTime"] = start
    if end:
        status["completionTime"] = end
    return status


class _WatchRefused:
    """``custom_object_client`` and ``core_v1_client``: a watch is refused (403), as for a Role without ``watch``."""

    def __init__(self, hook: FakeTrainingJobHook) -> None:
        self._hook = hook

    def list_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> Any:
        self._hook.calls.append(("watch", *args))
        raise api_error(403)

    def list_namespaced_pod(self, *args: Any, **kwargs: Any) -> Any:
        self._hook.calls.append(("watch_pods", *args))
        raise api_error(403)


class FakeLogStream:
    """What ``open_pod_log_stream`` returns: ``stream()`` yields the log's bytes; ``release_conn``/``close``."""

    def __init__(self, text: str) -> None:
        self._data = text.encode()
        self.connection = None

    def stream(self, decode_content: bool = True) -> Iterable[bytes]:
        yield self._data

    def release_conn(self) -> None:
        pass

    def close(self) -> None:
        pass


class FakeTrainingJobHook:
    """The sync hook's methods over in-memory objects (API JSON dicts). See the module docstring."""

    def __init__(self, namespace: str = "default", conn_id: str = "kubernetes_default") -> None:
        self.namespace = namespace
        self.conn_id = conn_id
        self.conn_extras: dict[str, Any] = {}
        self.jobs: dict[tuple[str, str], dict[str, Any]] = {}
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.logs: dict[str, str] = {}  # pod name -> its log
        self.calls: list[tuple[Any, ...]] = []
        self.custom_object_client = self.core_v1_client = _WatchRefused(self)
        self._failures: dict[str, list[BaseException]] = {}
        self._always: dict[str, BaseException] = {}
        self._get_steps: list[Callable[[FakeTrainingJobHook], None]] = []
        self._uids = (f"uid-{n}" for n in itertools.count(1))
        self._versions = itertools.count(1)

    # ---- scripting ----------------------------------------------------------------------------

    def fail(self, method: str, *errors: BaseException) -> None:
        """The next ``len(errors)`` calls of ``method`` raise these, in order."""
        self._failures.setdefault(method, []).extend(errors)

    def fail_always(self, method: str, error: BaseException | None) -> None:
        """Every call of ``method`` raises ``error`` (after the queued ones), until called with None."""
        if error is None:
            self._always.pop(method, None)
        else:
            self._always[method] = error

    def on_get(self, *steps: Callable[[FakeTrainingJobHook], None]) -> None:
        """Run one step before each of the next ``get_job`` answers (after any queued failure)."""
        self._get_steps.extend(steps)

    def _call(self, method: str, *args: Any) -> None:
        self.calls.append((method, *args))
        queued = self._failures.get(method)
        if queued:
            raise queued.pop(0)
        if method in self._always:
            raise self._always[method]

    def called(self, method: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == method]

    # ---- the store ------------------------------------------------------------------------------

    def put_job(self, job: dict[str, Any]) -> dict[str, Any]:
        """Store ``job`` as the API would (uid, resourceVersion); returns a copy of the stored object."""
        stored = copy.deepcopy(job)
        meta = stored.setdefault("metadata", {})
        meta.setdefault("namespace", self.namespace)
        meta.setdefault("uid", next(self._uids))
        meta["resourceVersion"] = str(next(self._versions))
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        self.jobs[(meta["namespace"], meta["name"])] = stored
        return copy.deepcopy(stored)

    def job(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.jobs.get((namespace or self.namespace, name))

    def set_status(self, name: str, status: dict[str, Any], namespace: str | None = None) -> None:
        job = self.jobs[(namespace or self.namespace, name)]
        job["status"] = copy.deepcopy(status)
        job["metadata"]["resourceVersion"] = str(next(self._versions))

    def remove_job(self, name: str, namespace: str | None = None) -> None:
        """Delete the job (and its pods) behind the task's back."""
        namespace = namespace or self.namespace
        self.jobs.pop((namespace, name), None)
        for key in [
            k for k, p in self.pods.items() if k[0] == namespace and p["metadata"]["labels"].get(LABEL_JOB_NAME) == name
        ]:
            del self.pods[key]

    def add_pod(
        self,
        job_name: str,
        replica_type: str,
        index: int = 0,
        *,
        phase: str = "Running",
        container: str = "pytorch",
        exit_code: int | None = None,
        reason: str = "",
        restarts: int = 0,
        log: str = "",
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """A pod of the job (owned by its current uid), ``Running``, or terminated with ``exit_code``."""
        namespace = namespace or self.namespace
        owner = self.jobs[(namespace, job_name)]
        name = f"{job_name}-{replica_type.lower()}-{index}"
        state = (
            {
                "terminated": {
                    "exitCode": exit_code,
                    "reason": reason or ("Completed" if exit_code == 0 else "Error"),
                    "finishedAt": "2026-01-01T00:01:00Z",
                }
            }
            if exit_code is not None
            else {"running": {"startedAt": "2026-01-01T00:00:10Z"}}
        )
        pod = {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": next(self._uids),
                "labels": {
                    LABEL_JOB_NAME: job_name,
                    LABEL_REPLICA_TYPE: replica_type.lower(),
                    LABEL_REPLICA_INDEX: str(index),
                },
                "ownerReferences": [{"kind": owner["kind"], "name": job_name, "uid": owner["metadata"]["uid"]}],
            },
            "spec": {"containers": [{"name": container}]},
            "status": {
                "phase": phase,
                "containerStatuses": [{"name": container, "restartCount": restarts, "state": state}],
            },
        }
        self.pods[(namespace, name)] = pod
        if log:
            self.logs[name] = log
        return pod

    # ---- TrainingJobHook's methods ------------------------------------------------------------------

    def require_connection(self) -> None:
        self._call("require_connection")

    def resolve_namespace(self, namespace: str | None = None) -> str:
        return namespace or self.namespace

    def create_job(self, manifest: dict[str, Any]) -> dict[str, Any]:
        meta = manifest["metadata"]
        self._call("create_job", meta["namespace"], meta["name"])
        if (meta["namespace"], meta["name"]) in self.jobs:
            raise api_error(409)
        return self.put_job(manifest)

    def get_job(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        JOB_KINDS[kind]  # a KeyError for a kind the hook could not address
        self._call("get_job", kind, namespace, name)
        if self._get_steps:
            self._get_steps.pop(0)(self)
        job = self.jobs.get((namespace, name))
        if job is None or job["kind"] != kind:
            raise api_error(404)
        return copy.deepcopy(job)

    def patch_job(self, kind: str, name: str, namespace: str, patch: dict[str, Any]) -> dict[str, Any]:
        self._call("patch_job", kind, namespace, name, copy.deepcopy(patch))
        job = self.jobs.get((namespace, name))
        if job is None:
            raise api_error(404)
        uid = (patch.get("metadata") or {}).get("uid")
        if uid and uid != job["metadata"]["uid"]:
            raise api_error(409)
        _merge(job, {k: v for k, v in patch.items()})
        job["metadata"]["uid"] = uid or job["metadata"]["uid"]
        job["metadata"]["resourceVersion"] = str(next(self._versions))
        return copy.deepcopy(job)

    def delete_job(
        self, kind: str, name: str, namespace: str, uid: str | None = None, propagation: str = "Background"
    ) -> bool:
        self._call("delete_job", kind, namespace, name, uid, propagation)
        job = self.jobs.get((namespace, name))
        if job is None:
            return False
        if uid and job["metadata"]["uid"] != uid:
            raise api_error(409)
        self.remove_job(name, namespace)
        return True

    def list_job_pods(self, name: str, namespace: str, kind: str | None = None) -> list[dict[str, Any]]:
        self._call("list_job_pods", namespace, name)
        return [
            copy.deepcopy(p)
            for (ns, _), p in self.pods.items()
            if ns == namespace and p["metadata"]["labels"].get(LABEL_JOB_NAME) == name
        ]

    def list_job_pods_and_version(
        self, name: str, namespace: str, kind: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        return self.list_job_pods(name, namespace), str(next(self._versions))

    def delete_pod(self, name: str, namespace: str, uid: str | None = None) -> bool:
        self._call("delete_pod", namespace, name, uid)
        pod = self.pods.get((namespace, name))
        if pod is None:
            return False
        if uid and pod["metadata"]["uid"] != uid:
            raise api_error(409)
        self._remove_pod((namespace, name))
        return True

    def _remove_pod(self, key: tuple[str, str]) -> None:
        """What an accepted deletion does to the pod ``(namespace, name)``: here it is gone at once; a subclass may
        keep it stopping for a while, as the kubelet does."""
        del self.pods[key]

    def read_pod_log(
        self,
        name: str,
        namespace: str,
        container: str | None = None,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
        previous: bool = False,
    ) -> str:
        self._call("read_pod_log", namespace, name, container, tail_lines, previous)
        if name not in self.logs or (namespace, name) not in self.pods:
            raise api_error(404)
        lines = self.logs[name].splitlines()
        return "\n".join(lines[-tail_lines:] if tail_lines else lines)

    def read_timestamped_log(
        self,
        name: str,
        namespace: str,
        container: str,
        *,
        previous: bool = False,
        since_time: str | None = None,
        limit_bytes: int | None = None,
        tail_lines: int | None = None,
    ) -> bytes:
        """The pod's log, line ``i`` written at :data:`LOG_START` + ``i`` seconds, with the kubelet's rules: lines
        from ``since_time`` (whole seconds) on, the last ``tail_lines``, the answer cut at ``limit_bytes``; 400 for a
        ``previous`` run (the fake keeps one)."""
        self._call("read_timestamped_log", namespace, name, container, previous, since_time, limit_bytes, tail_lines)
        if name not in self.logs or (namespace, name) not in self.pods:
            raise api_error(404)
        if previous:
            raise api_error(400)
        stamped = [(LOG_START + i, line) for i, line in enumerate(self.logs[name].splitlines())]
        if since_time is not None:
            since = datetime.fromisoformat(since_time.replace("Z", "+00:00")).timestamp()
            stamped = [(t, line) for t, line in stamped if t >= since]
        if tail_lines is not None:
            stamped = stamped[-tail_lines:]
        text = "".join(
            f"{datetime.fromtimestamp(t, timezone.utc).strftime('%Y-%m-%dT%H:%M:%S')}.000000000Z {line}\n"
            for t, line in stamped
        ).encode()
        return text[:limit_bytes] if limit_bytes is not None else text

    def open_pod_log_stream(self, name: str, namespace: str, container: str | None = None) -> FakeLogStream:
        self._call("open_pod_log_stream", namespace, name, container)
        if (namespace, name) not in self.pods:
            raise api_error(404)
        return FakeLogStream(self.logs.get(name, ""))

    def list_events(self, namespace: str, involved_names: set[str]) -> list[dict[str, Any]]:
        self._call("list_events", namespace, tuple(sorted(involved_names)))
        return [
            copy.deepcopy(e)
            for e in self.events
            if e["metadata"]["namespace"] == namespace and (e.get("involvedObject") or {}).get("name") in involved_names
        ]

    def add_event(
        self,
        involved: str,
        reason: str,
        message: str,
        *,
        type_: str = "Normal",
        uid: str | None = None,
        namespace: str | None = None,
    ) -> None:
        namespace = namespace or self.namespace
        self.events.append(
            {
                "metadata": {"namespace": namespace, "name": f"{involved}.{len(self.events)}"},
                "involvedObject": {"name": involved, "uid": uid},
                "reason": reason,
                "message": message,
                "type": type_,
                "lastTimestamp": "2026-01-01T00:02:00Z",
            }
        )


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """A JSON merge patch (RFC 7386): None deletes a key."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class FakeTaskInstance:
    """What the operator reads of Airflow's task instance: its identity, ``xcom_push`` (recorded in ``xcom``) and
    ``stats_tags`` (read by ``ResumableJobMixin``)."""

    def __init__(
        self,
        run_id: str = "manual__unit",
        try_number: int = 1,
        dag_id: str = "retrain",
        task_id: str = "train",
        map_index: int = -1,
    ) -> None:
        self.dag_id, self.task_id, self.run_id = dag_id, task_id, run_id
        self.map_index, self.try_number = map_index, try_number
        self.xcom: dict[str, Any] = {}
        self.stats_tags: dict[str, str] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = value


class FakeTaskStateStore(dict):
    """Airflow 3.3's ``task_state_store``: ``get(key)`` and ``set(key, value)``, kept across tries."""

    def set(self, key: str, value: Any, *, retention: Any = None) -> None:  # retention: as Airflow's store
        self[key] = value
