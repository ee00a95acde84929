"""Helpers of the fault tests: starting the fault proxy, a watch that counts job creations, the orphan count, and
the report rows behind the README's fault table. The fixtures built on them (``fault_proxy``, ``fault_case``) are
in ``tests/conftest.py``.

Report rows: each ``fault_case`` records one row in section ``faults/<mode>`` with
:func:`tests.support.report.record` (``test, kind, mode, where, job_kind, injected, survived, jobs, duplicated,
orphaned, error``; ``kind`` is the fault's, ``job_kind`` the job's: ``PyTorchJob``, ``TrainJob``): summarised at the end of the run, and appended to ``$AIRFLOW_TRAINJOB_REPORT`` when set, from which
``scripts/fault_table.py`` prints the per-fault table. ``survived`` is true only when the whole case ran through
without an assertion failing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.support.fault_proxy import FaultProxy
from tests.support.report import record

#: The provider's deliberate waits between retries, in fault tests: the same shape, this fraction of the length.
BACKOFF_SCALE = 0.01


def shorten_backoff(monkeypatch, scale: float = BACKOFF_SCALE) -> None:
    """Shorten the provider's retry backoff to ``scale`` of itself (seconds become tens of milliseconds) for one
    test: the API calls' exponential backoff (tenacity's ``wait_exponential``, which the hooks' retries use),
    the synchronous wait's reconnect backoff (``job_watch``) and the trigger stream's (``job_stream``).

    What a fault test asserts is what the provider does after the waits — how many attempts, which verdict, one
    job, nothing left behind — not how long it waited. A ``Retry-After`` the server sends is still obeyed to the
    second (it is the server's word, not backoff), and the backoff's real shape has its own unit tests
    (``tests/hooks/test_retries.py``, ``tests/test_backoff.py``).
    """
    import tenacity

    from airflow_trainjob.watching import job_stream, job_watch

    exponential = tenacity.wait.wait_exponential.__call__
    monkeypatch.setattr(
        tenacity.wait.wait_exponential, "__call__", lambda self, retry_state: exponential(self, retry_state) * scale
    )
    for module in (job_watch, job_stream):
        monkeypatch.setattr(module, "BACKOFF_MIN", module.BACKOFF_MIN * scale)
        monkeypatch.setattr(module, "BACKOFF_MAX", module.BACKOFF_MAX * scale)


def start_proxy(cluster, workdir: Path) -> FaultProxy:
    from airflow_trainjob_local import pki

    cert, key = pki.issue_serving_certificate(cluster.state_dir / "pki", "fault-proxy")
    return FaultProxy(cluster.server, cluster.ca_cert, cert, key, workdir).start()


class JobCreations:
    """Watches a namespace's jobs of one kind (directly, not through the proxy) and keeps every uid ever
    seen with its labels: how many jobs existed, even briefly. Reconnects after errors and relists on 410,
    so an apiserver restart does not hide a creation."""

    def __init__(self, api_client, namespace: str, kind: str = "PyTorchJob") -> None:
        from kubernetes import client

        from airflow_trainjob.families import family_of

        self._custom = client.CustomObjectsApi(api_client)
        self.namespace, self.resource = namespace, family_of(kind).resource
        self.seen: dict[str, dict[str, str]] = {}  # uid -> labels
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"creations-{namespace}", daemon=True)

    def start(self) -> JobCreations:
        self._list()  # anything that exists before the watch starts
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        try:
            self._list()  # a last look: nothing created just before stop escapes the count
        except Exception:
            pass

    def _list(self) -> str:
        r = self.resource
        found = self._custom.list_namespaced_custom_object(r.group, r.version, self.namespace, r.plural)
        for item in found["items"]:
            self.seen.setdefault(item["metadata"]["uid"], item["metadata"].get("labels") or {})
        return found["metadata"]["resourceVersion"]

    def _run(self) -> None:
        from kubernetes import watch

        r = self.resource
        version = None
        while not self._stop.is_set():
            try:
                if version is None:
                    version = self._list()
                for event in watch.Watch().stream(
                    self._custom.list_namespaced_custom_object,
                    r.group,
                    r.version,
                    self.namespace,
                    r.plural,
                    resource_version=version,
                    timeout_seconds=2,
                    _request_timeout=10,
                ):
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        version = None
                        break
                    self.seen.setdefault(obj["metadata"]["uid"], obj["metadata"].get("labels") or {})
                    version = obj["metadata"]["resourceVersion"]
                    if self._stop.is_set():
                        return
            except Exception:
                version = None
                self._stop.wait(0.5)

    def jobs_of(self, run_id: str) -> int:
        """Distinct jobs seen that carry this task instance's run_id label."""
        from airflow_trainjob.constants import LABEL_RUN_ID
        from airflow_trainjob.domain.names import sanitize_label_value

        value = sanitize_label_value(run_id)
        return sum(1 for labels in self.seen.values() if labels.get(LABEL_RUN_ID) == value)


def count_orphans(
    api_client,
    namespace: str,
    keep_jobs: frozenset[str] | set[str] = frozenset(),
    kind: str = "PyTorchJob",
    timeout: float = 45.0,
) -> dict[str, list[str]]:
    """What is left that should be gone: jobs of ``kind`` other than ``keep_jobs``, and pods that belong to no kept
    job (by a v1 job's label or a TrainJob's JobSet's).

    Garbage collection is asynchronous: waits up to ``timeout`` seconds for the namespace to settle, then
    returns ``{"jobs": [...], "pods": [...]}`` of whatever remains (empty lists: no orphan).
    """
    from kubernetes import client

    from airflow_trainjob.constants import LABEL_JOB_NAME, LABEL_JOBSET_NAME
    from airflow_trainjob.families import family_of

    custom, core = client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
    r = family_of(kind).resource
    deadline = time.monotonic() + timeout
    while True:
        jobs = [
            j
            for j in custom.list_namespaced_custom_object(r.group, r.version, namespace, r.plural)["items"]
            if j["metadata"]["name"] not in keep_jobs
        ]
        pods = [
            p
            for p in core.list_namespaced_pod(namespace).items
            if ((p.metadata.labels or {}).get(LABEL_JOB_NAME) or (p.metadata.labels or {}).get(LABEL_JOBSET_NAME))
            not in keep_jobs
        ]
        if (not jobs and not pods) or time.monotonic() > deadline:
            return {"jobs": [_describe_job(j) for j in jobs], "pods": [_describe_pod(p) for p in pods]}
        time.sleep(0.5)


def _describe_job(job: dict) -> str:
    """A job left behind, with what explains why it is still there (its last condition, deletion, finalizers)."""
    meta = job["metadata"]
    true = [c["type"] for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    return (
        f"job {meta['name']} ({true[-1] if true else 'no condition'}; deleting since "
        f"{meta.get('deletionTimestamp')}; finalizers {meta.get('finalizers')})"
    )


def _describe_pod(pod) -> str:
    meta = pod.metadata
    owners = [o.name for o in meta.owner_references or []]
    return (
        f"pod {meta.name} ({pod.status.phase}; deleting since {meta.deletion_timestamp}; "
        f"owners {owners}; node {pod.spec.node_name})"
    )


@dataclass
class FaultCase:
    """One fault tried: what, where, in which mode, and what the test observed."""

    test: str
    kind: str
    mode: str
    where: str
    #: The job's kind (``PyTorchJob``, ``TrainJob``); ``kind`` is the fault's.
    job_kind: str = "PyTorchJob"
    injected: int = 0
    survived: bool = False
    jobs: int | None = None
    duplicated: int = 0
    orphaned: int = 0
    #: What was left behind, described (for the failure message; not a report column).
    left: list[str] = field(default_factory=list, repr=False)
    error: str = ""
    #: Returns the keyword arguments of :meth:`observe` (injected, jobs, orphans); called by :meth:`measure`, and
    #: at the end of a case that failed before measuring, so a failed row still has its counts.
    measurer: Callable[[], dict[str, Any]] | None = field(default=None, repr=False)
    measured: bool = False

    def measure(self) -> FaultCase:
        """Take the measurements now (the test then asserts on them)."""
        assert self.measurer is not None, "a FaultCase measures through the measurer its fixture set"
        self.observe(**self.measurer())
        self.measured = True
        return self

    def observe(self, *, injected: int | None = None, jobs: int | None = None, orphans: dict | None = None) -> None:
        """Record what was observed; the caller still asserts on it (observing is not judging)."""
        if injected is not None:
            self.injected = injected
        if jobs is not None:
            self.jobs = jobs
            self.duplicated = max(0, jobs - 1)
        if orphans is not None:
            self.left = [*orphans.get("jobs", []), *orphans.get("pods", [])]
            self.orphaned = len(self.left)


def fault_cases(test: str) -> Callable[..., Any]:
    """``with fault_cases(test)(kind, mode, where, job_kind="TrainJob") as case: ...``: one report row of test
    ``test`` (a node id), survived only if the block completes (every assertion in it passed)."""

    @contextmanager
    def case(kind: str, mode: str, where: str, job_kind: str = "PyTorchJob") -> Iterator[FaultCase]:
        row = FaultCase(test=test, kind=kind, mode=mode, where=where, job_kind=job_kind)
        try:
            yield row
            row.survived = True
        except BaseException as e:
            row.error = f"{type(e).__name__}: {str(e)[:300]}"
            if isinstance(e, AssertionError) and row.left:
                raise AssertionError(f"{e}\nleft behind: {row.left}") from e
            raise
        finally:
            if row.measurer is not None and not row.measured:
                try:
                    row.measure()
                except Exception as e:
                    row.error += f" (measuring failed: {type(e).__name__}: {e})"
            write_row(row)

    return case


def write_row(row: FaultCase) -> None:
    fields = {k: v for k, v in asdict(row).items() if k not in ("measurer", "measured", "left")}
    record(f"faults/{row.mode}", **fields)
