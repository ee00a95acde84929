"""The process kubelet, tested as a user sees it: pods created through the real apiserver, their status and
logs read back through the official client (and ``kubectl``).

The session cluster (``local_cluster``) starts the kubelet itself. Pure helpers (``$(VAR)`` expansion, the
log reader, the phase rule) have unit tests at the end, against the cases of the upstream Go code they port.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import ssl
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest

from airflow_trainjob_local.kubelet.environment import expand, mapping_for
from airflow_trainjob_local.kubelet.logs import LogOptions, format_timestamp, read_log
from airflow_trainjob_local.kubelet.status import pod_phase
from airflow_trainjob_local.testing import waiting

TIMEOUT = 60.0


# --- helpers ----------------------------------------------------------------------------------------------


def python_pod(
    name: str,
    script: str,
    *,
    restart_policy: str = "Never",
    env: list[dict[str, Any]] | None = None,
    **container: Any,
) -> dict[str, Any]:
    """A pod whose one container ``main`` runs ``python -u -c <script>`` (the image is ignored by the kubelet)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "restartPolicy": restart_policy,
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.11-slim",
                    "command": ["python", "-u", "-c", textwrap.dedent(script)],
                    "env": env or [],
                    **container,
                }
            ],
        },
    }


wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)


def pod_reader(core_v1, namespace: str, name: str) -> Callable[[], Any]:
    return lambda: core_v1.read_namespaced_pod(name, namespace)


def wait_phase(core_v1, namespace: str, name: str, *phases: str) -> Any:
    return wait_for(pod_reader(core_v1, namespace, name), lambda p: p.status.phase in phases, what=f"{name} {phases}")


def pod_log(core_v1, namespace: str, name: str, **kwargs: Any) -> str:
    """``read_namespaced_pod_log`` as text. The raw body is decoded here because kubernetes 36.0.x returns the
    ``repr`` of the bytes from the plain call (kubernetes-client/python#2596)."""
    response = core_v1.read_namespaced_pod_log(name, namespace, _preload_content=False, **kwargs)
    return response.data.decode()


def wait_log(core_v1, namespace: str, name: str, pattern: str, **kwargs: Any) -> str:
    """The pod's log once it matches ``pattern``. Until then the kubelet may not know the pod yet (404: the
    apiserver proxies as soon as the pod is bound, as with a real kubelet) or its container may not have
    started (400)."""
    from kubernetes.client.exceptions import ApiException

    def read() -> str:
        try:
            return pod_log(core_v1, namespace, name, **kwargs)
        except ApiException as e:
            if e.status in (400, 404):
                return ""
            raise

    return wait_for(read, lambda text: re.search(pattern, text) is not None, what=f"log of {name} ~ {pattern!r}")


gone = waiting.pod_gone


