"""The Training job tab after a kill, a clear and a failure, in a real Airflow deployment (api-server, scheduler,
dag-processor, triggerer) driven through the REST API as a user does (mark failed, clear), in both modes: every task
runs once synchronously and once deferred. Issue 24, item 4: the tab must agree with Airflow's state of the try and
with what the task itself said. Two DAGs, run one after the other (the machine runs every pod as a process):

- :data:`STOPPED`: ``killed_*`` is marked failed while its job runs (``on_kill`` deletes the job): its tab shows the
  try ended -- not live, no "Running" badge beside a job that is gone -- with the last state the task, or deferred
  its trigger, saw. ``cleared_*`` is cleared while its job runs (the clear replaces the task instance's id, so the
  killed try cannot write its end), then try 2 runs: try 1's tab shows it ended, with what it saw last, never live.
- :data:`FAILED`: ``failed_*``: Master and Worker exit 1, restart once (``OnFailure``), and the job fails by its
  ``backoffLimit`` (2: both restarts count, so both replicas have exited 1 by then, in either mode); the controller
  then deletes every pod. ``late_*``: the Worker exits 1 after the job has failed.
  The replicas the task's error names as failed are the tab's failed rows, the first one marked as such, Master
  before Worker; the counts agree with the rows.

Screenshots (1400x900) of the three states are saved where ``$AIRFLOW_TRAINJOB_TEST_SCREENSHOTS`` says
(``docs/images`` refreshes the docs' ones), else in the tests' temporary directories.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deployment import AirflowDeployment
from tests.support.jobs import pytorch_specs
from tests.support.report import record
from tests.ui.test_e2e_ui import (
    ADMIN,
    Ui,
    no_script_errors,
    open_view,
    screenshot,
    scroll_to,
    tab_state,
    tab_url,
    words,
)

if TYPE_CHECKING:
    from tests.support.browser import Browser

STOPPED, FAILED = "e2e_stopped_tries", "e2e_failed_tries"
MODES = ("sync", "deferred")
#: Both replicas print, exit 1, are restarted in place (OnFailure): their two restarts reach backoffLimit 2, which fails
#: the job (with backoffLimit 1 the first restart fails it, and the other replica, deleted with the job's failure, may
#: not have exited yet: its exit would depend on timing).
FAIL_TWICE = "import sys, time; print('loading shard 3', flush=True); time.sleep(3); sys.exit(1)"
#: The Master exits 1 (restartPolicy Never fails the job at once); the Worker exits 1 a few seconds later, after the
#: controller has stopped counting (``cleanPodPolicy: None`` keeps it running until then).
FAIL_FIRST = "import sys, time; print('bad record', flush=True); time.sleep(3); sys.exit(1)"
FAIL_LATER = "import sys, time; print('waiting for the master', flush=True); time.sleep(12); sys.exit(1)"
#: Where the tests release the jobs that run until released (pods are processes of this machine: they see it).
RELEASES = Path(tempfile.gettempdir()) / f"trainjob-e2e-try-ends-{os.getpid()}"


def run_until_released(task_id: str) -> str:
    """Container code: an epoch line every 2 s until the file ``RELEASES / task_id`` exists (at most 300 s). The
    killed tasks' jobs are never released (their tries delete them); the cleared ones are, once try 2 runs (it may
    have created a job of its own, or followed try 1's)."""
    flag = str(RELEASES / task_id)
    return (
        "import os, time\n"
        "epoch, deadline = 0, time.monotonic() + 300\n"
        f"while not os.path.exists({flag!r}) and time.monotonic() < deadline:\n"
        "    epoch += 1\n"
        "    print('epoch', epoch, flush=True)\n"
        "    time.sleep(2)\n"
    )


FAIL_SPECS = pytorch_specs(FAIL_TWICE, restartPolicy="OnFailure")
LATE_SPECS = pytorch_specs(FAIL_FIRST, FAIL_LATER, restartPolicy="Never")
LONG_SPECS = {
    f"{what}_{mode}": pytorch_specs(run_until_released(f"{what}_{mode}"), restartPolicy="Never")
    for what in ("killed", "cleared")
    for mode in MODES
}

