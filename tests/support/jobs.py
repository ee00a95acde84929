"""Running operators against the local cluster: stand-ins for what Airflow's task runner hands ``execute``, the
replica specs and container code the tests run, and small reads of what the cluster holds.

The Kubernetes side is real (the session's local cluster). What Airflow's task runner would hand to ``execute`` is
stood in for by :class:`TaskInstanceStandIn`: the identity fields the operator reads and a record of its XCom
pushes.
"""

from __future__ import annotations

import sys
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from airflow_trainjob.constants import GROUP, VERSION

#: Container code: each replica prints its rank and succeeds.
OK = "import os; print('hello from rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])"
#: Container code: runs for longer than any test waits.
SLEEP = "import time; time.sleep(120)"
#: Container code: fails permanently (exit code 1) after one line of output.
EXIT_1 = "import sys; print('bad input'); sys.exit(1)"
#: Init container code: a data fetch that fails permanently (exit code 2) after two lines of output.
FETCH_FAILS = "import sys; print('fetching s3://bucket/train.csv'); print('error: access denied'); sys.exit(2)"


@dataclass
class TaskInstanceStandIn:
    dag_id: str = "retrain"
    task_id: str = "train"
    run_id: str = field(default_factory=lambda: f"manual__{uuid.uuid4().hex[:8]}")
    map_index: int = -1
    try_number: int = 1
    xcom: dict[str, Any] = field(default_factory=dict)
    stats_tags: dict[str, str] = field(default_factory=dict)  # read by ResumableJobMixin's metrics

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = value


class TaskStateStoreStandIn(dict):
    """Airflow 3.3's ``task_state_store`` as an operator sees it: ``get(key)`` and ``set(key, value)``,
    kept across tries of one task instance."""

    def set(self, key: str, value: Any, *, retention: Any = None) -> None:  # retention: as Airflow's store
        self[key] = value


def python_container(code: str, name: str = "pytorch") -> dict[str, Any]:
    """A container that runs ``code`` with the host's Python (the process kubelet ignores images)."""
    return {"name": name, "image": "python:3.11-slim", "command": [sys.executable, "-c", code]}


def pytorch_specs(master_code: str, worker_code: str | None = None, workers: int = 1, **spec_fields) -> dict:
    """Replica specs of a PyTorchJob: one Master running ``master_code``, ``workers`` Workers."""
    specs = {"Master": {"template": {"spec": {"containers": [python_container(master_code)]}}, **spec_fields}}
    if workers:
        specs["Worker"] = {
            "replicas": workers,
            "template": {"spec": {"containers": [python_container(worker_code or master_code)]}},
            **spec_fields,
        }
    return specs


def with_init_container(specs: dict, replica_type: str, code: str, name: str = "fetch-data") -> dict:
    """``specs`` with an init container ``name`` running ``code`` before ``replica_type``'s containers."""
    template_spec = specs[replica_type]["template"]["spec"]
    template_spec["initContainers"] = [*template_spec.get("initContainers", []), python_container(code, name)]
    return specs


def jobs(custom_objects, namespace: str, plural: str = "pytorchjobs") -> list[dict]:
    """The jobs of one plural in ``namespace``, as the apiserver lists them."""
    return custom_objects.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)["items"]


def true_types(job: dict) -> list[str]:
    """The types of the job's conditions whose status is ``"True"``, in order."""
    return [c["type"] for c in (job.get("status") or {}).get("conditions") or [] if c["status"] == "True"]


def create(custom_objects, namespace: str, name: str, code: str, specs: dict | None = None, **spec) -> dict:
    """Create a PyTorchJob ``name`` (one Master running ``code``, or ``specs``) directly, as someone other than the
    provider."""
    from airflow_trainjob.models import TrainingJobSpec
    from airflow_trainjob.models.manifest import build_manifest

    replica_specs = specs or pytorch_specs(code, workers=0, **spec)
    manifest = build_manifest(spec=TrainingJobSpec.parse("PyTorchJob", replica_specs), name=name, namespace=namespace)
    return custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", manifest)


def run_in_thread(operator, context):
    """Run ``operator.execute(context)`` in a daemon thread; ``outcome`` gets its ``result`` or ``error``."""
    outcome = {}

    def target():
        try:
            outcome["result"] = operator.execute(context)
        except BaseException as e:
            outcome["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome
