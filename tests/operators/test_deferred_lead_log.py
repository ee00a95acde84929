"""A deferred task's log keeps the training's whole lead log (issue 24, item 3), against the real apiserver and the
process kubelet: lines appear while the trigger waits, every line is there exactly once at the end, the job's first
line survives ``cleanPodPolicy`` removing the pod, a triggerer restart neither loses nor repeats lines, a restart of
the lead's container keeps both runs, and the size bound cuts with a note and keeps the log's end.

The trigger looks at the lead's log every :data:`~airflow_trainjob.triggers.log_pacing.LOG_LOOK_SECONDS` (60 s);
the tests look every 2 s, so that a 30-second training shows its lines live. What the trigger logs and what the
resumed task logs both go to the task log (here: the captured output, in the order written).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import uuid

import pytest

from airflow_trainjob.constants import LABEL_JOB_NAME
from airflow_trainjob.domain import lead_log
from airflow_trainjob.domain.lead_log import ANNOTATION_LEAD_LOG_CURSOR, cursor_on_job
from airflow_trainjob.triggers import log_pacing
from airflow_trainjob.triggers.training_job import TrainingJobTrigger
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import defer, first_event, operator_for, rebuild
from tests.support.jobs import jobs, pytorch_specs

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

EPOCHS = 250
#: A training that prints its first line, then 250 numbered lines over about 30 s.
TRAINING = (
    "import time\n"
    f"print('job starts: {EPOCHS} epochs, lr 0.01', flush=True)\n"
    f"for i in range(1, {EPOCHS + 1}):\n"
    f"    print(f'epoch {{i:03d}}/{EPOCHS} loss={{1 / i:.4f}}', flush=True)\n"
    "    time.sleep(0.12)\n"
)
LOOK_SECONDS = 2.0
#: A line of the lead's log in the task log, as the test's logging prints it: ``<time> [info     ] [Master-0] <line>
#: [<logger>] loc=...``.
_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) .*?\[Master-0\] (.*?)\s+\[airflow", re.MULTILINE)


@pytest.fixture
def quick_looks(monkeypatch):
    monkeypatch.setattr(log_pacing, "LOG_LOOK_SECONDS", LOOK_SECONDS)


def lead_lines(output: str) -> list[tuple[dt.datetime, str]]:
    """``(when it was logged, the lead's line)`` of each ``[Master-0] ...`` line of a task log, in order."""
    return [
        (dt.datetime.fromisoformat(when.replace("Z", "+00:00")), text.strip()) for when, text in _LINE.findall(output)
    ]


def epochs_in(lines: list[tuple[dt.datetime, str]]) -> list[int]:
    return [int(m.group(1)) for _, text in lines if (m := re.match(rf"epoch (\d{{3}})/{EPOCHS} ", text))]


def completed_at(job: dict) -> dt.datetime:
    return dt.datetime.fromisoformat(job["status"]["completionTime"].replace("Z", "+00:00"))


def job_pods(core_v1, namespace: str, name: str) -> list[str]:
    return [
        p.metadata.name for p in core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL_JOB_NAME}={name}").items
    ]


def test_the_task_log_has_every_lead_line_once_shown_while_waiting_and_kept_after_the_pod_is_gone(
    quick_looks, ti, namespace, core_v1, capfd
):
    operator = operator_for(
        "deferred", pytorch_specs(TRAINING, workers=0), poll_interval=60, run_policy={"cleanPodPolicy": "All"}
    )
    event = first_event(defer(operator, ti), timeout=240)
    waited = lead_lines(capfd.readouterr().out)  # what the trigger wrote while the task was deferred
    summary = operator.execute_complete({"ti": ti}, event)
    resumed = lead_lines(capfd.readouterr().out)
    every = waited + resumed
    assert sorted(epochs_in(every)) == list(range(1, EPOCHS + 1))  # every line, none twice
    assert epochs_in(every) == list(range(1, EPOCHS + 1))  # in order
    assert [text for _, text in every].count(f"job starts: {EPOCHS} epochs, lr 0.01") == 1  # the job's first line
    assert every[0][1].startswith("job starts")
    # While the trigger waited: most of the lines, in several batches, the first ones long before the job ended.
    ended = completed_at(event["job"])
    assert len(epochs_in(waited)) >= EPOCHS // 2, len(epochs_in(waited))
    assert len({when.replace(microsecond=0) for when, _ in waited}) >= 5  # batches at different times
    assert (ended - waited[0][0]).total_seconds() > 10, (waited[0][0], ended)
    # cleanPodPolicy All: the lead's pod is gone now, and its first line is in the task log all the same.
    assert summary["conditions"][-1]["type"] == "Succeeded"
    assert job_pods(core_v1, namespace, summary["name"]) == []
    assert event["lead_log"]["lines"] == len(waited)  # the event's cursor: what the trigger copied


