"""Pod status as the kubelet reports it: container states, the pod phase and the kubelet-owned conditions.

Pure functions over plain dicts in the API's JSON shape. ``pod_phase`` is ``getPhase`` and the condition
builders are ``GeneratePodInitializedCondition`` / ``GenerateContainersReadyCondition`` /
``GeneratePodReadyCondition`` of Kubernetes 1.20 (``pkg/kubelet/kubelet_pods.go``,
``pkg/kubelet/status/generate.go``), minus readiness probes and gates: a running container is ready.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_trainjob_local.kube import format_time
from airflow_trainjob_local.kubelet.process import Exit

PHASE_PENDING = "Pending"
PHASE_RUNNING = "Running"
PHASE_SUCCEEDED = "Succeeded"
PHASE_FAILED = "Failed"
TERMINAL_PHASES = (PHASE_SUCCEEDED, PHASE_FAILED)

RESTART_ALWAYS = "Always"
RESTART_ON_FAILURE = "OnFailure"
RESTART_NEVER = "Never"

# Waiting reasons the kubelet uses.
WAITING_CREATING = "ContainerCreating"
WAITING_INITIALIZING = "PodInitializing"
WAITING_BACKOFF = "CrashLoopBackOff"
WAITING_CONFIG_ERROR = "CreateContainerConfigError"
# Reported (as in Kubernetes >= 1.23) for an instance a previous kubelet ran and that is gone now.
REASON_STATUS_UNKNOWN = "ContainerStatusUnknown"

POD_IP = "127.0.0.1"
HOST_IP = "127.0.0.1"


def waiting(reason: str, message: str | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {"reason": reason}
    if message:
        state["message"] = message
    return {"waiting": state}


def running(started_at: float) -> dict[str, Any]:
    return {"running": {"startedAt": format_time(started_at)}}


def terminated(exit_: Exit, container_id: str = "") -> dict[str, Any]:
    state: dict[str, Any] = {
        "exitCode": exit_.exit_code,
        "reason": exit_.reason,
        "startedAt": format_time(exit_.started_at),
        "finishedAt": format_time(exit_.finished_at),
    }
    if exit_.message:
        state["message"] = exit_.message
    if container_id:
        state["containerID"] = container_id
    return {"terminated": state}


def should_restart(restart_policy: str, exit_code: int) -> bool:
    """Whether a container that exited with ``exit_code`` is restarted in place under ``restart_policy``."""
    return restart_policy == RESTART_ALWAYS or (restart_policy == RESTART_ON_FAILURE and exit_code != 0)


@dataclass
class ContainerRecord:
    """What the kubelet knows about one container of a pod across its restarts."""

    name: str
    image: str
    restart_count: int = 0
    state: dict[str, Any] = field(default_factory=lambda: waiting(WAITING_CREATING))
    last_state: dict[str, Any] = field(default_factory=dict)
    container_id: str = ""
    ready: bool = False
    started: bool = False

    def to_status(self) -> dict[str, Any]:
        """The ``ContainerStatus`` dict. ``imageID`` is empty: no image is pulled."""
        status: dict[str, Any] = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "state": self.state,
            "lastState": self.last_state,
            "ready": self.ready,
            "restartCount": self.restart_count,
            "started": self.started,
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status


def _by_name(statuses: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {s["name"]: s for s in statuses}


def pod_phase(
    spec: Mapping[str, Any],
    init_statuses: Sequence[Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]],
) -> str:
    """The pod phase from its container statuses (the kubelet's ``getPhase``)."""
    restart_policy = spec.get("restartPolicy") or RESTART_ALWAYS
    init_by_name = _by_name(init_statuses)
    pending_init = failed_init = 0
    for container in spec.get("initContainers") or []:
        status = init_by_name.get(container["name"])
        state = (status or {}).get("state") or {}
        if status is None or "running" in state:
            pending_init += 1
        elif "terminated" in state:
            if state["terminated"].get("exitCode") != 0:
                failed_init += 1
        elif "waiting" in state:
            last = (status.get("lastState") or {}).get("terminated")
            if last is not None:
                if last.get("exitCode") != 0:
                    failed_init += 1
            else:
                pending_init += 1
        else:
            pending_init += 1

    by_name = _by_name(statuses)
    unknown = run = wait = stopped = succeeded = 0
    for container in spec.get("containers") or []:
        status = by_name.get(container["name"])
        if status is None:
            unknown += 1
            continue
        state = status.get("state") or {}
        if "running" in state:
            run += 1
        elif "terminated" in state:
            stopped += 1
            if state["terminated"].get("exitCode") == 0:
                succeeded += 1
        elif "waiting" in state:
            if (status.get("lastState") or {}).get("terminated") is not None:
                stopped += 1
            else:
                wait += 1
        else:
            unknown += 1

    if failed_init > 0 and restart_policy == RESTART_NEVER:
        return PHASE_FAILED
    if pending_init > 0 or wait > 0:
        return PHASE_PENDING
    if run > 0 and unknown == 0:
        return PHASE_RUNNING
    if run == 0 and stopped > 0 and unknown == 0:
        if restart_policy == RESTART_ALWAYS:
            return PHASE_RUNNING
        if stopped == succeeded:
            return PHASE_SUCCEEDED
        if restart_policy == RESTART_NEVER:
            return PHASE_FAILED
        return PHASE_RUNNING
    return PHASE_PENDING


def _go_list(names: list[str]) -> str:
    return "[" + " ".join(names) + "]"  # how Go's %s prints a []string


def _readiness(
    containers: Sequence[Mapping[str, Any]], statuses: Sequence[Mapping[str, Any]], phase: str, incomplete: str
) -> tuple[str, str | None, str | None]:
    """``(status, reason, message)`` of a readiness-style condition over ``containers``."""
    by_name = _by_name(statuses)
    unknown = [c["name"] for c in containers if c["name"] not in by_name]
    unready = [c["name"] for c in containers if c["name"] in by_name and not by_name[c["name"]].get("ready")]
    if phase == PHASE_SUCCEEDED and not unknown:
        return "PodCompleted", "PodCompleted", None
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_go_list(unknown)}")
    if unready:
        messages.append(f"containers with {incomplete} status: {_go_list(unready)}")
    if messages:
        return "False", None, ", ".join(messages)
    return "True", None, None


