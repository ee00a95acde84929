"""The reconnect backoff of the synchronous wait (job_watch) and of the trigger's shared stream (job_stream): its
real shape. Fault tests run it at a hundredth of its length (tests/support/faults.py); these tests keep the shape."""

from __future__ import annotations

from itertools import pairwise

import pytest

from airflow_trainjob import job_watch
from airflow_trainjob.triggers import job_stream


@pytest.mark.parametrize("module", [job_watch, job_stream], ids=["job_watch", "job_stream"])
def test_reconnect_backoff_doubles_from_its_minimum_to_its_cap(module):
    waits = [module._backoff(failures) for failures in range(1, 12)]
    assert waits[0] == module.BACKOFF_MIN
    assert all(later == min(module.BACKOFF_MAX, 2 * earlier) for earlier, later in pairwise(waits))
    assert waits[-1] == module.BACKOFF_MAX  # capped, and reached
    assert module._backoff(0) == module.BACKOFF_MIN  # no failure yet counts as the first