DAG_SOURCE = textwrap.dedent(
    f"""
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_trainjob.operators.training_job import TrainingJobOperator

    COMMON = dict(kind="PyTorchJob", poll_interval=1, startup_timeout=180, timeout=900)
    LONG_SPECS = {LONG_SPECS!r}

    with DAG(dag_id={STOPPED!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
        for task_id, replica_specs in LONG_SPECS.items():
            TrainingJobOperator(
                task_id=task_id, replica_specs=replica_specs, deferrable=task_id.endswith("deferred"), **COMMON
            )

    with DAG(dag_id={FAILED!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
        for mode in {MODES!r}:
            TrainingJobOperator(
                task_id=f"failed_{{mode}}",
                replica_specs={FAIL_SPECS!r},
                run_policy={{"backoffLimit": 2}},
                deferrable=mode == "deferred",
                **COMMON,
            )
            TrainingJobOperator(
                task_id=f"late_{{mode}}",
                replica_specs={LATE_SPECS!r},
                run_policy={{"cleanPodPolicy": "None"}},
                deferrable=mode == "deferred",
                **COMMON,
            )
    """
)
#: The deployment's ``[triggerer] on_kill_timeout`` (see :func:`airflow`).
ON_KILL_TIMEOUT = 120
#: Seconds the tab polls for an ended try's record of its end (settings.end_record_wait_seconds in the deployment).
END_RECORD_WAIT = ON_KILL_TIMEOUT + 15
#: Seconds a killed or cleared job runs first: its trigger has seen it Running, its wait has recorded that.
RUN_FIRST = 20


@pytest.fixture(scope="module")
def airflow(start_airflow) -> AirflowDeployment:
    # Each task process parses the DAG file (the provider's import is most of it): on a loaded machine that takes
    # longer than Airflow's default 30 s, and the task would be rescheduled a minute later. The deferred tries' on_kill
    # records their end through the triggerer's first call to Airflow's API, which starts its in-process API server
    # (13 s in a process of its own at load 16 on this 2-core machine, 19-28 s in the triggerer): within Airflow's
    # default on_kill_timeout of 30 s only on a machine less loaded.
    return start_airflow(
        dags={"e2e_try_ends.py": DAG_SOURCE},
        dag_ids=[STOPPED, FAILED],
        users={ADMIN: "admin"},
        env={
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "300",
            "AIRFLOW__TRIGGERER__ON_KILL_TIMEOUT": str(ON_KILL_TIMEOUT),
        },
    )


@pytest.fixture(scope="module")
def ui(airflow: AirflowDeployment) -> Ui:
    return Ui(airflow)


@pytest.fixture(scope="module")
def releases() -> Iterator[Path]:
    """:data:`RELEASES`, made for the module's run; at the end every job is released and the directory removed."""
    RELEASES.mkdir()
    yield RELEASES
    for task_id in LONG_SPECS:
        (RELEASES / task_id).touch()
    time.sleep(3)  # the pods see it before it goes
    shutil.rmtree(RELEASES)


@pytest.fixture(scope="module")
def stopped_run(airflow: AirflowDeployment, ui: Ui, releases: Path) -> str:
    """A run of :data:`STOPPED` (REST, no logical date): its jobs run for :data:`RUN_FIRST` s, then the killed tasks
    are marked failed and the cleared ones cleared, as the UI does."""
    api = airflow.api(ADMIN)
    run = str(api.trigger(STOPPED)["dag_run_id"])
    for task_id in LONG_SPECS:
        api.wait_for_task_state(STOPPED, run, task_id, "deferred" if task_id.endswith("deferred") else "running")
        wait_for(
            functools.partial(ui.latest, STOPPED, run, task_id),
            lambda t: t is not None and t["phase"] == "Running" and len(t["replicas"]) == 2,
            timeout=240,
            what=f"{task_id}'s job running",
        )
    for task_id in LONG_SPECS:
        if task_id.endswith("deferred"):  # Airflow runs on_kill only in a trigger the triggerer has started
            wait_for(
                functools.partial(trigger_log, airflow, run, task_id),
                lambda log: TRIGGER_FOLLOWS in log,
                timeout=240,
                what=f"{task_id}'s trigger following its job",
            )
    time.sleep(RUN_FIRST)
    for mode in MODES:
        killed, cleared = f"killed_{mode}", f"cleared_{mode}"
        despite_a_busy_database(
            functools.partial(api.set_task_state, STOPPED, run, killed, "failed"),
            functools.partial(in_state, api, run, killed, {"failed"}),
        )
        despite_a_busy_database(
            functools.partial(api.clear_task, STOPPED, run, [cleared]),
            functools.partial(in_state, api, run, cleared, {None, "restarting", "scheduled", "queued"}),
        )
    return run


