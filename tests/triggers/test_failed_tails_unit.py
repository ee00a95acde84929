"""The failed runs' log tails a trigger reads while its job runs, pure: which runs it reads (one per source, the first
failures, bounded) and how its event carries them after the pods, within its budget. No cluster (the reads against
the apiserver: ``tests/operators/test_trainjob_operator.py``, ``tests/triggers/test_failed_pods_gone.py``)."""

from __future__ import annotations

import json
from collections import Counter

from airflow_trainjob.domain.failed_tails import BLANK_READS_PER_SOURCE, TAILS_QUOTED, settled_tails, tails_to_read
from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.operators.sync_wait import SynchronousWait
from airflow_trainjob.triggers.args import TriggerArgs
from airflow_trainjob.triggers.events import EVENT_BUDGET, FINISHED, MIN_TAIL_ROOM, event_payload, fit_tail
from tests.triggers.test_event_unit import job, pod


def end(replica: str, exit_code: int | None = 1, *, container: str = "pytorch", restarted: bool = False, **kw):
    return ContainerEnd(
        pod=f"train-{replica.lower()}", replica=replica, container=container, exit_code=exit_code, reason="Error",
        restarted=restarted, **kw,
    )  # fmt: skip


def test_each_failed_source_is_read_once_its_first_failed_run_and_no_succeeded_or_podless_end():
    earlier, later = end("Worker-0", restarted=True), end("Worker-0")
    ends = [end("Master-0", 0), earlier, end("Worker-1", container=""), later, end("Worker-2", 137)]
    assert tails_to_read(ends, set()) == [earlier, ends[4]]  # Worker-0's first failure: read from ``previous``
    assert tails_to_read(ends, {"Worker-0"}) == [ends[4]]
    assert tails_to_read(ends, {"Worker-0", "Worker-2"}) == []


def test_an_init_containers_failure_is_a_source_of_its_own():
    init = end("Master-0", container="fetch-data", init=True)
    assert [e.source for e in tails_to_read([init, end("Master-0")], set())] == [
        "Master-0 (initContainer fetch-data)",
        "Master-0",
    ]


def test_no_more_than_tails_quoted_sources_are_read_in_all():
    ends = [end(f"Worker-{i}") for i in range(TAILS_QUOTED + 5)]
    assert tails_to_read(ends, set()) == ends[:TAILS_QUOTED]
    done = {f"Worker-{i}" for i in range(3)}
    assert tails_to_read(ends, done) == ends[3:TAILS_QUOTED]
    assert tails_to_read(ends, {f"x{i}" for i in range(TAILS_QUOTED)}) == []


def test_a_blank_read_is_read_again_at_the_pods_next_state_until_it_has_been_blank_enough():
    """A run restarted in place between the sight of its end and the read reads the new run's log, often empty yet:
    read again (the pod's next state has the failure in ``lastState``: ``previous``), a few times at most."""
    blank: Counter[str] = Counter()
    assert settled_tails({"node-1": "", "node-0": "bad input\n"}, blank) == {"node-0": "bad input\n"}
    for _ in range(BLANK_READS_PER_SOURCE - 2):
        assert settled_tails({"node-1": " \n"}, blank) == {}
    assert settled_tails({"node-1": "\n"}, blank) == {"node-1": "\n"}  # settled: not read again
    assert settled_tails({"node-2": ""}, Counter({"node-2": 1})) == {} and BLANK_READS_PER_SOURCE > 2


def test_a_tail_that_fits_is_kept_whole_else_its_last_lines_after_a_note():
    text = "".join(f"step {i}\n" for i in range(100)) + "ValueError: bad input\n"
    assert fit_tail(text, 10_000) == text
    cut = fit_tail(text, 300)
    assert cut is not None and len(json.dumps(cut)) - 2 <= 300
    lines = cut.split("\n")
    assert lines[0].startswith("[cut to fit the trigger's event (2000 characters): ")
    assert lines[-1] == "ValueError: bad input" and lines[-2] == "step 99"  # the end kept, in order
    assert lines[0].endswith(f": {101 - (len(lines) - 1)} earlier line(s) left out]")


