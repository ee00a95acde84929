"""The routes of the UI's app (:func:`airflow_trainjob.ui.app.create_app`), and how they read the cluster and the
metadata database.

Routes (paths below the app's mount, ``/trainjob``):

- ``GET /ui/task-instance``, ``GET /ui/jobs``: the two pages (``static/task_instance.html``, ``static/jobs.html``);
  ``GET /static/<file>`` (mounted by the app): their scripts and styles. No data in them: the pages call the API.
- ``GET /api/task-instance?dag_id=&run_id=&task_id=&map_index=-1``: every try's job of one task instance.
- ``GET /api/task-instance/log?...&try_number=&pod=&tail_lines=200``: the tail of one replica's log.
- ``GET /api/jobs?phase=&dag_id=``: every job Airflow launched in the configured connections' namespaces.

A try's view also reads Airflow's state of the try (:func:`~.store.load_try_states`): a try that has ended is
shown as the task last saw it, never as live (:func:`~.try_view.try_view`).

Every ``/api`` route needs a user and the auth manager's leave (:mod:`.access`). No namespace or name comes from a
request: a task instance's jobs are the ones its record names (:mod:`.store`), checked against the cluster's object
(same uid, the task instance's ownership labels), and a pod must be one of that job's pods; the jobs page reads the
namespaces of ``[trainjob] ui_connections``. Answers carry no token or kubeconfig content, and an API error is its
one line (:func:`airflow_trainjob.hooks.api_errors.one_line`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import FileResponse

from airflow_trainjob.constants import PodPhase
from airflow_trainjob.domain import pods
from airflow_trainjob.domain.observation import Observed
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.families import JobFamily, family_or_none, is_known
from airflow_trainjob.hooks.api_errors import one_line
from airflow_trainjob.links.training_job import job_url
from airflow_trainjob.ui import settings, try_view, views
from airflow_trainjob.ui.access import GetUserDep, readable_dag_ids, requires_task_instance_read
from airflow_trainjob.ui.cache import UiCache, ui_source
from airflow_trainjob.ui.store import RecordUnavailableError, load_tries, load_try_states
from airflow_trainjob.ui.urls import URL_PREFIX
from airflow_trainjob.watching.job_stream import JobStream

#: The pages' files.
STATIC_DIR = Path(__file__).parent / "static"
PAGES = {"task-instance": "task_instance.html", "jobs": "jobs.html"}
#: Log tail bounds (lines).
TAIL_LINES_DEFAULT, TAIL_LINES_MAX = 200, 5000
#: Longest log line returned (characters; longer ones are cut).
MAX_LOG_LINE = 10_000
#: Bounds of the integer query parameters: Airflow's ``map_index`` and ``try_number`` columns are 32-bit INTEGERs.
INT_MAX = 2**31 - 1

Json = dict[str, Any]


#: The routes (the app includes them).
router = APIRouter()


@router.get("/ui/{page}", include_in_schema=False)
async def page(page: str) -> FileResponse:
    """One of the two pages (:data:`PAGES`); 404 for another name or a page not installed.

    :param page: the page's name (``task-instance``, ``jobs``).
    """
    path = STATIC_DIR / PAGES.get(page, "")
    if page not in PAGES or not path.is_file():
        raise HTTPException(status_code=404, detail=f"no page {page!r}")
    return FileResponse(path, media_type="text/html", headers={"Cache-Control": "no-cache"})


@router.get("/api/task-instance", dependencies=[Depends(requires_task_instance_read)])
async def task_instance(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    map_index: Annotated[int, Query(ge=-1, le=INT_MAX)] = -1,
) -> Json:
    """Every try's training job of the task instance, latest first (the contract's ``tries``).

    :param request: the request (its app's :class:`UiCache`).
    :param dag_id: the DAG id.
    :param run_id: the DAG run id.
    :param task_id: the task id.
    :param map_index: the map index (``-1``: not mapped).
    """
    identity = TaskInstanceIdentity(dag_id, task_id, run_id, map_index, 1)
    records, airflow = await _load_tries(dag_id, run_id, task_id, map_index)
    tries = await _task_instance_tries(_cache(request), identity, records, airflow, _now())
    return {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index, "tries": tries}


@router.get("/api/task-instance/log", dependencies=[Depends(requires_task_instance_read)])
async def task_instance_log(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    map_index: Annotated[int, Query(ge=-1, le=INT_MAX)] = -1,
    try_number: Annotated[int | None, Query(ge=1, le=INT_MAX)] = None,
    pod: str | None = None,
    tail_lines: Annotated[int, Query(ge=1, le=TAIL_LINES_MAX)] = TAIL_LINES_DEFAULT,
) -> Json:
    """The tail of one pod's log of the try's job (the lead replica's by default); the pod must be one of the
    job's pods (live, or recorded at the end of the try).

    :param request: the request (its app's :class:`UiCache`).
    :param dag_id: the DAG id.
    :param run_id: the DAG run id.
    :param task_id: the task id.
    :param map_index: the map index (``-1``: not mapped).
    :param try_number: the try (None: the latest that launched a job).
    :param pod: the pod's name (None: the lead replica's).
    :param tail_lines: how many of the log's last lines.
    """
    records, _ = await _load_tries(dag_id, run_id, task_id, map_index)
    record = _try_record(records, try_number)
    identity = TaskInstanceIdentity(dag_id, task_id, run_id, map_index, int(record.get("try_number") or 1))
    t = _Try(record, identity)
    cache = _cache(request)
    await t.look(cache)
    kind = family_or_none(t.kind)
    live_pods = await _live_pods(cache, t) if kind is not None else []
    _, recorded_pods, _ = try_view.recorded_parts(record)
    chosen = pod if pod is not None or kind is None else _lead_pod_name(t, kind, live_pods, recorded_pods)
    answer: Json = {"pod": chosen, "container": None, "lines": [], "running": False, "available": False}
    live = next((p for p in live_pods if pods.pod_name(p) == chosen), None)
    if live is not None and t.stream is not None and kind is not None:
        return await _live_log(cache, t.stream, live, kind, answer, tail_lines, t.errors)
    return _no_live_log(answer, t, recorded_pods)


@router.get("/api/jobs")
async def jobs(request: Request, user: GetUserDep, phase: str | None = None, dag_id: str | None = None) -> Json:
    """Every job Airflow launched in the configured connections' namespaces that the user may see.

    :param request: the request (its app's :class:`UiCache`, the UI's path prefix).
    :param user: the signed-in user (whose readable DAGs are shown).
    :param phase: keep only this phase (None: all).
    :param dag_id: keep only this DAG (None: all).
    """
    cache, now = _cache(request), _now()
    try:
        sources = settings.ui_connections()
    except ValueError as e:
        return views.jobs_page([], sources=[{"connection": None, "namespace": None, "error": str(e)}])
    read = await asyncio.gather(*(_read_source(cache, source) for source in sources))
    found = {uid: pair for _, jobs in read for uid, pair in jobs.items()}
    allowed = await asyncio.to_thread(readable_dag_ids, user, {i.dag_id for _, i in found.values()})
    base = _ui_base(request)
    # Each row reads its job some 80 times: a plain copy (about 10 us a job) reads at dict speed, the observation
    # the stream keeps (a read-only view) at about half that.
    rows = [
        views.job_row(_plain(job), identity, now, base)
        for job, identity in found.values()
        if identity.dag_id in allowed
    ]
    return views.jobs_page(rows, phase=phase, dag_id=dag_id, sources=[entry for entry, _ in read])


# --- the log route's steps ------------------------------------------------------------------------


def _try_record(records: list[dict[str, Any]], try_number: int | None) -> dict[str, Any]:
    """The record of try ``try_number`` (None: the latest); 404 when no such try launched a job."""
    record = next((r for r in records if try_number is None or r.get("try_number") == try_number), None)
    if record is None:
        detail = (
            "no try of this task instance launched a training job"
            if try_number is None
            else f"try {try_number} of this task instance launched no training job"
        )
        raise HTTPException(status_code=404, detail=detail)
    return record


async def _live_pods(cache: UiCache, t: _Try) -> list[dict[str, Any]]:
    """The live job's pods ([] when the job is not live, or they could not be read: then in ``t.errors``)."""
    if t.job is None or t.stream is None:
        return []
    stream, job, uid = t.stream, t.job, (t.job.get("metadata") or {}).get("uid")
    return await _read(lambda: cache.job_pods(stream, t.name, uid, job), t.errors) or []


def _lead_pod_name(t: _Try, kind: JobFamily, live_pods: list[dict[str, Any]], recorded_pods: list[Any]) -> str | None:
    """The lead as the tab's table has it: of the pods there, and, once the job has finished, of those the try
    recorded that are gone since."""
    present = {pods.pod_name(p) for p in live_pods}
    finished = t.job is None or views.is_finished(views.job_phase(t.job))
    removed = [p for p in recorded_pods if pods.pod_name(p) not in present] if finished else []
    lead = kind.lead_pod([*live_pods, *removed])
    return pods.pod_name(lead) if lead else None


async def _live_log(
    cache: UiCache,
    stream: JobStream,
    live: Mapping[str, Any],
    kind: JobFamily,
    answer: Json,
    tail_lines: int,
    errors: list[str],
) -> Json:
    """``answer`` with the tail of the live pod's log (or why it could not be read)."""
    container = kind.log_container(live) or None
    answer = {**answer, "container": container, "running": pods.phase_of(live) == PodPhase.RUNNING}
    text = await _read(lambda: cache.pod_log(stream, str(answer["pod"]), container, tail_lines), errors)
    if text is not None:
        return {**answer, "lines": _log_lines(text), "available": True, "message": None}
    return {**answer, "message": "; ".join(errors)}


def _no_live_log(answer: Json, t: _Try, recorded_pods: list[Any]) -> Json:
    """``answer`` saying why no log is shown: no pod, a recorded pod gone since, or the pods could not be read; 404
    for a pod that is not one of the job's."""
    chosen = answer["pod"]
    if chosen is None:
        return {**answer, "message": "; ".join(t.errors) or "the job has no pods (yet)"}
    if any(pods.pod_name(p) == chosen for p in recorded_pods):
        gone = "the job no longer exists" if t.job is None else f"pod {chosen} no longer exists"
        return {**answer, "message": f"{gone}; its log went with it (the task's log has the lead replica's)"}
    if t.errors:  # the job's pods could not be read: nothing says whether ``pod`` is one (nor is it read)
        return {**answer, "message": "; ".join(t.errors)}
    raise HTTPException(status_code=404, detail=f"{chosen!r} is not a pod of try {t.identity.try_number}'s job")


# --- reading ----------------------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _ui_base(request: Request) -> str:
    """The Airflow UI's path prefix: the api-server's root path, without this app's mount."""
    root = str(request.scope.get("root_path") or "")
    return root.removesuffix(URL_PREFIX).rstrip("/")


def _cache(request: Request) -> UiCache:
    cache: UiCache = request.app.state.trainjob_cache
    return cache


def _owns(job: Mapping[str, Any], identity: TaskInstanceIdentity, uid: str | None) -> bool:
    """The cluster's ``job`` is the one the record names: same uid (when recorded), this task instance's labels."""
    return (not uid or (job.get("metadata") or {}).get("uid") == uid) and identity.owns(job)


async def _read(what: Callable[[], Awaitable[Any]], errors: list[str]) -> Any:
    """``await what()``; on failure, its one line in ``errors`` and None."""
    try:
        return await what()
    except Exception as e:  # any read failure is shown on the page as its one line, never raised to the client
        errors.append(one_line(e))
        return None


class _Try:
    """One recorded try, with what the cluster says of its job now."""

    def __init__(self, record: Mapping[str, Any], identity: TaskInstanceIdentity):
        self.record = record
        self.identity = identity
        self.kind = str(record.get("kind") or "")
        # None: the try used no connection (in-cluster or the default kubeconfig), and so does the UI.
        self.conn_id: str | None = record.get("kubernetes_conn_id") or None
        self.namespace = str(record.get("namespace") or "")
        self.name = str(record.get("name") or "")
        self.uid: str | None = record.get("uid") or None
        self.stream: JobStream | None = None
        self.job: Mapping[str, Any] | None = None  # the live job, when it exists and is this try's
        self.errors: list[str] = []
        self.unreadable = False  # the cluster could not be read just now (the stream, or a one-off read)

    async def look(self, cache: UiCache) -> None:
        """Find the job in its shared stream (never by a request to the cluster of its own)."""
        if not is_known(self.kind) or not self.namespace or not self.name:
            self.errors.append(f"the task's record names no job this provider knows ({self.kind or 'no kind'})")
            return
        self.stream = await _read(lambda: cache.stream(self.conn_id, self.namespace, self.kind), self.errors)
        if self.stream is None:
            self.unreadable = True
            return
        job = self.stream.jobs.get(self.name)
        if job is not None and _owns(job, self.identity, self.uid):
            self.job = job
        if self.stream.error:
            self.errors.append(self.stream.error)
        elif not self.stream.synced:
            self.errors.append(f"the jobs of {self.stream.source} are being read again; showing the last state seen")
        self.unreadable = bool(self.stream.error) or not self.stream.synced

    def unreadable_since(self, cache: UiCache, now: datetime) -> str | None:
        """Since when the cluster cannot be read for this try's job (RFC 3339), as the pages have seen it; None
        while it can."""
        if not is_known(self.kind):
            return None
        key = (ui_source(self.conn_id, self.namespace, self.kind), self.name, self.uid)
        return views.iso(cache.unreadable_since(key, self.unreadable, now))

    def gone_job(self) -> Mapping[str, Any] | None:
        """The job's last state before it was deleted, if the stream saw the deletion."""
        if self.stream is None or self.job is not None:
            return None
        final = self.stream.final_state(self.name, self.uid)
        return final if final is not None and _owns(final, self.identity, self.uid) else None


async def _task_instance_tries(
    cache: UiCache,
    identity: TaskInstanceIdentity,
    records: list[dict[str, Any]],
    airflow: dict[int, dict[str, Any]],
    now: datetime,
) -> list[Json]:
    tries = [_Try(r, dataclasses.replace(identity, try_number=int(r.get("try_number") or 1))) for r in records]
    await asyncio.gather(*(t.look(cache) for t in tries))
    return list(
        await asyncio.gather(*(_try_view(cache, t, airflow, latest=i == 0, now=now) for i, t in enumerate(tries)))
    )


async def _try_view(
    cache: UiCache, t: _Try, airflow: dict[int, dict[str, Any]], *, latest: bool, now: datetime
) -> Json:
    template = await cache.dashboard_template(t.conn_id)
    try:
        link = job_url(template, t.kind, t.namespace, t.name) if is_known(t.kind) else None
    except ValueError as e:
        link, t.errors = None, [*t.errors, str(e)]
    found_pods: list[dict[str, Any]] | None = []
    found_events: list[dict[str, Any]] | None = []
    if t.job is not None and t.stream is not None:
        stream, job = t.stream, t.job
        uid = (job.get("metadata") or {}).get("uid")
        found_pods = await _read(lambda: cache.job_pods(stream, t.name, uid, job), t.errors)
        names = [pods.pod_name(p) for p in found_pods or []]
        found_events = await _read(lambda: cache.job_events(stream, t.name, uid, names), t.errors)
        t.unreadable = t.unreadable or found_pods is None or found_events is None
    gone = t.gone_job()
    # try_view.try_view picks what to show: the job live, what the try recorded, or the stream's last sight of it.
    return try_view.try_view(
        t.record,
        live=t.job,
        live_pods=found_pods or [],
        live_events=found_events or [],
        gone=gone,
        now=now,
        airflow=airflow,
        link=link,
        error="; ".join(t.errors) or None,
        may_appear=latest and t.job is None and not t.record.get("final") and gone is None,
        unreadable_since=t.unreadable_since(cache, now),
        pods_read=found_pods is not None,
        end_record_wait=settings.end_record_wait_seconds(),
    )


async def _load_tries(
    dag_id: str, run_id: str, task_id: str, map_index: int
) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """The task instance's records (:func:`load_tries`) and Airflow's state of each of its tries
    (:func:`load_try_states`), read in one session."""
    from airflow.utils.session import create_session

    def read() -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
        with create_session() as session:
            records = load_tries(dag_id, run_id, task_id, map_index, session=session)
            return records, load_try_states(dag_id, run_id, task_id, map_index, session=session)

    try:
        return await asyncio.to_thread(read)
    except RecordUnavailableError as e:
        raise HTTPException(status_code=503, detail=str(e)) from None


def _plain(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """``job`` as plain dicts and lists: a copy of a stream's observation (what it keeps is not changed)."""
    return job.thaw() if isinstance(job, Observed) else job


async def _read_source(
    cache: UiCache, source: settings.UiSource
) -> tuple[Json, dict[str, tuple[Mapping[str, Any], TaskInstanceIdentity]]]:
    """The jobs page's entry of ``sources`` for one configured source, and the provider's jobs found there
    (uid -> job and its task instance), from the shared streams of every kind the cluster serves."""
    entry: Json = {"connection": source.conn_id, "namespace": source.namespace, "error": None, "skipped_kinds": []}
    found: dict[str, tuple[Mapping[str, Any], TaskInstanceIdentity]] = {}
    errors: list[str] = []
    namespace = source.namespace or await _read(lambda: cache.namespace_of(source.conn_id), errors)
    entry["namespace"] = namespace  # the connection's, when the source names none (None: it could not be read)
    kinds = await _read(lambda: cache.served_kinds(source.conn_id), errors) if namespace else None
    if not namespace or kinds is None:
        entry["error"] = "; ".join(errors)
        return entry, found
    entry["skipped_kinds"] = [{"kind": k, "reason": why} for k, why in kinds.items() if why]
    served = [k for k, why in kinds.items() if why is None]
    for stream in await asyncio.gather(*(cache.stream(source.conn_id, namespace, k) for k in served)):
        if stream.error:
            errors.append(stream.error)
        elif not stream.synced:
            errors.append(f"the jobs of {stream.source} are not read yet (the watch is reconnecting)")
        for job in list(stream.jobs.values()):
            identity = views.job_identity(job)
            uid = str((job.get("metadata") or {}).get("uid") or "")
            if identity is not None and uid:
                found[uid] = (job, identity)
    entry["error"] = "; ".join(errors) or None
    return entry, found


def _log_lines(text: str) -> list[str]:
    plain = views.without_terminal_codes(text)
    return [line if len(line) <= MAX_LOG_LINE else line[:MAX_LOG_LINE] + " [...]" for line in plain.splitlines()]