#: What the trigger logs once it follows its job (the triggerer started it, it read the job Running).
TRIGGER_FOLLOWS = "Copying the lead replica's new lines into this log"


def trigger_log(airflow: AirflowDeployment, run: str, task_id: str, try_number: int = 1) -> str:
    """What the triggerer wrote to the try's trigger log files (on this machine's disk), as text."""
    folder = airflow.home / "logs" / f"dag_id={STOPPED}" / f"run_id={run}" / f"task_id={task_id}"
    return "".join(p.read_text(errors="replace") for p in sorted(folder.glob(f"attempt={try_number}.log.trigger.*")))


def trigger_tail(airflow: AirflowDeployment, run: str, task_id: str, lines: int = 15) -> str:
    """The last messages of try 1's trigger log, for a failure's message (what on_kill did, or not), and what the
    triggerer process said of on_kill (a timeout, or an exception with its traceback: Airflow logs those there, not in
    the trigger's log)."""
    events = re.findall(r'"event":"((?:[^"\\]|\\.)*)"', trigger_log(airflow, run, task_id))
    said = f"\n--- {task_id}'s trigger log, last lines:\n" + ("\n".join(events[-lines:]) or "(none)")
    return said + f"\n--- the triggerer on on_kill:\n{on_kill_lines(airflow)}"


def on_kill_lines(airflow: AirflowDeployment, after: int = 25) -> str:
    """The triggerer's output from each line that names on_kill, ``after`` lines each (at most 200 in all)."""
    try:
        output = airflow.log_path("triggerer").read_text(errors="replace").splitlines()
    except OSError:
        return "(no triggerer log)"
    starts = [i for i, line in enumerate(output) if "on_kill" in line]
    shown = sorted({j for i in starts for j in range(i, min(i + after, len(output)))})
    return "\n".join(output[j] for j in shown[:200]) or "(nothing)"


def with_trigger_log(airflow: AirflowDeployment, run: str, task_id: str, wait: Callable[[], Any]) -> Any:
    """``wait()``; when it fails, the failure also shows the end of the trigger's log."""
    try:
        return wait()
    except pytest.fail.Exception as failed:
        pytest.fail(f"{failed}{trigger_tail(airflow, run, task_id)}")


def in_state(api: Any, run: str, task_id: str, states: set[str | None]) -> bool:
    return api.task_instance(STOPPED, run, task_id)["state"] in states


def despite_a_busy_database(call: Callable[[], Any], done: Callable[[], bool]) -> None:
    """``call()``, again while the api-server answers 500 "Database error" and ``done()`` does not hold (the
    deployment's SQLite database stays locked for seconds on a loaded machine; Airflow's own audit log write then
    fails the request): at most 5 times, 2 s apart."""
    for attempt in range(5):
        try:
            call()
            return
        except httpx.HTTPStatusError as e:
            if e.response.status_code != 500 or "Database error" not in e.response.text or attempt == 4:
                raise
        if done():
            return
        time.sleep(2)


@pytest.fixture(scope="module")
def failed_run(airflow: AirflowDeployment) -> str:
    """A run of :data:`FAILED`, after the stopped run's tests (its tasks fail in a minute or two)."""
    return str(airflow.api(ADMIN).trigger(FAILED)["dag_run_id"])


@pytest.fixture(scope="module")
def browser(airflow: AirflowDeployment, new_browser) -> Browser:
    made = new_browser(width=1400, height=900)
    made.login(airflow.base_url, ADMIN, airflow.passwords[ADMIN])
    return made


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def task_error(airflow: AirflowDeployment, dag_id: str, run_id: str, task_id: str) -> str | None:
    """The task's error as Airflow's task log keeps it (the message of the exception the task raised), which names its
    first failed replica; None when Airflow failed the try before its resume could raise it (:data:`AIRFLOW_RACE`);
    else (an error that names no failed replica, or none at all) the test fails."""
    log = airflow.api(ADMIN).task_log(dag_id, run_id, task_id)
    found = [text for text in strings(log) if "First failure" in text or "Failure not restarted" in text]
    if not found and any(AIRFLOW_RACE in text for text in strings(log)):
        return None
    assert found, f"no error naming a failed replica in the task's log: {json.dumps(log)[-3000:]}"
    return found[-1]


