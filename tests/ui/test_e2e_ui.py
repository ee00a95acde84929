"""The provider's UI end to end: a real Airflow deployment (api-server, scheduler, dag-processor, triggerer) runs
training jobs on the local cluster, triggered through the REST API with no logical date, and headless Chromium
looks at them as users do (signed in through the login form).

One DAG run holds three jobs running side by side -- a synchronous one, a deferred one and one that fails on both
of its tries -- and a second DAG, which a limited user may read, one more. What is asserted:

- the "Training job" tab of a running synchronous task: kind, name, phase Running, both replicas' pods, the lead
  replica's log, the conditions timeline; its extra link is there during the run and leads to the tab; once the job
  succeeded and was deleted, the tab says so and shows what the task recorded;
- a deferred task: progress lines in its task log while it waits, a small trigger event, and its tab turning from
  Running to Succeeded by its own refresh;
- a failed job: phase Failed with the deciding condition's reason and message, the replicas' exit code 1, the
  events, and both tries in the try selector, latest first;
- the "Training jobs" page: counts per phase, rows linking to the DAG, run and task, the phase filter;
- access: 401 without a user, 403 and absence from the jobs list for a user limited to another DAG, the refusal
  shown in the tab; no token or kubeconfig content in any answer;
- the rendered ``manifest`` field: YAML of the whole object, within ``[core] max_templated_field_length``.

Screenshots (1400x900) are saved where ``$AIRFLOW_TRAINJOB_TEST_SCREENSHOTS`` says (``docs/images`` refreshes the
README's), else in the tests' temporary directories. The tests run in file order and share the module's runs.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import struct
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
import pytest
import yaml
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deployment import AirflowDeployment
from tests.support.jobs import pytorch_specs
from tests.support.report import record

if TYPE_CHECKING:
    from tests.support.browser import Browser

DAG_ID, OTHER_DAG_ID = "e2e_ui", "e2e_ui_other"
SYNC, DEFERRED, FAILING, OTHER = "train_sync", "train_deferred", "train_failing", "train"
ADMIN, VIEWER = "admin", "viewer"
#: Airflow's default ``[core] max_templated_field_length`` (the deployment keeps it).
MAX_TEMPLATED_FIELD_LENGTH = 4096
#: Characters of the comment that opens the deferred job's script: its manifest is longer than the rendered field
#: may be, and the trigger's event must not carry it.
SCRIPT_NOTES = 5000


#: Seconds per printed epoch of the jobs' container code.
EPOCH_SECONDS = 2
#: Where the tests release the jobs that run until released: a directory of this process (pods are processes of
#: this machine, so they see it), made and removed by the ``releases`` fixture.
RELEASES = Path(tempfile.gettempdir()) / f"trainjob-e2e-ui-{os.getpid()}"


def epochs(count: int | None, notes: int = 0, release: str | None = None, after: int = 0) -> str:
    """Container code: print one line per epoch, :data:`EPOCH_SECONDS` each -- ``count`` epochs, or (``release``)
    until the file ``RELEASES / release`` exists (at most 240 s) and then ``after`` more -- after a comment of
    ``notes`` characters.

    A job that runs until the test releases it is surely running while the test looks at it, on a loaded machine
    too, and ends as soon as the test is done with it."""
    epoch = [
        "    epoch += 1",
        "    print('rank', rank, 'epoch', epoch, 'loss', round(1 / epoch, 4), flush=True)",
        f"    time.sleep({EPOCH_SECONDS})",
    ]
    lines = ["import os, time", "rank, epoch = os.environ['RANK'], 0"]
    if release is None:
        lines += [f"for _ in range({count}):", *epoch]
    else:
        flag = str(RELEASES / release)
        lines += [
            "deadline = time.monotonic() + 240",
            f"while not os.path.exists({flag!r}) and time.monotonic() < deadline:",
        ]
        lines += [*epoch, *([f"for _ in range({after}):", *epoch] if after else [])]
    if notes:
        lines.insert(0, "# " + ("training notes " * (notes // 15 + 1))[:notes])
    return "\n".join(lines) + "\n"


def release(job: str) -> None:
    """Let a job of :func:`epochs` with ``release=job`` end."""
    (RELEASES / job).touch()


#: Every replica prints, then exits: 139 (retryable: Airflow retries) on try 1, 1 (permanent) on try 2. Airflow renders
#: the replica specs with Jinja, so the try number is the task instance's.
FAIL = (
    "import sys, time; print('loading shard 3', flush=True); time.sleep(5); "
    "print('ValueError: bad record in shard 3', flush=True); sys.exit({{ 1 if ti.try_number > 1 else 139 }})"
)
#: The synchronous and the deferred job run until the tests are done looking at them running (the deferred one
#: is then far above the 5 s under which Airflow 3.3.2 may fail a fast deferred task, apache/airflow#66374). Their
#: workers end an epoch before the master, whose end ends the job: what the task records at the end shows both
#: replicas finished. The failing job keeps its pods (cleanPodPolicy None), so both replicas show their exit codes.
SYNC_SPECS = pytorch_specs(epochs(None, release=SYNC, after=1), epochs(None, release=SYNC), restartPolicy="Never")
DEFERRED_SCRIPTS = {  # as Airflow sends them (its Jinja rendering drops a string's last newline)
    "Master": epochs(None, SCRIPT_NOTES, release=DEFERRED, after=1).removesuffix("\n"),
    "Worker": epochs(None, SCRIPT_NOTES, release=DEFERRED).removesuffix("\n"),
}
DEFERRED_SPECS = pytorch_specs(*(script + "\n" for script in DEFERRED_SCRIPTS.values()), restartPolicy="Never")
FAILING_SPECS = pytorch_specs(FAIL, restartPolicy="Never")
OTHER_SPECS = pytorch_specs(epochs(3), workers=0, restartPolicy="Never")

DAG_SOURCE = textwrap.dedent(
    f"""
    from datetime import datetime, timedelta

    from airflow.sdk import DAG

    from airflow_trainjob.operators.training_job import TrainingJobOperator

    COMMON = dict(kind="PyTorchJob", poll_interval=1, startup_timeout=120, timeout=300)

    with DAG(dag_id={DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
        TrainingJobOperator(task_id={SYNC!r}, replica_specs={SYNC_SPECS!r}, deferrable=False, **COMMON)
        TrainingJobOperator(
            task_id={DEFERRED!r}, replica_specs={DEFERRED_SPECS!r}, deferrable=True, on_finish="keep_job", **COMMON
        )
        TrainingJobOperator(
            task_id={FAILING!r},
            replica_specs={FAILING_SPECS!r},
            run_policy={{"cleanPodPolicy": "None"}},
            deferrable=False,
            retries=1,
            retry_delay=timedelta(seconds=1),
            **COMMON,
        )

    with DAG(dag_id={OTHER_DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
        TrainingJobOperator(task_id={OTHER!r}, replica_specs={OTHER_SPECS!r}, on_finish="keep_job", **COMMON)
    """
)

# --- reading the pages --------------------------------------------------------------------------------------------

#: What the Training job tab shows, read in its frame (texts with whitespace as rendered).
TAB_JS = """
const q = (s, el) => (el || document).querySelector(s);
const qa = (s, el) => Array.from((el || document).querySelectorAll(s));
const text = el => (el ? el.innerText.trim() : null);
const rows = s => qa(s + " tbody tr").map(tr => Array.from(tr.cells).map(td => td.innerText.trim()));
return {
  loading: !q(".page-header h1") && !q(".alert") && !q(".empty"),
  phase: text(q(".page-header h1 .badge")),
  title: text(q(".page-header h1")),
  status: text(q(".page-header .status-line")),
  tries: qa(".page-header [aria-label='Try'] button").map(b => [b.title, b.getAttribute("aria-pressed")]),
  alerts: qa(".alert").map(text),
  summary: Object.fromEntries(qa("dl.summary > div").map(d => [text(q("dt", d)), text(q("dd", d))])),
  lanes: qa("svg.timeline text.lane-label").map(t => t.textContent).filter(t => !t.startsWith("at ")),
  bars: qa("svg.timeline g.seg rect[fill]").length,
  replicas: rows("section[aria-labelledby='replicas-h']"),
  log_title: text(q("#log-h")),
  log: q("pre.log") ? q("pre.log").textContent : null,
  log_note: text(q(".log-note")),
  events: rows("section[aria-labelledby='events-h']"),
  manifest: q("pre.manifest") ? q("pre.manifest").textContent : null,
  marker: window.e2eMarker || null,
};
"""
#: What the Training jobs page shows: the count buttons (phase -> number; "" is All) and the rows.
JOBS_JS = """
const qa = (s, el) => Array.from((el || document).querySelectorAll(s));
return {
  updated: (document.querySelector(".page-header .status-line") || {}).innerText || null,
  counts: Object.fromEntries(qa(".counts button.count").map(b => [b.dataset.phase, Number(b.querySelector(".n").textContent)])),
  rows: qa("section[aria-labelledby='jobs-h'] tbody tr").map(tr => ({
    phase: tr.cells[0].querySelector(".badge").innerText.trim(),
    job: tr.cells[1].querySelector(".sub").textContent,
    links: qa("a", tr.cells[2]).map(a => [a.textContent, a.getAttribute("href")]),
  })),
};
"""


def words(text: str | None) -> str:
    """``text`` with its whitespace runs as single spaces."""
    return " ".join((text or "").split())


def tab_url(base_url: str, dag_id: str, run_id: str, task_id: str) -> str:
    """The Training job tab of an unmapped task instance in Airflow 3.3's UI."""
    return f"{base_url}/dags/{dag_id}/runs/{quote(run_id, safe='')}/tasks/{task_id}/plugin/training-job"


def open_view(browser: Browser, url: str) -> None:
    """Load an Airflow page holding one of the provider's views and enter the view's frame."""
    browser.driver.switch_to.default_content()
    browser.open(url)
    enter_view(browser)


def enter_view(browser: Browser) -> None:
    """Enter the frame of the provider's view on the page shown (from the top document)."""
    browser.driver.switch_to.default_content()
    browser.driver.switch_to.frame(browser.wait_for("iframe[src*='trainjob/ui/']"))


def tab_state(browser: Browser, done: Callable[[dict[str, Any]], bool], what: str, timeout: float = 60) -> Any:
    """Poll what the tab shows (:data:`TAB_JS`, in its frame) until ``done`` holds; fail showing the last state."""
    return wait_for(lambda: browser.script(TAB_JS), lambda s: not s["loading"] and done(s), timeout, what, 0.5)


def scroll_to(browser: Browser, selector: str) -> None:
    """Scroll the frame so that ``selector``'s element is at its top."""
    browser.script("document.querySelector(arguments[0]).scrollIntoView({block: 'start'})", selector)


def commands(manifest: dict[str, Any]) -> dict[str, list[str]]:
    """Replica type -> its container's command, of a PyTorchJob object."""
    specs = manifest["spec"]["pytorchReplicaSpecs"]
    return {t: spec["template"]["spec"]["containers"][0]["command"] for t, spec in specs.items()}


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    return width, height


def screenshot(browser: Browser, directory: Path, name: str, mode: str = "light") -> Path:
    """Switch Airflow's colour mode (from the top document, as a user does) and save the window as ``name``;
    the frame is entered again afterwards."""
    browser.driver.switch_to.default_content()
    if browser.color_mode() != mode:
        browser.set_color_mode(mode)
    enter_view(browser)
    in_mode = "return document.documentElement.classList.contains(arguments[0])"
    wait_for(lambda: browser.script(in_mode, mode), timeout=60, what=f"the view in {mode} mode")
    time.sleep(0.3)  # the frame repaints
    path = browser.screenshot(directory / name)
    assert png_size(path) == (1400, 900)
    record("ui_screenshots", name=name, bytes=path.stat().st_size)
    return path


# --- the deployment, its runs, the users' clients -------------------------------------------------------------------


class Ui:
    """The provider's JSON API as users call it (bearer tokens); every answer's text is kept for the secrets check.

    :param airflow: the deployment.
    """

    def __init__(self, airflow: AirflowDeployment) -> None:
        self.airflow = airflow
        self.tokens = {user: airflow.token(user) for user in airflow.users}
        self.answers: list[str] = []

    def get(self, user: str | None, path: str, **params: Any) -> httpx.Response:
        """``GET path`` as ``user`` (None: anonymous)."""
        headers = {"Authorization": f"Bearer {self.tokens[user]}"} if user else {}
        response = httpx.get(f"{self.airflow.base_url}{path}", params=params, headers=headers, timeout=60)
        self.answers.append(response.text)
        return response

    def tries(self, dag_id: str, run_id: str, task_id: str, user: str = ADMIN) -> list[dict[str, Any]]:
        """The task instance's tries (``GET /trainjob/api/task-instance``), latest first."""
        response = self.get(user, "/trainjob/api/task-instance", **ti_params(dag_id, run_id, task_id))
        assert response.status_code == 200, response.text
        return list(response.json()["tries"])

    def latest(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any] | None:
        tries = self.tries(dag_id, run_id, task_id)
        return tries[0] if tries else None

    def log(self, dag_id: str, run_id: str, task_id: str, **params: Any) -> dict[str, Any]:
        """``GET /trainjob/api/task-instance/log`` as the admin."""
        response = self.get(ADMIN, "/trainjob/api/task-instance/log", **ti_params(dag_id, run_id, task_id), **params)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def jobs(self, user: str = ADMIN) -> dict[str, Any]:
        """``GET /trainjob/api/jobs``."""
        response = self.get(user, "/trainjob/api/jobs")
        assert response.status_code == 200, response.text
        return dict(response.json())


def ti_params(dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
    return {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": -1}


@dataclass
class Runs:
    main: str  # the run of DAG_ID
    other: str  # the run of OTHER_DAG_ID


@pytest.fixture(scope="module")
def airflow(start_airflow) -> AirflowDeployment:
    return start_airflow(
        dags={"e2e_ui.py": DAG_SOURCE},
        dag_ids=[DAG_ID, OTHER_DAG_ID],
        users={ADMIN: "admin", VIEWER: "viewer"},
        dag_access={VIEWER: [OTHER_DAG_ID]},
    )


@pytest.fixture(scope="module")
def ui(airflow: AirflowDeployment) -> Ui:
    return Ui(airflow)


@pytest.fixture(scope="module")
def releases() -> Iterator[Path]:
    """:data:`RELEASES`, made for the module's runs; at the end every job is released (a test that failed early
    leaves none running) and the directory removed."""
    RELEASES.mkdir()
    yield RELEASES
    for job in (SYNC, DEFERRED):
        release(job)
    shutil.rmtree(RELEASES)


@pytest.fixture(scope="module")
def runs(airflow: AirflowDeployment, releases: Path) -> Runs:
    """One run of each DAG, triggered through the REST API with ``{"logical_date": null}``; their jobs run at once."""
    api = airflow.api(ADMIN)
    main, other = api.trigger(DAG_ID), api.trigger(OTHER_DAG_ID)
    assert main["logical_date"] is None
    return Runs(str(main["dag_run_id"]), str(other["dag_run_id"]))


@pytest.fixture(scope="module")
def browser(airflow: AirflowDeployment, new_browser) -> Browser:
    """The admin's browser, signed in through the login form."""
    made = new_browser(width=1400, height=900)
    made.login(airflow.base_url, ADMIN, airflow.passwords[ADMIN])
    return made


@pytest.fixture(scope="module")
def watching_browser(airflow: AirflowDeployment, new_browser) -> Browser:
    """A second browser of the admin's, left on the deferred task's tab while the other looks elsewhere."""
    made = new_browser(width=1400, height=900)
    made.login(airflow.base_url, ADMIN, airflow.passwords[ADMIN])
    return made


def no_script_errors(browser: Browser) -> None:
    """The provider's pages logged no errors in the browser's console (Airflow's own requests may log theirs)."""
    assert [m for m in browser.console_errors() if "trainjob" in m] == []


# --- 1. a running synchronous job ------------------------------------------------------------------------------------


def test_the_tab_of_a_running_synchronous_task(
    airflow: AirflowDeployment, runs: Runs, ui: Ui, browser: Browser, screenshot_dir: Path, module_namespace: str
) -> None:
    api = airflow.api(ADMIN)
    running = wait_for(
        lambda: ui.latest(DAG_ID, runs.main, SYNC),
        lambda t: t is not None and t["phase"] == "Running" and [r["phase"] for r in t["replicas"]] == ["Running"] * 2,
        timeout=120,
        what="the synchronous job running with both replicas",
    )
    wait_for(lambda: ui.log(DAG_ID, runs.main, SYNC)["lines"], timeout=30, what="the lead replica's first line")
    # The extra link is there while the synchronous task runs, and leads to the tab.
    assert api.task_instance(DAG_ID, runs.main, SYNC)["state"] == "running"
    links = api.request("GET", f"/dags/{DAG_ID}/dagRuns/{quote(runs.main, safe='')}/taskInstances/{SYNC}/links")
    assert links["extra_links"] == {"Training job": tab_url(airflow.base_url, DAG_ID, runs.main, SYNC)}

    open_view(browser, links["extra_links"]["Training job"])
    shown = tab_state(
        browser,
        lambda s: s["phase"] == "Running" and len(s["replicas"]) == 2 and "epoch 3 " in (s["log"] or ""),
        "the tab showing the running job, both replicas and the lead replica's log as it grows",
        timeout=90,
    )
    assert words(shown["title"]) == f"Running PyTorchJob {running['name']}"
    assert words(shown["status"]).startswith("Live · refreshes every 5 s")
    summary = {k: words(v) for k, v in shown["summary"].items()}
    assert (summary["Kind"], summary["Namespace"], summary["Name"], summary["UID"]) == (
        "PyTorchJob",
        module_namespace,
        running["name"],
        running["uid"],
    )
    assert summary["Phase"].startswith("Running PyTorchJobRunning")
    assert summary["Replicas"] == "Master 1/1 active Worker 1/1 active"
    assert summary["In the cluster"] == "Still exists (read from the cluster)"
    pods = {r["replica_type"]: r["pod"] for r in running["replicas"]}
    assert [(words(r[0]).split()[0], r[1], r[2]) for r in shown["replicas"]] == [
        ("Master-0", pods["Master"], "Running"),
        ("Worker-0", pods["Worker"], "Running"),
    ]
    assert "lead" in shown["replicas"][0][0].split()  # the lead replica's log is the one shown
    assert shown["log_title"] == "Log — Master-0" and shown["log"].startswith("rank 0 epoch 1 loss 1.0")
    assert shown["lanes"][:2] == ["Created", "Running"] and shown["bars"] >= 2  # the conditions timeline
    assert shown["events"], "the job's and its pods' events"

    screenshot(browser, screenshot_dir, "ui-task-running-light.png")
    scroll_to(browser, "section[aria-labelledby='timeline-h']")
    screenshot(browser, screenshot_dir, "ui-task-running-replicas-light.png")
    scroll_to(browser, "#app")
    screenshot(browser, screenshot_dir, "ui-task-running-dark.png", mode="dark")
    browser.driver.switch_to.default_content()
    browser.set_color_mode("light")
    no_script_errors(browser)


# --- 4. the Training jobs page (while the synchronous job still runs) ------------------------------------------------


def jobs_shape(answer: dict[str, Any]) -> Any:
    """What of ``GET /trainjob/api/jobs`` the page shows and a running job does not change by itself (its duration
    does): the counts and each row's job and phase."""
    return answer["counts"], [(j["uid"], j["phase"]) for j in answer["jobs"]]


def refreshed_jobs_page(browser: Browser) -> Any:
    """Click the Training jobs page's Refresh button; what the page shows once it has refreshed."""
    updated = browser.script(JOBS_JS)["updated"]
    time.sleep(1.1)  # the "Updated hh:mm:ss" line changes with the refresh
    browser.driver.find_element(By.XPATH, "//button[normalize-space()='Refresh']").click()
    return wait_for(lambda: browser.script(JOBS_JS), lambda p: p["updated"] != updated, 60, "the page refreshed")


def test_the_training_jobs_page(
    airflow: AirflowDeployment, runs: Runs, ui: Ui, browser: Browser, screenshot_dir: Path
) -> None:
    airflow.api(ADMIN).wait_for_task_state(OTHER_DAG_ID, runs.other, OTHER, "success", timeout=120)
    open_view(browser, f"{airflow.base_url}/plugin/training-jobs")
    browser.wait_for("section[aria-labelledby='jobs-h'] tbody tr")
    # The jobs change as they run: compare the page with two API reads around one refresh that agree.
    for _ in range(5):
        before = ui.jobs()
        page = refreshed_jobs_page(browser)
        after = ui.jobs()
        if jobs_shape(before) == jobs_shape(after):
            break
    else:
        pytest.fail(f"the jobs kept changing between two reads of the API: {after['counts']}")
    assert page["counts"] == {"": sum(before["counts"].values()), **before["counts"]}
    assert {"Running", "Succeeded"} <= set(page["counts"])  # the synchronous and deferred jobs, the other DAG's
    assert {r["dag_id"] for r in before["jobs"]} == {DAG_ID, OTHER_DAG_ID}
    assert page["rows"] == [
        {
            "phase": j["phase"],
            "job": f"{j['namespace']}/{j['name']}",
            "links": [
                [j["dag_id"], j["dag_url"]],
                [j["task_id"], j["training_job_url"]],
                [j["run_id"], j["run_url"]],
            ],
        }
        for j in before["jobs"]
    ]
    (other,) = [j for j in before["jobs"] if j["dag_id"] == OTHER_DAG_ID]
    assert other["run_url"] == f"/dags/{OTHER_DAG_ID}/runs/{quote(runs.other, safe='')}"
    assert other["training_job_url"] == tab_url("", OTHER_DAG_ID, runs.other, OTHER)
    screenshot(browser, screenshot_dir, "ui-jobs-light.png")
    screenshot(browser, screenshot_dir, "ui-jobs-dark.png", mode="dark")
    browser.driver.switch_to.default_content()
    browser.set_color_mode("light")

    # The phase filter: only that phase's rows, as many as its count says.
    enter_view(browser)
    Select(browser.driver.find_element(By.ID, "phase-filter")).select_by_value("Succeeded")
    filtered = wait_for(
        lambda: browser.script(JOBS_JS),
        lambda p: p["rows"] and {r["phase"] for r in p["rows"]} == {"Succeeded"},
        10,
        "only Succeeded rows",
    )
    assert len(filtered["rows"]) == filtered["counts"]["Succeeded"]
    # A task link leaves the frame for the task instance's Training job tab.
    browser.driver.find_element(By.XPATH, f"//a[text()={OTHER!r}]").click()
    browser.driver.switch_to.default_content()
    their_tab = tab_url(airflow.base_url, OTHER_DAG_ID, runs.other, OTHER)
    wait_for(lambda: browser.driver.current_url, lambda url: url == their_tab, 60, "the other DAG's task tab")
    no_script_errors(browser)


# --- 2. a deferred job while it waits ------------------------------------------------------------------------------


def progress_lines(log: str, job: dict[str, Any]) -> list[str]:
    """The task log's progress lines of ``job`` (``PyTorchJob <ns>/<name>: <summary>``), as the phases they name
    and the rest."""
    prefix = f"PyTorchJob {job['namespace']}/{job['name']}: "
    return [line[len(prefix) :] for line in log.splitlines() if line.startswith(prefix)]


def test_the_tab_and_log_of_a_deferred_task_while_it_waits(
    airflow: AirflowDeployment, runs: Runs, ui: Ui, watching_browser: Browser
) -> None:
    api = airflow.api(ADMIN)
    api.wait_for_task_state(DAG_ID, runs.main, DEFERRED, "deferred", timeout=120)
    job = wait_for(
        lambda: ui.latest(DAG_ID, runs.main, DEFERRED),
        lambda t: t is not None and t["phase"] == "Running",
        timeout=60,
        what="the deferred job running",
    )
    # While it waits in the triggerer, its task log (as the REST API serves it) follows the job.
    lines = wait_for(
        lambda: progress_lines(api.task_log_text(DAG_ID, runs.main, DEFERRED), job),
        lambda found: any(line.startswith("Running") for line in found),
        timeout=30,
        what="a progress line saying Running in the deferred task's log",
    )
    assert api.task_instance(DAG_ID, runs.main, DEFERRED)["state"] == "deferred"
    assert any(line.endswith("— Master 1/1 active, Worker 1/1 active") for line in lines), lines

    open_view(watching_browser, tab_url(airflow.base_url, DAG_ID, runs.main, DEFERRED))
    shown = tab_state(watching_browser, lambda s: s["phase"] == "Running", "the deferred job Running in its tab")
    assert words(shown["title"]) == f"Running PyTorchJob {job['name']}" and "Live" in shown["status"]
    watching_browser.script("window.e2eMarker = 'opened once'")  # gone if the frame ever reloads


# --- 1 (end). the synchronous job succeeded and was deleted ------------------------------------------------------------


def test_the_tab_of_a_synchronous_task_whose_job_is_gone(
    airflow: AirflowDeployment,
    runs: Runs,
    ui: Ui,
    browser: Browser,
    screenshot_dir: Path,
    custom_objects,
    module_namespace: str,
) -> None:
    from kubernetes.client.exceptions import ApiException

    release(SYNC)
    airflow.api(ADMIN).wait_for_task_state(DAG_ID, runs.main, SYNC, "success", timeout=120)
    (done,) = ui.tries(DAG_ID, runs.main, SYNC)
    with pytest.raises(ApiException) as gone:  # on_finish's default deletes a succeeded job
        custom_objects.get_namespaced_custom_object(GROUP, VERSION, module_namespace, "pytorchjobs", done["name"])
    assert gone.value.status == 404
    assert (done["exists"], done["source"], done["phase"], done["outcome"]) == (
        False,
        "recorded",
        "Succeeded",
        "succeeded",
    )

    open_view(browser, tab_url(airflow.base_url, DAG_ID, runs.main, SYNC))
    shown = tab_state(browser, lambda s: s["phase"] == "Succeeded" and s["log_note"], "the recorded job in the tab")
    assert words(shown["alerts"][0]).startswith(
        "This job no longer exists — showing what the task recorded at its end."
    )
    summary = {k: words(v) for k, v in shown["summary"].items()}
    assert summary["In the cluster"] == "No longer exists — showing what the task recorded at its end"
    assert summary["Phase"].startswith("Succeeded PyTorchJobSucceeded")
    assert summary["Replicas"] == "Master 1 succeeded Worker 1 succeeded"  # terminal: only what finished
    assert summary["Completed"] != "—" and summary["Duration"] != "—"
    assert [(words(r[0]).split()[0], r[2], words(r[4])) for r in shown["replicas"]] == [
        ("Master-0", "Succeeded", "0 Completed"),
        ("Worker-0", "Succeeded", "0 Completed"),
    ]
    assert "the job no longer exists" in shown["log_note"]  # its pods' logs went with it
    assert shown["events"] and "Live" not in shown["status"]
    assert words(shown["status"]).startswith("Try ended") and "Airflow: success" in shown["status"]  # Airflow's word
    screenshot(browser, screenshot_dir, "ui-task-recorded-light.png")
    no_script_errors(browser)


# --- 3. a failed job, retried once ---------------------------------------------------------------------------------


def test_the_tab_of_a_failed_task_with_two_tries(
    airflow: AirflowDeployment, runs: Runs, ui: Ui, browser: Browser, screenshot_dir: Path
) -> None:
    ti = airflow.api(ADMIN).wait_for_task_state(DAG_ID, runs.main, FAILING, "failed", timeout=120)
    assert ti["try_number"] == 2
    latest, first = wait_for(
        lambda: ui.tries(DAG_ID, runs.main, FAILING),
        lambda tries: len(tries) == 2 and all(r["exit_code"] == 1 for r in tries[0]["replicas"]),
        timeout=30,
        what="both replicas of try 2 exited with code 1",
    )
    assert (latest["try_number"], first["try_number"]) == (2, 1)
    assert (latest["phase"], latest["reason"]) == ("Failed", "PyTorchJobFailed") and latest["message"]
    assert len(latest["replicas"]) == 2

    open_view(browser, tab_url(airflow.base_url, DAG_ID, runs.main, FAILING))
    shown = tab_state(
        browser,
        lambda s: s["phase"] == "Failed" and len(s["replicas"]) == 2 and s["events"] and "shard 3" in (s["log"] or ""),
        "the failed job in the tab, with the lead replica's log",
    )
    assert shown["tries"] == [["Try 2: Failed", "true"], ["Try 1: Failed", "false"]]  # latest first, shown
    assert words(shown["summary"]["Phase"]) == f"Failed PyTorchJobFailed {latest['message']}"
    assert [(words(r[0]).split()[0], r[2], words(r[4])) for r in shown["replicas"]] == [
        ("Master-0", "Failed", "1 Error · permanent first failure"),  # the exit code's class; the error's first
        ("Worker-0", "Failed", "1 Error · permanent"),
    ]
    reasons = [row[2] for row in shown["events"]]
    assert "PyTorchJobFailed" in reasons and any(r.startswith("ExitedWithCode") for r in reasons), reasons
    assert "ValueError: bad record in shard 3" in shown["log"]
    screenshot(browser, screenshot_dir, "ui-task-failed-light.png")
    scroll_to(browser, "section[aria-labelledby='replicas-h']")
    screenshot(browser, screenshot_dir, "ui-task-failed-replicas-dark.png", mode="dark")
    browser.driver.switch_to.default_content()
    browser.set_color_mode("light")

    # The earlier try: its job was replaced by try 2's; the tab shows what try 1 recorded.
    enter_view(browser)
    browser.script("document.querySelector(\".page-header [aria-label='Try'] button[title^='Try 1']\").click()")
    earlier = tab_state(browser, lambda s: s["tries"][1][1] == "true", "try 1 selected")
    assert any("You are looking at try 1; the latest is try 2." in a for a in earlier["alerts"])
    assert (first["exists"], first["source"]) == (False, "recorded")
    assert "139" in {words(r[4]).split()[0] for r in earlier["replicas"]}, earlier["replicas"]
    no_script_errors(browser)


# --- 2 (end). the deferred job succeeded -----------------------------------------------------------------------------


def test_the_deferred_tab_turns_succeeded_by_itself_and_the_event_is_small(
    airflow: AirflowDeployment, runs: Runs, ui: Ui, watching_browser: Browser, custom_objects, module_namespace: str
) -> None:
    api = airflow.api(ADMIN)
    release(DEFERRED)
    enter_view(watching_browser)
    shown = tab_state(watching_browser, lambda s: s["phase"] == "Succeeded", "the tab turned Succeeded", timeout=120)
    assert shown["marker"] == "opened once", "the tab refreshed by itself, without reloading"
    assert "Live" not in shown["status"]  # a finished job is not polled any more
    api.wait_for_task_state(DAG_ID, runs.main, DEFERRED, "success", timeout=60)
    (job,) = ui.tries(DAG_ID, runs.main, DEFERRED)
    assert (job["exists"], job["phase"]) == (True, "Succeeded")  # on_finish="keep_job"

    log = api.task_log(DAG_ID, runs.main, DEFERRED)
    # The trigger's progress lines: one per change of phase or replica counts, Running first, Succeeded last.
    by_trigger = progress_lines(
        "\n".join(str(e["event"]) for e in log if isinstance(e, dict) and "triggers" in str(e.get("logger"))), job
    )
    assert by_trigger[0].startswith("Running") and by_trigger[-1].startswith("Succeeded"), by_trigger
    assert all(a != b for a, b in itertools.pairwise(by_trigger)), by_trigger
    fired = [e for e in log if isinstance(e, dict) and e.get("event") == "Trigger fired event"]
    assert len(fired) == 1, fired
    event, line = str(fired[0]["result"]), json.dumps(fired[0], ensure_ascii=False)
    record("ui_e2e", trigger_event_bytes=len(event.encode()), trigger_log_line_bytes=len(line.encode()))
    assert len(event.encode()) < 2048, event  # no pod specs, no embedded training script
    assert "training notes" not in line and "command" not in event

    # The manifest as sent, in full (the rendered field shortens it: see test_the_rendered_manifest_field).
    watching_browser.script("document.querySelector('#manifest summary').click()")
    opened = tab_state(watching_browser, lambda s: s["manifest"], "the manifest opened")
    assert opened["manifest"] == job["manifest_yaml"]
    in_cluster = custom_objects.get_namespaced_custom_object(
        GROUP, VERSION, module_namespace, "pytorchjobs", job["name"]
    )
    assert commands(yaml.safe_load(opened["manifest"])) == commands(in_cluster)
    assert {t: command[2] for t, command in commands(in_cluster).items()} == DEFERRED_SCRIPTS
    no_script_errors(watching_browser)


# --- 5. access ---------------------------------------------------------------------------------------------------


def test_access_needs_a_user_who_may_read_the_dag(
    airflow: AirflowDeployment, runs: Runs, ui: Ui, watching_browser: Browser
) -> None:
    ours, theirs = ti_params(DAG_ID, runs.main, SYNC), ti_params(OTHER_DAG_ID, runs.other, OTHER)
    for path in ("/trainjob/api/task-instance", "/trainjob/api/task-instance/log", "/trainjob/api/jobs"):
        assert ui.get(None, path, **ours).status_code == 401, path
    for path in ("/trainjob/api/task-instance", "/trainjob/api/task-instance/log"):
        assert ui.get(VIEWER, path, **ours).status_code == 403, path
        assert ui.get(VIEWER, path, **theirs).status_code == 200, path
    seen = ui.jobs(VIEWER)
    assert {j["dag_id"] for j in seen["jobs"]} == {OTHER_DAG_ID} and sum(seen["counts"].values()) == 1
    assert DAG_ID in {j["dag_id"] for j in ui.jobs(ADMIN)["jobs"]}

    browser = watching_browser
    browser.driver.switch_to.default_content()
    browser.driver.delete_all_cookies()
    browser.login(airflow.base_url, VIEWER, airflow.passwords[VIEWER])
    open_view(browser, tab_url(airflow.base_url, DAG_ID, runs.main, SYNC))
    refused = tab_state(browser, lambda s: s["alerts"], "the refusal")
    assert [words(a) for a in refused["alerts"]] == ["You may not read this DAG's task instances (HTTP 403): Forbidden"]
    assert refused["phase"] is None and refused["summary"] == {}
    open_view(browser, tab_url(airflow.base_url, OTHER_DAG_ID, runs.other, OTHER))
    tab_state(browser, lambda s: s["phase"] == "Succeeded", "the other DAG's job, which the viewer may read")


# --- 6. the rendered manifest ------------------------------------------------------------------------------------


def test_the_rendered_manifest_field(airflow: AirflowDeployment, runs: Runs, ui: Ui) -> None:
    api = airflow.api(ADMIN)
    for task_id in (SYNC, DEFERRED):
        rendered = api.task_instance(DAG_ID, runs.main, task_id)["rendered_fields"]["manifest"]
        (sent,) = ui.tries(DAG_ID, runs.main, task_id)
        assert isinstance(rendered, str) and len(rendered) <= MAX_TEMPLATED_FIELD_LENGTH, len(rendered)
        shown, whole = yaml.safe_load(rendered), yaml.safe_load(sent["manifest_yaml"])
        assert (shown["apiVersion"], shown["kind"], shown["metadata"]["name"]) == (
            f"{GROUP}/{VERSION}",
            "PyTorchJob",
            sent["name"],
        )
        specs, whole_specs = shown["spec"]["pytorchReplicaSpecs"], whole["spec"]["pytorchReplicaSpecs"]
        assert set(specs) == {"Master", "Worker"} and shown["metadata"] == whole["metadata"]
        if task_id == SYNC:
            assert shown == whole  # it fits: the whole object
            continue
        # Too long for the field: its longest strings are shortened, and marked; the structure stays whole.
        assert len(sent["manifest_yaml"]) > MAX_TEMPLATED_FIELD_LENGTH
        for replica_type, command in commands(shown).items():
            full = commands(whole)[replica_type]
            assert command[:2] == full[:2] and full[2] == DEFERRED_SCRIPTS[replica_type]
            assert command[2].startswith("# training notes") and re.search(
                r"\[\.\.\. [\d,]+ characters left out", command[2]
            )
            assert {k: v for k, v in specs[replica_type].items() if k != "template"} == {
                k: v for k, v in whole_specs[replica_type].items() if k != "template"
            }


# --- 5 (end). no secrets in any answer ---------------------------------------------------------------------------


def test_no_token_or_kubeconfig_in_any_answer(airflow: AirflowDeployment, runs: Runs, ui: Ui, local_cluster) -> None:
    # Every view's JSON once more, and every pod's log, so each kind of answer is in the check.
    for run_id, dag_id, task_id in (
        (runs.main, DAG_ID, SYNC),
        (runs.main, DAG_ID, DEFERRED),
        (runs.main, DAG_ID, FAILING),
        (runs.other, OTHER_DAG_ID, OTHER),
    ):
        for t in ui.tries(dag_id, run_id, task_id):
            for replica in t["replicas"]:
                ui.log(dag_id, run_id, task_id, try_number=t["try_number"], pod=replica["pod"])
    ui.jobs(ADMIN)
    ui.jobs(VIEWER)
    kubeconfig_text = local_cluster.kubeconfig.read_text()
    kubeconfig = yaml.safe_load(kubeconfig_text)
    secrets = [u["user"]["token"] for u in kubeconfig["users"] if u["user"].get("token")]
    secrets += [c["cluster"]["certificate-authority-data"] for c in kubeconfig["clusters"]]
    secrets += [c["cluster"]["server"] for c in kubeconfig["clusters"]]
    secrets += [str(local_cluster.kubeconfig), *ui.tokens.values()]
    assert len(secrets) >= 5 and len(ui.answers) > 30
    for text in ui.answers:
        for secret in secrets:
            assert secret not in text
        for word in ("Bearer", "kube_config", "certificate-authority", "client-key", "BEGIN "):
            assert word not in text