def dead(process: psutil.Process) -> bool:
    """Exited: gone, or a zombie nobody reaped yet."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def main_status(pod: Any) -> Any:
    return pod.status.container_statuses[0]


# --- the Node and the binder ------------------------------------------------------------------------------


def test_node_is_registered_ready_with_kubelet_endpoint(local_cluster, core_v1):
    node = core_v1.read_node(local_cluster.node_name)

    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert ready.status == "True"
    assert {(a.type, a.address) for a in node.status.addresses} >= {("InternalIP", "127.0.0.1")}
    assert node.status.daemon_endpoints.kubelet_endpoint.port == local_cluster.ports.kubelet
    assert node.status.capacity["cpu"] == str(os.cpu_count())
    assert node.status.allocatable["pods"] == "110"
    assert node.metadata.labels["kubernetes.io/hostname"] == local_cluster.node_name


def test_a_ready_node_carries_no_not_ready_taint(local_cluster, core_v1):
    """As the node-lifecycle controller leaves it: the apiserver taints a new Node node.kubernetes.io/not-ready
    (NoSchedule), and a Ready node loses that taint (``kubectl describe node``: ``Taints: <none>``)."""

    def taint_keys() -> list[str]:
        return [t.key for t in core_v1.read_node(local_cluster.node_name).spec.taints or []]

    keys = wait_for(taint_keys, lambda k: "node.kubernetes.io/not-ready" not in k, timeout=25, what="no taint")
    assert "node.kubernetes.io/not-ready" not in keys


def test_node_heartbeat_is_refreshed(local_cluster, core_v1):
    def heartbeat() -> Any:
        node = core_v1.read_node(local_cluster.node_name)
        return next(c for c in node.status.conditions if c.type == "Ready").last_heartbeat_time

    first = heartbeat()
    later = wait_for(heartbeat, lambda t: t > first, timeout=25, what="a newer Ready heartbeat")
    assert later > first


def test_unscheduled_pod_is_bound_to_the_node(local_cluster, core_v1, namespace):
    core_v1.create_namespaced_pod(namespace, python_pod("bind-me", "print('bound')"))

    pod = wait_for(pod_reader(core_v1, namespace, "bind-me"), lambda p: p.spec.node_name, what="a node name")

    assert pod.spec.node_name == local_cluster.node_name
    scheduled = wait_for(
        pod_reader(core_v1, namespace, "bind-me"),
        lambda p: any(c.type == "PodScheduled" for c in p.status.conditions or []),
    )
    assert next(c for c in scheduled.status.conditions if c.type == "PodScheduled").status == "True"


def test_pods_for_another_scheduler_or_node_selector_stay_unbound(local_cluster, core_v1, namespace):
    other = python_pod("other-scheduler", "print(1)")
    other["spec"]["schedulerName"] = "someone-else"
    selective = python_pod("gpu-only", "print(1)")
    selective["spec"]["nodeSelector"] = {"accelerator": "nvidia-a100"}
    control = python_pod("control", "print(1)")
    for body in (other, selective, control):
        core_v1.create_namespaced_pod(namespace, body)

    # Once the control pod has run, the binder has seen all three.
    wait_phase(core_v1, namespace, "control", "Succeeded")
    time.sleep(1)
    for name in ("other-scheduler", "gpu-only"):
        pod = core_v1.read_namespaced_pod(name, namespace)
        assert pod.spec.node_name is None, name
        assert pod.status.phase == "Pending"


def test_pod_with_node_name_preset_runs_without_binding(local_cluster, core_v1, namespace):
    body = python_pod("preset", "print('ran on preset node')")
    body["spec"]["nodeName"] = local_cluster.node_name
    core_v1.create_namespaced_pod(namespace, body)

    pod = wait_phase(core_v1, namespace, "preset", "Succeeded", "Failed")

    assert pod.status.phase == "Succeeded"
    assert pod_log(core_v1, namespace, "preset") == "ran on preset node\n"


# --- running, exit codes and restarts ---------------------------------------------------------------------


def test_pod_succeeds_and_reports_status(local_cluster, core_v1, namespace):
    core_v1.create_namespaced_pod(namespace, python_pod("ok", "print('hello from the kubelet')"))

    pod = wait_phase(core_v1, namespace, "ok", "Succeeded", "Failed")

    assert pod.status.phase == "Succeeded"
    assert pod.status.pod_ip == pod.status.host_ip == "127.0.0.1"
    assert pod.status.start_time is not None
    status = main_status(pod)
    assert status.state.terminated.exit_code == 0
    assert status.state.terminated.reason == "Completed"
    assert status.state.terminated.finished_at >= status.state.terminated.started_at
    assert status.restart_count == 0
    assert status.ready is False
    conditions = {c.type: c for c in pod.status.conditions}
    assert conditions["Ready"].status == "False"
    assert conditions["Ready"].reason == "PodCompleted"
    assert conditions["Initialized"].status == "True"
    assert pod_log(core_v1, namespace, "ok") == "hello from the kubelet\n"


def test_running_pod_is_ready_and_running(local_cluster, core_v1, namespace):
    core_v1.create_namespaced_pod(namespace, python_pod("runner", "import time; time.sleep(60)"))

    pod = wait_phase(core_v1, namespace, "runner", "Running")

    status = main_status(pod)
    assert status.state.running.started_at is not None
    assert status.ready is True
    assert status.started is True
    assert status.container_id.startswith("process://")
    conditions = {c.type: c.status for c in pod.status.conditions}
    assert conditions == {"Initialized": "True", "Ready": "True", "ContainersReady": "True", "PodScheduled": "True"}


def test_exit_code_fails_the_pod(local_cluster, core_v1, namespace):
    core_v1.create_namespaced_pod(namespace, python_pod("exit3", "import sys; print('failing'); sys.exit(3)"))

    pod = wait_phase(core_v1, namespace, "exit3", "Succeeded", "Failed")

    assert pod.status.phase == "Failed"
    terminated = main_status(pod).state.terminated
    assert (terminated.exit_code, terminated.reason) == (3, "Error")


@pytest.mark.parametrize(("sig", "code"), [("SIGKILL", 137), ("SIGTERM", 143)])
def test_death_by_signal_is_128_plus_signal(local_cluster, core_v1, namespace, sig, code):
    name = f"killed-{sig.lower()}"
    core_v1.create_namespaced_pod(namespace, python_pod(name, f"import os, signal; os.kill(os.getpid(), signal.{sig})"))

    pod = wait_phase(core_v1, namespace, name, "Succeeded", "Failed")

    terminated = main_status(pod).state.terminated
    assert (pod.status.phase, terminated.exit_code, terminated.reason) == ("Failed", code, "Error")


def test_memory_limit_oom_kills_with_137(local_cluster, core_v1, namespace):
    script = """
        import time
        hog = bytearray(400 * 1024 * 1024)  # touches every page: 400 MiB resident
        print('allocated', flush=True)
        time.sleep(60)
    """
    body = python_pod("hog", script, resources={"limits": {"memory": "100Mi"}})
    core_v1.create_namespaced_pod(namespace, body)

    pod = wait_phase(core_v1, namespace, "hog", "Succeeded", "Failed")

    terminated = main_status(pod).state.terminated
    assert (pod.status.phase, terminated.exit_code, terminated.reason) == ("Failed", 137, "OOMKilled")


def test_on_failure_restarts_in_place_and_counts(local_cluster, core_v1, namespace, tmp_path):
    script = """
        import os, sys
        path = os.environ['COUNTER']
        attempt = int(open(path).read()) if os.path.exists(path) else 0
        open(path, 'w').write(str(attempt + 1))
        print('attempt', attempt)
        sys.exit(0 if attempt >= 2 else 1)
    """
    env = [{"name": "COUNTER", "value": str(tmp_path / "counter")}]
    core_v1.create_namespaced_pod(namespace, python_pod("flaky", script, restart_policy="OnFailure", env=env))

    pod = wait_phase(core_v1, namespace, "flaky", "Succeeded", "Failed")

    assert pod.status.phase == "Succeeded"
    status = main_status(pod)
    assert status.restart_count == 2
    assert status.state.terminated.exit_code == 0
    assert (status.last_state.terminated.exit_code, status.last_state.terminated.reason) == (1, "Error")
    assert pod_log(core_v1, namespace, "flaky") == "attempt 2\n"
    assert pod_log(core_v1, namespace, "flaky", previous=True) == "attempt 1\n"


def test_always_restarts_a_succeeding_container(local_cluster, core_v1, namespace):
    core_v1.create_namespaced_pod(namespace, python_pod("looper", "print('round')", restart_policy="Always"))

    pod = wait_for(
        pod_reader(core_v1, namespace, "looper"),
        lambda p: p.status.container_statuses and main_status(p).restart_count >= 2,
        what="two restarts",
    )

    assert pod.status.phase == "Running"
    assert main_status(pod).last_state.terminated.reason == "Completed"


def test_missing_executable_is_a_start_error(local_cluster, core_v1, namespace):
    body = python_pod("noexec", "")
    body["spec"]["containers"][0]["command"] = ["no-such-program-anywhere"]
    core_v1.create_namespaced_pod(namespace, body)

    pod = wait_phase(core_v1, namespace, "noexec", "Succeeded", "Failed")

    terminated = main_status(pod).state.terminated
    assert (terminated.exit_code, terminated.reason) == (128, "StartError")
    assert "executable file not found" in terminated.message


def test_init_containers_run_first_in_order(local_cluster, core_v1, namespace, tmp_path):
    marker = tmp_path / "order"
    body = python_pod("with-init", f"print(open({str(marker)!r}).read())")
    body["spec"]["initContainers"] = [
        {
            "name": f"init-{i}",
            "image": "busybox",
            "command": ["python", "-c", f"open({str(marker)!r}, 'a').write('init-{i};')"],
        }
        for i in (1, 2)
    ]
    core_v1.create_namespaced_pod(namespace, body)

    pod = wait_phase(core_v1, namespace, "with-init", "Succeeded", "Failed")

    assert pod.status.phase == "Succeeded"
    assert pod_log(core_v1, namespace, "with-init", container="main") == "init-1;init-2;\n"
    assert [s.state.terminated.exit_code for s in pod.status.init_container_statuses] == [0, 0]


def test_failed_init_container_fails_a_never_pod_without_running_main(local_cluster, core_v1, namespace, tmp_path):
    body = python_pod("bad-init", f"open({str(tmp_path / 'main-ran')!r}, 'w')")
    fetch = "import sys; print('fetching data'); print('access denied'); sys.exit(2)"
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "command": ["python", "-c", fetch]}]
    core_v1.create_namespaced_pod(namespace, body)

    pod = wait_phase(core_v1, namespace, "bad-init", "Succeeded", "Failed")

    assert pod.status.phase == "Failed"
    init = pod.status.init_container_statuses[0]
    assert (init.name, init.state.terminated.exit_code, init.state.terminated.reason) == ("init", 2, "Error")
    assert (init.ready, init.restart_count) == (False, 0)
    assert main_status(pod).state.waiting.reason == "PodInitializing"
    initialized = next(c for c in pod.status.conditions if c.type == "Initialized")
    assert (initialized.status, initialized.reason) == ("False", "ContainersNotInitialized")
    assert not (tmp_path / "main-ran").exists()
    # Its log is served by its name, as for any container.
    assert pod_log(core_v1, namespace, "bad-init", container="init") == "fetching data\naccess denied\n"


INIT_CRASH = """
    import os, sys
    path = os.environ['COUNTER']
    run = int(open(path).read()) + 1 if os.path.exists(path) else 1
    open(path, 'w').write(str(run))
    print('run', run)
    sys.exit(2)
