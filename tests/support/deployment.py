"""A real Airflow deployment for end-to-end tests: api-server, scheduler (LocalExecutor), dag-processor and
triggerer as separate processes on one SQLite database, every listener on 127.0.0.1.

``airflow dags test`` runs a task and its trigger in one process; users run these four. What only shows there --
a run with no logical date, a deferred task resumed by another process, links and logs as the api-server serves
them, the UI itself -- is tested against this.

::

    with AirflowDeployment(tmp_path, port=..., dags={"train.py": source}, dag_ids=["train"],
                           connection=local_cluster.airflow_connection(namespace)) as airflow:
        api = airflow.api("admin")
        run_id = api.trigger("train")["dag_run_id"]
        api.wait_for_task_state("train", run_id, "train", "success")
        print(api.task_log_text("train", run_id, "train"))

Each component runs in its own session and process group (``setsid``), its output in ``<root>/logs/<name>.log``;
:meth:`AirflowDeployment.stop` sends SIGTERM to each group, SIGKILL after a timeout, by the pids it started.
Users are the simple auth manager's (``user:role``), with passwords written beforehand so the tests know them; the
auth manager is :class:`tests.support.auth_manager.DagLimitedAuthManager`, so a user may be denied some DAGs.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

#: The repository root: on the components' PYTHONPATH, so the api-server can import the test auth manager.
REPO_ROOT = Path(__file__).resolve().parents[2]
#: The ``airflow`` command of the interpreter running the tests (the venv's).
AIRFLOW = str(Path(sys.executable).with_name("airflow"))
#: ``[core] auth_manager`` of every deployment: the simple auth manager with per-user DAG limits.
AUTH_MANAGER = "tests.support.auth_manager.DagLimitedAuthManager"
#: The components, in start order, and their arguments. ``--skip-serve-logs``: the scheduler's and triggerer's
#: log servers bind every interface and have no host option; the api-server reads task logs from the local files.
COMPONENTS: dict[str, list[str]] = {
    "api-server": ["api-server", "--host", "127.0.0.1"],
    "scheduler": ["scheduler", "--skip-serve-logs"],
    "dag-processor": ["dag-processor"],
    "triggerer": ["triggerer", "--skip-serve-logs"],
}
#: The components' heartbeats in ``GET /api/v2/monitor/health`` (the api-server answers for the database).
HEALTH_KEYS = {
    "api-server": "metadatabase",
    "scheduler": "scheduler",
    "dag-processor": "dag_processor",
    "triggerer": "triggerer",
}
#: Seconds after the first SIGTERM when :meth:`AirflowDeployment.stop` sends the second.
SECOND_SIGNAL_AFTER = 5.0
#: Task instance states after which a task instance changes no more by itself.
FINISHED_STATES = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})
#: Default users: user name -> simple auth manager role.
DEFAULT_USERS: Mapping[str, str] = {"admin": "admin", "viewer": "viewer"}

#: How many times a GET to the api-server is sent when it times out (see ApiClient._send).
READ_ATTEMPTS = 3


class DeploymentError(RuntimeError):
    """A component did not start or exited; the message carries the end of its log."""


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def airflow_env(
    home: Path, dags_folder: Path, port: int, *, deferrable: bool | None, extra: Mapping[str, str] = {}
) -> dict[str, str]:
    """The environment of every component and CLI call of one deployment.

    The test process's own Airflow settings (``AIRFLOW_HOME``, ``AIRFLOW__*``, ``AIRFLOW_CONN_*``, ``AIRFLOW_VAR_*``)
    are dropped: the deployment has only what is set here and in ``extra``.

    :param home: ``AIRFLOW_HOME``; also holds the SQLite database ``airflow.db``.
    :param dags_folder: ``[core] dags_folder``.
    :param port: the api-server's port on 127.0.0.1.
    :param deferrable: ``[operators] default_deferrable``; None leaves Airflow's default (False).
    :param extra: more variables, e.g. ``AIRFLOW_CONN_KUBERNETES_DEFAULT``; they win over the defaults.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k == "AIRFLOW_HOME" or k.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_")))
    }
    base_url = f"http://127.0.0.1:{port}"
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "8",
            "AIRFLOW__CORE__AUTH_MANAGER": AUTH_MANAGER,
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base_url}/execution/",
            "AIRFLOW__API__BASE_URL": base_url,
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__WORKERS": "1",
            # Shared by all components: the api-server signs the workers' task tokens with the JWT secret.
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            # Their health servers bind every interface; the api-server's /monitor/health reads the heartbeats.
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            "AIRFLOW__TRIGGERER__ENABLE_HEALTH_CHECK": "False",
            # A task's process parses its DAG file itself; with four test shards on two cores, six task processes
            # starting at once took longer than the default 30 s, and each try was rescheduled as "Dag not found"
            # (up_for_reschedule, 60 s later, again all at once). The DAG processor's limit rises with it.
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
            "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "150",
            "AIRFLOW__WORKERS__MISSING_DAG_RETRY_DELAY": "5",
            # A worker's calls to the api-server's execution API wait 5 s by default, five times: on CI's loaded
            # machine the single api-server worker answered a deployment's first task starts later than that, the
            # supervisor killed both task processes before they ran, and each try failed unrun ("finished with
            # state failed, but the task instance's state attribute is queued").
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "30",
            # A DAG file a test adds after the start is found within seconds, not the default 5 minutes.
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        }
    )
    if deferrable is not None:
        env["AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE"] = str(deferrable)
    env.update(extra)
    return env


