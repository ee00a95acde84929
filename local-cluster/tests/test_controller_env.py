"""What the local training controller writes into pods, and how it treats a job it cannot reconcile, on the
local cluster (real kube-apiserver, the session's controller and process kubelet), read back through the API.

Each test names the kubeflow/training-operator release-1.9 file whose behaviour it checks. The unit tests at
the end call the pure parts (validation, env builders) directly. Cluster tests are skipped when the session
cluster runs without workloads.
"""

from __future__ import annotations

import collections
import functools
import json
import time
from typing import Any

import pytest

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.controller import env as env_mod
from airflow_trainjob_local.controller.spec import JobView
from airflow_trainjob_local.controller.validation import external_manager, format_errors, validate_job
from airflow_trainjob_local.kube import MERGE_PATCH
from airflow_trainjob_local.testing import waiting

TIMEOUT = 90.0
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)

QUICK = ["python", "-c", "print('done')"]


@pytest.fixture
def workloads(local_cluster) -> None:
    if not local_cluster.workloads:
        pytest.skip("the session cluster runs without the training controller and the process kubelet")


# --- helpers ----------------------------------------------------------------------------------------------


def container(name: str, command: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "python:3.11", "command": command or QUICK, **extra}


def replica(replicas: int, name: str, restart_policy: str = "Never", **ctr: Any) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "restartPolicy": restart_policy,
        "template": {"spec": {"containers": [container(name, **ctr)]}},
    }


def manifest(kind: str, name: str, replicas: dict[str, Any], **spec: Any) -> dict[str, Any]:
    k = c.JOB_KINDS[kind]
    return {
        "apiVersion": c.API_VERSION,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {k.replica_specs_key: replicas, **spec},
    }


def create(custom_objects, namespace: str, body: dict[str, Any]) -> None:
    plural = c.JOB_KINDS[body["kind"]].plural
    custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, plural, body)


def get(custom_objects, namespace: str, kind: str, name: str) -> dict[str, Any]:
    return custom_objects.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.JOB_KINDS[kind].plural, name)