"""


def init_backing_off(pod: Any) -> bool:
    statuses = pod.status.init_container_statuses or []
    return bool(statuses) and statuses[0].restart_count >= 1 and statuses[0].state.waiting is not None


def test_failing_init_container_under_on_failure_crash_loops_and_keeps_the_pod_pending(
    local_cluster, core_v1, namespace, tmp_path
):
    body = python_pod("init-loop", f"open({str(tmp_path / 'main-ran')!r}, 'w')", restart_policy="OnFailure")
    body["spec"]["initContainers"] = [
        {
            "name": "fetch-data",
            "image": "busybox",
            "command": ["python", "-u", "-c", textwrap.dedent(INIT_CRASH)],
            "env": [{"name": "COUNTER", "value": str(tmp_path / "runs")}],
        }
    ]
    core_v1.create_namespaced_pod(namespace, body)

    def backing_off_steadily() -> tuple[Any, str, str]:
        # The status and the logs are read apart: take them when the pod did not change in between.
        before = core_v1.read_namespaced_pod("init-loop", namespace)
        if not init_backing_off(before):
            return before, "", ""
        current = pod_log(core_v1, namespace, "init-loop", container="fetch-data")
        previous = pod_log(core_v1, namespace, "init-loop", container="fetch-data", previous=True)
        after = core_v1.read_namespaced_pod("init-loop", namespace)
        same = init_backing_off(after) and after.status.init_container_statuses[0].restart_count == (
            before.status.init_container_statuses[0].restart_count
        )
        return (after, current, previous) if same else (after, "", "")

    pod, current, previous = wait_for(backing_off_steadily, lambda r: bool(r[1]), what="init container back-off")

    assert pod.status.phase == "Pending"
    init = pod.status.init_container_statuses[0]
    assert init.state.waiting.reason == "CrashLoopBackOff"
    assert "restarting failed container=fetch-data" in init.state.waiting.message
    assert (init.last_state.terminated.exit_code, init.last_state.terminated.reason) == (2, "Error")
    assert main_status(pod).state.waiting.reason == "PodInitializing"
    assert not (tmp_path / "main-ran").exists()
    # Like the kubelet, the log of the run in lastState: with and without ``previous`` while the next waits.
    runs = init.restart_count + 1
    assert current == previous == f"run {runs}\n"


def test_an_init_containers_restart_policy_is_not_kept_by_the_1_20_apiserver(local_cluster, core_v1, namespace):
    """A sidecar (``restartPolicy: Always`` on an init container) is Kubernetes 1.28+: the local 1.20 apiserver does
    not know the field and drops it, so the local cluster cannot run one (see docs/lifecycle.md); the provider's
    judgement of a sidecar's end has unit tests over a newer kubelet's pod JSON (tests/test_init_containers.py)."""
    body = python_pod("with-sidecar", "print('done')")
    body["spec"]["initContainers"] = [
        {"name": "shipper", "image": "busybox", "command": ["python", "-c", "pass"], "restartPolicy": "Always"}
    ]
    core_v1.create_namespaced_pod(namespace, body)

    stored = core_v1.read_namespaced_pod("with-sidecar", namespace, _preload_content=False)

    init = json.loads(stored.data)["spec"]["initContainers"][0]
    assert init["name"] == "shipper" and "restartPolicy" not in init


# --- environment, command and working directory -----------------------------------------------------------


def test_env_field_refs_expansion_and_working_dir(local_cluster, core_v1, namespace, tmp_path):
    from kubernetes import client

    core_v1.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg"), data={"greeting": "hello"})
    )
    core_v1.create_namespaced_secret(
        namespace, client.V1Secret(metadata=client.V1ObjectMeta(name="sec"), string_data={"token": "s3cret"})
    )
    work = tmp_path / "does" / "not" / "exist" / "yet"
    env = [
        {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "greeting"}}},
        {"name": "MESSAGE", "value": "$(GREETING) world, $$(GREETING) kept, $(UNDEFINED) kept"},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "token"}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
    ]
    script = """
        import json, os, sys
        print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), 'exe': sys.executable, 'env': dict(os.environ)}))
    """
    body = python_pod("envy", script, env=env, workingDir=str(work), resources={"limits": {"memory": "512Mi"}})
    body["spec"]["containers"][0]["args"] = ["$(POD_NAME)", "$$(POD_NAME)", "$(NOPE)"]
    core_v1.create_namespaced_pod(namespace, body)

    pod = wait_phase(core_v1, namespace, "envy", "Succeeded", "Failed")
    seen = json.loads(pod_log(core_v1, namespace, "envy"))
    assert pod.status.phase == "Succeeded"
    assert seen["argv"] == ["envy", "$(POD_NAME)", "$(NOPE)"]
    assert seen["cwd"] == str(work)
    # `python` resolves to the kubelet's own interpreter: the venv the tests run in.
    assert Path(seen["exe"]).parent == Path(sys.executable).parent
    e = seen["env"]
    assert e["MESSAGE"] == "hello world, $(GREETING) kept, $(UNDEFINED) kept"
    assert e["TOKEN"] == "s3cret"
    assert (e["POD_NAME"], e["POD_NAMESPACE"], e["POD_UID"]) == ("envy", namespace, pod.metadata.uid)
    assert (e["APP"], e["POD_IP"], e["NODE"], e["MEM_MI"]) == ("envy", "127.0.0.1", local_cluster.node_name, "512")
    assert e["HOSTNAME"] == "envy"
    assert e["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    # Nothing of the kubelet's own environment leaks in beyond what an image would provide.
    declared = {v["name"] for v in env}
    assert set(e) - declared <= {"PATH", "HOME", "HOSTNAME", "LANG", "LC_ALL", "TZ", "LC_CTYPE"}


def test_missing_config_map_keeps_container_waiting(local_cluster, core_v1, namespace):
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}]
    core_v1.create_namespaced_pod(namespace, python_pod("needs-cfg", "print(1)", env=env))

    pod = wait_for(
        pod_reader(core_v1, namespace, "needs-cfg"),
        lambda p: (
            p.status.container_statuses
            and main_status(p).state.waiting is not None
            and main_status(p).state.waiting.reason == "CreateContainerConfigError"
        ),
        what="CreateContainerConfigError",
    )

    assert pod.status.phase == "Pending"
    assert "absent" in main_status(pod).state.waiting.message


# --- logs -------------------------------------------------------------------------------------------------


def test_log_options_tail_limit_timestamps_since(local_cluster, core_v1, namespace):
    script = """
        import time
        for i in range(10):
            print('line', i)
        time.sleep(6)
        print('late')
    """
    core_v1.create_namespaced_pod(namespace, python_pod("chatty", script))
    wait_phase(core_v1, namespace, "chatty", "Succeeded")

    read = lambda **kw: pod_log(core_v1, namespace, "chatty", **kw)
    assert read(tail_lines=3) == "line 8\nline 9\nlate\n"
    assert read(tail_lines=0) == ""
    assert read(limit_bytes=8) == "line 0\nl"
    stamped = read(timestamps=True, tail_lines=2).splitlines()
    assert len(stamped) == 2
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line 9", stamped[0])
    assert stamped[1].endswith(" late")
    # "late" was printed 6 s after the rest: a window reaching 3 s further back than "late" (however long ago that
    # was, on a slow machine too, and whatever the request's own delay up to 3 s) holds only it.
    late_at = datetime.fromisoformat(stamped[1].split()[0][:26] + "+00:00").timestamp()
    assert read(since_seconds=math.ceil(time.time() - late_at) + 3) == "late\n"


def test_follow_streams_while_the_container_runs(local_cluster, core_v1, namespace, tmp_path):
    # Three ticks, then it waits for the test (however slow the machine) before the last three and its exit.
    go_on = tmp_path / "go-on"
    script = f"""
        import os, time
        for i in range(6):
            if i == 3:
                deadline = time.monotonic() + 120
                while not os.path.exists({str(go_on)!r}) and time.monotonic() < deadline:
                    time.sleep(0.1)
            print('tick', i, flush=True)
            time.sleep(0.5)
    """
    core_v1.create_namespaced_pod(namespace, python_pod("ticker", script))
    wait_log(core_v1, namespace, "ticker", r"tick 0")

    response = core_v1.read_namespaced_pod_log("ticker", namespace, follow=True, _preload_content=False)
    received = b""
    running_when_first_seen = None
    for chunk in response.stream(64):
        if running_when_first_seen is None and b"tick" in chunk:
            pod = core_v1.read_namespaced_pod("ticker", namespace)
            running_when_first_seen = main_status(pod).state.running is not None
            go_on.touch()
        received += chunk
    response.release_conn()

    # The stream delivered output before the process ended and closed by itself when it ended.
    assert running_when_first_seen is True
    assert received.decode().splitlines() == [f"tick {i}" for i in range(6)]


def test_kubectl_logs_works_through_the_apiserver(local_cluster, core_v1, namespace):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    core_v1.create_namespaced_pod(namespace, python_pod("for-kubectl", "print('a'); print('b'); print('c')"))
    wait_phase(core_v1, namespace, "for-kubectl", "Succeeded")

    out = subprocess.run(
        [kubectl, "--kubeconfig", str(local_cluster.kubeconfig), "-n", namespace, "logs", "for-kubectl", "--tail=2"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )

    assert out.stdout == "b\nc\n"


def test_previous_log_without_restart_is_an_error(local_cluster, core_v1, namespace):
    from kubernetes.client.exceptions import ApiException

    core_v1.create_namespaced_pod(namespace, python_pod("once", "print(1)"))
    wait_phase(core_v1, namespace, "once", "Succeeded")

    with pytest.raises(ApiException) as raised:
        pod_log(core_v1, namespace, "once", previous=True)

    assert raised.value.status == 400
    assert "previous terminated container" in raised.value.body


def test_kubelet_answers_404_for_other_paths_and_unknown_pods(local_cluster):
    context = ssl.create_default_context(cafile=str(local_cluster.state_dir / "kubelet" / "kubelet.crt"))
    base = f"https://127.0.0.1:{local_cluster.ports.kubelet}"
    for path in ("/exec/default/p/c?command=ls", "/stats/summary", "/containerLogs/default/no-such-pod/main"):
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(base + path, context=context, timeout=10)
        assert raised.value.code == 404, path


# --- deletion ---------------------------------------------------------------------------------------------


def test_delete_sends_sigterm_then_completes_deletion(local_cluster, core_v1, namespace, tmp_path):
    marker = tmp_path / "sigterm"
    script = f"""
        import os, signal, sys, time
        def on_term(signum, frame):
            open({str(marker)!r}, 'w').write('SIGTERM')
            sys.exit(0)
        signal.signal(signal.SIGTERM, on_term)
        print('pid', os.getpid(), flush=True)
        time.sleep(300)
    """
    core_v1.create_namespaced_pod(namespace, python_pod("sleeper", script))
    pid = int(re.search(r"pid (\d+)", wait_log(core_v1, namespace, "sleeper", r"pid \d+")).group(1))
    assert psutil.pid_exists(pid)

    started = time.monotonic()
    core_v1.delete_namespaced_pod("sleeper", namespace, grace_period_seconds=300)
    wait_for(lambda: gone(core_v1, namespace, "sleeper"), bool, what="the pod to be gone")

    # It exited on SIGTERM, long before the grace period ended, and the kubelet then completed the deletion.
    assert time.monotonic() - started < 60
    assert marker.read_text() == "SIGTERM"
    assert not psutil.pid_exists(pid)


def test_delete_sigkills_after_the_grace_period(local_cluster, core_v1, namespace):
    script = """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print('pid', os.getpid(), flush=True)
        time.sleep(300)
    """
    core_v1.create_namespaced_pod(namespace, python_pod("stubborn", script))
    pid = int(re.search(r"pid (\d+)", wait_log(core_v1, namespace, "stubborn", r"pid \d+")).group(1))

    started = time.monotonic()
    core_v1.delete_namespaced_pod("stubborn", namespace, grace_period_seconds=2)
    wait_for(lambda: gone(core_v1, namespace, "stubborn"), bool, what="the pod to be gone")

    assert time.monotonic() - started >= 2
    assert not psutil.pid_exists(pid)


def test_force_deleted_pod_has_its_processes_killed(local_cluster, core_v1, namespace):
    script = """
        import os, time
        print('pid', os.getpid(), flush=True)
        time.sleep(300)
    """
    core_v1.create_namespaced_pod(namespace, python_pod("forced", script))
    pid = int(re.search(r"pid (\d+)", wait_log(core_v1, namespace, "forced", r"pid \d+")).group(1))

    core_v1.delete_namespaced_pod("forced", namespace, grace_period_seconds=0)

    wait_for(lambda: psutil.pid_exists(pid), lambda alive: not alive, what=f"pid {pid} to end")


def test_cli_exits_1_when_its_port_is_taken(local_cluster, tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_trainjob_local.kubelet",
            "--kubeconfig",
            str(local_cluster.kubeconfig),
            "--node-name",
            "second-node",
            "--port",
            str(local_cluster.ports.kubelet),  # the cluster's kubelet serves there
            "--state-dir",
            str(tmp_path / "kubelet"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert out.returncode == 1
    assert "kubelet: error:" in out.stderr
    assert "in use" in out.stderr


@pytest.mark.alone  # SIGKILLs the session cluster's kubelet: every pod running anywhere is lost
def test_kubelet_restart_reaps_orphans_and_reports_lost_containers(local_cluster, core_v1, namespace):
    """A kubelet killed with SIGKILL leaves no process behind once it is back, and reports what it lost."""
    import signal

    never = python_pod("lost-never", "")
    never["spec"]["containers"][0]["command"] = ["sh", "-c", "sleep 300 & echo child $!; wait"]
    flaky = python_pod(
        "lost-onfailure", "import time; print('up', flush=True); time.sleep(300)", restart_policy="OnFailure"
    )
    for body in (never, flaky):
        core_v1.create_namespaced_pod(namespace, body)
    child = int(re.search(r"child (\d+)", wait_log(core_v1, namespace, "lost-never", r"child \d+")).group(1))
    wait_log(core_v1, namespace, "lost-onfailure", "up")

    kubelet = psutil.Process(local_cluster.pids()["kubelet"])
    kubelet.send_signal(signal.SIGKILL)
    # Dead (a zombie until the cluster reaps it) before `up`, which would otherwise still see it running.
    wait_for(lambda: dead(kubelet), bool, what="the kubelet to die")
    local_cluster.up()  # starts what is not running: the kubelet
    assert local_cluster.pids()["kubelet"] != kubelet.pid

    pod = wait_phase(core_v1, namespace, "lost-never", "Failed")
    terminated = main_status(pod).state.terminated
    assert (terminated.exit_code, terminated.reason) == (137, "ContainerStatusUnknown")
    wait_for(lambda: psutil.pid_exists(child), lambda alive: not alive, what=f"orphan {child} to end")
    restarted = wait_for(
        pod_reader(core_v1, namespace, "lost-onfailure"),
        lambda p: main_status(p).restart_count == 1 and main_status(p).state.running is not None,
        what="the OnFailure container to run again",
    )
    assert main_status(restarted).last_state.terminated.reason == "ContainerStatusUnknown"


@pytest.mark.alone  # SIGKILLs the session cluster's kubelet: every pod running anywhere is lost
def test_a_finished_pod_deleted_with_a_grace_period_is_removed(local_cluster, core_v1, namespace):
    """A delete that met the pod still running in the apiserver's view sets a grace period; the pod's last status
    (Succeeded) is written after it. The apiserver then waits for the kubelet's grace-0 DELETE, which it must send
    for a finished pod too — here after a kubelet restart, the deterministic form of that race (the delete and
    the status written while no kubelet ran)."""
    import signal

    core_v1.create_namespaced_pod(namespace, python_pod("ends-as-deleted", "import time; time.sleep(300)"))
    wait_phase(core_v1, namespace, "ends-as-deleted", "Running")
    kubelet = psutil.Process(local_cluster.pids()["kubelet"])
    kubelet.send_signal(signal.SIGKILL)
    wait_for(lambda: dead(kubelet), bool, what="the kubelet to die")
    core_v1.delete_namespaced_pod("ends-as-deleted", namespace, grace_period_seconds=30)
    core_v1.patch_namespaced_pod_status("ends-as-deleted", namespace, {"status": {"phase": "Succeeded"}})
    pod = core_v1.read_namespaced_pod("ends-as-deleted", namespace)
    assert pod.metadata.deletion_timestamp is not None and pod.status.phase == "Succeeded"

    local_cluster.up()  # the kubelet again
    wait_for(
        lambda: gone(core_v1, namespace, "ends-as-deleted"), bool, what="the finished, terminating pod to be removed"
    )


_FAILS_WITH_THE_KUBELET_STOPPED = """
import pytest

