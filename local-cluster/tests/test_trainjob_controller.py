"""What the local TrainJob controller does, through the real apiserver of the session cluster: the JobSet it
creates from a TrainJob and its runtime, the status it writes from the JobSet's, suspension, deadlines, managedBy,
runtimes that are missing or of an unsupported kind, deletion.

Each test names the kubeflow/trainer v2.3.0 file whose behaviour it checks. The JobSet statuses are written by the
tests through the status subresource, on JobSets whose ``managedBy`` names another controller (so a local JobSet
controller, when there is one, leaves them alone): the tests need no JobSet controller.
"""

from __future__ import annotations

import copy
import functools
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from airflow_trainjob_local.kube import MERGE_PATCH
from airflow_trainjob_local.testing import waiting
from airflow_trainjob_local.trainer import constants as c

TIMEOUT = 90.0
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)
QUICK = ["python", "-c", "print('done')"]
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


# --- fixtures ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def trainer_api(local_cluster: Any, kube_api_client: client.ApiClient) -> None:
    """The Trainer v2 and JobSet kinds, as ``up`` installs them, served (and the controller running)."""
    if not local_cluster.workloads:
        pytest.skip("the session cluster runs without the training controller")
    ext = client.ApiextensionsV1Api(kube_api_client)

    def established(name: str) -> bool:
        conditions = ext.read_custom_resource_definition(name).status.conditions or []
        return any(x.type == "Established" and x.status == "True" for x in conditions)

    for plural, group in (
        (c.TRAINJOBS, c.GROUP),
        (c.TRAINING_RUNTIMES, c.GROUP),
        (c.CLUSTER_TRAINING_RUNTIMES, c.GROUP),
        (c.JOBSETS, c.JOBSET_GROUP),
    ):
        wait_for(functools.partial(established, f"{plural}.{group}"), what=f"{plural}.{group} established")


@pytest.fixture
def runtimes(trainer_api: None, custom_objects: client.CustomObjectsApi) -> Iterator[Callable[..., str]]:
    """Creates ClusterTrainingRuntimes with unique names (deleted afterwards); returns the name."""
    created: list[str] = []

    def make(runtime: dict[str, Any] | None = None, *, create: bool = True) -> str:
        runtime = copy.deepcopy(runtime or torch_runtime())
        name = f"rt-{uuid.uuid4().hex[:8]}"
        runtime["metadata"]["name"] = name
        if create:
            custom_objects.create_cluster_custom_object(c.GROUP, c.VERSION, c.CLUSTER_TRAINING_RUNTIMES, runtime)
            created.append(name)
        return name

    yield make
    for name in created:
        try:
            custom_objects.delete_cluster_custom_object(c.GROUP, c.VERSION, c.CLUSTER_TRAINING_RUNTIMES, name)
        except ApiException as exc:
            if exc.status != 404:
                raise


# --- helpers -----------------------------------------------------------------------------------------------


def torch_runtime(jobset_managed_by: str | None = None) -> dict[str, Any]:
    """A ClusterTrainingRuntime shaped like upstream's torch-distributed (manifests/base/runtimes)."""
    spec: dict[str, Any] = {
        "replicatedJobs": [
            {
                "name": "node",
                "template": {
                    "metadata": {"labels": {c.LABEL_ANCESTOR_STEP: "trainer"}},
                    "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "pytorch/pytorch"}]}}},
                },
            }
        ]
    }
    if jobset_managed_by:
        spec["managedBy"] = jobset_managed_by
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.CLUSTER_TRAINING_RUNTIME_KIND,
        "metadata": {"name": "torch-distributed", "labels": {c.LABEL_FRAMEWORK: "torch"}},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": spec}},
    }


def trainjob(name: str, runtime: str, kind: str = c.CLUSTER_TRAINING_RUNTIME_KIND, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": runtime, "apiGroup": c.GROUP, "kind": kind}, **spec},
    }


def create(custom: client.CustomObjectsApi, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    return custom.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, body)


def read_trainjob(custom: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    return custom.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, name)