def migrate(home: Path, env: Mapping[str, str], log: Path) -> None:
    """``airflow db migrate`` into ``home/airflow.db`` (about 7 s).

    :raises DeploymentError: the command failed; the message carries the end of its output.
    """
    home.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        rc = subprocess.call(
            [AIRFLOW, "db", "migrate"], env=dict(env), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    if rc != 0:
        raise DeploymentError(f"airflow db migrate exited with {rc}; last lines of {log}:\n{_tail(log)}")


def migrated_database(directory: Path) -> Path:
    """A freshly migrated, empty Airflow database in ``directory`` (``airflow.db``), to copy into deployments:
    one migration per test session instead of one per deployment.

    :param directory: an empty directory of the caller's (it becomes a throwaway ``AIRFLOW_HOME``).
    :returns: the database file.
    """
    env = airflow_env(directory, directory / "dags", 0, deferrable=None)
    migrate(directory, env, directory / "db-migrate.log")
    return directory / "airflow.db"


class AirflowDeployment:
    """One Airflow deployment in ``root``: ``root/home`` (AIRFLOW_HOME, SQLite), ``root/dags``, ``root/logs``.

    Use as a context manager (``start`` on entry, ``stop`` on exit) or call :meth:`start` and :meth:`stop`.

    :param root: an empty directory for this deployment.
    :param port: the api-server's port on 127.0.0.1.
    :param dags: DAG files: file name -> source text, or -> a file to copy.
    :param dag_ids: the DAGs :meth:`start` waits for (parsed and serialized); their files' import errors fail it.
    :param connection: ``AIRFLOW_CONN_KUBERNETES_DEFAULT``, e.g. ``LocalCluster.airflow_connection(namespace)``.
    :param deferrable: ``[operators] default_deferrable`` in every component; None: Airflow's default (False).
    :param users: user name -> simple auth manager role (``viewer``, ``user``, ``op``, ``admin``).
    :param dag_access: user name -> the only DAG ids that user may reach
        (:class:`tests.support.auth_manager.DagLimitedAuthManager`); users not named are limited by role only.
    :param env: more environment variables for every component (they win over the defaults).
    :param database: a migrated ``airflow.db`` to copy (:func:`migrated_database`) instead of migrating anew.
    :param components: which of :data:`COMPONENTS` to run; the api-server always (e.g. ``("api-server",)`` for
        tests of the UI's routes alone, which need no scheduler).
    """

    def __init__(
        self,
        root: Path,
        *,
        port: int,
        dags: Mapping[str, str | Path] = {},
        dag_ids: Collection[str] = (),
        connection: str | None = None,
        deferrable: bool | None = None,
        users: Mapping[str, str] = DEFAULT_USERS,
        dag_access: Mapping[str, Collection[str]] = {},
        env: Mapping[str, str] = {},
        database: Path | None = None,
        components: Collection[str] = tuple(COMPONENTS),
    ) -> None:
        unknown = set(components) - set(COMPONENTS)
        if unknown or "api-server" not in components:
            raise ValueError(f"components must include api-server and be among {list(COMPONENTS)}, got {components}")
        self.components = [name for name in COMPONENTS if name in components]
        self.root = root
        self.home = root / "home"
        self.dags_folder = root / "dags"
        self.logs = root / "logs"
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.dag_ids = list(dag_ids)
        self.users = dict(users)
        self.passwords = {user: secrets.token_urlsafe(12) for user in self.users}
        self.database = database
        self._dags = dict(dags)
        extra = dict(env)
        if connection is not None:
            extra["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = connection
        extra["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] = ",".join(f"{u}:{r}" for u, r in self.users.items())
        extra["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] = str(self.home / "passwords.json")
        if dag_access:
            extra["AIRFLOW__TRAINJOB_TEST_AUTH__DAG_ACCESS"] = json.dumps({u: sorted(d) for u, d in dag_access.items()})
        self.env = airflow_env(self.home, self.dags_folder, port, deferrable=deferrable, extra=extra)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._apis: dict[str, AirflowApi] = {}
        #: Wall time of the last start and stop, in seconds.
        self.timings: dict[str, float] = {}

    # ---- lifecycle ---------------------------------------------------------------------------------------------

    def __enter__(self) -> AirflowDeployment:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def log_path(self, component: str) -> Path:
        """The file with ``component``'s output (``api-server``, ``scheduler``, ``dag-processor``, ``triggerer``)."""
        return self.logs / f"{component}.log"

    def add_dag_file(self, name: str, source: str | Path) -> Path:
        """Write (or copy) a DAG file into the DAGs folder; the dag-processor finds it within seconds.

        :param name: file name in the DAGs folder.
        :param source: the source text, or a file to copy.
        """
        path = self.dags_folder / name
        if isinstance(source, Path):
            shutil.copyfile(source, path)
        else:
            path.write_text(source)
        return path

    def start(self, timeout: float = 180.0) -> None:
        """Migrate (or copy) the database, start the components (all four by default), and wait until the
        api-server answers, every component's heartbeat is healthy and the DAGs in ``dag_ids`` are parsed.

        :param timeout: seconds for all of it.
        :raises DeploymentError: a component exited, a DAG file has an import error, or ``timeout`` passed.
        """
        started = time.monotonic()
        if not _port_free(self.port):
            # Else the health checks below could be answered by whatever holds the port (a stale api-server).
            raise DeploymentError(
                f"port {self.port} on 127.0.0.1 is in use: stop what listens there or choose another port"
            )
        for directory in (self.home, self.dags_folder, self.logs):
            directory.mkdir(parents=True, exist_ok=True)
        for name, source in self._dags.items():
            self.add_dag_file(name, source)
        (self.home / "passwords.json").write_text(json.dumps(self.passwords))
        if self.database is not None:
            shutil.copyfile(self.database, self.home / "airflow.db")
        else:
            migrate(self.home, self.env, self.logs / "db-migrate.log")
        port_args = ["--port", str(self.port)]
        for name in self.components:
            args = COMPONENTS[name]
            with self.log_path(name).open("ab") as log:
                self.processes[name] = subprocess.Popen(
                    [AIRFLOW, *args, *(port_args if name == "api-server" else [])],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.root,
                    env=self.env,
                    # Own session and process group: stop() signals the component with all it forked.
                    start_new_session=True,
                )
        deadline = started + timeout
        self._wait(self._healthy, deadline, f"{', '.join(self.components)} healthy in /api/v2/monitor/health")
        if self.dag_ids:
            api = self.api("admin" if "admin" in self.users else next(iter(self.users)))
            self._wait(lambda: api.dags_parsed(self.dag_ids), deadline, f"DAGs {self.dag_ids} parsed")
        self.timings["start_seconds"] = time.monotonic() - started

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every component this deployment started, by the pids it recorded: running task runners at once
        (SIGKILL), then the scheduler, dag-processor and triggerer, then the api-server (a task being stopped still reports its end through it). Each gets
        SIGTERM to its process group, again after :data:`SECOND_SIGNAL_AFTER` seconds (the scheduler waits for
        running tasks on the first one: "signal again if you don't want to wait"), SIGKILL after ``timeout``
        seconds; then SIGKILL goes to whatever is left in their sessions (task runners: Airflow's supervisor puts
        each in a process group of its own, in the scheduler's session). Idempotent.

        :param timeout: seconds until SIGKILL, per phase.
        """
        started = time.monotonic()
        for api in self._apis.values():
            api.client.close()
        self._apis.clear()
        # A running task ignores the SIGTERM its supervisor forwards and would hold the scheduler for `timeout`:
        # task runners (process groups of their own in a component's session) get SIGKILL first.
        for process in self.processes.values():
            for pid in _session_members(process.pid, own_group=True):
                _signal(pid, signal.SIGKILL)
        last = [p for name, p in self.processes.items() if name == "api-server"]
        first = [p for name, p in self.processes.items() if name != "api-server"]
        for phase in (first, last):
            _terminate(phase, timeout)
        self.processes.clear()
        self.timings["stop_seconds"] = time.monotonic() - started

    def _check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise DeploymentError(
                    f"{name} exited with {process.returncode}; last lines of {self.log_path(name)}:\n"
                    f"{_tail(self.log_path(name))}"
                )

    def _wait(self, ready: Callable[[], bool], deadline: float, what: str) -> None:
        while True:
            self._check_alive()
            if ready():
                return
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {name}:\n{_tail(self.log_path(name), 10)}" for name in self.processes)
                raise DeploymentError(f"timed out waiting for {what}; last lines of the logs:\n{logs}")
            time.sleep(0.5)

    def _healthy(self) -> bool:
        try:
            response = httpx.get(f"{self.base_url}/api/v2/monitor/health", timeout=5)
        except httpx.HTTPError:
            return False
        if response.status_code != 200:
            return False
        health = response.json()
        return all((health.get(HEALTH_KEYS[name]) or {}).get("status") == "healthy" for name in self.components)

    # ---- clients -----------------------------------------------------------------------------------------------

    def token(self, user: str) -> str:
        """A JWT for ``user`` from ``POST /auth/token`` (the simple auth manager's login)."""
        response = httpx.post(
            f"{self.base_url}/auth/token",
            json={"username": user, "password": self.passwords[user]},
            timeout=30,
        )
        response.raise_for_status()
        return str(response.json()["access_token"])

    def client(self, user: str | None) -> httpx.Client:
        """An HTTP client on the api-server, authenticated as ``user`` (bearer token); None: anonymous.
        The caller closes it."""
        headers = {"Authorization": f"Bearer {self.token(user)}"} if user is not None else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30)

    def api(self, user: str) -> AirflowApi:
        """The REST helpers, as ``user`` (one client per user, closed by :meth:`stop`)."""
        if user not in self._apis:
            self._apis[user] = AirflowApi(self.client(user))
        return self._apis[user]


class AirflowApi:
    """Small helpers over Airflow's REST API (``/api/v2``) for driving DAG runs in a test.

    :param client: an authenticated client on the api-server (:meth:`AirflowDeployment.client`).
    """

    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send; a read (GET) that times out is sent again, up to :data:`READ_ATTEMPTS` times: on a loaded machine the
        api-server may take longer than the client's 30 s to answer one request, which says nothing of the state
        the test waits for (a write is sent once: it may have been done)."""
        attempts = READ_ATTEMPTS if method.upper() == "GET" else 1
        for attempt in range(1, attempts + 1):
            try:
                return self.client.request(method, url, **kwargs)
            except httpx.TimeoutException:
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """``method`` ``/api/v2<path>``; the decoded JSON body (None when empty).

        :raises httpx.HTTPStatusError: not a 2xx answer (the message carries the body).
        """
        response = self._send(method, f"/api/v2{path}", **kwargs)
        if response.is_error:
            raise httpx.HTTPStatusError(
                f"{method} /api/v2{path}: {response.status_code} {response.text[:2000]}",
                request=response.request,
                response=response,
            )
        return response.json() if response.content else None

    # ---- DAGs and runs -----------------------------------------------------------------------------------------

    def dags_parsed(self, dag_ids: Collection[str]) -> bool:
        """Whether every DAG in ``dag_ids`` is parsed and serialized.

        :raises DeploymentError: a DAG file has an import error (its traceback in the message).
        """
        errors = self.request("GET", "/importErrors")["import_errors"]
        if errors:
            raise DeploymentError(
                "DAG import errors:\n" + "\n".join(f"{e['filename']}:\n{e['stack_trace']}" for e in errors)
            )
        for dag_id in dag_ids:
            response = self._send("GET", f"/api/v2/dags/{dag_id}/details")
            if response.status_code == 404:
                return False
            response.raise_for_status()
        return True

    def unpause(self, dag_id: str) -> None:
        """``PATCH /dags/{dag_id}`` with ``is_paused: false`` (DAGs are paused at creation)."""
        self.request("PATCH", f"/dags/{dag_id}", json={"is_paused": False})

    def trigger(self, dag_id: str, *, conf: Mapping[str, Any] | None = None, logical_date: str | None = None) -> Any:
        """Unpause ``dag_id`` and trigger a run (``POST /dags/{dag_id}/dagRuns``).

        :param conf: the run's ``conf``.
        :param logical_date: ISO date, or None: ``{"logical_date": null}``, the API's default (a run with no logical
            date, which the DAG must handle).
        :returns: the DAG run as the API returns it (``dag_run_id``, ``state``, ...).
        """
        self.unpause(dag_id)
        body: dict[str, Any] = {"logical_date": logical_date}
        if conf is not None:
            body["conf"] = dict(conf)
        return self.request("POST", f"/dags/{dag_id}/dagRuns", json=body)

    def dag_run(self, dag_id: str, run_id: str) -> Any:
        """``GET /dags/{dag_id}/dagRuns/{run_id}``."""
        return self.request("GET", f"/dags/{dag_id}/dagRuns/{run_id}")

    # ---- task instances ----------------------------------------------------------------------------------------

    @staticmethod
    def _ti_path(dag_id: str, run_id: str, task_id: str, map_index: int) -> str:
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
        return path if map_index < 0 else f"{path}/{map_index}"

    def task_instance(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> Any:
        """The task instance as the API returns it (``state``, ``try_number``, ...)."""
        return self.request("GET", self._ti_path(dag_id, run_id, task_id, map_index))

    def wait_for_task_state(
        self,
        dag_id: str,
        run_id: str,
        task_id: str,
        states: str | Collection[str],
        *,
        map_index: int = -1,
        timeout: float = 180.0,
    ) -> Any:
        """Poll the task instance until its state is one of ``states``.

        :param states: a state (``"success"``, ``"deferred"``, ``"running"``...) or several.
        :param timeout: seconds.
        :returns: the task instance.
        :raises AssertionError: it reached another finished state, or ``timeout`` passed (the last state read).
        """
        wanted = {states} if isinstance(states, str) else set(states)
        deadline = time.monotonic() + timeout
        while True:
            ti = self.task_instance(dag_id, run_id, task_id, map_index)
            if ti["state"] in wanted:
                return ti
            if ti["state"] in FINISHED_STATES:
                raise AssertionError(
                    f"{dag_id}.{task_id} in {run_id} ended {ti['state']}, not {sorted(wanted)}; the end of its log:\n"
                    + self._log_tail(dag_id, run_id, task_id, map_index)
                )
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{dag_id}.{task_id} in {run_id} still {ti['state']} after {timeout:g} s, not {sorted(wanted)}; "
                    "the end of its log:\n" + self._log_tail(dag_id, run_id, task_id, map_index)
                )
            time.sleep(0.5)

    def _log_tail(self, dag_id: str, run_id: str, task_id: str, map_index: int, lines: int = 25) -> str:
        """The last lines of the current try's log, for an assertion's message (a failure in CI says why)."""
        try:
            text = self.task_log_text(dag_id, run_id, task_id, map_index=map_index)
        except Exception as error:  # a diagnostic must not hide the assertion it explains
            return f"(log not readable: {error})"
        return "\n".join(text.splitlines()[-lines:])

    def task_log(
        self, dag_id: str, run_id: str, task_id: str, try_number: int | None = None, *, map_index: int = -1
    ) -> list[Any]:
        """The task log's entries (``GET .../logs/{try_number}?full_content=true``): the structured records (dicts
        with ``event``, ``timestamp``, ``level``...) and header strings, as the UI reads them.

        :param try_number: the try; None: the task instance's current one.
        """
        if try_number is None:
            try_number = self.task_instance(dag_id, run_id, task_id, map_index)["try_number"]
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}"
        body = self.request(
            "GET",
            path,
            params={"full_content": "true", "map_index": map_index},
            headers={"Accept": "application/json"},
        )
        return list(body["content"])

    def task_log_text(
        self, dag_id: str, run_id: str, task_id: str, try_number: int | None = None, *, map_index: int = -1
    ) -> str:
        """The task log as text: one line per record, its ``event`` (the message)."""
        return "\n".join(
            str(entry.get("event", "")) if isinstance(entry, dict) else str(entry)
            for entry in self.task_log(dag_id, run_id, task_id, try_number, map_index=map_index)
        )

    def set_task_state(self, dag_id: str, run_id: str, task_id: str, state: str, *, map_index: int = -1) -> Any:
        """Mark the task instance ``state`` (``"failed"``, ``"success"``) as the UI does (``PATCH`` with
        ``new_state``)."""
        return self.request("PATCH", self._ti_path(dag_id, run_id, task_id, map_index), json={"new_state": state})

    def clear_task(self, dag_id: str, run_id: str, task_ids: Collection[str], *, only_failed: bool = False) -> Any:
        """Clear task instances of one run (``POST /dags/{dag_id}/clearTaskInstances``), as the UI's Clear does:
        the scheduler runs them again as their next try."""
        return self.request(
            "POST",
            f"/dags/{dag_id}/clearTaskInstances",
            json={"dag_run_id": run_id, "task_ids": list(task_ids), "dry_run": False, "only_failed": only_failed},
        )


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _terminate(processes: list[subprocess.Popen[bytes]], timeout: float) -> None:
    """SIGTERM to each process's group (all at once: each takes 1-4 s), again after :data:`SECOND_SIGNAL_AFTER`
    seconds, SIGKILL after ``timeout``; then SIGKILL to what is left in their sessions."""
    started = time.monotonic()
    for process in processes:
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
    _wait_exit(processes, started + SECOND_SIGNAL_AFTER)
    for process in processes:
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
    _wait_exit(processes, started + timeout)
    for process in processes:
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
        for pid in _session_members(process.pid):
            _signal(pid, signal.SIGKILL)


def _wait_exit(processes: list[subprocess.Popen[bytes]], deadline: float) -> None:
    """Wait until every process has exited or ``deadline`` (monotonic seconds) passed."""
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return


def _session_members(sid: int, *, own_group: bool = False) -> list[int]:
    """The pids of the processes in session ``sid`` (``/proc/<pid>/stat`` field 6), this one excluded.

    :param own_group: only those in a process group other than the session's own (field 5).
    """
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # gone meanwhile
            continue
        if int(fields[3]) == sid and not (own_group and int(fields[2]) == sid):
            members.append(int(entry.name))
    return members


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def airflow_deployment(root: Path, **kwargs: Any) -> Iterator[AirflowDeployment]:
    """``with airflow_deployment(root, port=..., dags=...) as airflow:`` -- :class:`AirflowDeployment`, started, and
    stopped on the way out."""
    with AirflowDeployment(root, **kwargs) as deployment:
        yield deployment
