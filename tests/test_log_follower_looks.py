"""The lead log follower's decisions (log_stream), without a cluster: when a run's stream is opened again, and how
a follow stream's chunks become lines. The follower against the real apiserver and process kubelet is in
tests/operators/test_training_job.py and tests/operators/test_sync_wait_watches.py."""

from __future__ import annotations

import logging
import time

import pytest

from airflow_trainjob.families import family_of
from airflow_trainjob.watching.lead_log_follower import LeadLogFollower
from tests.support.fake_hook import FakeTrainingJobHook

LOG = logging.getLogger("tests.log_follower_looks")
JOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "train", "namespace": "ml"}}


def follower_of(**pod: object) -> tuple[FakeTrainingJobHook, LeadLogFollower]:
    hook = FakeTrainingJobHook(namespace="ml")
    hook.put_job({**JOB, "spec": {}})
    lead = hook.add_pod("train", "Master", log="one\ntwo\n", **pod)
    return hook, LeadLogFollower(hook, family_of("PyTorchJob"), "train", "ml", LOG, pods=lambda: [lead])


def copied(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOG.name]


def test_a_running_run_whose_stream_ended_is_opened_again_at_its_reopen_time_or_for_the_drain(caplog):
    caplog.set_level(logging.INFO, LOG.name)
    hook, follower = follower_of()
    follower._follow_once()
    assert copied(caplog) == ["[Master-0] one", "[Master-0] two"]
    assert follower._reopen_at > time.monotonic()  # the stream ended while the container runs
    follower._follow_once()
    assert len(hook.called("open_pod_log_stream")) == 1  # not before its reopen time
    follower._reopen_at = time.monotonic() - 1
    follower._follow_once()
    assert len(hook.called("open_pod_log_stream")) == 2  # its reopen time came
    follower._reopen_at = time.monotonic() + 60
    follower._draining = True
    follower._follow_once()
    assert len(hook.called("open_pod_log_stream")) == 3  # the job ended: its rest is read at once
    assert copied(caplog) == ["[Master-0] one", "[Master-0] two"]  # each line once


def test_a_finished_run_followed_to_its_end_is_never_opened_again():
    hook, follower = follower_of(phase="Succeeded", exit_code=0)
    follower._follow_once()
    follower._draining = True
    follower._reopen_at = 0.0
    follower._follow_once()
    assert len(hook.called("open_pod_log_stream")) == 1


def test_a_pending_lead_is_not_followed():
    hook, follower = follower_of(phase="Pending")
    follower._follow_once()
    assert hook.called("open_pod_log_stream") == []


class Chunks:
    """A follow stream answering in the given chunks."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    def stream(self, decode_content: bool = True):
        yield from self.chunks


def test_chunks_become_whole_lines_and_a_last_line_without_its_newline_counts():
    _, follower = follower_of()
    stream = Chunks(b"ep", b"och 1\nepoch", b" 2\n\nloss=0.", b"3")
    assert list(follower._stream_lines(stream)) == [b"epoch 1", b"epoch 2", b"", b"loss=0.3"]


def test_a_stop_ends_the_lines_after_the_chunk_read_and_drops_its_unfinished_line():
    _, follower = follower_of()
    lines = []
    for line in follower._stream_lines(Chunks(b"a\nb\nhalf", b" line\nc\n")):
        lines.append(line)
        if line == b"a":
            follower._stopped.set()  # stop() from the task's thread, while the chunk's lines are written
    assert lines == [b"a", b"b"]
