"""The deferred copy of the lead replica's log, pure: which reads it asks for and which lines it takes as new, against
a stand-in for the kubelet's ``/containerLogs`` that keeps its rules (``sinceTime`` in whole seconds, lines at or after
it; ``limitBytes`` cuts the answer anywhere; ``previous`` is the run before the last restart; ``tailLines``). The
copy against the real apiserver and process kubelet is in ``tests/operators/test_deferred_lead_log.py``."""

from __future__ import annotations

import json
import time

import pytest

from airflow_trainjob.constants import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from airflow_trainjob.domain.lead_log import (
    ANNOTATION_LEAD_LOG_CURSOR,
    LIVE_READ_BYTES,
    LIVE_READS_PER_LOOK,
    LeadLogCopy,
    LogCursor,
    LogRead,
    cursor_annotation,
    cursor_on_job,
    since_time,
    timestamp_ns,
)
from airflow_trainjob.families import family_of
from tests.support.legacy import as_legacy

KIND = family_of("PyTorchJob")
T0 = 1_796_000_000 * 1_000_000_000  # ns


def stamp(ns: int) -> str:
    seconds, nanos = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanos:09d}Z"


class Kubelet:
    """Container logs as the kubelet serves them with ``timestamps=true``."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, int], list[tuple[int, str, bool]]] = {}  # (uid, restarts) -> (ns, text, full)
        self.reads: list[LogRead] = []

    def write(self, uid: str, run: int, ns: int, text: str, full: bool = True) -> None:
        self.runs.setdefault((uid, run), []).append((ns, text, full))

    def answer(self, read: LogRead, uid: str, restarts: int) -> bytes:
        self.reads.append(read)
        key = (uid, restarts - 1 if read.previous else restarts)
        lines = self.runs[key]
        if read.tail_lines is not None:
            lines = lines[-read.tail_lines :]
        since = timestamp_ns(read.since_time) if read.since_time else None
        out = b"".join(
            f"{stamp(ns)} {text}{chr(10) if full else ''}".encode()
            for ns, text, full in lines
            if since is None or ns >= since
        )
        return out[: read.limit_bytes] if read.limit_bytes is not None else out


def lead(uid: str = "pod-1", restarts: int = 0, state: str = "running", phase: str = "Running") -> dict:
    return {
        "metadata": {
            "name": "train-master-0",
            "uid": uid,
            "labels": {LABEL_REPLICA_TYPE: "master", LABEL_REPLICA_INDEX: "0"},
        },
        "spec": {"containers": [{"name": "pytorch"}]},
        "status": {
            "phase": phase,
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "restartCount": restarts,
                    "state": {state: {}},
                    **({"lastState": {"terminated": {"exitCode": 1}}} if restarts else {}),
                }
            ],
        },
    }


def copy_once(copy: LeadLogCopy, kubelet: Kubelet, pod: dict) -> list[str]:
    """One look, as a driver does it; the task log's lines."""
    out = [o.text for o in copy.look([pod])]
    uid, restarts = pod["metadata"]["uid"], pod["status"]["containerStatuses"][0]["restartCount"]
    while (read := copy.next_read()) is not None:
        out += [o.text for o in copy.take(read, kubelet.answer(read, uid, restarts))]
    return out


def lines_of(out: list[str]) -> list[str]:
    return [line.removeprefix("[Master-0] ") for line in out if line.startswith("[Master-0] ")]


def test_timestamps_parse_with_nanoseconds_and_offsets_and_since_time_keeps_whole_seconds():
    assert timestamp_ns("2026-12-02T10:00:00.000000001Z") == timestamp_ns("2026-12-02T10:00:00Z") + 1
    assert timestamp_ns("2026-12-02T11:00:00.5+01:00") == timestamp_ns("2026-12-02T10:00:00.5Z")
    assert timestamp_ns("not a time") is None
    assert since_time("2026-12-02T11:00:07.999999999+01:00") == "2026-12-02T10:00:07Z"
    assert since_time(None) is None