def pod_conditions(
    spec: Mapping[str, Any],
    phase: str,
    init_statuses: Sequence[Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]],
    now: float | None = None,
) -> list[dict[str, Any]]:
    """Initialized, Ready, ContainersReady and PodScheduled (True), then any other condition in ``previous``.

    ``lastTransitionTime`` is kept from ``previous`` while a condition's status does not change.
    """
    init_status, init_reason, init_message = _readiness(
        spec.get("initContainers") or [], init_statuses, phase, "incomplete"
    )
    if init_status == "PodCompleted":
        init_status, init_reason = "True", "PodCompleted"
    elif init_status == "False":
        init_reason = "ContainersNotInitialized"
    ready_status, ready_reason, ready_message = _readiness(spec.get("containers") or [], statuses, phase, "unready")
    if ready_status == "PodCompleted":
        ready_status, ready_reason = "False", "PodCompleted"
    elif ready_status == "False":
        ready_reason = "ContainersNotReady"

    ours = [
        ("Initialized", init_status, init_reason, init_message),
        ("Ready", ready_status, ready_reason, ready_message),
        ("ContainersReady", ready_status, ready_reason, ready_message),
        ("PodScheduled", "True", None, None),
    ]
    before = {c.get("type"): c for c in previous}
    stamp = format_time(now)
    result: list[dict[str, Any]] = []
    for type_, status, reason, message in ours:
        old = before.get(type_) or {}
        unchanged = old.get("status") == status and old.get("lastTransitionTime")
        condition: dict[str, Any] = {
            "type": type_,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": old["lastTransitionTime"] if unchanged else stamp,
        }
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        result.append(condition)
    mine = {type_ for type_, *_ in ours}
    result += [dict(c) for c in previous if c.get("type") not in mine]
    return result