def test_a_triggerer_restart_goes_on_where_the_copy_stopped(quick_looks, ti, namespace, custom_objects, capfd):
    """The trigger is cancelled mid-training (the triggerer stops) and run again from its kwargs (the next
    triggerer): it records its cursor on the job as it stops, and the next one goes on from there."""
    operator = operator_for("deferred", pytorch_specs(TRAINING, workers=0), poll_interval=60)
    trigger = defer(operator, ti)

    async def run_until_cancelled(seconds: float) -> None:
        async def wait():
            async for _ in trigger.run():
                raise AssertionError("the job ended before the triggerer stopped")

        task = asyncio.create_task(wait())
        await asyncio.sleep(seconds)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run_until_cancelled(14))
    first = lead_lines(capfd.readouterr().out)
    assert 0 < len(epochs_in(first)) < EPOCHS  # it had copied some, not all
    (job,) = jobs(custom_objects, namespace)
    recorded = cursor_on_job(job, ti.try_number)
    assert recorded is not None and recorded.lines == len(first)  # recorded as it stopped
    assert ANNOTATION_LEAD_LOG_CURSOR in job["metadata"]["annotations"]
    event = first_event(rebuild(trigger), timeout=240)  # the next triggerer's run, from the serialized kwargs
    second = lead_lines(capfd.readouterr().out)
    operator.execute_complete({"ti": ti}, event)
    third = lead_lines(capfd.readouterr().out)
    assert epochs_in(first + second + third) == list(range(1, EPOCHS + 1))  # none lost, none twice
    assert epochs_in(second)  # the second run went on copying live


def test_a_triggerer_that_dies_without_recording_repeats_at_most_the_lines_since_its_last_record(
    quick_looks, monkeypatch, ti, namespace, capfd
):
    """A triggerer that stops closes its streams before it cancels its triggers, and one that is killed does
    nothing: the trigger's next run goes on from the cursor last recorded (at the first lines, then every
    CURSOR_RECORD_SECONDS): nothing is lost, the lines copied since that record appear twice, after a note."""
    from airflow_trainjob.triggers import training_job as trigger_module

    monkeypatch.setattr(trigger_module, "CURSOR_RECORD_SECONDS", 6.0)
    record = TrainingJobTrigger._record_cursor

    async def no_record_on_the_way_out(self, stream, now=False):
        if not now:
            await record(self, stream)

    monkeypatch.setattr(TrainingJobTrigger, "_record_cursor", no_record_on_the_way_out)
    operator = operator_for("deferred", pytorch_specs(TRAINING, workers=0), poll_interval=60)
    trigger = defer(operator, ti)

    async def run_until_cancelled(seconds: float) -> None:
        task = asyncio.create_task(anext(trigger.run()))
        await asyncio.sleep(seconds)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run_until_cancelled(17))
    first = epochs_in(lead_lines(capfd.readouterr().out))
    event = first_event(rebuild(trigger), timeout=240)
    output = capfd.readouterr().out
    operator.execute_complete({"ti": ti}, event)
    output += capfd.readouterr().out
    rest = epochs_in(lead_lines(output))
    assert "Going on with the lead replica's log from the point an earlier run of this wait recorded" in output
    assert sorted(set(first + rest)) == list(range(1, EPOCHS + 1))  # nothing lost
    repeated = sorted(set(first) & set(rest))
    assert rest == sorted(rest) and len(rest) == len(set(rest))  # the second run copies each line once
    # Repeated: the lines the first run copied after its last record, at most a record interval and a look of them.
    assert repeated == list(range(repeated[0], first[-1] + 1)) if repeated else True
    assert len(repeated) <= (6.0 + 2 * LOOK_SECONDS) / 0.12 + 10, len(repeated)


def test_a_lead_container_restart_keeps_both_runs(quick_looks, ti, namespace, capfd):
    """The lead's container fails and the kubelet restarts it in place (``restartPolicy: OnFailure``): the rest of
    the first run is read as the ``previous`` run, then the new run, each line once."""
    marker = f"/tmp/trainjob-restart-{uuid.uuid4().hex}"
    code = (
        "import os, sys, time\n"
        f"first = not os.path.exists({marker!r})\n"
        f"open({marker!r}, 'a').close()\n"
        "run = 'first' if first else 'second'\n"
        "for i in range(1, 61):\n"
        "    print(f'{run} run line {i:02d}', flush=True)\n"
        "    time.sleep(0.1)\n"
        "sys.exit(1 if first else 0)\n"
    )
    operator = operator_for("deferred", pytorch_specs(code, workers=0, restartPolicy="OnFailure"), poll_interval=60)
    event = first_event(defer(operator, ti), timeout=240)
    operator.execute_complete({"ti": ti}, event)
    out = capfd.readouterr().out
    texts = [text for _, text in lead_lines(out)]
    expected = [f"{run} run line {i:02d}" for run in ("first", "second") for i in range(1, 61)]
    assert [t for t in texts if " run line " in t] == expected
    assert "restarted (restart 1)" in out