def condition(job: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((x for x in (job.get("status") or {}).get("conditions") or [] if x["type"] == ctype), None)


def is_true(job: dict[str, Any], ctype: str) -> bool:
    return (condition(job, ctype) or {}).get("status") == "True"


def pods(core_v1, namespace: str, job: str) -> dict[str, Any]:
    items = core_v1.list_namespaced_pod(namespace, label_selector=f"{c.LABEL_JOB_NAME}={job}").items
    return {p.metadata.name: p for p in items}


def wait_pods(core_v1, namespace: str, job: str, names: set[str]) -> dict[str, Any]:
    return wait_for(lambda: pods(core_v1, namespace, job), lambda p: set(p) == names, what=f"pods {sorted(names)}")


def env_list(pod, index: int = 0) -> list[tuple[str, str]]:
    return [(e.name, e.value) for e in pod.spec.containers[index].env or []]


def env_of(pod, index: int = 0) -> dict[str, str]:
    return dict(env_list(pod, index))


def assert_no_duplicate_names(pod) -> None:
    for ctr in pod.spec.containers:
        counts = collections.Counter(e.name for e in ctr.env or [])
        assert [n for n, k in counts.items() if k > 1] == [], f"{pod.metadata.name}/{ctr.name}"


def ports_of(custom_objects, namespace: str, kind: str, name: str) -> dict[str, int]:
    job = get(custom_objects, namespace, kind, name)
    return json.loads(job["metadata"]["annotations"][c.ANNOTATION_LOCAL_PORTS])


def job_events(core_v1, namespace: str, job: str) -> list[Any]:
    return [e for e in core_v1.list_namespaced_event(namespace).items if e.involved_object.name == job]


def addr(ports: dict[str, int], key: str) -> str:
    return f"127.0.0.1:{ports[key]}"


# --- PyTorchJob -------------------------------------------------------------------------------------------


def test_pytorch_with_master_sets_master_and_pet_master_variables_once_each(
    workloads, core_v1, custom_objects, namespace
):
    """pytorch/envvar.go setPodEnv + master.go MasterEnvVarGenerator: PYTHONUNBUFFERED=1, MASTER_PORT,
    PET_MASTER_PORT, MASTER_ADDR, PET_MASTER_ADDR, WORLD_SIZE, RANK, PET_NODE_RANK, PET_NPROC_PER_NODE
    (default auto), PET_NNODES, in that order, after the container's own variables."""
    own = [{"name": "MINE", "value": "x"}]
    body = manifest(
        "PyTorchJob", "pm", {"Master": replica(1, "pytorch", env=own), "Worker": replica(2, "pytorch", env=own)}
    )
    create(custom_objects, namespace, body)
    found = wait_pods(core_v1, namespace, "pm", {"pm-master-0", "pm-worker-0", "pm-worker-1"})
    ports = ports_of(custom_objects, namespace, "PyTorchJob", "pm")
    master_port = str(ports["master-0"])
    for name, rank in (("pm-master-0", "0"), ("pm-worker-0", "1"), ("pm-worker-1", "2")):
        assert env_list(found[name]) == [
            ("MINE", "x"),
            ("PYTHONUNBUFFERED", "1"),
            ("MASTER_PORT", master_port),
            ("PET_MASTER_PORT", master_port),
            ("MASTER_ADDR", "127.0.0.1"),
            ("PET_MASTER_ADDR", "127.0.0.1"),
            ("WORLD_SIZE", "3"),
            ("RANK", rank),
            ("PET_NODE_RANK", rank),
            ("PET_NPROC_PER_NODE", "auto"),
            ("PET_NNODES", "3"),
        ], name
    roles = {n for n, p in found.items() if p.metadata.labels.get(c.LABEL_JOB_ROLE) == "master"}
    assert roles == {"pm-master-0"}


def test_worker_only_pytorch_job_labels_worker_0_master_and_sets_nproc_per_node(
    workloads, core_v1, custom_objects, namespace
):
    """pytorchjob_controller.go IsMasterRole: without a Master, worker 0 has job-role=master;
    envvar.go: PET_NPROC_PER_NODE is set without a Master too (nprocPerNode defaults to auto)."""
    create(custom_objects, namespace, manifest("PyTorchJob", "wo", {"Worker": replica(2, "pytorch")}, nprocPerNode="2"))
    found = wait_pods(core_v1, namespace, "wo", {"wo-worker-0", "wo-worker-1"})
    assert found["wo-worker-0"].metadata.labels.get(c.LABEL_JOB_ROLE) == "master"
    assert c.LABEL_JOB_ROLE not in found["wo-worker-1"].metadata.labels
    for pod in found.values():
        assert env_list(pod) == [("PYTHONUNBUFFERED", "1"), ("PET_NPROC_PER_NODE", "2"), ("PET_NNODES", "2")]


@pytest.mark.parametrize(
    ("spec", "nproc"),
    [
        pytest.param(
            {"elasticPolicy": {"rdzvBackend": "c10d", "minReplicas": 1, "maxReplicas": 3}}, "auto", id="default-auto"
        ),
        pytest.param({"nprocPerNode": "4", "elasticPolicy": {"maxRestarts": 2}}, "4", id="nprocPerNode"),
        pytest.param({"elasticPolicy": {"nProcPerNode": 2}}, "2", id="deprecated-elastic-nProcPerNode"),
    ],
)
def test_elastic_pytorch_sets_pet_nproc_per_node_exactly_once(
    workloads, core_v1, custom_objects, namespace, spec, nproc
):
    """pytorch_defaults.go setDefaultNprocPerNode + envvar.go + elastic.go: one PET_NPROC_PER_NODE, from
    nprocPerNode (default auto) or else the deprecated elasticPolicy.nProcPerNode."""
    create(custom_objects, namespace, manifest("PyTorchJob", "el", {"Worker": replica(2, "pytorch")}, **spec))
    found = wait_pods(core_v1, namespace, "el", {"el-worker-0", "el-worker-1"})
    ports = ports_of(custom_objects, namespace, "PyTorchJob", "el")
    for pod in found.values():
        assert_no_duplicate_names(pod)
        env = env_of(pod)
        assert env["PET_NPROC_PER_NODE"] == nproc
        assert env["PET_RDZV_ENDPOINT"] == addr(ports, "worker-0")
        assert env["PYTHONUNBUFFERED"] == "1"
        assert "MASTER_ADDR" not in env and "PET_MASTER_ADDR" not in env


# --- TFJob ------------------------------------------------------------------------------------------------


def test_tf_config_lists_every_replica_type_evaluator_included(workloads, core_v1, custom_objects, namespace):
    """tensorflow/tensorflow.go genClusterSpec/genTFConfigJSONStr: the cluster spec has every replica type
    (the evaluator too), the task is the pod's own, environment "cloud"."""
    replicas = {
        "Chief": replica(1, "tensorflow"),
        "PS": replica(1, "tensorflow"),
        "Worker": replica(2, "tensorflow"),
        "Evaluator": replica(1, "tensorflow"),
    }
    create(custom_objects, namespace, manifest("TFJob", "tf", replicas))
    names = {"tf-chief-0", "tf-ps-0", "tf-worker-0", "tf-worker-1", "tf-evaluator-0"}
    found = wait_pods(core_v1, namespace, "tf", names)
    ports = ports_of(custom_objects, namespace, "TFJob", "tf")
    cluster = {
        "chief": [addr(ports, "chief-0")],
        "evaluator": [addr(ports, "evaluator-0")],
        "ps": [addr(ports, "ps-0")],
        "worker": [addr(ports, "worker-0"), addr(ports, "worker-1")],
    }
    for name in names:
        _, rtype, index = name.split("-")
        raw = env_of(found[name])["TF_CONFIG"]
        assert json.loads(raw) == {
            "cluster": cluster,
            "task": {"type": rtype, "index": int(index)},
            "environment": "cloud",
        }, name
        assert list(json.loads(raw)) == ["cluster", "task", "environment"]
        assert list(json.loads(raw)["cluster"]) == sorted(cluster)
        assert_no_duplicate_names(found[name])


def test_dynamic_worker_tf_config_is_the_sparse_cluster_under_cluster(workloads, core_v1, custom_objects, namespace):
    """tensorflow/tensorflow.go SparseTFConfig: key "cluster" holding {"worker": {"<i>": addr}, "ps": [...]},
    a PS sees only itself, a chief or evaluator neither; no "environment"."""
    replicas = {
        "Chief": replica(1, "tensorflow"),
        "PS": replica(2, "tensorflow"),
        "Worker": replica(2, "tensorflow"),
        "Evaluator": replica(1, "tensorflow"),
    }
    create(custom_objects, namespace, manifest("TFJob", "dyn", replicas, enableDynamicWorker=True))
    names = {"dyn-chief-0", "dyn-ps-0", "dyn-ps-1", "dyn-worker-0", "dyn-worker-1", "dyn-evaluator-0"}
    found = wait_pods(core_v1, namespace, "dyn", names)
    ports = ports_of(custom_objects, namespace, "TFJob", "dyn")
    ps = [addr(ports, "ps-0"), addr(ports, "ps-1")]

    def config(name: str) -> dict[str, Any]:
        return json.loads(env_of(found[name])["TF_CONFIG"])

    assert config("dyn-worker-1") == {
        "cluster": {"worker": {"1": addr(ports, "worker-1")}, "ps": ps},
        "task": {"type": "worker", "index": 1},
    }
    assert config("dyn-ps-1") == {
        "cluster": {"worker": {}, "ps": [addr(ports, "ps-1")]},
        "task": {"type": "ps", "index": 1},
    }
    assert config("dyn-chief-0") == {"cluster": {"worker": {}, "ps": []}, "task": {"type": "chief", "index": 0}}
    assert config("dyn-evaluator-0") == {"cluster": {"worker": {}, "ps": []}, "task": {"type": "evaluator", "index": 0}}
    assert list(config("dyn-worker-1")["cluster"]) == ["worker", "ps"]


def test_dynamic_worker_without_ps_writes_null_ps(workloads, core_v1, custom_objects, namespace):
    """tensorflow/tensorflow.go convertClusterSpecToSparseClusterSpec: a worker of a job without PS takes the
    missing "ps" entry, which Go marshals as null."""
    create(
        custom_objects,
        namespace,
        manifest("TFJob", "dw", {"Worker": replica(2, "tensorflow")}, enableDynamicWorker=True),
    )
    found = wait_pods(core_v1, namespace, "dw", {"dw-worker-0", "dw-worker-1"})
    ports = ports_of(custom_objects, namespace, "TFJob", "dw")
    assert json.loads(env_of(found["dw-worker-0"])["TF_CONFIG"]) == {
        "cluster": {"worker": {"0": addr(ports, "worker-0")}, "ps": None},
        "task": {"type": "worker", "index": 0},
    }


# --- other kinds ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "replicas", "expected"),
    [
        pytest.param(
            "XGBoostJob",
            {"Master": replica(1, "xgboost"), "Worker": replica(1, "xgboost")},
            ["MASTER_PORT", "MASTER_ADDR", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED", "WORKER_PORT", "WORKER_ADDRS"],
            id="XGBoostJob",
        ),
        pytest.param(
            "PaddleJob",
            {"Worker": replica(2, "paddle")},
            ["PYTHONUNBUFFERED", "PADDLE_JOB_ID", "PADDLE_NNODES", "PADDLE_MASTER"],
            id="PaddleJob",
        ),
        pytest.param(
            "JAXJob",
            {"Worker": replica(2, "jax")},
            ["PYTHONUNBUFFERED", "COORDINATOR_PORT", "COORDINATOR_ADDRESS", "NUM_PROCESSES", "PROCESS_ID"],
            id="JAXJob",
        ),
        pytest.param("MPIJob", {"Launcher": replica(1, "mpi"), "Worker": replica(1, "mpi")}, None, id="MPIJob"),
    ],
)
def test_every_kind_sets_pythonunbuffered_1_and_no_name_twice(
    workloads, core_v1, custom_objects, namespace, kind, replicas, expected
):
    """xgboost/xgboost.go, paddlepaddle/envvar.go, jax/envvar.go: PYTHONUNBUFFERED is "1"; mpi: the launcher's
    variables; no kind repeats a variable name in a container."""
    create(custom_objects, namespace, manifest(kind, "k", replicas))
    found = wait_for(lambda: pods(core_v1, namespace, "k"), lambda p: len(p) == 2, what="two pods")
    for pod in found.values():
        assert_no_duplicate_names(pod)
        if expected is not None:
            assert [n for n, _ in env_list(pod)] == expected, pod.metadata.name
            assert env_of(pod)["PYTHONUNBUFFERED"] == "1"


# --- MPIJob cleanPodPolicy ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec_policy", "run_policy", "left"),
    [
        pytest.param("All", None, set(), id="deprecated-spec-field-honoured"),
        pytest.param("All", "None", {"mpi-launcher", "mpi-worker-0"}, id="runPolicy-wins"),
        pytest.param(None, "Running", {"mpi-launcher"}, id="runPolicy-alone"),
    ],
)
def test_mpi_job_deprecated_clean_pod_policy(
    workloads, core_v1, custom_objects, namespace, spec_policy, run_policy, left
):
    """mpi/mpijob_controller.go Reconcile: runPolicy.cleanPodPolicy when set, else spec.cleanPodPolicy
    (mpi_defaults.go: both unset → None)."""
    spec: dict[str, Any] = {}
    if spec_policy:
        spec["cleanPodPolicy"] = spec_policy
    if run_policy:
        spec["runPolicy"] = {"cleanPodPolicy": run_policy}
    replicas = {
        "Launcher": replica(1, "mpi"),
        "Worker": {"replicas": 1, "template": {"spec": {"containers": [{"name": "mpi", "image": "python:3.11"}]}}},
    }  # the worker sleeps (the MPI default command)
    create(custom_objects, namespace, manifest("MPIJob", "mpi", replicas, **spec))
    wait_for(
        lambda: get(custom_objects, namespace, "MPIJob", "mpi"), lambda j: is_true(j, "Succeeded"), what="Succeeded"
    )
    wait_for(
        lambda: set(pods(core_v1, namespace, "mpi")),
        lambda names: names == left,
        timeout=60,
        what=f"pods {sorted(left)}",
    )


