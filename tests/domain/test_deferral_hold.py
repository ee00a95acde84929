"""How long a trigger holds an event decided soon after its task deferred (Airflow's race around the resume)."""

from __future__ import annotations

import pytest

from airflow_trainjob.domain.deferral_hold import DEFAULT_MIN_DEFERRAL_SECONDS, hold_seconds


@pytest.mark.parametrize(
    ("seconds_since_deferral", "min_deferral", "held"),
    [
        (0.0, 10.0, 10.0),  # decided at the deferral: the whole hold
        (3.5, 10.0, 6.5),  # the rest of it
        (10.0, 10.0, 0.0),  # just over: fires at once
        (600.0, 10.0, 0.0),  # a trigger run again long after (a triggerer restarted): no hold again
        (-30.0, 10.0, 10.0),  # a clock set back: never more than the hold
        (1.0, 0.0, 0.0),  # turned off
        (1.0, -5.0, 0.0),  # a negative setting is off, not an error
    ],
)
def test_an_event_waits_out_what_is_left_of_the_hold(seconds_since_deferral, min_deferral, held):
    deferred_at = 1_700_000_000.0
    assert hold_seconds(deferred_at, deferred_at + seconds_since_deferral, min_deferral) == pytest.approx(held)


def test_the_hold_is_off_unless_configured():
    assert DEFAULT_MIN_DEFERRAL_SECONDS == 0