#: What a resumed deferred task logs when Airflow's scheduler failed it before the resume ran (apache/airflow#72716:
#: the executor's event for the worker that deferred it arrives after the trigger fired): the task never raises the
#: job's failure, so its error names no replica. docs/lifecycle.md says what the provider does about the race.
AIRFLOW_RACE = "Server indicated the task shouldn't be running anymore"


def failed_try_error(airflow: AirflowDeployment, run_id: str, task_id: str, mode: str) -> str:
    """The error of the task's latest try once it has failed. A try that Airflow's race failed before its resume
    raised anything (:data:`AIRFLOW_RACE`) is recorded and the task cleared, to fail again (at most twice): what the
    tests check is a try whose error names the replicas."""
    api = airflow.api(ADMIN)
    for _ in range(3):
        api.wait_for_task_state(FAILED, run_id, task_id, "failed", timeout=300)
        error = task_error(airflow, FAILED, run_id, task_id)
        if error is not None:
            return error
        record("ui_try_ends_airflow_race", mode=mode, task=task_id, cleared=1)
        api.clear_task(FAILED, run_id, [task_id])
        wait_for(
            lambda: api.task_instance(FAILED, run_id, task_id)["state"] != "failed",
            timeout=60,
            what=f"{task_id} cleared after Airflow's race failed its try",
        )
    pytest.fail(f"Airflow's race (apache/airflow#72716) failed {task_id} three times in a row")


def named_failures(error: str) -> tuple[str, set[str]]:
    """The replica the error names first, and every replica it names as failed. An error that names none fails the
    test: the task saw its replicas fail in every mode (synchronous: its pod watch; deferred: its trigger's, which
    keeps the failed pods the controller deletes with the job's failure)."""
    first = re.search(r"(?:First failure|Failure not restarted by its restartPolicy) \([^)]*\): (\w+-\d+) ", error)
    assert first is not None, f"the task's error names no failed replica:\n{error}"
    return first.group(1), {first.group(1), *re.findall(r"also failed: (\w+-\d+) ", error)}


def replica(row: dict[str, Any]) -> str:
    return f"{row['replica_type']}-{row['index']}"


def shows_a_failure(row: dict[str, Any]) -> bool:
    """The row shows the replica failed: its phase, its last exit, or the failure the task ranked for it."""
    return bool(row.get("failure")) or row["phase"] == "Failed" or row["exit_code"] not in (None, 0)


def assert_agrees_with_the_error(job: dict[str, Any], first: str, failed: set[str]) -> None:
    """Every replica the error names as failed is a row showing its failure; each replica type's failed count is the
    number of its rows that show one; the task's judgement marks the same rows, the first failure as the error
    names it; Master before Worker, the lead first."""
    rows = {replica(r): r for r in job["replicas"]}
    missing = failed - set(rows)
    assert not missing, f"the task's error names {sorted(missing)} as failed; the tab lists only {sorted(rows)}"
    assert all(shows_a_failure(rows[name]) for name in failed), [rows[name] for name in failed]
    showing = Counter(row["replica_type"] for row in rows.values() if shows_a_failure(row))
    for replica_type, counts in job["replica_counts"].items():
        assert counts["failed"] == showing[replica_type], (
            f"{replica_type} counted {counts['text']!r}; the table shows {showing[replica_type]} failed"
        )
    assert failed <= {name for name, row in rows.items() if row["failed"]}, (failed, job["replicas"])
    assert [name for name, row in rows.items() if row["first_failure"]] == [first], rows
    types = [name.split("-")[0] for name in rows]
    assert types == sorted(types, key=lambda t: t != "Master"), types  # Master before Worker
    if rows:
        assert next(iter(rows.values()))["lead"], rows