def test_each_line_is_copied_once_across_looks_even_within_one_second():
    """sinceTime has whole seconds: the second of the last line is read again, and its lines skipped by their ns."""
    kubelet, copy, out = Kubelet(), LeadLogCopy(KIND), []
    ns = T0
    for look in range(5):
        for i in range(50):  # 50 lines per look, several in the same second, two with the very same ns
            kubelet.write("pod-1", 0, ns, f"line {look * 50 + i}")
            ns += 0 if i % 10 == 3 else 37_000_000
        out += copy_once(copy, kubelet, lead())
    assert lines_of(out) == [f"line {i}" for i in range(250)]
    assert copy.cursor.lines == 250
    assert all(r.since_time == since_time(r.since_time) for r in kubelet.reads[1:])  # whole seconds asked


def test_a_line_without_its_newline_waits_for_the_next_look_unless_the_run_ended():
    kubelet, copy = Kubelet(), LeadLogCopy(KIND)
    kubelet.write("pod-1", 0, T0, "epoch 1")
    kubelet.write("pod-1", 0, T0 + 1, "loss=0.3", full=False)  # tqdm-like: no newline yet
    assert lines_of(copy_once(copy, kubelet, lead())) == ["epoch 1"]
    final = LeadLogCopy(KIND, copy.cursor, final=True)
    assert lines_of(copy_once(final, kubelet, lead(state="terminated", phase="Succeeded"))) == ["loss=0.3"]


def test_a_chatty_log_is_read_a_bounded_amount_per_look_and_caught_up_at_the_end():
    kubelet, copy = Kubelet(), LeadLogCopy(KIND)
    line = "x" * 99  # 100 bytes of text, about 131 with its timestamp
    total = LIVE_READ_BYTES * LIVE_READS_PER_LOOK // 100  # more than one look takes
    for i in range(total):
        kubelet.write("pod-1", 0, T0 + i * 10_000_000, f"{i:06d}{line}")  # 100 lines a second
    first = lines_of(copy_once(copy, kubelet, lead()))
    assert len(kubelet.reads) == LIVE_READS_PER_LOOK
    assert all(r.limit_bytes == LIVE_READ_BYTES for r in kubelet.reads)
    assert 0 < len(first) < total
    rest = lines_of(copy_once(LeadLogCopy(KIND, copy.cursor, final=True), kubelet, lead(state="terminated")))
    assert [int(x[:6]) for x in first + rest] == list(range(total))


def test_a_restart_in_place_reads_the_rest_of_the_run_that_ended_then_the_new_run():
    kubelet, copy = Kubelet(), LeadLogCopy(KIND)
    kubelet.write("pod-1", 0, T0, "run 0 line 0")
    out = copy_once(copy, kubelet, lead())
    kubelet.write("pod-1", 0, T0 + 10**9, "run 0 line 1 (written before the crash)")
    kubelet.write("pod-1", 1, T0 + 5 * 10**9, "run 1 line 0")
    out += copy_once(copy, kubelet, lead(restarts=1))
    assert lines_of(out) == ["run 0 line 0", "run 0 line 1 (written before the crash)", "run 1 line 0"]
    assert kubelet.reads[1].previous and not kubelet.reads[2].previous
    assert any("restarted (restart 1)" in line for line in out)


def test_a_replaced_pod_is_read_from_its_start_and_the_loss_is_said():
    kubelet, copy = Kubelet(), LeadLogCopy(KIND)
    kubelet.write("pod-1", 0, T0, "old pod")
    out = copy_once(copy, kubelet, lead())
    kubelet.write("pod-2", 0, T0 + 10**9, "new pod")
    out += copy_once(copy, kubelet, lead(uid="pod-2"))
    assert lines_of(out) == ["old pod", "new pod"]
    assert any("was replaced (uid pod-1 -> pod-2)" in line for line in out)