def test_the_size_bound_cuts_with_a_note_and_the_end_keeps_the_last_lines(quick_looks, monkeypatch, ti, capfd):
    monkeypatch.setattr(lead_log, "LEAD_LOG_MAX_BYTES", 2000)  # about 80 lines of the training's 250
    operator = operator_for("deferred", pytorch_specs(TRAINING, workers=0), poll_interval=60, log_tail_lines=5)
    event = first_event(defer(operator, ti), timeout=240)
    operator.execute_complete({"ti": ti}, event)
    out = capfd.readouterr().out
    lines = lead_lines(out)
    copied = epochs_in(lines)
    head = [e for e in copied if e < EPOCHS - 4]
    assert head == list(range(1, len(head) + 1)) and 60 < len(head) < 90  # the start, up to the bound
    assert copied[len(head) :] == list(range(EPOCHS - 4, EPOCHS + 1))  # then the log's last 5 lines
    assert "passed the 2000 bytes a deferred task's log takes of it" in out
    assert "are left out (the task log takes 2000 bytes of the lead replica's log); its last 5 lines:" in out
    assert event["lead_log"]["cut"] is True


def test_the_event_stays_small_with_the_cursor_in_it(quick_looks, ti):
    from tests.triggers.test_training_job import stored_sizes

    operator = operator_for("deferred", pytorch_specs(TRAINING, workers=0), poll_interval=60)
    event = first_event(defer(operator, ti), timeout=240)
    assert set(event["lead_log"]) == {"uid", "restarts", "since", "at", "lines", "bytes"}
    assert stored_sizes(event) < 2048, stored_sizes(event)


def test_the_trigger_has_the_triggerer_mask_the_jobs_secrets_before_it_copies_a_line(
    quick_looks, monkeypatch, ti, namespace, capfd
):
    """A secret the task's masker knows (a Variable rendered into the container's env) is masked in the task's own
    log; the trigger, in the triggerer, hands it to Airflow's masker there (``amask_secret``: the triggerer's
    supervisor writes the task's log) before the first line it copies. Read from the job, not from its kwargs."""
    import airflow.sdk.log
    from airflow.providers.common.compat.sdk import mask_secret

    secret = f"hf_{uuid.uuid4().hex}"
    mask_secret(secret)  # what reading a sensitive Variable in a template does, in the task's process
    handed: list[tuple[str, int]] = []
    written: list[str] = []

    async def amask_secret(value, name=None):
        handed.append((value, len(written)))

    monkeypatch.setattr(airflow.sdk.log, "amask_secret", amask_secret)
    write = TrainingJobTrigger._write
    monkeypatch.setattr(TrainingJobTrigger, "_write", lambda self, lines: (written.extend(lines), write(self, lines)))
    container_env = [{"name": "HF_TOKEN", "value": secret}]
    # The training runs on for 5 looks after its line: the trigger, not the resumed task, copies it (a job that ended
    # before the trigger's first look is copied by the task, in its own process, and nothing is handed over).
    code = f"import os, time; print('token', os.environ['HF_TOKEN'], flush=True); time.sleep({5 * LOOK_SECONDS})"
    specs = pytorch_specs(code, workers=0)
    specs["Master"]["template"]["spec"]["containers"][0]["env"] = container_env
    operator = operator_for("deferred", specs, poll_interval=60)
    trigger = defer(operator, ti)
    assert secret not in repr(trigger.serialize())  # the kwargs hold where the secret is, not the secret
    event = first_event(trigger, timeout=240)
    # Handed over once, before any line was copied (Airflow's connection lookup hands the connection's extras too).
    assert [h for h in handed if h[0] == secret] == [(secret, 0)]
    assert any(secret in out.text for out in written)  # the line the masker then masks in the triggerer
    operator.execute_complete({"ti": ti}, event)