@pytest.mark.alone
def test_fails_with_the_kubelet_stopped(local_cluster):
    local_cluster.stop_component("kubelet")
    raise AssertionError("failed on purpose")
"""


@pytest.mark.alone  # stops the session cluster's kubelet
def test_a_failed_alone_test_leaves_every_component_running(local_cluster, tmp_path):
    """The report: one `alone` test failed with the kubelet killed, and the next timed out for want of a kubelet.
    Whatever an `alone` test does, the plugin starts the session cluster's missing components after it."""
    test_file = tmp_path / "test_fails.py"
    test_file.write_text(_FAILS_WITH_THE_KUBELET_STOPPED)
    before = local_cluster.pids()["kubelet"]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(test_file),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed" in run.stdout and "failed on purpose" in run.stdout
    assert "starting again kubelet" in run.stdout
    assert local_cluster.pids()["kubelet"] != before
    assert local_cluster.status().healthy


# --- pure helpers -----------------------------------------------------------------------------------------

# Cases of Kubernetes' third_party/forked/golang/expansion/expand_test.go (TestMapping).
_CONTEXT = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(VAR_A)", "A"),
        ("$(VAR_A)-$(VAR_A)", "A-A"),
        ("___$(VAR_B)___", "___B___"),
        ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
        ("f000-$$VAR_A", "f000-$VAR_A"),
        ("foo\\$(VAR_C)bar", "foo\\Cbar"),
        ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
        ("$(VAR_REF)", "$(VAR_A)"),
        ("foo$(VAR_EMPTY)bar", "foobar"),
        ("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
        ("$?_boo_$!", "$?_boo_$!"),
        ("$(VAR_DNE)", "$(VAR_DNE)"),
        ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
        ("$$$$$$$(VAR_A)", "$$$A"),
        ("${VAR_A}", "${VAR_A}"),
        ("$(VAR_B)_______$(A", "B_______$(A"),
        ("$(VAR_C)_______$(", "C_______$("),
        ("$(VAR_A)foobarzab$", "Afoobarzab$"),
        ("--$($($($($--", "--$($($($($--"),
        ("$(foo$$var)", "$(foo$$var)"),
    ],
)
def test_expand_matches_kubernetes(text, expected):
    assert expand(text, mapping_for(_CONTEXT)) == expected