# --- a job the controller cannot reconcile ----------------------------------------------------------------


#: (id, replica specs, what the validation message says) of invalid PyTorchJobs.
INVALID_JOBS = [
    (
        "unknown-replica-type",
        {"Chief": replica(1, "pytorch")},
        'spec.pytorchReplicaSpecs[Chief]: Unsupported value: "Chief"',
    ),
    (
        "no-containers",
        {"Master": {"replicas": 1, "template": {"spec": {"containers": []}}}},
        "spec.pytorchReplicaSpecs[Master].template.spec.containers: Required value: must be specified",
    ),
    (
        "no-image",
        {"Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch"}]}}}},
        "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image: Required value",
    ),
    (
        "two-masters",
        {"Master": replica(2, "pytorch")},
        "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1",
    ),
    (
        "zero-workers",
        {"Worker": replica(0, "pytorch")},
        "spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1",
    ),
]


def test_an_invalid_job_fails_with_a_failed_validation_event_and_condition(
    workloads, core_v1, custom_objects, namespace
):
    """pytorch webhook validatePyTorchReplicaSpecs (applied by the controller here, there is no webhook) and
    mpijob_controller.go Reconcile (Warning <Kind>FailedValidation "<Kind> failed validation because ...");
    the job gets Failed with that reason, so a waiter fails at once; no pod, no retry loop.

    Each invalid job of :data:`INVALID_JOBS` is a job of its own (named after its case), all in one namespace, so
    that one quiet window shows that none of them is written again (the controller watches them all alike)."""

    def validation_events(name):
        return [e for e in job_events(core_v1, namespace, name) if e.reason == "PyTorchJobFailedValidation"]

    for case, replicas, _ in INVALID_JOBS:
        create(custom_objects, namespace, manifest("PyTorchJob", case, replicas))
    versions = {}
    for case, _, needle in INVALID_JOBS:
        job = wait_for(
            lambda name=case: get(custom_objects, namespace, "PyTorchJob", name),
            lambda j: is_true(j, "Failed"),
            what=f"{case}: Failed",
        )
        failed = condition(job, "Failed")
        assert failed["reason"] == "PyTorchJobFailedValidation", case
        assert failed["message"].startswith("PyTorchJob failed validation because "), case
        assert needle in failed["message"], case
        assert job["status"]["completionTime"], case
        events = validation_events(case)
        assert len(events) == 1 and events[0].type == "Warning" and events[0].message == failed["message"], case
        versions[case] = job["metadata"]["resourceVersion"]
    # No hot loop: nothing more is written while nothing changes; a spec change is looked at, the job stays failed.
    time.sleep(3)
    for case, _, _ in INVALID_JOBS:
        assert get(custom_objects, namespace, "PyTorchJob", case)["metadata"]["resourceVersion"] == versions[case], case
        custom_objects.patch_namespaced_custom_object(
            c.GROUP,
            c.VERSION,
            namespace,
            "pytorchjobs",
            case,
            {"metadata": {"labels": {"touched": "yes"}}},
            _content_type=MERGE_PATCH,
        )
    time.sleep(2)
    for case, _, _ in INVALID_JOBS:
        job = get(custom_objects, namespace, "PyTorchJob", case)
        assert condition(job, "Failed")["reason"] == "PyTorchJobFailedValidation", case
        assert pods(core_v1, namespace, case) == {}, case
        events = validation_events(case)
        assert len(events) == 1 and (events[0].count or 1) == 1, case


