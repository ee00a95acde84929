"""The UI's routes in a real Airflow api-server (its own process, SQLite metadata database, the simple auth manager
with a user limited to some DAGs), on the local cluster reached through a counting proxy.

What is asserted: the plugin is mounted and listed by Airflow; 401 without a user, 403 for a DAG the user may not
read, the jobs page filtered to readable DAGs; a task instance's tries read live from the shared stream and from
the task's record once the job is gone; a record that names a job which is not the task's (another uid, no
ownership labels) is never read as its job; logs only of the try's own pods; no token or kubeconfig content in any
answer; and what ten polling clients cost the Kubernetes API next to one.

The api-server runs with Airflow's default settings: the plugin comes from the provider's entry point.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sqlalchemy import create_engine, event
from sqlalchemy.orm import Session

from airflow_trainjob.constants import (
    ANNOTATION_DAG_ID,
    ANNOTATION_MAP_INDEX,
    ANNOTATION_RUN_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_TRY_NUMBER,
    GROUP,
    VERSION,
)
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.records import RECORD_KEY, trim_event, trim_job, trim_pod
from airflow_trainjob.models import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deployment import AirflowDeployment
from tests.support.fault_proxy import Fault, FaultProxy
from tests.support.faults import start_proxy
from tests.support.jobs import SLEEP, pytorch_specs
from tests.support.report import record

#: The api-server's port: the test cluster's port base + this (the e2e deployments use +60).
PORT_OFFSET = 61
#: Printed by the live job's master, then it runs on.
PRINTED = "epoch 1 loss 0.4321"
TRAIN = f"print({PRINTED!r}, flush=True); import time; time.sleep(600)"
#: Seconds each client group polls in the request-count test ($AIRFLOW_TRAINJOB_UI_BENCH_SECONDS; the benchmark: 60).
BENCH_SECONDS = float(os.environ.get("AIRFLOW_TRAINJOB_UI_BENCH_SECONDS", "20"))
ALLOWED, SECRET = "allowed_dag", "secret_dag"


def identity(dag_id: str, run_id: str = "r1", try_number: int = 2) -> TaskInstanceIdentity:
    return TaskInstanceIdentity(dag_id, "train", run_id, -1, try_number)


def make_job(custom_objects, namespace: str, name: str, code: str, owner: TaskInstanceIdentity | None) -> dict:
    """Create a PyTorchJob (one Master) as the operator would for ``owner`` (labels and identity annotations), or
    as someone else (None)."""
    labels = owner.labels() if owner else {}
    annotations = (
        {
            ANNOTATION_DAG_ID: owner.dag_id,
            ANNOTATION_TASK_ID: owner.task_id,
            ANNOTATION_RUN_ID: owner.run_id,
            ANNOTATION_MAP_INDEX: str(owner.map_index),
            ANNOTATION_TRY_NUMBER: str(owner.try_number),
        }
        if owner
        else {}
    )
    manifest = build_manifest(
        spec=TrainingJobSpec.parse("PyTorchJob", pytorch_specs(code, workers=0)),
        name=name,
        namespace=namespace,
        labels=labels,
        annotations=annotations,
    )
    return custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", manifest)


def record_of(made: dict, try_number: int, **final: Any) -> dict:
    meta = made["metadata"]
    return {
        "try_number": try_number,
        "kubernetes_conn_id": "kubernetes_default",
        "kind": "PyTorchJob",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
        "created_at": meta["creationTimestamp"],
        "attached": False,
        "manifest_yaml": yaml.safe_dump({"kind": "PyTorchJob", "metadata": {"name": meta["name"]}}),
        "final": final or None,
    }


def store_records(database: Path, owner: TaskInstanceIdentity, records: list[dict]) -> None:
    """Write the task instance's record into the api-server's database as the task would (a DAG run row, and the
    ``task_state_store`` row under :data:`RECORD_KEY`), through Airflow's models."""
    from airflow.models.dagrun import DagRun
    from airflow.models.task_state_store import TaskStateStoreModel
    from airflow.utils.state import DagRunState
    from airflow.utils.types import DagRunType

    engine = create_engine(f"sqlite:///{database}")
    event.listen(engine, "connect", lambda conn, _: conn.execute("PRAGMA foreign_keys=ON"))
    with Session(engine) as session:
        run = session.query(DagRun).filter_by(dag_id=owner.dag_id, run_id=owner.run_id).one_or_none()
        if run is None:
            run = DagRun(
                dag_id=owner.dag_id, run_id=owner.run_id, run_type=DagRunType.MANUAL, state=DagRunState.RUNNING
            )
            session.add(run)
            session.flush()
        session.add(
            TaskStateStoreModel(
                dag_run_id=run.id,
                task_id=owner.task_id,
                map_index=owner.map_index,
                key=RECORD_KEY,
                dag_id=owner.dag_id,
                run_id=owner.run_id,
                value=json.dumps(records),
            )
        )
        session.commit()
    engine.dispose()