def read_jobset(custom: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return custom.get_namespaced_custom_object(c.JOBSET_GROUP, c.JOBSET_VERSION, namespace, c.JOBSETS, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((x for x in (obj.get("status") or {}).get("conditions") or [] if x["type"] == type_), None)


def has_condition(type_: str, reason: str | None = None, status: str = "True") -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        cond = condition(obj, type_)
        return cond is not None and cond["status"] == status and (reason is None or cond["reason"] == reason)

    return check


def node_container(jobset: dict[str, Any]) -> dict[str, Any]:
    node_job = next(j for j in jobset["spec"]["replicatedJobs"] if j["name"] == "node")
    return next(x for x in node_job["template"]["spec"]["template"]["spec"]["containers"] if x["name"] == "node")


def events(core: client.CoreV1Api, namespace: str, name: str) -> list[Any]:
    found = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    return [e for e in found if e.involved_object.kind == c.TRAINJOB_KIND]


def stays(read: Callable[[], Any], ok: Callable[[Any], bool], seconds: float, what: str) -> Any:
    """``ok(read())`` holds on every look for ``seconds``; returns the last value."""
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        assert ok(value), f"{what}: {value!r}"
        if time.monotonic() >= deadline:
            return value
        time.sleep(0.3)


def write_jobset_status(custom: client.CustomObjectsApi, namespace: str, name: str, status: dict[str, Any]) -> None:
    custom.patch_namespaced_custom_object_status(
        c.JOBSET_GROUP, c.JOBSET_VERSION, namespace, c.JOBSETS, name, {"status": status}, _content_type=MERGE_PATCH
    )


# --- the JobSet ----------------------------------------------------------------------------------------------


def identity_patch() -> dict[str, Any]:
    """A runtime patch like the one the provider will send: a JobSet label and its identity labels on the pods."""
    return {
        "manager": "airflow.apache.org/trainjob",
        "trainingRuntimeSpec": {
            "template": {
                "metadata": {"labels": {"team": "ml"}},
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {"template": {"metadata": {"labels": {"airflow-trainjob/dag-id": "d"}}}}
                            },
                        }
                    ]
                },
            }
        },
    }


def test_torch_trainjob_with_two_nodes_gets_its_jobset(local_cluster, custom_objects, core_v1, namespace, runtimes):
    """plugins/jobset/{jobset.go,builder.go}, plugins/torch/torch.go, core/trainingruntime.go (runtime patches),
    core/snapshot.go: the JobSet named like the TrainJob, owned by it, node x2, torch env, patches applied."""
    runtime = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE))
    patch = identity_patch()
    created = create(
        custom_objects,
        namespace,
        trainjob(
            "two-nodes",
            runtime,
            trainer={"numNodes": 2, "command": QUICK, "env": [{"name": "MINE", "value": "1"}]},
            runtimePatches=[patch],
        ),
    )
    jobset = wait_for(lambda: read_jobset(custom_objects, namespace, "two-nodes"), what="the JobSet")
    assert jobset["metadata"]["ownerReferences"] == [
        {
            "apiVersion": c.API_VERSION,
            "kind": "TrainJob",
            "name": "two-nodes",
            "uid": created["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert jobset["metadata"]["labels"] == {"team": "ml"}
    node_job = jobset["spec"]["replicatedJobs"][0]
    assert (
        node_job["replicas"],
        node_job["template"]["spec"]["parallelism"],
        node_job["template"]["spec"]["completions"],
    ) == (1, 2, 2)
    assert node_job["template"]["spec"]["template"]["metadata"]["labels"] == {"airflow-trainjob/dag-id": "d"}
    node = node_container(jobset)
    assert node["command"] == QUICK
    port = read_trainjob(custom_objects, namespace, "two-nodes")["metadata"]["annotations"][
        c.ANNOTATION_LOCAL_MASTER_PORT
    ]
    # (the CRD's schema may add defaults such as fieldRef.apiVersion and ports[].protocol: compare what we set)
    env = {
        e["name"]: e.get("value", (e.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")) for e in node["env"]
    }
    assert env == {
        "MINE": "1",
        "PET_NNODES": "2",
        "PET_NPROC_PER_NODE": "1",
        "PET_NODE_RANK": "metadata.annotations['batch.kubernetes.io/job-completion-index']",
        "PET_MASTER_ADDR": "127.0.0.1",
        "PET_MASTER_PORT": port,
        # plugins/trainjobstatus: the TrainJobStatus gate is on in the local cluster
        "KUBEFLOW_TRAINER_SERVER_URL": f"https://127.0.0.1:{local_cluster.ports.status_server}"
        f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/two-nodes/status",
        "KUBEFLOW_TRAINER_SERVER_CA_CERT": "/var/run/secrets/kubeflow/trainer/ca.crt",
        "KUBEFLOW_TRAINER_SERVER_TOKEN": "/var/run/secrets/kubeflow/trainer/token",
    }
    assert [p["containerPort"] for p in node["ports"]] == [int(port)]
    snapshot = core_v1.read_namespaced_config_map("two-nodes-runtime-snapshot", namespace)
    assert snapshot.metadata.owner_references[0].uid == created["metadata"]["uid"]
    assert f"name: {runtime}" in snapshot.data["runtime"]
    trainjob_now = read_trainjob(custom_objects, namespace, "two-nodes")
    assert condition(trainjob_now, "Created") is None and condition(trainjob_now, "Running") is None


def test_the_runtime_snapshot_keeps_a_trainjob_on_the_runtime_it_started_with(custom_objects, namespace, runtimes):
    """core/snapshot.go: the JobSet is rebuilt from the snapshot, not from the runtime as it is now."""
    runtime = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE))
    create(custom_objects, namespace, trainjob("snap", runtime, suspend=True, trainer={"command": QUICK}))
    wait_for(lambda: read_jobset(custom_objects, namespace, "snap"), what="the suspended JobSet")
    changed = torch_runtime(jobset_managed_by=MULTIKUEUE)
    changed["metadata"]["name"] = runtime
    changed["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "image"
    ] = "changed"
    current = custom_objects.get_cluster_custom_object(c.GROUP, c.VERSION, c.CLUSTER_TRAINING_RUNTIMES, runtime)
    changed["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    custom_objects.replace_cluster_custom_object(c.GROUP, c.VERSION, c.CLUSTER_TRAINING_RUNTIMES, runtime, changed)
    custom_objects.patch_namespaced_custom_object(
        c.GROUP, c.VERSION, namespace, c.TRAINJOBS, "snap", {"spec": {"suspend": False}}, _content_type=MERGE_PATCH
    )
    jobset = wait_for(
        lambda: read_jobset(custom_objects, namespace, "snap"),
        lambda js: js is not None and js["spec"].get("suspend") is False,
        what="the JobSet resumed",
    )
    assert node_container(jobset)["image"] == "pytorch/pytorch"


# --- status ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jobset_condition", "trainjob_condition"),
    [
        ({"type": "Completed", "reason": "AllJobsCompleted", "message": "jobset completed successfully"}, "Complete"),
        ({"type": "Failed", "reason": "FailedJobs", "message": 'jobset failed due to job "x" failing'}, "Failed"),
    ],
)
def test_status_follows_the_jobset(custom_objects, namespace, runtimes, jobset_condition, trainjob_condition):
    """plugins/jobset/jobset.go Status: Completed/Failed become Complete/Failed with the JobSet's reason and
    message; replicatedJobsStatus becomes jobsStatus."""
    runtime = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE))
    create(custom_objects, namespace, trainjob("st", runtime, trainer={"command": QUICK}))
    wait_for(lambda: read_jobset(custom_objects, namespace, "st"), what="the JobSet")
    counts = {"name": "node", "ready": 1, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}
    write_jobset_status(custom_objects, namespace, "st", {"replicatedJobsStatus": [counts]})
    running = wait_for(
        lambda: read_trainjob(custom_objects, namespace, "st"),
        lambda tj: (tj.get("status") or {}).get("jobsStatus") == [counts],
        what="jobsStatus from the JobSet",
    )
    assert not (running.get("status") or {}).get("conditions")
    stamp = "2026-01-01T00:00:00Z"
    done = {**jobset_condition, "status": "True", "lastTransitionTime": stamp}
    finished = {**counts, "ready": 0, "active": 0, "succeeded" if trainjob_condition == "Complete" else "failed": 1}
    write_jobset_status(custom_objects, namespace, "st", {"conditions": [done], "replicatedJobsStatus": [finished]})
    tj = wait_for(
        lambda: read_trainjob(custom_objects, namespace, "st"),
        has_condition(trainjob_condition),
        what=trainjob_condition,
    )
    cond = condition(tj, trainjob_condition)
    assert cond is not None
    assert (cond["reason"], cond["message"], cond["lastTransitionTime"]) == (
        jobset_condition["reason"],
        jobset_condition["message"],
        stamp,
    )
    assert tj["status"]["jobsStatus"] == [finished]


# --- suspension, deadline, managedBy --------------------------------------------------------------------------


def test_suspend_and_resume_reach_the_jobset(custom_objects, namespace, runtimes):
    """trainjob_controller.go setSuspendedCondition; plugins/jobset/jobset.go Build (a suspended JobSet is
    rebuilt, so runtime patches changed while suspended reach it on resume)."""
    runtime = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE))
    create(custom_objects, namespace, trainjob("sus", runtime, suspend=True, trainer={"command": QUICK}))
    jobset = wait_for(lambda: read_jobset(custom_objects, namespace, "sus"), what="the JobSet")
    assert jobset["spec"]["suspend"] is True
    tj = wait_for(lambda: read_trainjob(custom_objects, namespace, "sus"), has_condition("Suspended", "Suspended"))
    assert condition(tj, "Suspended")["message"] == "TrainJob is suspended"
    # What Kueue does on admission: a runtime patch (node selector) and suspend false in one update.
    patch = {
        "manager": "kueue.x-k8s.io/manager",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {"spec": {"template": {"spec": {"nodeSelector": {"flavor": "cpu"}}}}},
                        }
                    ]
                }
            }
        },
    }
    custom_objects.patch_namespaced_custom_object(
        c.GROUP,
        c.VERSION,
        namespace,
        c.TRAINJOBS,
        "sus",
        {"spec": {"suspend": False, "runtimePatches": [patch]}},
        _content_type=MERGE_PATCH,
    )
    jobset = wait_for(
        lambda: read_jobset(custom_objects, namespace, "sus"),
        lambda js: js["spec"].get("suspend") is False,
        what="the JobSet resumed",
    )
    pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == {"flavor": "cpu"}
    tj = wait_for(
        lambda: read_trainjob(custom_objects, namespace, "sus"), has_condition("Suspended", "Resumed", "False")
    )
    assert condition(tj, "Suspended")["message"] == "TrainJob is resumed"