# --- 1. marked failed while its job ran ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_task_marked_failed_shows_its_end_not_a_live_job(
    airflow: AirflowDeployment, stopped_run: str, ui: Ui, browser: Browser, screenshot_dir: Path, mode: str
) -> None:
    task_id = f"killed_{mode}"
    assert airflow.api(ADMIN).task_instance(STOPPED, stopped_run, task_id)["state"] == "failed"
    who = "trigger" if mode == "deferred" else "task"
    (job,) = with_trigger_log(  # on_kill deleted the job; the tab no longer waits for the try's record of its end
        airflow,
        stopped_run,
        task_id,
        lambda: wait_for(
            lambda: ui.tries(STOPPED, stopped_run, task_id),
            lambda tries: not tries[0]["exists"] and tries[0]["refresh_seconds"] is None,
            timeout=END_RECORD_WAIT + 60,
            what=f"{task_id}'s job deleted and its end recorded",
        ),
    )
    open_view(browser, tab_url(airflow.base_url, STOPPED, stopped_run, task_id))
    shown = tab_state(browser, lambda s: bool(s["phase"]), "the try in the tab")
    said = f"its badge says {shown['phase']!r} beside: {shown['alerts']}{trigger_tail(airflow, stopped_run, task_id)}"
    assert shown["phase"] == "Stopped", said
    assert job["outcome"] == "stopped", f"the try's end is not recorded: {job['outcome']!r}, {job['phase']!r}"
    assert "Live" not in shown["status"] and shown["status"].startswith("Try ended"), shown["status"]
    assert "Airflow: failed" in shown["status"]
    sight = (
        "what the trigger saw when Airflow stopped the task"
        if who == "trigger"
        else "what the task recorded at its end"
    )
    assert words(shown["alerts"][0]).startswith(f"This job no longer exists — showing {sight}."), shown["alerts"]
    summary = {k: words(v) for k, v in shown["summary"].items()}
    assert summary["Phase"].startswith("Running PyTorchJobRunning") and "as last seen" in summary["Phase"], summary
    assert "No condition" not in summary["Phase"] and summary["Try state"].startswith("failed"), summary
    assert (job["try_ended"], job["airflow_state"]) == (True, "failed")
    assert (job["phase"], job["badge"], job["seen_by"]) == ("Running", "Stopped", who)  # as last seen, then stopped
    assert {r["phase"] for r in job["replicas"]} == {"Stopped"} and len(job["replicas"]) == 2
    if mode == "deferred":
        screenshot(browser, screenshot_dir, "ui-task-marked-failed-light.png")
    no_script_errors(browser)


# --- 2. cleared while its job ran ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_cleared_tasks_first_try_shows_how_it_ended(
    airflow: AirflowDeployment, stopped_run: str, ui: Ui, browser: Browser, screenshot_dir: Path, mode: str
) -> None:
    task_id = f"cleared_{mode}"
    api = airflow.api(ADMIN)
    api.wait_for_task_state(STOPPED, stopped_run, task_id, "running" if mode == "sync" else "deferred", timeout=240)
    wait_for(lambda: len(ui.tries(STOPPED, stopped_run, task_id)) == 2, timeout=120, what="try 2 following a job")
    (RELEASES / task_id).touch()  # try 2's job (or try 1's, which try 2 may follow) ends now
    ti = api.wait_for_task_state(STOPPED, stopped_run, task_id, "success", timeout=300)
    assert ti["try_number"] == 2
    second, first = wait_for(  # its record of the end may still come for END_RECORD_WAIT s
        lambda: ui.tries(STOPPED, stopped_run, task_id),
        lambda tries: tries[1]["refresh_seconds"] is None,
        timeout=END_RECORD_WAIT + 60,
        what="try 1 no longer waiting for its record",
    )
    assert (second["try_number"], second["phase"], second["outcome"]) == (2, "Succeeded", "succeeded")

    open_view(browser, tab_url(airflow.base_url, STOPPED, stopped_run, task_id))
    enter_try_1 = "document.querySelector(\".page-header [aria-label='Try'] button[title^='Try 1']\").click()"
    tab_state(browser, lambda s: len(s["tries"]) == 2, "both tries in the selector")
    browser.script(enter_try_1)
    shown = tab_state(browser, lambda s: s["tries"][1][1] == "true", "try 1 selected")
    expected = "Stopped" if mode == "deferred" else "Ended"  # the trigger records the end; the cleared worker cannot
    said = (
        f"try 1's badge says {shown['phase']!r} beside: {shown['alerts']}{trigger_tail(airflow, stopped_run, task_id)}"
    )
    assert shown["phase"] == expected, said
    assert "Live" not in shown["status"] and shown["status"].startswith("Try ended"), shown["status"]
    assert shown["tries"][1][0] == f"Try 1: {expected}", shown["tries"]
    assert "Unknown" not in shown["title"] and "No condition" not in words(shown["summary"]["Phase"])
    assert any("You are looking at try 1; the latest is try 2." in a for a in shown["alerts"])
    assert first["try_number"] == 1 and first["try_ended"] and first["airflow_state"] == "failed", first
    assert first["refresh_seconds"] is None and first["badge"] == shown["phase"], first["badge"]
    who = "trigger" if mode == "deferred" else "task"  # what it saw last: the trigger's record, the wait's last sight
    assert (first["phase"], first["seen_by"]) == ("Running", who), (first["phase"], first["seen_by"])
    if first["badge"] == "Ended":  # the task could not record its end: what it saw last, while it ran
        assert first["outcome"] is None and first["seen_at"], first
    record("ui_try_ends", mode=mode, cleared_try_badge=first["badge"], cleared_try_seen_by=first["seen_by"])
    if mode == "sync":
        screenshot(browser, screenshot_dir, "ui-task-cleared-light.png")
    no_script_errors(browser)