def running_pod(core_v1, namespace: str, job_name: str) -> dict:
    def read():
        found = core_v1.list_namespaced_pod(
            namespace, label_selector=f"training.kubeflow.org/job-name={job_name}"
        ).items
        return [p for p in found if p.status.phase == "Running"]

    name = wait_for(read, what=f"a running pod of {job_name}")[0].metadata.name
    wait_for(lambda: core_v1.read_namespaced_pod_log(name, namespace), lambda t: PRINTED in t, what="its first line")
    return core_v1.api_client.sanitize_for_serialization(core_v1.read_namespaced_pod(name, namespace))


class World:
    """The module's api-server, proxy and jobs."""

    airflow: AirflowDeployment
    proxy: FaultProxy
    namespace: str
    live: dict
    live_pod: dict
    secret_pod: dict
    answers: list[str]

    def get(self, user: str | None, path: str, *, cookie: bool = False, **params: Any) -> httpx.Response:
        """``GET path`` as ``user`` (bearer token, or the UI's ``_token`` cookie); every answer's text is kept for
        the secrets check."""
        headers, cookies = {}, {}
        if user is not None:
            token = self.tokens[user]
            if cookie:
                cookies["_token"] = token
            else:
                headers["Authorization"] = f"Bearer {token}"
        with httpx.Client(base_url=self.airflow.base_url, timeout=60, cookies=cookies) as client:
            response = client.get(path, params=params, headers=headers)
        self.answers.append(response.text)
        return response

    tokens: dict[str, str]


def ti_params(owner: TaskInstanceIdentity, **more: Any) -> dict[str, Any]:
    return {
        "dag_id": owner.dag_id,
        "run_id": owner.run_id,
        "task_id": owner.task_id,
        "map_index": owner.map_index,
        **more,
    }