def test_active_deadline_fails_the_trainjob_and_deletes_its_jobset(custom_objects, namespace, runtimes):
    """trainjob_controller.go reconcileDeadline: Failed, DeadlineExceeded, the JobSet deleted."""
    runtime = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE))
    create(custom_objects, namespace, trainjob("late", runtime, activeDeadlineSeconds=3, trainer={"command": QUICK}))
    # (not waiting for the JobSet first: on a loaded machine it may already be gone when first looked at)
    tj = wait_for(lambda: read_trainjob(custom_objects, namespace, "late"), has_condition("Failed", "DeadlineExceeded"))
    assert condition(tj, "Failed")["message"] == "TrainJob exceeded its active deadline"
    # The JobSet was built (its master port was given) before the deadline removed it.
    assert c.ANNOTATION_LOCAL_MASTER_PORT in tj["metadata"]["annotations"]
    wait_for(lambda: read_jobset(custom_objects, namespace, "late") is None, what="the JobSet deleted")


def test_a_trainjob_managed_by_multikueue_is_left_alone(custom_objects, core_v1, namespace, runtimes):
    """trainjob_controller.go Reconcile / IsManagedByExternalController: no JobSet, no status, no event."""
    runtime = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE))
    create(custom_objects, namespace, trainjob("mk", runtime, managedBy=MULTIKUEUE, trainer={"command": QUICK}))
    create(custom_objects, namespace, trainjob("ours", runtime, suspend=True, trainer={"command": QUICK}))
    wait_for(
        lambda: read_trainjob(custom_objects, namespace, "ours"), has_condition("Suspended"), what="ours reconciled"
    )
    stays(lambda: read_trainjob(custom_objects, namespace, "mk"), lambda tj: not tj.get("status"), 3, "no status on mk")
    assert read_jobset(custom_objects, namespace, "mk") is None
    assert events(core_v1, namespace, "mk") == []