def test_the_size_bound_cuts_with_a_note_and_the_end_adds_the_last_lines_after_naming_the_gap():
    kubelet = Kubelet()
    for i in range(100):
        kubelet.write("pod-1", 0, T0 + i * 10**8, f"line {i:02d}")  # 8 bytes each with the newline
    copy = LeadLogCopy(KIND, max_bytes=8 * 30, tail_lines=5)
    live = copy_once(copy, kubelet, lead())
    assert lines_of(live) == [f"line {i:02d}" for i in range(30)]
    assert "passed the 240 bytes" in live[-1] and "last 5 lines are added when the task ends" in live[-1]
    assert copy.cursor.cut and copy_once(copy, kubelet, lead()) == []  # no more reads while waiting
    end = copy_once(LeadLogCopy(KIND, copy.cursor, final=True, tail_lines=5), kubelet, lead(state="terminated"))
    assert "lines written after" in end[0] and "are left out" in end[0]
    assert lines_of(end[1:]) == [f"line {i}" for i in range(95, 100)]


def test_the_cursor_survives_its_json_form_and_refuses_a_damaged_one():
    kubelet, copy = Kubelet(), LeadLogCopy(KIND)
    kubelet.write("pod-1", 0, T0, "a")
    kubelet.write("pod-1", 0, T0, "b")  # the same ns: at_since 2
    copy_once(copy, kubelet, lead())
    data = copy.cursor.to_dict()
    assert data == {"uid": "pod-1", "restarts": 0, "since": stamp(T0), "at": 2, "lines": 2, "bytes": 4}
    restored = LogCursor.from_dict(data)
    assert restored is not None and restored.run is not None
    assert (restored.run.uid, restored.since, restored.at_since, restored.lines) == ("pod-1", stamp(T0), 2, 2)
    assert LogCursor.from_dict({"since": "yesterday"}) is None and LogCursor.from_dict("x") is None
    kubelet.write("pod-1", 0, T0 + 1, "c")
    assert lines_of(copy_once(LeadLogCopy(KIND, LogCursor.from_dict(data)), kubelet, lead())) == ["c"]


def test_more_than_the_limit_within_one_second_grows_the_limit_instead_of_stalling():
    kubelet, copy = Kubelet(), LeadLogCopy(KIND)
    big = "y" * 1000
    for i in range(200):  # 200 KB within one second: more than one read's limit
        kubelet.write("pod-1", 0, T0 + i, f"{i:03d}{big}")
    out = copy_once(copy, kubelet, lead())
    out += copy_once(copy, kubelet, lead())
    assert [int(x[:3]) for x in lines_of(out)] == list(range(200))


@pytest.mark.parametrize("final", [False, True])
def test_a_log_that_cannot_be_read_is_skipped_quietly_while_waiting_and_said_at_the_end(final):
    copy = LeadLogCopy(KIND, final=final)
    copy.look([lead()])
    read = copy.next_read()
    assert read is not None
    notes = copy.missing(read, "404 Not Found")
    assert copy.next_read() is None
    assert bool(notes) is final


def test_the_secrets_of_the_manifest_are_located_by_place_and_read_back_from_the_job():
    """The trigger's kwargs carry where the task's masker finds secrets in the job, never the secrets: the trigger
    reads them from the job, and has the triggerer mask them in the lines it copies."""
    from airflow_trainjob.domain.lead_log import SECRET_MARK, secret_spans, secrets_at

    secret, other = "hf_SECRETvalue0123456789", "pw-0987654321"

    def redact(text: str) -> str:  # what Airflow's redact does with the masker of a task that read both
        return text.replace(secret, SECRET_MARK).replace(other, SECRET_MARK)

    container = {
        "name": "pytorch",
        "args": ["--token", secret, f"--url=https://u:{other}@host/{secret}"],
        "env": [{"name": "HF/TOKEN", "value": secret}, {"name": "PLAIN", "value": "nothing secret"}],
    }
    job = {"spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": [container]}}}}}}
    spans = secret_spans(job, redact)
    assert secret not in json.dumps(spans) and other not in json.dumps(spans)
    assert len(spans) == 4
    assert secrets_at(job, spans) == [secret, other, secret, secret]
    assert secrets_at(job, [["/spec/nothing", 0, 3], ["/spec", 0, 1], "junk"]) == []