@pytest.fixture(scope="module")
def world(
    local_cluster, module_namespace, airflow_database, tmp_path_factory, custom_objects, core_v1
) -> Iterator[World]:
    w = World()
    w.answers = []
    w.namespace = module_namespace
    w.proxy = start_proxy(local_cluster, tmp_path_factory.mktemp("proxy"))
    connection = w.proxy.airflow_connection(local_cluster.kubeconfig, module_namespace)
    w.airflow = AirflowDeployment(  # the UI's routes need the database and the auth manager, no scheduler
        tmp_path_factory.mktemp("airflow"),
        components=("api-server",),
        port=local_cluster.ports.apiserver + PORT_OFFSET,
        connection=connection,
        users={"admin": "admin", "viewer": "viewer"},
        dag_access={"viewer": [ALLOWED]},
        database=airflow_database,
    )
    try:
        # The jobs: the allowed task's live job (try 2) and the job its try 1 recorded and that is gone since;
        # a secret DAG's job; a stranger's job that a record names.
        w.live = make_job(custom_objects, module_namespace, "ti-live", TRAIN, identity(ALLOWED))
        secret = make_job(custom_objects, module_namespace, "ti-secret", TRAIN, identity(SECRET))
        stranger = make_job(custom_objects, module_namespace, "stranger", SLEEP, None)
        w.airflow.start()
        w.tokens = {user: w.airflow.token(user) for user in w.airflow.users}
        w.live_pod = running_pod(core_v1, module_namespace, "ti-live")
        w.secret_pod = running_pod(core_v1, module_namespace, "ti-secret")

        gone = {
            **w.live,
            "metadata": {
                **w.live["metadata"],
                "name": "ti-gone",
                "uid": "uid-of-a-deleted-job",
                "creationTimestamp": "2026-12-02T05:00:00Z",
            },
        }
        gone["status"] = {
            "conditions": [
                {"type": "Created", "status": "True", "lastTransitionTime": "2026-12-02T05:00:01Z"},
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "PyTorchJobFailed",
                    "message": "master failed",
                    "lastTransitionTime": "2026-12-02T05:01:00Z",
                },
            ],
            # as the training operator leaves them: the last active count stays when the job stops
            "replicaStatuses": {"Master": {"active": 1, "failed": 1}},
        }
        gone_pod = {**w.live_pod, "metadata": {**w.live_pod["metadata"], "name": "ti-gone-master-0"}}
        failed = dict(
            ended_at="2026-12-02T05:01:05Z",
            outcome="failed",
            message="PyTorchJob failed",
            job=trim_job(gone),
            pods=[trim_pod(gone_pod)],
            events=[trim_event({"type": "Warning", "reason": "PyTorchJobFailed", "message": "master failed",
                                "lastTimestamp": "2026-12-02T05:01:00Z", "involvedObject": {"kind": "PyTorchJob", "name": "ti-gone"}})],
        )  # fmt: skip
        database = w.airflow.home / "airflow.db"
        store_records(database, identity(ALLOWED), [record_of(w.live, 2), record_of(gone, 1, **failed)])
        store_records(database, identity(SECRET), [record_of(secret, 2)])
        # Records that name a job which is not theirs: a stranger's (no ownership labels), and ti-live by the
        # name alone (another uid).
        store_records(database, identity(ALLOWED, "r-stranger"), [record_of(stranger, 2)])
        replaced = record_of(w.live, 2) | {"uid": "uid-of-a-predecessor"}
        store_records(database, identity(ALLOWED, "r-replaced"), [replaced])
        yield w
    finally:
        w.airflow.stop()
        w.proxy.stop()


# --- mounting, pages ----------------------------------------------------------------------------------


def test_airflow_lists_the_plugin_and_mounts_its_app(world):
    plugins = world.get("admin", "/api/v2/plugins").json()["plugins"]
    (ours,) = [p for p in plugins if p["name"] == "airflow_trainjob"]
    assert [(v["name"], v["destination"], v["url_route"]) for v in ours["external_views"]] == [
        ("Training job", "task_instance", "training-job"),
        ("Training jobs", "nav", "training-jobs"),
    ]
    assert [a["url_prefix"] for a in ours["fastapi_apps"]] == ["/trainjob"]
    static = Path(__file__).resolve().parents[2] / "airflow_trainjob" / "ui" / "static"
    for route, page in (("/trainjob/ui/task-instance", "task_instance.html"), ("/trainjob/ui/jobs", "jobs.html")):
        response = world.get(None, route)  # the pages hold no data: no login needed to load them
        if (static / page).is_file():
            assert response.status_code == 200 and response.text == (static / page).read_text()
        else:
            assert response.status_code == 404
    assert world.get(None, "/trainjob/ui/settings").status_code == 404
    if (static / "trainjob.css").is_file():
        assert world.get(None, "/trainjob/static/trainjob.css").status_code == 200
    assert world.get(None, "/trainjob/static/../__init__.py").status_code == 404
    assert world.get(None, "/trainjob/static/%2e%2e/plugin.py").status_code == 404


# --- access -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/trainjob/api/task-instance", "/trainjob/api/task-instance/log", "/trainjob/api/jobs"]
)
def test_no_user_no_answer(world, path):
    response = world.get(None, path, **ti_params(identity(ALLOWED)))
    assert response.status_code == 401, response.text
    bad = httpx.get(f"{world.airflow.base_url}{path}", params=ti_params(identity(ALLOWED)), cookies={"_token": "x.y.z"})
    assert bad.status_code in (401, 403) and "tries" not in bad.text