# --- runtimes missing or unsupported ---------------------------------------------------------------------------


def test_a_missing_runtime_is_reported_and_retried(custom_objects, core_v1, namespace, runtimes):
    """core/clustertrainingruntime.go NewObjects + trainjob_controller.go: a Warning
    TrainJobResourcesCreationFailed event, no condition; the TrainJob starts once the runtime exists."""
    name = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE), create=False)
    create(custom_objects, namespace, trainjob("orphan", name, trainer={"command": QUICK}))
    found = wait_for(lambda: events(core_v1, namespace, "orphan"), what="the Warning event")
    assert (found[0].type, found[0].reason) == ("Warning", "TrainJobResourcesCreationFailed")
    assert found[0].message == (
        "TrainJob resources reconciliation failed: not found ClusterTrainingRuntime specified in TrainJob: "
        f'clustertrainingruntimes.trainer.kubeflow.org "{name}" not found'
    )
    assert not (read_trainjob(custom_objects, namespace, "orphan").get("status") or {}).get("conditions")
    assert read_jobset(custom_objects, namespace, "orphan") is None
    body = torch_runtime(jobset_managed_by=MULTIKUEUE)
    body["metadata"]["name"] = name
    custom_objects.create_cluster_custom_object(c.GROUP, c.VERSION, c.CLUSTER_TRAINING_RUNTIMES, body)
    try:
        wait_for(
            lambda: read_jobset(custom_objects, namespace, "orphan"),
            timeout=TIMEOUT,
            what="the JobSet once the runtime exists",
        )
    finally:
        custom_objects.delete_cluster_custom_object(c.GROUP, c.VERSION, c.CLUSTER_TRAINING_RUNTIMES, name)


def test_a_namespaced_training_runtime_is_found_in_the_trainjobs_namespace(custom_objects, namespace, trainer_api):
    """core/trainingruntime.go: kind TrainingRuntime is read from the TrainJob's namespace."""
    body = torch_runtime(jobset_managed_by=MULTIKUEUE)
    body["kind"] = c.TRAINING_RUNTIME_KIND
    body["metadata"] = {"name": "local-rt"}
    custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINING_RUNTIMES, body)
    create(
        custom_objects, namespace, trainjob("ns-rt", "local-rt", kind=c.TRAINING_RUNTIME_KIND, trainer={"numNodes": 3})
    )
    jobset = wait_for(lambda: read_jobset(custom_objects, namespace, "ns-rt"), what="the JobSet")
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 3


def test_an_unsupported_runtime_kind_fails_the_trainjob(custom_objects, namespace, trainer_api):
    """trainjob_controller.go Reconcile: Failed, TrainingRuntimeNotSupported, "unsupported runtime: <GroupKind>"."""
    create(custom_objects, namespace, trainjob("odd", "x", kind="FancyRuntime"))
    tj = wait_for(
        lambda: read_trainjob(custom_objects, namespace, "odd"), has_condition("Failed", "TrainingRuntimeNotSupported")
    )
    assert condition(tj, "Failed")["message"] == "unsupported runtime: FancyRuntime.trainer.kubeflow.org"
    assert read_jobset(custom_objects, namespace, "odd") is None


def test_reserved_torch_env_fails_validation(custom_objects, core_v1, namespace, runtimes):
    """plugins/torch/torch.go Validate (a webhook rule, checked by the local controller): Failed, FailedValidation."""
    runtime = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE))
    create(
        custom_objects, namespace, trainjob("bad-env", runtime, trainer={"env": [{"name": "PET_NNODES", "value": "5"}]})
    )
    tj = wait_for(
        lambda: read_trainjob(custom_objects, namespace, "bad-env"), has_condition("Failed", "FailedValidation")
    )
    assert "PET_NNODES" in condition(tj, "Failed")["message"]
    assert read_jobset(custom_objects, namespace, "bad-env") is None
    assert [e.reason for e in events(core_v1, namespace, "bad-env")] == ["FailedValidation"]