@pytest.mark.parametrize(
    ("restarts", "said"),
    [
        (
            2,
            "restarted 2 times since the last read: the kubelet keeps only the last finished run, so the rest of run "
            "0 is lost",
        ),
        (
            3,
            "restarted 3 times since the last read: the kubelet keeps only the last finished run, so the rest of run "
            "0 and run 1 are lost",
        ),
        (5, "so the rest of run 0 and runs 1-3 are lost"),
    ],
)
def test_several_restarts_between_two_looks_say_which_runs_are_lost_and_read_the_last_two(restarts, said):
    kubelet, copy = Kubelet(), LeadLogCopy(KIND)
    kubelet.write("pod-1", 0, T0, "run 0")
    copy_once(copy, kubelet, lead())
    for run in range(1, restarts + 1):
        kubelet.write("pod-1", run, T0 + run * 10**9, f"run {run}")
    out = copy_once(copy, kubelet, lead(restarts=restarts))
    assert any(said in line for line in out), out
    assert lines_of(out) == [f"run {restarts - 1}", f"run {restarts}"]


@pytest.mark.parametrize(
    ("restarts", "said"),
    [
        (1, None),
        (
            2,
            "restarted 2 times before its log was first read: the kubelet keeps only the last finished run, so run 0 "
            "is lost",
        ),
        (
            4,
            "restarted 4 times before its log was first read: the kubelet keeps only the last finished run, so runs "
            "0-2 are lost",
        ),
    ],
)
def test_restarts_before_the_first_look_read_the_run_before_the_last_restart_and_say_which_runs_are_lost(
    restarts, said
):
    kubelet, copy = Kubelet(), LeadLogCopy(KIND)
    for run in range(restarts + 1):
        kubelet.write("pod-1", run, T0 + run * 10**9, f"run {run}")
    out = copy_once(copy, kubelet, lead(restarts=restarts))
    notes = [line for line in out if not line.startswith("[Master-0] ")]
    lost = [] if said is None else [f"The lead replica's container pytorch {said}"]
    assert notes == [*lost, f"The lead replica's container pytorch restarted (restart {restarts})"]
    assert lines_of(out) == [f"run {restarts - 1}", f"run {restarts}"]
    assert [r.previous for r in kubelet.reads] == [True, False]


def test_a_pod_replaced_after_the_cursor_was_read_back_is_named_by_its_uid_and_read_from_its_start():
    """A restarted triggerer's cursor knows its run by the pod's uid alone: a successor pod is another run."""
    kubelet, copy = Kubelet(), LeadLogCopy(KIND)
    kubelet.write("pod-1", 0, T0, "old pod")
    copy_once(copy, kubelet, lead())
    restored = LeadLogCopy(KIND, LogCursor.from_dict(copy.cursor.to_dict()))
    kubelet.write("pod-2", 0, T0 + 10**9, "new pod")
    out = copy_once(restored, kubelet, lead(uid="pod-2"))
    assert out[0].startswith(
        f"The lead replica's pod train-master-0 was replaced (uid pod-1 -> pod-2): the lines its former pod wrote "
        f"after {stamp(T0)} since the last read are lost with it"
    )
    assert lines_of(out) == ["new pod"]
    assert kubelet.reads[-1].since_time is None  # the new pod from its start


def test_a_cursor_an_earlier_release_recorded_is_read():
    """Recorded under the legacy prefix by a trigger before the triggerer was upgraded: the next run goes on from it;
    one recorded since (under the new prefix) wins."""
    cursor = LogCursor(since=stamp(T0), at_since=1, lines=7, size=70)
    job = {"metadata": {"annotations": {ANNOTATION_LEAD_LOG_CURSOR: cursor_annotation(cursor, 2)}}}
    legacy = as_legacy(job)
    assert ANNOTATION_LEAD_LOG_CURSOR not in legacy["metadata"]["annotations"]
    assert cursor_on_job(legacy, 2) == cursor and cursor_on_job(legacy, 3) is None
    newer = LogCursor(since=stamp(T0 + 1), at_since=1, lines=9, size=90)
    legacy["metadata"]["annotations"][ANNOTATION_LEAD_LOG_CURSOR] = cursor_annotation(newer, 2)
    assert cursor_on_job(legacy, 2) == newer