def test_an_invalid_mpi_job_reports_the_mpi_validation_error(workloads, core_v1, custom_objects, namespace):
    """mpi_validation.go ValidateV1MpiJobSpec, in mpijob_controller.go Reconcile."""
    create(custom_objects, namespace, manifest("MPIJob", "nol", {"Worker": replica(1, "mpi")}))
    job = wait_for(
        lambda: get(custom_objects, namespace, "MPIJob", "nol"), lambda j: is_true(j, "Failed"), what="Failed"
    )
    assert condition(job, "Failed")["reason"] == "MPIJobFailedValidation"
    assert condition(job, "Failed")["message"] == (
        "MPIJob failed validation because MPIReplicaSpec is not valid: Master ReplicaSpec must be present"
    )
    assert pods(core_v1, namespace, "nol") == {}


# --- pure parts ---------------------------------------------------------------------------------------------


def _job(kind: str, replicas: Any, **spec: Any) -> dict[str, Any]:
    body = manifest(kind, "j", replicas, **spec)
    body["metadata"].update(namespace="n", uid="u")
    return body


def test_validation_reports_malformed_values_without_raising():
    """Values a typed Go client could not even decode never make the controller raise."""
    ok = {"template": {"spec": {"containers": [container("pytorch")]}}}
    cases = {
        'spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: "two": must be an integer': {
            "Worker": {**ok, "replicas": "two"}
        },
        'spec.pytorchReplicaSpecs[Worker]: Invalid value: "x": must be an object': {"Worker": "x"},
        "spec.pytorchReplicaSpecs[Worker]: Invalid value: [1]: must be an object": {"Worker": [1]},
        "spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0": {
            "Worker": {**ok, "replicas": -1}
        },
        "spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: true: must be an integer": {
            "Worker": {**ok, "replicas": True}
        },
        'spec.pytorchReplicaSpecs[Worker].template.spec.containers: Invalid value: "c": must be a list of objects': {
            "Worker": {"template": {"spec": {"containers": "c"}}}
        },
        "spec.pytorchReplicaSpecs[Worker].template: Invalid value: 3: must be an object": {"Worker": {"template": 3}},
        'spec.pytorchReplicaSpecs[Worker].restartPolicy: Unsupported value: "Sometimes"': {
            "Worker": {**ok, "restartPolicy": "Sometimes"}
        },
        'spec.pytorchReplicaSpecs: Invalid value: ["Worker"]: must be an object': ["Worker"],
        "spec.pytorchReplicaSpecs: Required value: must be required": None,
    }
    for needle, replicas in cases.items():
        errors = validate_job(_job("PyTorchJob", replicas))
        assert any(e.startswith(needle) for e in errors), (needle, errors)
        JobView.from_object(_job("PyTorchJob", replicas))  # the view of a malformed job is built all the same
    assert validate_job({"kind": "TFJob", "metadata": {"name": "j"}, "spec": "nope"}) == [
        'spec: Invalid value: "nope": must be an object'
    ]
    bad_policy = _job(
        "JAXJob",
        {"Worker": {"template": {"spec": {"containers": [container("jax")]}}}},
        runPolicy={"suspend": "yes", "backoffLimit": "3", "managedBy": "someone"},
    )
    assert validate_job(bad_policy) == [
        'spec.runPolicy.backoffLimit: Invalid value: "3": must be an integer',
        'spec.runPolicy.suspend: Invalid value: "yes": must be a boolean',
        'spec.runPolicy.managedBy: Unsupported value: "someone": supported values: '
        '"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"',
    ]
    assert format_errors(["a"]) == "a" and format_errors(["a", "b"]) == "[a, b]"