# --- deletion ------------------------------------------------------------------------------------------------------


def test_deleting_a_trainjob_deletes_its_jobset_and_snapshot(custom_objects, core_v1, namespace, runtimes):
    """ownerReferences (garbage collector), plus the controller's fallback delete."""
    runtime = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE))
    create(custom_objects, namespace, trainjob("bye", runtime, suspend=True, trainer={"command": QUICK}))
    wait_for(lambda: read_jobset(custom_objects, namespace, "bye"), what="the JobSet")
    custom_objects.delete_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, "bye")
    wait_for(lambda: read_jobset(custom_objects, namespace, "bye") is None, what="the JobSet deleted")

    def snapshot_gone() -> bool:
        try:
            core_v1.read_namespaced_config_map("bye-runtime-snapshot", namespace)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(snapshot_gone, what="the runtime snapshot deleted")


def test_the_builtin_torch_distributed_with_the_crd_defaults(custom_objects, namespace, trainer_api):
    """The TrainJob the Kubeflow SDK sends (runtimeRef with a name only: the CRD defaults apiGroup and kind to a
    ClusterTrainingRuntime) on the built-in torch-distributed, numNodes 2: its JobSet (kept suspended here)."""
    from airflow_trainjob_local.trainer.runtimes import TORCH_DISTRIBUTED

    body = trainjob("sdk-like", TORCH_DISTRIBUTED, suspend=True, trainer={"numNodes": 2, "command": QUICK})
    body["spec"]["runtimeRef"] = {"name": TORCH_DISTRIBUTED}
    create(custom_objects, namespace, body)
    jobset = wait_for(lambda: read_jobset(custom_objects, namespace, "sdk-like"), what="the JobSet")
    runtime = custom_objects.get_cluster_custom_object(
        c.GROUP, c.VERSION, c.CLUSTER_TRAINING_RUNTIMES, TORCH_DISTRIBUTED
    )
    runtime_node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node = node_container(jobset)
    assert node["image"] == runtime_node["containers"][0]["image"] and node["command"] == QUICK
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 2
    assert {e["name"]: e.get("value") for e in node["env"]}["PET_NNODES"] == "2"
    assert jobset["spec"]["suspend"] is True


# --- a restarted controller ------------------------------------------------------------------------------------


def _master_port_of(jobset: dict[str, Any]) -> str:
    return next(e["value"] for e in node_container(jobset)["env"] if e["name"] == "PET_MASTER_PORT")


@pytest.mark.alone  # stops the session cluster's controller process
def test_a_restarted_controller_keeps_the_master_port(local_cluster, custom_objects, namespace, runtimes):
    """Local: the loopback master port is kept in the TrainJob's annotation, so the JobSet a restarted controller
    builds again has the same one, and a new TrainJob gets another."""
    runtime = runtimes(torch_runtime(jobset_managed_by=MULTIKUEUE))
    create(custom_objects, namespace, trainjob("kept", runtime, suspend=True, trainer={"command": QUICK}))
    port = _master_port_of(wait_for(lambda: read_jobset(custom_objects, namespace, "kept"), what="the JobSet"))
    local_cluster.stop_component("controller")
    custom_objects.delete_namespaced_custom_object(c.JOBSET_GROUP, c.JOBSET_VERSION, namespace, c.JOBSETS, "kept")
    wait_for(lambda: read_jobset(custom_objects, namespace, "kept") is None, what="the JobSet deleted")
    local_cluster.up()
    rebuilt = wait_for(lambda: read_jobset(custom_objects, namespace, "kept"), what="the JobSet built again")
    assert _master_port_of(rebuilt) == port
    create(custom_objects, namespace, trainjob("fresh", runtime, suspend=True, trainer={"command": QUICK}))
    fresh = wait_for(lambda: read_jobset(custom_objects, namespace, "fresh"), what="the new TrainJob's JobSet")
    assert _master_port_of(fresh) != port