@pytest.mark.parametrize("path", ["/trainjob/api/task-instance", "/trainjob/api/task-instance/log"])
def test_a_user_who_may_not_read_the_dag_gets_403(world, path):
    assert world.get("viewer", path, **ti_params(identity(SECRET))).status_code == 403
    assert world.get("viewer", path, cookie=True, **ti_params(identity(SECRET))).status_code == 403
    assert world.get("admin", path, **ti_params(identity(SECRET))).status_code == 200
    assert world.get("viewer", path, cookie=True, **ti_params(identity(ALLOWED))).status_code == 200


def test_the_jobs_page_lists_only_readable_dags(world):
    admin = world.get("admin", "/trainjob/api/jobs").json()
    assert {j["name"] for j in admin["jobs"]} == {"ti-live", "ti-secret"}  # the stranger's job is not Airflow's
    viewer = world.get("viewer", "/trainjob/api/jobs").json()
    assert [j["name"] for j in viewer["jobs"]] == ["ti-live"]
    assert sum(viewer["counts"].values()) == 1 and sum(admin["counts"].values()) == 2
    (row,) = viewer["jobs"]
    assert (row["dag_id"], row["run_id"], row["task_id"], row["map_index"], row["try_number"]) == (
        ALLOWED,
        "r1",
        "train",
        -1,
        2,
    )
    assert row["uid"] == world.live["metadata"]["uid"] and row["phase"] in ("Created", "Running")
    assert row["task_instance_url"] == f"/dags/{ALLOWED}/runs/r1/tasks/train"
    assert admin["sources"] == [
        {"connection": "kubernetes_default", "namespace": world.namespace, "error": None, "skipped_kinds": []}
    ]
    phase = row["phase"]
    assert [j["name"] for j in world.get("admin", "/trainjob/api/jobs", phase=phase, dag_id=SECRET).json()["jobs"]] == [
        "ti-secret"
    ]
    assert world.get("admin", "/trainjob/api/jobs", phase="Failed").json()["jobs"] == []


# --- a task instance's tries --------------------------------------------------------------------------


def test_the_live_try_and_the_recorded_one(world):
    response = world.get("viewer", "/trainjob/api/task-instance", **ti_params(identity(ALLOWED)))
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert (body["dag_id"], body["run_id"], body["task_id"], body["map_index"]) == (ALLOWED, "r1", "train", -1)
    live, gone = body["tries"]
    assert (live["try_number"], live["exists"], live["source"], live["uid"]) == (
        2,
        True,
        "live",
        world.live["metadata"]["uid"],
    )
    assert live["phase"] in ("Created", "Running") and live["refresh_seconds"] == 5 and live["error"] is None
    assert [(r["replica_type"], r["index"], r["pod"], r["lead"]) for r in live["replicas"]] == [
        ("Master", 0, world.live_pod["metadata"]["name"], True)
    ]
    assert live["events"], "the pod's and job's events"
    assert live["manifest_yaml"].startswith("kind: PyTorchJob")
    assert (gone["try_number"], gone["exists"], gone["source"], gone["phase"]) == (1, False, "recorded", "Failed")
    assert (gone["reason"], gone["message"], gone["outcome"], gone["refresh_seconds"]) == (
        "PyTorchJobFailed",
        "master failed",
        "failed",
        None,
    )
    assert [r["pod"] for r in gone["replicas"]] == ["ti-gone-master-0"]
    assert [e["reason"] for e in gone["events"]] == ["PyTorchJobFailed"]
    # a terminal job's counts carry no active count (the controller's leftover), only what finished
    assert {t: (c["active"], c["text"]) for t, c in gone["replica_counts"].items()} == {"Master": (None, "1 failed")}
    assert all(isinstance(c["active"], int) for c in live["replica_counts"].values())
    assert live["cluster_unreadable_since"] is None and gone["cluster_unreadable_since"] is None
    # the job's own creation time; the try created it (attached at no time); an ended try is known until its end
    made = world.live["metadata"]["creationTimestamp"]
    assert (live["job_created_at"], live["attached_at"]) == (made.replace("+00:00", "Z"), None)
    assert gone["known_until"] == gone["ended_at"] and gone["job_created_at"] is not None