def _cri_file(path: Path, lines: list[tuple[int, str, str, str]]) -> Path:
    path.write_bytes(b"".join(f"{format_timestamp(ns)} {s} {tag} {text}\n".encode() for ns, s, tag, text in lines))
    return path


def test_read_log_joins_partial_lines_and_applies_options(tmp_path):
    second = 1_000_000_000
    log = _cri_file(
        tmp_path / "0.log",
        [
            (100 * second, "stdout", "F", "one"),
            (101 * second, "stderr", "P", "two-a "),
            (101 * second, "stderr", "F", "two-b"),
            (105 * second, "stdout", "F", ""),
            (106 * second, "stdout", "F", "four"),
        ],
    )

    def read(**kw: Any) -> bytes:
        return b"".join(read_log(log, LogOptions(**kw)))

    assert read() == b"one\ntwo-a two-b\n\nfour\n"
    assert read(tail_lines=2) == b"\nfour\n"
    assert read(limit_bytes=6) == b"one\ntw"
    assert read(since_ns=105 * second) == b"\nfour\n"
    assert read(timestamps=True, tail_lines=1) == f"{format_timestamp(106 * second)} four\n".encode()


def test_pod_phase_follows_the_kubelet_rules():
    def spec(policy: str) -> dict[str, Any]:
        return {"restartPolicy": policy, "containers": [{"name": "a"}, {"name": "b"}]}

    def term(name: str, code: int) -> dict[str, Any]:
        return {"name": name, "state": {"terminated": {"exitCode": code}}}

    run = {"name": "b", "state": {"running": {}}}
    backoff = {"name": "b", "state": {"waiting": {}}, "lastState": {"terminated": {"exitCode": 1}}}

    assert pod_phase(spec("Never"), [], [term("a", 0), term("b", 0)]) == "Succeeded"
    assert pod_phase(spec("Never"), [], [term("a", 0), term("b", 1)]) == "Failed"
    assert pod_phase(spec("Never"), [], [term("a", 1), run]) == "Running"
    assert pod_phase(spec("OnFailure"), [], [term("a", 0), backoff]) == "Running"
    assert pod_phase(spec("Always"), [], [term("a", 0), term("b", 0)]) == "Running"
    assert pod_phase(spec("Never"), [], [term("a", 0)]) == "Pending"
