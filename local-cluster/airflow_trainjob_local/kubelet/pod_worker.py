"""One thread per pod bound to the node: runs its containers as processes and reports its status.

The lifecycle follows the real kubelet's: init containers one after the other (each must exit 0), then every
container at once; ``restartPolicy`` applied in place (``Always``; ``OnFailure`` when the exit code is not 0;
``Never``), with the kubelet's crash-loop back-off between restarts (first restart at once, then
``backoff_seconds`` doubling up to ``max_backoff_seconds``; the real kubelet uses 10 s and 300 s); the pod status
(phase, conditions, IPs, ``startTime``, container statuses) written through ``pods/status`` with a JSON merge
patch whenever it changes.

Deletion: once the pod has a ``deletionTimestamp``, SIGTERM to every container's process group, up to
``deletionGracePeriodSeconds`` (re-read while waiting: a second delete may shorten it) for them to exit, SIGKILL,
a last status, then ``DELETE`` with grace period 0 and the pod's UID as precondition — the call the apiserver
waits for before it removes a gracefully deleted pod. A finished pod keeps its (idle) thread until it is
deleted, to send that DELETE too: a delete that met the pod still running in the apiserver's view waits for it.
A pod that disappears from the API (force-deleted) has its processes stopped at once (SIGTERM, SIGKILL after 2 s).

A kubelet restart finds pods whose containers a previous kubelet ran: those instances are gone, so they are
reported terminated with ``ContainerStatusUnknown`` / 137 and the restart policy decides what happens next.

Events (:mod:`.events`), per container: ``Pulled``, ``Created``, ``Started`` at every start; a Warning ``Failed``
when the container's configuration cannot be built or its process cannot be started; a Warning ``BackOff`` each
time a restart waits out the back-off; ``Killing`` for each running container when the pod is deleted.
"""

from __future__ import annotations

import copy
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.utils import parse_quantity

from airflow_trainjob_local.kube import MERGE_PATCH, ApiException, format_time
from airflow_trainjob_local.kubelet import environment, events, status, volumes
from airflow_trainjob_local.kubelet.events import EventRecorder
from airflow_trainjob_local.kubelet.logs import LogStore
from airflow_trainjob_local.kubelet.process import (
    REASON_START_ERROR,
    START_ERROR_EXIT_CODE,
    ContainerProcess,
    Exit,
    StartError,
)

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30
# How long a force-deleted pod's processes get between SIGTERM and SIGKILL (the kubelet's minimum grace).
FORCE_DELETE_GRACE_SECONDS = 2
# A container that ran this long without failing has its back-off reset (the kubelet: 2 x the maximum back-off).
_BACKOFF_RESET_FACTOR = 2
_UNKNOWN_MESSAGE = "The container could not be located when the pod was terminated"


@dataclass(frozen=True)
class WorkerConfig:
    """What every pod worker shares. Durations in seconds.

    :param poll_seconds: how often processes are polled (also the memory-limit sampling interval).
    :param shutdown_grace_seconds: on kubelet shutdown, the longest a pod's processes get after SIGTERM.
    :param events: where the pod's Events go (``Pulled``, ``Created``, ``Started``, ``Failed``, ``BackOff``,
        ``Killing``); None records none.
    """

    core: client.CoreV1Api
    logs: LogStore
    node_allocatable: Mapping[str, str]
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 60.0
    poll_seconds: float = 0.1
    shutdown_grace_seconds: float = 5.0
    events: EventRecorder | None = None


@dataclass
class _Slot:
    """A container of the pod: its reported record and the live instance, if any."""

    spec: dict[str, Any]
    record: status.ContainerRecord
    init: bool
    process: ContainerProcess | None = None
    restart_at: float | None = None  # monotonic time of the next start; None: not (re)starting
    failures: int = 0  # instances ended since the last long run: the back-off exponent
    done: bool = False  # terminated for good (no restart under the policy)
    started_once: bool = False  # an instance ran before (here or under a previous kubelet): next start is a restart