def test_a_last_line_too_long_keeps_its_end_and_no_room_keeps_nothing():
    text = "x" * 5000 + " the error at its end\n"
    cut = fit_tail(text, 200)
    assert cut is not None and len(json.dumps(cut)) - 2 <= 200
    assert cut.split("\n")[1].startswith("...x") and cut.endswith("the error at its end")
    assert fit_tail(text, 40) is None
    quoted = '"quoted"\t\u00e9' * 400  # escapes count as JSON has them
    assert len(json.dumps(fit_tail(quoted, 300))) - 2 <= 300


def test_the_event_carries_the_tails_after_the_pods_within_its_budget():
    pods = [pod(i, f"2026-12-02T05:04:{59 - i:02d}Z") for i in range(2)]
    tails = {"Worker-1": "loading\nValueError: bad input\n", "Worker-0": "bad too\n"}
    payload = event_payload(FINISHED, "PyTorchJob ml/train: Failed", job(), pods, tails=tails)
    assert len(payload["pods"]) == 2 and payload["tails"] == tails  # everything fits
    assert list(payload["tails"]) == ["Worker-1", "Worker-0"]  # in the order read: the first failure first

    long = {"Worker-1": "".join(f"line {i} " + "z" * 40 + "\n" for i in range(200)), "Worker-0": "w\n" * 500}
    payload = event_payload(FINISHED, "PyTorchJob ml/train: Failed", job(), pods, tails=long)
    assert len(json.dumps(payload)) <= EVENT_BUDGET
    assert len(payload["pods"]) == 2  # the pods first: the tails take what is left
    first = payload["tails"]["Worker-1"]
    assert first.startswith("[cut to fit") and first.endswith("line 199 " + "z" * 40)
    assert "Worker-0" not in payload["tails"]  # the first failure's tail took the room


def test_no_tails_key_without_tails_and_a_short_tail_fits_whole_in_what_the_pods_leave():
    assert "tails" not in event_payload(FINISHED, "m", job(), [], tails={"Worker-0": "  \n"})
    assert "tails" not in event_payload(FINISHED, "m", job(), [])
    pods = [pod(i, f"2026-12-02T05:04:{59 - i:02d}Z") for i in range(20)]
    message = "PyTorchJob ml/train: Failed" + "." * 60
    without = event_payload(FINISHED, message, job(), pods)
    left = EVENT_BUDGET - len(json.dumps(without))
    assert len(without["pods"]) == 3 and 40 < left < MIN_TAIL_ROOM  # the pods took nearly all of it
    short, long = "bad\n", "x" * 500 + "\n"
    payload = event_payload(FINISHED, message, job(), pods, tails={"Worker-18": long, "Worker-19": short})
    assert payload["pods"] == without["pods"]  # the pods first
    assert payload["tails"] == {"Worker-19": short}  # no room to cut the long one; the short one fits whole
    assert len(json.dumps(payload)) <= EVENT_BUDGET


def test_an_operators_wait_reads_tails_only_when_it_quotes_them_with_the_secrets_found():
    from airflow_trainjob.domain.params import RunSettings

    def args(lines: int, spans):
        return TriggerArgs.for_run(
            RunSettings(log_tail_lines=lines, get_logs=False),
            kind="TrainJob",
            metadata={"name": "a", "namespace": "ml", "uid": "u-1"},
            owner_labels={"x": "y"},
            try_number=1,
            started_at=1.0,
            secret_spans=spans,
        )

    assert args(50, []).failed_tails is True
    assert args(0, []).failed_tails is False  # quotes no tail
    assert args(50, None).failed_tails is False  # its secrets were not looked for: nothing read to mask
    assert TriggerArgs(kind="TrainJob", name="a", namespace="ml").failed_tails is False  # an earlier version's


def test_the_resumed_task_takes_the_events_tails_and_an_earlier_events_lack_of_them():
    from airflow_trainjob.domain.params import RunSettings

    def nothing(*args, **kwargs):
        return None

    wait = SynchronousWait(
        None,
        RunSettings(),
        None,
        kind=lambda: "TrainJob",
        watch=nothing,
        follower=nothing,
        pod_feed=nothing,
        stopped_by_airflow=lambda: False,
        on_seen=nothing,
        record_seen=nothing,
        record_due_in=nothing,
    )
    wait.read_before(None)  # an event of an earlier version's trigger: the verdict reads the logs itself
    assert wait.early_tails == {}
    wait.read_before({"node-1": "bad input\n"})
    assert wait.early_tails == {"node-1": "bad input\n"}  # what ending.verdict takes as its known_tails