@pytest.mark.parametrize("run_id", ["r-stranger", "r-replaced"])
def test_a_record_naming_a_job_that_is_not_the_tasks_never_reads_it(world, run_id):
    """The stranger's job carries no ownership labels; ``ti-live`` has another uid than the record says."""
    (only,) = world.get("admin", "/trainjob/api/task-instance", **ti_params(identity(ALLOWED, run_id))).json()["tries"]
    assert (only["exists"], only["phase"], only["replicas"], only["events"]) == (False, "Unknown", [], [])
    log = world.get("admin", "/trainjob/api/task-instance/log", **ti_params(identity(ALLOWED, run_id)))
    assert log.status_code == 200 and log.json()["available"] is False and log.json()["lines"] == []


def test_no_record_no_tries(world):
    body = world.get("admin", "/trainjob/api/task-instance", **ti_params(identity(ALLOWED, "r-none"))).json()
    assert body["tries"] == []


# --- logs -------------------------------------------------------------------------------------------


def test_the_lead_replicas_log_by_default(world):
    body = world.get("viewer", "/trainjob/api/task-instance/log", **ti_params(identity(ALLOWED), tail_lines=20)).json()
    assert body == {
        "pod": world.live_pod["metadata"]["name"],
        "container": "pytorch",
        "lines": [PRINTED],
        "running": True,
        "available": True,
        "message": None,
    }


def test_a_log_only_of_the_tries_own_pods(world):
    params = ti_params(identity(ALLOWED))
    for other in (world.secret_pod["metadata"]["name"], "ti-live", "../../etc/passwd"):
        response = world.get("admin", "/trainjob/api/task-instance/log", **params, pod=other)
        assert response.status_code == 404, other
        assert "is not a pod of try 2's job" in response.json()["detail"]
    gone = world.get("admin", "/trainjob/api/task-instance/log", **params, try_number=1).json()
    assert (gone["pod"], gone["available"], gone["lines"]) == ("ti-gone-master-0", False, [])
    assert "the job no longer exists" in gone["message"]
    assert world.get("admin", "/trainjob/api/task-instance/log", **params, try_number=7).status_code == 404
    assert world.get("admin", "/trainjob/api/task-instance/log", **params, tail_lines=0).status_code == 422


@pytest.mark.parametrize(
    ("path", "bad"),
    [
        ("/trainjob/api/task-instance", {"map_index": 2**63}),
        ("/trainjob/api/task-instance", {"map_index": 2**31}),
        ("/trainjob/api/task-instance/log", {"map_index": 2**63}),
        ("/trainjob/api/task-instance/log", {"try_number": 2**31}),
    ],
)
def test_integers_beyond_airflows_columns_are_refused_with_422(world, path, bad):
    """Airflow's ``map_index`` and ``try_number`` are 32-bit INTEGER columns: a larger number is bad input (422),
    not a query the database overflows on (500)."""
    assert world.get("admin", path, **{**ti_params(identity(ALLOWED)), **bad}).status_code == 422


def test_the_log_of_a_task_instance_that_launched_no_job_says_so(world):
    response = world.get("admin", "/trainjob/api/task-instance/log", **ti_params(identity(ALLOWED, "r-none")))
    assert response.status_code == 404
    assert response.json()["detail"] == "no try of this task instance launched a training job"
    numbered = world.get(
        "admin", "/trainjob/api/task-instance/log", **ti_params(identity(ALLOWED, "r-none")), try_number=3
    )
    assert numbered.json()["detail"] == "try 3 of this task instance launched no training job"


def test_while_the_cluster_fails_the_tab_says_why_and_since_when_then_recovers(world):
    """The api-server's reads of the job's pods are cut (connections reset at the proxy): the answer comes at once,
    names the real cause in one line, says since when the cluster cannot be read, and keeps the poll; once the
    cluster answers again the same tab is live again by itself."""
    params = ti_params(identity(ALLOWED))
    cut = world.proxy.add(Fault("reset", method="GET", path=rf"/namespaces/{world.namespace}/pods$", times=None))
    try:
        live = wait_for(
            lambda: world.get("viewer", "/trainjob/api/task-instance", **params).json()["tries"][0],
            lambda t: t["cluster_unreadable_since"] is not None,
            timeout=30,
            what="the tab saying the cluster cannot be read",
        )
        assert world.proxy.hits(cut) >= 1
        assert live["error"] and "TimeoutError" not in live["error"] and "\n" not in live["error"], live["error"]
        assert live["refresh_seconds"] == 5 and live["exists"] is True
        since = live["cluster_unreadable_since"]
        again = world.get("viewer", "/trainjob/api/task-instance", **params).json()["tries"][0]
        assert again["cluster_unreadable_since"] in (since, None)  # since the first failure, not each poll's
    finally:
        world.proxy.clear()
    wait_for(
        lambda: world.get("viewer", "/trainjob/api/task-instance", **params).json()["tries"][0],
        lambda t: t["cluster_unreadable_since"] is None and t["error"] is None and t["replicas"],
        timeout=30,
        what="the tab live again",
    )