def _key(pod: Mapping[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


class PodWorker:
    """Runs one pod (by UID). :meth:`update` feeds it the pod as the API last showed it."""

    def __init__(self, pod: dict[str, Any], config: WorkerConfig) -> None:
        self.uid: str = pod["metadata"]["uid"]
        self.namespace: str = pod["metadata"]["namespace"]
        self.name: str = pod["metadata"]["name"]
        self._config = config
        self._lock = threading.Lock()
        self._pod = pod
        self._wake = threading.Event()
        self._gone = False  # deleted from the API
        self._shutdown = False  # the kubelet stops
        self._last_sent: dict[str, Any] | None = None
        self._crash: str | None = None  # set when this worker failed: the pod is reported Failed with it
        self._start_time: str | None = None
        self._slots: list[_Slot] = []
        self._workdir = config.logs.pod_dir(self.namespace, self.name, self.uid) / "workdir"
        self.finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pod-{self.namespace}/{self.name}", daemon=True)

    # --- called from other threads -------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def update(self, pod: dict[str, Any]) -> None:
        with self._lock:
            self._pod = pod
        self._wake.set()

    def api_deleted(self) -> None:
        """The pod is gone from the API: stop its processes; nothing more is reported."""
        self._gone = True
        self._wake.set()

    def shutdown(self) -> None:
        """The kubelet stops: stop the processes (short grace), report nothing."""
        self._shutdown = True
        self._wake.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    # --- the pod's thread ----------------------------------------------------------------------------------

    @property
    def pod(self) -> dict[str, Any]:
        with self._lock:
            return self._pod

    def _run(self) -> None:
        try:
            self._lifecycle()
        except Exception as e:
            # One bad pod must never take the kubelet down; its processes must not outlive the failure either,
            # and the pod must not look alive (a Failed pod is also deleted without waiting for a kubelet).
            log.exception("pod %s: worker failed", _key(self.pod))
            self._crash = f"{type(e).__name__}: {e}"
            try:
                self._kill_all(0)
                self._report()
            except Exception:
                log.exception("pod %s: cleanup after the failure failed", _key(self.pod))
        finally:
            # In this order, against the kubelet's api_deleted-then-finished check: one of the two drops the logs.
            self.finished.set()
            if self._gone:
                self._config.logs.drop_pod(self.namespace, self.name, self.uid)

    def _lifecycle(self) -> None:
        pod = self.pod
        self._config.logs.register_pod(self.namespace, self.name, self.uid)
        if (pod.get("status") or {}).get("phase") in status.TERMINAL_PHASES:
            # Finished before this kubelet (re)started: nothing to run, its logs stay readable, and a delete still
            # needs this kubelet's confirmation. No status is written: nothing here knows the containers.
            self._await_deletion(report=False)
            return
        self._build_slots(pod)
        self._start_time = (pod.get("status") or {}).get("startTime") or format_time()
        while True:
            if self._gone:
                self._announce_killing()
                self._kill_all(FORCE_DELETE_GRACE_SECONDS)
                return
            if self._shutdown:
                self._kill_all(self._config.shutdown_grace_seconds)
                return
            if self.pod["metadata"].get("deletionTimestamp"):
                self._terminate_for_deletion()
                return
            self._step()
            phase = self._report()
            if phase in status.TERMINAL_PHASES and self._last_sent is not None:
                log.info("pod %s: %s", _key(self.pod), phase)
                self._await_deletion(report=True)
                return
            self._wake.wait(self._config.poll_seconds)
            self._wake.clear()

    # --- containers ---------------------------------------------------------------------------------------

    def _build_slots(self, pod: dict[str, Any]) -> None:
        spec = pod["spec"]
        previous = pod.get("status") or {}
        policy = spec.get("restartPolicy") or status.RESTART_ALWAYS
        for init, key in ((True, "initContainers"), (False, "containers")):
            field = "initContainerStatuses" if init else "containerStatuses"
            reported = {s["name"]: s for s in previous.get(field) or []}
            for container in spec.get(key) or []:
                record = status.ContainerRecord(name=container["name"], image=container.get("image") or "")
                if init:
                    record.state = status.waiting(status.WAITING_INITIALIZING)
                slot = _Slot(spec=container, record=record, init=init)
                self._recover(slot, reported.get(container["name"]), policy)
                self._slots.append(slot)

    def _recover(self, slot: _Slot, reported: Mapping[str, Any] | None, policy: str) -> None:
        """Carry over what a previous kubelet reported for this container: its instances are gone now."""
        if not reported:
            return
        record = slot.record
        record.restart_count = int(reported.get("restartCount") or 0)
        record.last_state = reported.get("lastState") or {}
        slot.started_once = bool(record.last_state)
        state = reported.get("state") or {}
        finished = state.get("terminated")
        if "running" in state:
            now = time.time()
            finished = {
                "exitCode": 137,
                "reason": status.REASON_STATUS_UNKNOWN,
                "message": _UNKNOWN_MESSAGE,
                "startedAt": state["running"].get("startedAt") or format_time(now),
                "finishedAt": format_time(now),
            }
        if finished is None:
            return
        slot.started_once = True
        exit_code = int(finished.get("exitCode", 0))
        if slot.init:
            restart = exit_code != 0 and policy != status.RESTART_NEVER
        else:
            restart = status.should_restart(policy, exit_code)
        if restart:
            record.last_state = {"terminated": finished}
            record.state = status.waiting(status.WAITING_BACKOFF, "restarting after a kubelet restart")
            slot.restart_at = time.monotonic()
        else:
            record.state, slot.done = {"terminated": finished}, True
            record.ready = slot.init and exit_code == 0

    def _step(self) -> None:
        """Advance every container one tick: start what is due, poll what runs, decide restarts."""
        pod = self.pod
        policy = pod["spec"].get("restartPolicy") or status.RESTART_ALWAYS
        mains = [s for s in self._slots if not s.init]
        for slot in (s for s in self._slots if s.init):
            if slot.done:
                if slot.record.state["terminated"]["exitCode"] == 0:
                    continue
                return  # an init container failed for good (restartPolicy Never): the pod has failed
            self._advance(slot, pod, policy)
            for main in mains:
                main.record.state = status.waiting(status.WAITING_INITIALIZING)
            return
        for slot in mains:
            self._advance(slot, pod, policy)

    def _advance(self, slot: _Slot, pod: dict[str, Any], policy: str) -> None:
        if slot.done:
            return
        if slot.process is None:
            if slot.restart_at is None or time.monotonic() >= slot.restart_at:
                self._start(slot, pod)
            return
        exit_ = slot.process.poll()
        if exit_ is None:
            return
        self._config.logs.set_active(slot.process.log_path, False)
        slot.process = None
        self._finished(slot, exit_, policy)

    def _finished(self, slot: _Slot, exit_: Exit, policy: str) -> None:
        record = slot.record
        record.state = status.terminated(exit_, record.container_id)
        record.ready = slot.init and exit_.exit_code == 0
        record.started = False
        log.info("pod %s: container %s exited with %d (%s)", _key(self.pod), record.name, exit_.exit_code, exit_.reason)
        if slot.init:
            # Init containers must succeed: they are retried on failure unless the policy is Never.
            restart = exit_.exit_code != 0 and policy != status.RESTART_NEVER
        else:
            restart = status.should_restart(policy, exit_.exit_code)
        if not restart:
            slot.done = True
            return
        # Like the kubelet, any exit counts towards the back-off (a container that keeps completing under
        # Always crash-loops too); only a long run resets it.
        if exit_.finished_at - exit_.started_at > _BACKOFF_RESET_FACTOR * self._config.max_backoff_seconds:
            slot.failures = 0
        delay = (
            0.0
            if slot.failures == 0
            else min(self._config.backoff_seconds * 2 ** (slot.failures - 1), self._config.max_backoff_seconds)
        )
        slot.failures += 1
        slot.restart_at = time.monotonic() + delay
        if delay > 0:
            record.last_state = record.state
            self._set_waiting(slot, True)
            record.state = status.waiting(
                status.WAITING_BACKOFF,
                f"back-off {delay:g}s restarting failed container={record.name} "
                f"pod={self.name}_{self.namespace}({self.uid})",
            )
            self._event(
                slot,
                events.WARNING,
                events.REASON_BACKOFF,
                events.backoff_message(record.name, self.name, self.namespace, self.uid),
            )

    def _start(self, slot: _Slot, pod: dict[str, Any]) -> None:
        record = slot.record
        if "terminated" in record.state:
            record.last_state = record.state  # restarting right away (no back-off): the last instance moves over
        # As the kubelet: the image first ("pulled": it is never pulled, it counts as present), then the
        # container's configuration, then create and start.
        self._event(slot, events.NORMAL, events.REASON_PULLED, events.pulled_message(record.image))
        try:
            env = self._environment(pod, slot.spec)
        except environment.ContainerConfigError as e:
            record.state = status.waiting(status.WAITING_CONFIG_ERROR, str(e))
            self._set_waiting(slot, slot.started_once)
            self._event(slot, events.WARNING, events.REASON_FAILED, events.failed_message(str(e)))
            slot.restart_at = time.monotonic() + max(self._config.backoff_seconds, 1.0)
            return
        if slot.started_once:
            record.restart_count += 1
        slot.started_once = True
        self._set_waiting(slot, False)
        slot.restart_at = None
        record.container_id = ""
        argv = environment.container_argv(slot.spec, env)
        cwd = slot.spec.get("workingDir") or str(self._workdir)
        log_path = self._config.logs.log_path(self.namespace, self.name, self.uid, record.name, record.restart_count)
        started_at = time.time()
        try:
            if not argv:
                raise StartError("no command specified (the image's entrypoint is not available: the image is ignored)")
            # Container runtimes create a missing working directory rather than fail.
            os.makedirs(cwd, exist_ok=True)
            executable = environment.resolve_executable(argv[0], env, cwd)
            # The runtime creates the container before it execs its process: a missing executable fails the start.
            self._event(slot, events.NORMAL, events.REASON_CREATED, events.created_message(record.name))
            if executable is None:
                raise StartError(f'exec: "{argv[0]}": executable file not found in $PATH')
            self._config.logs.set_active(log_path, True)
            slot.process = ContainerProcess(
                argv=argv,
                executable=executable,
                env=env,
                cwd=cwd,
                log_path=log_path,
                memory_limit=_memory_limit(slot.spec),
                pid_file=log_path.with_suffix(".pid"),
            )
        except (StartError, OSError) as e:
            self._config.logs.set_active(log_path, False)
            log.warning("pod %s: container %s failed to start: %s", _key(pod), record.name, e)
            self._event(slot, events.WARNING, events.REASON_FAILED, events.failed_message(str(e)))
            self._finished(
                slot,
                Exit(START_ERROR_EXIT_CODE, REASON_START_ERROR, started_at, time.time(), message=str(e)),
                pod["spec"].get("restartPolicy") or status.RESTART_ALWAYS,
            )
            return
        record.container_id = f"process://{slot.process.pid}"
        record.state = status.running(slot.process.started_at)
        record.started = True
        record.ready = not slot.init
        log.info("pod %s: container %s started, pid %d", _key(pod), record.name, slot.process.pid)
        self._event(slot, events.NORMAL, events.REASON_STARTED, events.started_message(record.name))

    def _environment(self, pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
        core = self._config.core

        def fetch(read: Callable[..., Any]) -> Callable[[str, str], dict[str, Any] | None]:
            def get(namespace: str, name: str) -> dict[str, Any] | None:
                try:
                    return core.api_client.sanitize_for_serialization(read(name, namespace))
                except ApiException as e:
                    if e.status == 404:
                        return None
                    raise environment.ContainerConfigError(f"cannot read {name}: {e.reason}") from e
                except (urllib3.exceptions.HTTPError, OSError) as e:
                    raise environment.ContainerConfigError(f"cannot read {name}: {e}") from e

            return get

        env = environment.base_environment(pod)
        env.update(
            environment.container_environment(
                pod,
                container,
                get_config_map=fetch(core.read_namespaced_config_map),
                get_secret=fetch(core.read_namespaced_secret),
                node_allocatable=self._config.node_allocatable,
            )
        )
        mounts = volumes.materialize_volumes(
            pod,
            container,
            self._workdir.parent / "volumes",
            get_config_map=fetch(core.read_namespaced_config_map),
            request_token=self._request_token,
        )
        return volumes.rewrite_env_paths(env, mounts)

    def _request_token(self, account: str, audience: str, expiration_seconds: int) -> str:
        """A token of ``account`` for ``audience``, bound to this pod (TokenRequest, as the kubelet's token manager)."""
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(
                audiences=[audience] if audience else [],
                expiration_seconds=expiration_seconds,
                bound_object_ref=client.V1BoundObjectReference(
                    kind="Pod", api_version="v1", name=self.name, uid=self.uid
                ),
            )
        )
        try:
            return str(
                self._config.core.create_namespaced_service_account_token(account, self.namespace, request).status.token
            )
        except ApiException as e:
            raise environment.ContainerConfigError(
                f'cannot request a token of serviceaccount "{account}": {e.reason}'
            ) from e
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise environment.ContainerConfigError(f'cannot request a token of serviceaccount "{account}": {e}') from e

    def _set_waiting(self, slot: _Slot, waiting: bool) -> None:
        """Tell the log store the container waits to start again after an instance (``previous`` reads that one)."""
        self._config.logs.set_waiting(self.namespace, self.name, self.uid, slot.record.name, waiting)

    def _event(self, slot: _Slot, type_: str, reason: str, message: str) -> None:
        if self._config.events is not None:
            self._config.events.container_event(self.pod, slot.record.name, type_, reason, message, init=slot.init)

    def _announce_killing(self) -> None:
        """``Killing`` for every container that runs, before it is stopped for the pod's deletion."""
        for slot in self._running():
            self._event(slot, events.NORMAL, events.REASON_KILLING, events.killing_message(slot.record.name))

    def _running(self) -> list[_Slot]:
        return [s for s in self._slots if s.process is not None]

    def _running_processes(self) -> list[tuple[_Slot, ContainerProcess]]:
        return [(s, s.process) for s in self._slots if s.process is not None]

    def _kill_all(self, grace: float) -> None:
        """SIGTERM every running container's group, wait up to ``grace`` seconds, SIGKILL the rest."""
        self._signal_and_wait(lambda: grace)

    def _signal_and_wait(self, grace: Callable[[], float]) -> None:
        """SIGTERM every running container's group; SIGKILL what still runs ``grace()`` seconds later.

        ``grace`` is re-evaluated while waiting, so a shorter second delete (or a kubelet stop) takes effect.
        """
        began = time.monotonic()
        for _slot, process in self._running_processes():
            process.signal_group(signal.SIGTERM)
        policy = status.RESTART_NEVER  # nothing restarts while the pod terminates
        while self._running():
            for slot, process in self._running_processes():
                exit_ = process.poll()
                if exit_ is not None:
                    self._config.logs.set_active(process.log_path, False)
                    slot.process = None
                    self._finished(slot, exit_, policy)
            if not self._running():
                break
            if time.monotonic() - began >= grace():
                for slot, process in self._running_processes():
                    process.signal_group(signal.SIGKILL)
                    exit_ = process.wait(5.0)
                    self._config.logs.set_active(process.log_path, False)
                    slot.process = None
                    if exit_ is not None:
                        self._finished(slot, exit_, policy)
                break
            time.sleep(self._config.poll_seconds)
        for slot in self._slots:
            slot.restart_at = None

    def _terminate_for_deletion(self) -> None:
        def grace() -> float:
            if self._gone:
                return 0.0
            pod = self.pod
            value = pod["metadata"].get("deletionGracePeriodSeconds")
            if value is None:
                value = pod["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
            if self._shutdown:
                return min(float(value), self._config.shutdown_grace_seconds)
            return float(value)

        log.info("pod %s: deleting, grace period %gs", _key(self.pod), grace())
        if not self._shutdown:
            self._announce_killing()
        self._signal_and_wait(grace)
        self._confirm_deletion(report=True)

    def _await_deletion(self, report: bool) -> None:
        """A finished pod: wait until it is deleted. A delete that arrived while the pod was still running in the
        apiserver's view (its last status not yet written) leaves it terminating with a grace period; the
        apiserver removes it only on the kubelet's grace-0 DELETE, which the real kubelet sends for any terminated
        pod with a ``deletionTimestamp``. So does this one, whenever the delete comes."""
        while not self._gone and not self._shutdown:
            if self.pod["metadata"].get("deletionTimestamp"):
                self._confirm_deletion(report)
                return
            self._wake.wait()
            self._wake.clear()

    def _confirm_deletion(self, report: bool) -> None:
        """The grace-0 ``DELETE`` (UID precondition) the apiserver waits for before it removes a gracefully
        deleted pod; retried through API hiccups until done. ``report``: write the last status first."""
        while not self._gone and not self._shutdown:
            if report:
                self._report()
            try:
                self._config.core.delete_namespaced_pod(
                    self.name,
                    self.namespace,
                    body=client.V1DeleteOptions(
                        grace_period_seconds=0, preconditions=client.V1Preconditions(uid=self.uid)
                    ),
                )
                log.info("pod %s: deleted", _key(self.pod))
                return
            except ApiException as e:
                if e.status in (404, 409):  # already gone, or a new pod with this name (UID precondition)
                    return
                log.warning("pod %s: delete failed (%s %s); retrying", _key(self.pod), e.status, e.reason)
            except (urllib3.exceptions.HTTPError, OSError) as e:
                log.warning("pod %s: delete failed (%s); retrying", _key(self.pod), e)
            self._wake.wait(1.0)
            self._wake.clear()

    # --- status -------------------------------------------------------------------------------------------

    def _report(self) -> str:
        """Write the pod status if it changed; return the phase it shows."""
        pod = self.pod
        spec = pod["spec"]
        init_statuses = [s.record.to_status() for s in self._slots if s.init]
        statuses = [s.record.to_status() for s in self._slots if not s.init]
        phase = status.PHASE_FAILED if self._crash else status.pod_phase(spec, init_statuses, statuses)
        body: dict[str, Any] = {
            "phase": phase,
            "hostIP": status.HOST_IP,
            "podIP": status.POD_IP,
            "podIPs": [{"ip": status.POD_IP}],
            "startTime": self._start_time,
            "containerStatuses": statuses,
        }
        if init_statuses:
            body["initContainerStatuses"] = init_statuses
        if self._crash:
            body["reason"] = "KubeletError"
            body["message"] = f"the process kubelet failed to run this pod: {self._crash}"
        previous_conditions = (pod.get("status") or {}).get("conditions") or []
        body["conditions"] = status.pod_conditions(spec, phase, init_statuses, statuses, previous_conditions)
        comparable = copy.deepcopy(body)
        for condition in comparable["conditions"]:
            condition.pop("lastTransitionTime", None)
        if comparable == self._last_sent:
            return phase
        try:
            # A merge patch replaces lists whole, so a container's old state never lingers next to its new one.
            # The UID in it makes the apiserver refuse (422, immutable field) to patch a new pod of the same name.
            self._config.core.patch_namespaced_pod_status(
                self.name,
                self.namespace,
                {"metadata": {"uid": self.uid}, "status": body},
                _content_type=MERGE_PATCH,
            )
            self._last_sent = comparable
        except ApiException as e:
            if e.status == 404 or (e.status == 422 and "uid" in str(e.body)):
                self._gone = True
            else:
                log.warning("pod %s: status update failed (%s %s); retrying", _key(pod), e.status, e.reason)
                self._last_sent = None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            log.warning("pod %s: status update failed (%s); retrying", _key(pod), e)
            self._last_sent = None
        return phase


def _memory_limit(container: Mapping[str, Any]) -> int | None:
    limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    return None if limit is None else int(parse_quantity(str(limit)))