def test_a_killed_deferred_task_copies_the_lines_printed_since_the_last_look_before_the_job_goes(
    quick_looks, monkeypatch, tmp_path, ti, namespace, core_v1, custom_objects, capfd
):
    """Airflow stops a deferred task (marked failed or success, or cleared) by cancelling its trigger and running the
    trigger's ``on_kill``, which deletes the job and its pods with their logs: the lines the lead printed since the
    trigger's last look are copied first (a trial lost them: 3 of about 23 lines). Each line is in the task log once,
    and the job is deleted after them."""
    marker = str(tmp_path / "print-the-rest")
    code = (
        "import os, time\n"
        "for i in range(1, 11):\n"
        "    print(f'line {i:02d}', flush=True)\n"
        f"while not os.path.exists({marker!r}):\n"
        "    time.sleep(0.1)\n"
        "for i in range(11, 49):\n"
        "    print(f'line {i:02d}', flush=True)\n"
        "time.sleep(600)\n"
    )
    written: list[str] = []
    write = TrainingJobTrigger._write
    monkeypatch.setattr(
        TrainingJobTrigger, "_write", lambda self, lines: (written.extend(o.text for o in lines), write(self, lines))
    )
    operator = operator_for("deferred", pytorch_specs(code, workers=0), poll_interval=60)
    trigger = defer(operator, ti)

    def lead_printed_all() -> bool:
        (pod,) = job_pods(core_v1, namespace, trigger.name)
        return "line 48" in core_v1.read_namespaced_pod_log(pod, namespace)

    async def until(done, seconds: float) -> None:
        async def poll() -> None:
            while not await asyncio.to_thread(done):
                await asyncio.sleep(0.2)

        await asyncio.wait_for(poll(), seconds)

    async def kill_after_the_first_lines() -> None:
        task = asyncio.create_task(anext(trigger.run()))
        await until(lambda: any(t.endswith("line 10") for t in written), 120)
        task.cancel()  # the triggerer cancels the trigger, then runs its on_kill
        with pytest.raises(asyncio.CancelledError):
            await task
        open(marker, "w").close()  # the lead prints the rest now, after the trigger's last look
        await until(lead_printed_all, 60)
        capfd_before.append(capfd.readouterr().out)
        await trigger.on_kill()

    capfd_before: list[str] = []
    asyncio.run(kill_after_the_first_lines())
    before, killed = capfd_before[0], capfd.readouterr().out
    texts = [text for _, text in lead_lines(before + killed)]
    expected = [f"line {i:02d}" for i in range(1, 49)]
    assert [t for t in texts if t.startswith("line ")] == expected  # every line, once, in order
    copied_before = [t for _, t in lead_lines(before) if t.startswith("line ")]
    assert copied_before == expected[:10], copied_before  # the paced copy had these; on_kill copied the rest
    deleted = killed.index(f"Deleted PyTorchJob {namespace}/{trigger.name}: the deferred task was killed")
    assert killed.rindex("[Master-0] line 48") < deleted  # copied before the job (and the pod's log) went
    assert jobs(custom_objects, namespace) == [] or all(
        j["metadata"].get("deletionTimestamp") for j in jobs(custom_objects, namespace)
    )


def test_on_kill_has_the_triggerer_mask_the_jobs_secrets_before_it_copies_a_line(
    monkeypatch, ti, namespace, core_v1, custom_objects
):
    """A trigger killed before its first look (the lead's lines all printed since): ``on_kill``'s copy hands the
    job's secrets to Airflow's masker before the first line it copies, as the trigger's own copy does."""
    import airflow.sdk.log
    from airflow.providers.common.compat.sdk import mask_secret

    secret = f"hf_{uuid.uuid4().hex}"
    mask_secret(secret)  # what reading a sensitive Variable in a template does, in the task's process
    handed: list[tuple[str, int]] = []
    written: list[str] = []

    async def amask_secret(value, name=None):
        handed.append((value, len(written)))

    monkeypatch.setattr(airflow.sdk.log, "amask_secret", amask_secret)
    write = TrainingJobTrigger._write
    monkeypatch.setattr(
        TrainingJobTrigger, "_write", lambda self, lines: (written.extend(o.text for o in lines), write(self, lines))
    )
    code = "import os, time; print('token', os.environ['HF_TOKEN'], flush=True); time.sleep(600)"
    specs = pytorch_specs(code, workers=0)
    specs["Master"]["template"]["spec"]["containers"][0]["env"] = [{"name": "HF_TOKEN", "value": secret}]
    operator = operator_for("deferred", specs, poll_interval=60)
    trigger = rebuild(defer(operator, ti))

    def printed() -> bool:
        pods = job_pods(core_v1, namespace, trigger.name)
        return bool(pods) and "token" in core_v1.read_namespaced_pod_log(pods[0], namespace)

    wait_for(printed, what="the lead's line")
    asyncio.run(trigger.on_kill())
    assert [h for h in handed if h[0] == secret] == [(secret, 0)]  # before any line was copied
    assert any(secret in text for text in written)  # the line the masker then masks in the triggerer
    assert jobs(custom_objects, namespace) == [] or all(
        j["metadata"].get("deletionTimestamp") for j in jobs(custom_objects, namespace)
    )
