"""Per-kind environment injection: what each real controller's ``SetClusterSpec`` / ``setPodEnv`` adds to a
replica's containers, with service DNS names replaced by ``127.0.0.1`` and the kind's fixed default port
replaced by the replica's own loopback port (see :mod:`.ports`).

Variables are appended after the container's own ``env``, as the real operator does; the operator's own
variables never repeat a name within a container.

- PyTorchJob (``pytorch/envvar.go``, ``master.go``, ``elastic.go``): ``PYTHONUNBUFFERED=1``; with a Master:
  ``MASTER_PORT`` and ``PET_MASTER_PORT`` (master 0's port), ``MASTER_ADDR`` and ``PET_MASTER_ADDR``,
  ``WORLD_SIZE`` (replicas x nprocPerNode when that is a number), ``RANK`` and ``PET_NODE_RANK`` (workers
  start at 1); always ``PET_NPROC_PER_NODE`` (``nprocPerNode``, default ``auto``, or the deprecated
  ``elasticPolicy.nProcPerNode``); ``PET_NNODES``; with an elasticPolicy the ``PET_RDZV_*`` set, its endpoint
  on worker 0's port (or ``rdzvPort``).
- TFJob (``tensorflow/tensorflow.go``): ``TF_CONFIG`` on the ``tensorflow`` container unless the job has
  exactly one replica: ``{"cluster": {<type>: ["127.0.0.1:<port>", ...]}, "task": {...}, "environment":
  "cloud"}`` with every replica type (evaluators too); with ``enableDynamicWorker`` the sparse form
  ``{"cluster": {"worker": {"<index>": ...}, "ps": [...]}, "task": {...}}``.
- MPIJob (``mpi/mpijob_controller.go``): see :func:`_mpi`; workers without a command get ``sleep 365d``.
- XGBoostJob (``xgboost/xgboost.go``): ``MASTER_PORT``, ``MASTER_ADDR``, ``WORLD_SIZE``, ``RANK``,
  ``PYTHONUNBUFFERED=1``, and with more than one replica ``WORKER_PORT``, ``WORKER_ADDRS``.
- PaddleJob (``paddlepaddle/envvar.go``): ``PYTHONUNBUFFERED=1``, ``PADDLE_JOB_ID``, ``PADDLE_NNODES``,
  ``PADDLE_MASTER`` (master 0, or worker 0 in collective mode), ``PADDLE_SERVER_NUM``/``PADDLE_TRAINER_NUM``.
- JAXJob (``jax/envvar.go``): ``PYTHONUNBUFFERED=1``, ``COORDINATOR_PORT`` (worker 0's port),
  ``COORDINATOR_ADDRESS``, ``NUM_PROCESSES``, ``PROCESS_ID``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.controller.spec import JobView, replica_key

__all__ = ["LOOPBACK", "default_container_index", "inject_env"]

#: Where every replica listens: all pods are processes on this host.
LOOPBACK = "127.0.0.1"

# Variable names, as the framework launchers read them.
PYTHONUNBUFFERED = "PYTHONUNBUFFERED"
MASTER_ADDR, MASTER_PORT = "MASTER_ADDR", "MASTER_PORT"
PET_MASTER_ADDR, PET_MASTER_PORT = "PET_MASTER_ADDR", "PET_MASTER_PORT"
WORLD_SIZE, RANK = "WORLD_SIZE", "RANK"
PET_NPROC_PER_NODE, PET_NODE_RANK, PET_NNODES = "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_NNODES"
PET_RDZV_ENDPOINT, PET_RDZV_BACKEND, PET_RDZV_ID = "PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_RDZV_ID"
PET_RDZV_CONF, PET_STANDALONE, PET_MAX_RESTARTS = "PET_RDZV_CONF", "PET_STANDALONE", "PET_MAX_RESTARTS"
TF_CONFIG = "TF_CONFIG"
WORKER_PORT, WORKER_ADDRS = "WORKER_PORT", "WORKER_ADDRS"
PADDLE_MASTER, PADDLE_NNODES, PADDLE_JOB_ID = "PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_JOB_ID"
PADDLE_SERVER_NUM, PADDLE_TRAINER_NUM = "PADDLE_SERVER_NUM", "PADDLE_TRAINER_NUM"
COORDINATOR_ADDRESS, COORDINATOR_PORT = "COORDINATOR_ADDRESS", "COORDINATOR_PORT"
NUM_PROCESSES, PROCESS_ID = "NUM_PROCESSES", "PROCESS_ID"
DEFAULT_RDZV_BACKEND = "c10d"

Env = list[tuple[str, str]]
PodSpec = dict[str, Any]
Ports = dict[str, int]


def default_container_index(pod_spec: dict[str, Any], container_name: str) -> int:
    """Index of the container named ``container_name``, else 0 (the operator's ``getDefaultContainerIndex``)."""
    for i, container in enumerate(pod_spec.get("containers") or []):
        if container.get("name") == container_name:
            return i
    return 0


def inject_env(view: JobView, pod_spec: dict[str, Any], replica_type: str, index: int, ports: dict[str, int]) -> None:
    """Append the kind's variables to the containers of ``pod_spec`` (modified in place).

    :param view: the job.
    :param pod_spec: the replica's pod spec (a copy of its template's spec).
    :param replica_type: canonical replica type, e.g. ``Worker``.
    :param index: replica index.
    :param ports: the job's loopback ports by :func:`~.spec.replica_key`.
    """
    builder = _BUILDERS[view.kind.kind]
    per_container = builder(view, pod_spec, replica_type, index, ports)
    containers = pod_spec.get("containers") or []
    for i, env in per_container.items():
        if i < len(containers) and env:
            containers[i]["env"] = list(containers[i].get("env") or []) + [{"name": k, "value": v} for k, v in env]


def _all(pod_spec: dict[str, Any], env: Env) -> dict[int, Env]:
    return {i: env for i in range(len(pod_spec.get("containers") or []))}


def _port(ports: dict[str, int], replica_type: str, index: int = 0) -> int:
    return ports[replica_key(replica_type, index)]


def _pytorch(view: JobView, pod_spec: PodSpec, rtype: str, index: int, ports: Ports) -> dict[int, Env]:
    spec = view.spec
    total = view.total_replicas()
    elastic = spec.get("elasticPolicy")
    nproc = _pytorch_nproc_per_node(spec)
    env: Env = [(PYTHONUNBUFFERED, "1")]
    if "Master" in view.replica_specs:
        rank = index + 1 if rtype == "Worker" else index
        master_port = str(_port(ports, "Master"))
        env += [
            (MASTER_PORT, master_port),
            (PET_MASTER_PORT, master_port),
            (MASTER_ADDR, LOOPBACK),
            (PET_MASTER_ADDR, LOOPBACK),
            # getNprocPerNodeInt: "auto", "cpu", "gpu" (and an elastic nProcPerNode) count as 1.
            (WORLD_SIZE, str(total * _int_or_one(nproc))),
            (RANK, str(rank)),
            (PET_NODE_RANK, str(rank)),
        ]
    if nproc is not None:
        env.append((PET_NPROC_PER_NODE, nproc))
    if elastic is not None:
        env += _pytorch_elastic(view, elastic, ports)
    else:
        env.append((PET_NNODES, str(total)))
    return _all(pod_spec, env)


def _pytorch_nproc_per_node(spec: dict[str, Any]) -> str | None:
    """``spec.nprocPerNode`` after ``setDefaultNprocPerNode``: ``auto`` unless the job sets it, or sets the
    deprecated ``elasticPolicy.nProcPerNode`` instead (which then is the one PET_NPROC_PER_NODE; validation
    refuses both together)."""
    value = spec.get("nprocPerNode")
    if value is not None:
        return str(value)
    elastic = spec.get("elasticPolicy")
    if elastic is not None and elastic.get("nProcPerNode") is not None:
        return None
    return c.PYTORCH_DEFAULT_NPROC_PER_NODE


def _int_or_one(value: str | None) -> int:
    return int(value) if value is not None and re.fullmatch(r"[+-]?[0-9]+", value) else 1


def _pytorch_elastic(view: JobView, elastic: dict[str, Any], ports: dict[str, int]) -> Env:
    # rdzvHost names a service; every replica is on this host, so the endpoint is always loopback.
    port = elastic.get("rdzvPort") or _port(ports, "Worker")
    env: Env = [
        (PET_RDZV_ENDPOINT, f"{LOOPBACK}:{port}"),
        (PET_RDZV_BACKEND, str(elastic.get("rdzvBackend") or DEFAULT_RDZV_BACKEND)),
    ]
    workers = view.replicas("Worker")
    low, high = elastic.get("minReplicas"), elastic.get("maxReplicas")
    # setElasticPolicy: a missing bound copies the other, both missing take the worker replicas.
    low = low if low is not None else (high if high is not None else workers)
    high = high if high is not None else low
    env.append((PET_NNODES, f"{low}:{high}"))
    if elastic.get("maxRestarts") is not None:
        env.append((PET_MAX_RESTARTS, str(elastic["maxRestarts"])))
    if elastic.get("nProcPerNode") is not None:
        env.append((PET_NPROC_PER_NODE, str(elastic["nProcPerNode"])))
    if elastic.get("rdzvId") is not None:
        env.append((PET_RDZV_ID, str(elastic["rdzvId"])))
    if elastic.get("rdzvConf"):
        pairs = (f"{kv.get('key', '')}={kv.get('value', '')}" for kv in elastic["rdzvConf"])
        env.append((PET_RDZV_CONF, ",".join(pairs)))
    if elastic.get("standalone"):
        env.append((PET_STANDALONE, ""))
    return env


def _tensorflow(view: JobView, pod_spec: PodSpec, rtype: str, index: int, ports: Ports) -> dict[int, Env]:
    if not _tf_is_distributed(view):
        return {}  # isDistributed: a single replica gets no TF_CONFIG
    # genClusterSpec: every replica type of the job, evaluators included, under its lowercase name.
    cluster = {
        t.lower(): [f"{LOOPBACK}:{_port(ports, t, i)}" for i in range(view.replicas(t))] for t in view.replica_types()
    }
    cluster = dict(sorted(cluster.items()))  # Go writes map keys sorted
    task = {"type": rtype.lower(), "index": index}
    config: dict[str, Any]
    if view.spec.get("enableDynamicWorker"):
        # SparseTFConfig: a PS knows itself, a worker knows every PS and itself, any other type neither. A
        # worker of a job without PS gets Go's nil slice for "ps", written as null.
        sparse: dict[str, Any] = {"worker": {}, "ps": []}
        if rtype == "PS":
            sparse["ps"] = [cluster["ps"][index]]
        elif rtype == "Worker":
            sparse["worker"] = {str(index): cluster["worker"][index]}
            sparse["ps"] = cluster.get("ps")
        config = {"cluster": sparse, "task": task}
    else:
        config = {"cluster": cluster, "task": task, "environment": "cloud"}
    tf_index = next(
        (i for i, ctr in enumerate(pod_spec.get("containers") or []) if ctr.get("name") == view.kind.default_container),
        None,
    )
    if tf_index is None:
        return {}  # the real operator sets TF_CONFIG on the "tensorflow" container only
    return {tf_index: [(TF_CONFIG, json.dumps(config, separators=(",", ":")))]}


def _tf_is_distributed(view: JobView) -> bool:
    """``isDistributed``: anything but exactly one replica among the five TF replica types."""
    return sum(view.replicas(t) for t in c.TF_JOB.replica_types) != 1


def _mpi(view: JobView, pod_spec: PodSpec, rtype: str, index: int, ports: Ports) -> dict[int, Env]:
    """The launcher's MPI variables, for a launcher that starts every rank on this host.

    The real launcher reaches workers through ``kubectl exec`` (``OMPI_MCA_plm_rsh_agent``,
    ``I_MPI_HYDRA_BOOTSTRAP=rsh`` with ``kubexec.sh``) and a hostfile of worker pod names. Without ssh or exec,
    ``mpirun`` here forks all ranks locally: oversubscription is allowed (workers x slotsPerWorker may
    exceed the cores), Intel MPI bootstraps with ``fork``, and Open MPI may run as root (the process
    kubelet runs containers as the current user). The GPU variables are blanked as the real one does.
    """
    containers = pod_spec.get("containers") or []
    if rtype != "Launcher" or not containers:
        return {}
    own = {e.get("name") for e in containers[0].get("env") or []}
    env: Env = [
        ("OMPI_MCA_rmaps_base_oversubscribe", "1"),
        ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
        ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ("NVIDIA_VISIBLE_DEVICES", ""),
        ("NVIDIA_DRIVER_CAPABILITIES", ""),
    ]
    if "I_MPI_HYDRA_BOOTSTRAP" not in own:
        env.append(("I_MPI_HYDRA_BOOTSTRAP", "fork"))
    return {0: env}


def _xgboost(view: JobView, pod_spec: PodSpec, rtype: str, index: int, ports: Ports) -> dict[int, Env]:
    total = view.total_replicas()
    rank = index + view.replicas("Master") if rtype == "Worker" else index
    master = "Master" if "Master" in view.replica_specs else "Worker"
    env: Env = [
        (MASTER_PORT, str(_port(ports, master))),
        (MASTER_ADDR, LOOPBACK),
        (WORLD_SIZE, str(total)),
        (RANK, str(rank)),
        (PYTHONUNBUFFERED, "1"),
    ]
    if total > 1 and "Worker" in view.replica_specs:
        # One WORKER_PORT for all workers, as the real one (every worker has its own IP there).
        env += [(WORKER_PORT, str(_port(ports, "Worker"))), (WORKER_ADDRS, ",".join([LOOPBACK] * (total - 1)))]
    return _all(pod_spec, env)


def _paddle(view: JobView, pod_spec: PodSpec, rtype: str, index: int, ports: Ports) -> dict[int, Env]:
    env: Env = [
        (PYTHONUNBUFFERED, "1"),
        (PADDLE_JOB_ID, view.name),
        (PADDLE_NNODES, str(view.total_replicas())),
    ]
    if "Master" not in view.replica_specs:
        # Collective mode: worker 0 is the rendezvous endpoint.
        env.append((PADDLE_MASTER, f"{LOOPBACK}:{_port(ports, 'Worker')}"))
    else:
        # PS mode: master 0 is the rendezvous endpoint; each pod runs one server or one trainer.
        env.append((PADDLE_MASTER, f"{LOOPBACK}:{_port(ports, 'Master')}"))
        env.append((PADDLE_SERVER_NUM, "1") if rtype == "Master" else (PADDLE_TRAINER_NUM, "1"))
    return _all(pod_spec, env)


def _jax(view: JobView, pod_spec: PodSpec, rtype: str, index: int, ports: Ports) -> dict[int, Env]:
    env: Env = [
        (PYTHONUNBUFFERED, "1"),
        (COORDINATOR_PORT, str(_port(ports, "Worker"))),
        (COORDINATOR_ADDRESS, LOOPBACK),
        (NUM_PROCESSES, str(view.total_replicas())),
        (PROCESS_ID, str(index)),
    ]
    return _all(pod_spec, env)


_BUILDERS: dict[str, Callable[[JobView, PodSpec, str, int, Ports], dict[int, Env]]] = {
    "PyTorchJob": _pytorch,
    "TFJob": _tensorflow,
    "MPIJob": _mpi,
    "XGBoostJob": _xgboost,
    "PaddleJob": _paddle,
    "JAXJob": _jax,
}