def test_validation_mirrors_each_kinds_rules():
    """The webhooks' rules (pkg/webhooks/*) and ValidateV1MpiJobSpec (mpi_validation.go)."""

    def spec_of(name: str, replicas: int | None = 1, **ctr: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"template": {"spec": {"containers": [container(name, **ctr)]}}}
        if replicas is not None:
            out["replicas"] = replicas
        return out

    assert validate_job(_job("PyTorchJob", {"master": spec_of("pytorch"), "worker": spec_of("pytorch", None)})) == []
    assert validate_job(_job("TFJob", {"Chief": spec_of("tensorflow"), "Master": spec_of("tensorflow")})) == [
        "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"
    ]
    # The TF webhook does not check replica type names.
    assert validate_job(_job("TFJob", {"Foo": spec_of("tensorflow")})) == []
    assert validate_job(_job("XGBoostJob", {"Worker": spec_of("xgboost")})) == [
        "spec.xgbReplicaSpecs[Master]: Required value: must be present"
    ]
    assert validate_job(_job("PaddleJob", {"Worker": spec_of("pd")})) == [
        "spec.paddleReplicaSpecs[Worker].template.spec.containers: Required value: "
        'must have at least one container with name "paddle"'
    ]
    assert validate_job(_job("JAXJob", {"Master": spec_of("jax")})) == [
        'spec.jaxReplicaSpecs[Master]: Unsupported value: "Master": supported values: "Worker"'
    ]
    assert validate_job(
        _job("PyTorchJob", {"Worker": spec_of("pytorch")}, nprocPerNode="2", elasticPolicy={"nProcPerNode": 2})
    ) == ["spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode"]
    assert validate_job(_job("PyTorchJob", {"Master": spec_of("pytorch")}, elasticPolicy={})) == [
        "spec.pytorchReplicaSpecs[Worker]: Required value: must be configured if elastic policy is used"
    ]
    assert validate_job(_job("MPIJob", {"Launcher": spec_of("mpi", 2), "Worker": spec_of("mpi")})) == [
        "MPIReplicaSpec is not valid: There must be only 1 launcher replica"
    ]
    assert validate_job(_job("MPIJob", {"Launcher": spec_of("mpi"), "Boss": spec_of("mpi")})) == [
        "MPIReplicaType is Boss but must be one of [Launcher Worker]"
    ]
    assert validate_job(_job("MPIJob", {"Launcher": {"template": {"spec": {"containers": [{"name": "m"}]}}}})) == [
        "MPIReplicaSpec is not valid: Image is undefined in the container of Launcher"
    ]
    bad_name = _job("PyTorchJob", {"Worker": spec_of("pytorch")})
    bad_name["metadata"]["name"] = "a.b"
    assert [e.split(":")[0] for e in validate_job(bad_name)] == ["metadata.name"]