# --- no secrets, and the cost of many tabs -------------------------------------------------------------


def test_no_token_or_kubeconfig_in_any_answer(world, local_cluster):
    kubeconfig = yaml.safe_load(local_cluster.kubeconfig.read_text())
    tokens = [u["user"]["token"] for u in kubeconfig["users"] if u["user"].get("token")]
    world.get("admin", "/trainjob/api/jobs")
    world.get("admin", "/trainjob/api/task-instance", **ti_params(identity(ALLOWED)))
    assert tokens and len(world.answers) > 10
    for text in world.answers:
        for token in tokens:
            assert token not in text
        assert "certificate-authority-data" not in text and "client-key-data" not in text
        assert "kube_config" not in text and "BEGIN " not in text


def poll(world: World, clients: int, seconds: float, interval: float = 5.0) -> int:
    """``clients`` pages open on the live task's tab for ``seconds``: each polls the tab's JSON and the lead log every
    ``interval`` seconds (the page's ``refresh_seconds``), the clients' first polls spread over one interval.
    Returns the page requests made."""
    made: list[int] = []
    stop = time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {world.tokens['viewer']}"}

    def page(offset: float) -> None:
        time.sleep(offset)
        count = 0
        with httpx.Client(base_url=world.airflow.base_url, headers=headers, timeout=60) as client:
            while time.monotonic() < stop:
                started = time.monotonic()
                for path in ("/trainjob/api/task-instance", "/trainjob/api/task-instance/log"):
                    assert client.get(path, params=ti_params(identity(ALLOWED))).status_code == 200
                    count += 1
                time.sleep(max(0.0, interval - (time.monotonic() - started)))
        made.append(count)

    threads = [threading.Thread(target=page, args=(i * interval / clients,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(made)


def test_ten_open_tabs_cost_the_kubernetes_api_what_one_does(world):
    """Requests that reached the cluster (the proxy's count) while 1, then 10 clients poll the tab: the shared stream
    and the coalesced reads make them about equal, where reading per page would multiply them by 10."""
    world.get("viewer", "/trainjob/api/task-instance", **ti_params(identity(ALLOWED)))  # the stream is up
    figures = {}
    for clients in (1, 10):
        before = len(world.proxy.requests)
        pages = poll(world, clients, BENCH_SECONDS)
        seen = world.proxy.requests[before:]
        by_kind = {
            "pods": sum(1 for r in seen if re.search(r"/pods$", r["path"])),
            "events": sum(1 for r in seen if r["path"].endswith("/events")),
            "logs": sum(1 for r in seen if r["path"].endswith("/log")),
            "jobs": sum(1 for r in seen if "/pytorchjobs" in r["path"]),
        }
        figures[clients] = (pages, len(seen), by_kind)
        record(
            "ui_requests",
            clients=clients,
            seconds=BENCH_SECONDS,
            page_requests=pages,
            kubernetes_requests=len(seen),
            **{f"kubernetes_{k}": v for k, v in by_kind.items()},
        )
    (one_pages, one, one_kinds), (ten_pages, ten, ten_kinds) = figures[1], figures[10]
    print(f"\nUI requests in {BENCH_SECONDS:g} s: 1 client {one_pages} page / {one} Kubernetes {one_kinds}; "
          f"10 clients {ten_pages} page / {ten} Kubernetes {ten_kinds}")  # fmt: skip
    assert ten_pages >= 8 * one_pages
    assert one_kinds["jobs"] == ten_kinds["jobs"] == 0, "jobs come from the open watch, never a request per page"
    assert ten <= 2.5 * one, "ten clients must not cost ten times one"
