"""The reconnect backoff of the synchronous wait (job_watch), of the trigger's shared stream (job_stream) and of the
lead log's follow stream (lead_log_follower), one rule (``watching.list_watch.doubling``) with each its own bounds,
which each driver's list-then-watch rules (``list_watch_rules``) hand its policy: its real shape. Fault tests run it
at a hundredth of its length (tests/support/faults.py); these tests keep the shape."""

from __future__ import annotations

from itertools import pairwise

import pytest

from airflow_trainjob.watching import job_stream, job_watch, lead_log_follower


def backoff(module, failures: int) -> float:
    """The driver's backoff after ``failures`` in a row, as its list-then-watch policy gets it."""
    return module.list_watch_rules(poll_interval=10.0).backoff(failures)


@pytest.mark.parametrize("module", [job_watch, job_stream], ids=["job_watch", "job_stream"])
def test_reconnect_backoff_doubles_from_its_minimum_to_its_cap(module):
    waits = [backoff(module, failures) for failures in range(1, 12)]
    assert waits[0] == module.BACKOFF_MIN
    assert all(later == min(module.BACKOFF_MAX, 2 * earlier) for earlier, later in pairwise(waits))
    assert waits[-1] == module.BACKOFF_MAX  # capped, and reached
    assert backoff(module, 0) == module.BACKOFF_MIN  # no failure yet counts as the first


@pytest.mark.parametrize("module", [job_watch, job_stream], ids=["job_watch", "job_stream"])
def test_reconnect_backoff_stays_at_its_cap_however_many_failures(module):
    """A stream refused for hours counts past 1,025 failures (job_stream's refusals in a row, 30 s apart: 8.5 h),
    where ``BACKOFF_MIN * 2 ** (failures - 1)`` raised OverflowError and ended the stream's retrying."""
    assert backoff(module, 2_000) == module.BACKOFF_MAX
    assert backoff(module, 10**9) == module.BACKOFF_MAX


def test_lead_log_reopen_delay_stays_at_its_cap_however_many_reopens():
    assert lead_log_follower.reopen_delay(2_000) == lead_log_follower.REOPEN_MAX


@pytest.mark.parametrize("module", [job_watch, job_stream], ids=["job_watch", "job_stream"])
def test_reconnect_backoff_reads_its_bounds_when_called(module, monkeypatch):
    """Fault tests shorten the backoff by patching the module's bounds (tests/support/faults.py): each call reads them
    (the drivers make their rules when they start following)."""
    monkeypatch.setattr(module, "BACKOFF_MIN", 0.25)
    monkeypatch.setattr(module, "BACKOFF_MAX", 0.75)
    assert [backoff(module, n) for n in range(1, 4)] == [0.25, 0.5, 0.75]


def test_lead_log_reopen_delay_reads_its_bounds_when_called(monkeypatch):
    monkeypatch.setattr(lead_log_follower, "LOOK_INTERVAL", 0.25)
    monkeypatch.setattr(lead_log_follower, "REOPEN_MAX", 0.75)
    assert [lead_log_follower.reopen_delay(n) for n in range(1, 4)] == [0.25, 0.5, 0.75]