def test_managed_by_decides_who_reconciles():
    """job.go ManagedByExternalController; webhooks.go ValidateRunPolicy (the two supported values)."""

    def job(kind: str, manager: Any) -> dict[str, Any]:
        return _job(kind, {}, runPolicy={"managedBy": manager})

    assert external_manager(job("PyTorchJob", "kueue.x-k8s.io/multikueue")) == "kueue.x-k8s.io/multikueue"
    assert external_manager(job("PyTorchJob", "kubeflow.org/training-operator")) is None
    assert external_manager(_job("PyTorchJob", {})) is None
    assert external_manager(job("PyTorchJob", "someone")) is None  # refused by validation instead
    assert external_manager(job("MPIJob", "someone")) == "someone"  # the MPI controller has no webhook: skipped
    assert external_manager(job("PyTorchJob", 7)) is None


def test_pytorch_env_builder_never_repeats_a_name():
    """pytorch/envvar.go with elastic.go: one PET_NPROC_PER_NODE in every combination validation admits."""
    ports = {"master-0": 1, "worker-0": 2, "worker-1": 3}
    rspec = {"replicas": 1, "template": {"spec": {"containers": [container("pytorch")]}}}
    for spec in (
        {},
        {"nprocPerNode": "3"},
        {"elasticPolicy": {}},
        {"elasticPolicy": {"nProcPerNode": 4}},
        {"nprocPerNode": "gpu", "elasticPolicy": {"standalone": True}},
    ):
        for specs in ({"Master": rspec, "Worker": rspec}, {"Worker": rspec}):
            view = JobView.from_object(_job("PyTorchJob", specs, **spec))
            pod_spec = {"containers": [container("pytorch"), container("sidecar")]}
            env_mod.inject_env(view, pod_spec, "Worker", 0, ports)
            for ctr in pod_spec["containers"]:
                names = [e["name"] for e in ctr["env"]]
                assert len(names) == len(set(names)), (spec, names)
                assert names.count("PET_NPROC_PER_NODE") == 1
                assert dict((e["name"], e["value"]) for e in ctr["env"])["PYTHONUNBUFFERED"] == "1"