# --- 3. a failed job: the replicas its error names -------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_every_replica_the_task_saw_fail_is_in_the_tab(
    airflow: AirflowDeployment, failed_run: str, ui: Ui, browser: Browser, screenshot_dir: Path, mode: str
) -> None:
    """The pods go with the job's failure (the controller deletes them at its backoff limit): the task's error names
    both replicas in both modes (the pod watch saw both exit 1: the synchronous wait's, the trigger's shared one), and
    the tab lists, from the task's record, every replica the error names as failed."""
    task_id = f"failed_{mode}"
    first, failed = named_failures(failed_try_error(airflow, failed_run, task_id, mode))
    assert failed == {"Master-0", "Worker-0"} and first in failed, (first, failed)
    job = ui.tries(FAILED, failed_run, task_id)[0]  # (the latest: a try Airflow's race failed is cleared)
    assert job["phase"] == "Failed" and job["exists"], job["phase"]  # kept: on_finish keeps a failed job
    assert_agrees_with_the_error(job, first, failed)

    open_view(browser, tab_url(airflow.base_url, FAILED, failed_run, task_id))
    shown = tab_state(browser, lambda s: s["phase"] == "Failed" and s["log_title"], "the failed job in the tab")
    table = [(words(r[0]).split()[0], words(r[4])) for r in shown["replicas"]]
    assert [name for name, _ in table] == [replica(r) for r in job["replicas"]]
    assert "first failure" in dict(table)[first], table
    # The lead (Master-0) leads the table and its log is shown: the task saw it fail, in both modes.
    assert table[0][0] == "Master-0", table
    assert "lead" in shown["replicas"][0][0].split() and shown["log_title"] == "Log — Master-0", shown["log_title"]
    assert words(shown["summary"]["Replicas"]) == " ".join(f"{t} {c['text']}" for t, c in job["replica_counts"].items())
    if mode == "sync":
        scroll_to(browser, "section[aria-labelledby='replicas-h']")
        screenshot(browser, screenshot_dir, "ui-task-failed-pods-gone-light.png")
    no_script_errors(browser)


@pytest.mark.parametrize("mode", MODES)
def test_a_replica_that_failed_after_its_job_is_counted_as_the_table_shows_it(
    airflow: AirflowDeployment, failed_run: str, ui: Ui, mode: str
) -> None:
    """The controller stops counting once the job has failed: the Worker's later exit 1 is in the table, and in the
    counts too."""
    task_id = f"late_{mode}"
    first, failed = named_failures(failed_try_error(airflow, failed_run, task_id, mode))
    assert first == "Master-0", first
    job = wait_for(
        lambda: ui.tries(FAILED, failed_run, task_id),
        lambda tries: [(r["phase"], r["exit_code"]) for r in tries[0]["replicas"]] == [("Failed", 1)] * 2,
        timeout=60,
        what="both replicas exited 1",
    )[0]
    assert_agrees_with_the_error(job, first, failed)
    assert {t: c["text"] for t, c in job["replica_counts"].items()} == {"Master": "1 failed", "Worker": "1 failed"}


def test_no_job_is_left_running(stopped_run: str, failed_run: str, custom_objects, module_namespace: str) -> None:
    """Last: the killed tries deleted their jobs; only the failed jobs (kept for inspection) and the cleared tasks'
    second jobs (succeeded, deleted by on_finish) may remain, none of them running."""
    from airflow_trainjob.constants import GROUP, VERSION

    def running() -> list[str]:
        found = custom_objects.list_namespaced_custom_object(GROUP, VERSION, module_namespace, "pytorchjobs")["items"]
        return [
            j["metadata"]["name"]
            for j in found
            if not any(
                c["type"] in ("Succeeded", "Failed") and c["status"] == "True"
                for c in j["status"].get("conditions") or []
            )
        ]

    assert wait_for(running, lambda names: names == [], timeout=120, what="no job left running") == []
