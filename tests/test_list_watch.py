"""The list-then-watch policy (watching/list_watch.py) without a cluster: every decision the synchronous wait's
watches and the shared stream take from it, on each driver's rules. A script of what happened (a list answered, a
watch lasted or ended at once, a 410, a failure) is fed to a policy; the trail is the requests it asked for, in
order, and the waits it returned, as the driver makes them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from airflow_trainjob.watching import list_watch
from airflow_trainjob.watching.list_watch import (
    SHORTEST_HEALTHY_WATCH,
    WATCH_FAILURES_BEFORE_POLLING,
    Action,
    ListWatch,
    ListWatchRules,
    Step,
    doubling,
)

#: The synchronous wait's rules (job_watch.list_watch_rules), with a 60 s poll_interval.
SYNC = ListWatchRules(
    poll_interval=60.0,
    backoff_min=0.5,
    backoff_max=10.0,
    watch_retry_polls=6,
    relist_after_failure=False,
    slow_down_on_expiry=False,
)
#: The shared stream's rules (job_stream.list_watch_rules), with a 10 s poll_interval.
STREAM = ListWatchRules(
    poll_interval=10.0,
    backoff_min=1.0,
    backoff_max=30.0,
    watch_retry_polls=None,
    relist_after_failure=True,
    slow_down_on_expiry=True,
)

Outcome = Callable[[ListWatch], float | None]


def listed(version: str = "7") -> Outcome:
    return lambda policy: policy.listed(version)


LISTED = listed()
HEALTHY: Outcome = lambda policy: policy.watch_ended(delivered=False, seconds=900.0)
DELIVERED: Outcome = lambda policy: policy.watch_ended(delivered=True, seconds=0.01)
SHORT: Outcome = lambda policy: policy.watch_ended(delivered=False, seconds=0.01)
FAILED: Outcome = lambda policy: policy.failed(transient=True)
REFUSED: Outcome = lambda policy: policy.failed(transient=False)
GONE: Outcome = lambda policy: policy.expired()
READ_FAILED: Outcome = lambda policy: policy.read_failed()


def trail(policy: ListWatch, outcomes: list[Outcome]) -> list[str]:
    """Each step the policy asks for (``list``, ``poll 60``, ``watch 7``), then the wait the outcome fed to it
    returns (``wait 0.5``; none when 0)."""
    seen = []
    for outcome in outcomes:
        step = policy.next_step()
        if step.action is Action.POLL:
            seen.append(f"poll {step.wait:g}")
        elif step.action is Action.WATCH:
            seen.append(f"watch {step.resource_version}")
        else:
            seen.append("list")
        wait = outcome(policy)
        if wait:
            seen.append(f"wait {wait:g}")
    return seen


def started(rules: ListWatchRules, version: str | None = "7") -> ListWatch:
    policy = ListWatch(rules)
    policy.listed(version)
    return policy


# ---- the one backoff rule ----------------------------------------------------------------------------------------


def test_doubling_starts_at_low_doubles_per_failure_and_stops_at_high():
    """The reconnects' one backoff rule (job_watch, job_stream, log_stream): no failure yet counts as the first."""
    assert doubling(0, 0.5, 10.0) == 0.5
    assert [doubling(n, 0.5, 10.0) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert [doubling(n, 1.0, 8.0) for n in range(1, 6)] == [1.0, 2.0, 4.0, 8.0, 8.0]  # the cap, reached exactly
    assert doubling(-3, 2.0, 30.0) == 2.0


@pytest.mark.parametrize("failures", [1_025, 1_100, 10**6, 10**18])
def test_doubling_gives_the_cap_however_many_failures_without_overflow(failures):
    """``low * 2 ** (failures - 1)`` raises OverflowError past about 1,025 failures in a row (a Role refusing the
    stream for hours); the doubling stops at the cap instead."""
    assert doubling(failures, 0.5, 10.0) == 10.0


def test_doubling_from_the_smallest_float_reaches_the_cap():
    assert doubling(2_000, 5e-324, 30.0) == 30.0  # 2**-1074, doubled 1,079 times and more: the cap
    assert doubling(1_025, 5e-324, 30.0) == 2.0**-50  # still doubling exactly on the way up


@pytest.mark.parametrize("rules", [SYNC, STREAM], ids=["sync", "stream"])
def test_the_backoff_after_failed_watches_doubles_within_the_rules_bounds(rules):
    policy = started(rules)
    waits = [policy.failed(transient=True) for _ in range(12)]
    assert waits[0] == rules.backoff_min
    assert waits == sorted(waits) and max(waits) == waits[-1] == rules.backoff_max
    assert rules.backoff(10**9) == rules.backoff_max


def test_each_driver_hands_the_policy_its_own_rules():
    from airflow_trainjob.watching import job_stream, job_watch

    assert job_watch.list_watch_rules(60.0) == SYNC
    assert job_stream.list_watch_rules(10.0) == STREAM


# ---- listing, then watching from what was read ---------------------------------------------------------------------


@pytest.mark.parametrize("rules", [SYNC, STREAM], ids=["sync", "stream"])
def test_it_lists_first_then_watches_from_the_lists_version_and_then_from_the_last_one_seen(rules):
    policy = ListWatch(rules)
    assert policy.next_step() == Step(Action.LIST)
    policy.listed("7")
    assert policy.next_step() == Step(Action.WATCH, resource_version="7")
    policy.saw("9")
    policy.saw(None)  # an event without a version changes nothing
    policy.saw("")
    assert policy.watch_ended(delivered=True, seconds=3.0) == 0.0
    assert policy.next_step() == Step(Action.WATCH, resource_version="9")


def test_a_job_as_created_is_its_first_read_even_without_a_version():
    policy = started(SYNC, None)
    assert policy.next_step() == Step(Action.WATCH, resource_version=None)


@pytest.mark.parametrize("rules", [SYNC, STREAM], ids=["sync", "stream"])
def test_a_watch_that_lasts_or_delivers_resets_the_counts(rules):
    for ended in (HEALTHY, DELIVERED):
        policy = started(rules)
        policy.failures, policy.expired_in_a_row = 2, 3
        assert ended(policy) == 0.0
        assert (policy.failures, policy.expired_in_a_row) == (0, 0)


@pytest.mark.parametrize("rules", [SYNC, STREAM], ids=["sync", "stream"])
def test_a_watch_that_ends_at_once_with_nothing_is_a_failure_watched_again_after_a_backoff(rules, monkeypatch):
    policy = started(rules)
    assert trail(policy, [SHORT, SHORT]) == [
        "watch 7",
        f"wait {rules.backoff(1):g}",
        "watch 7",  # from the same version: nothing was missed, nothing to list
        f"wait {rules.backoff(2):g}",
    ]
    assert policy.failures == 2
    # Just under the shortest healthy watch still counts; the constant is read when the policy decides.
    assert policy.watch_ended(delivered=False, seconds=SHORTEST_HEALTHY_WATCH - 0.01) == rules.backoff(3)
    monkeypatch.setattr(list_watch, "SHORTEST_HEALTHY_WATCH", 0.0)
    assert policy.watch_ended(delivered=False, seconds=0.0) == 0.0 and policy.failures == 0


# ---- failures: watched again from the last version, or listed again ---------------------------------------------


def test_after_a_transient_failure_the_synchronous_wait_watches_again_from_its_last_version():
    """Its server replays every change since that version, in order; the wait judges each one."""
    policy = started(SYNC)
    policy.next_step()
    policy.saw("8")  # an event arrived before the connection dropped
    assert policy.failed(transient=True) == 0.5
    assert policy.next_step() == Step(Action.WATCH, resource_version="8")


def test_after_a_transient_failure_the_stream_lists_again():
    """Its cache may have missed changes while the watch was down: it starts again from a consistent list."""
    policy = started(STREAM)
    assert trail(policy, [FAILED, listed("8"), HEALTHY]) == ["watch 7", "wait 1", "list", "watch 8"]


def test_a_refused_watch_polls_at_once_and_tries_a_watch_again_after_the_polls():
    policy = started(SYNC)
    assert trail(policy, [REFUSED, *[LISTED] * 6, HEALTHY]) == ["watch 7", *["poll 60"] * 6, "watch 7"]
    assert policy.failures == 0


# ---- polling after WATCH_FAILURES_BEFORE_POLLING failed watches ----------------------------------------------------


def test_the_synchronous_wait_polls_after_three_failures_and_tries_a_watch_every_sixth_read():
    policy = started(SYNC)
    assert WATCH_FAILURES_BEFORE_POLLING == 3 and SYNC.watch_retry_polls == 6
    assert trail(policy, [FAILED, SHORT, FAILED, *[LISTED] * 6, FAILED, *[LISTED] * 6, HEALTHY, HEALTHY]) == [
        "watch 7",
        "wait 0.5",
        "watch 7",
        "wait 1",
        "watch 7",
        "wait 2",
        *["poll 60"] * 6,
        "watch 7",  # after six reads, a watch again: it fails, and the count goes on (a longer backoff)
        "wait 4",
        *["poll 60"] * 6,
        "watch 7",
        "watch 7",  # it lasted: the counts are reset, no more polling
    ]
    assert (policy.failures, policy.polls) == (0, 0)


def test_a_poll_whose_read_fails_counts_as_a_poll_and_the_polling_goes_on():
    policy = started(SYNC)
    policy.failures = WATCH_FAILURES_BEFORE_POLLING
    assert trail(policy, [READ_FAILED, *[LISTED] * 5, HEALTHY]) == [*["poll 60"] * 6, "watch 7"]


def test_the_stream_lists_and_watches_in_turn_while_watches_keep_failing_each_backing_off_by_the_same_step():
    policy = ListWatch(STREAM)
    steps = trail(policy, [LISTED, FAILED, LISTED, FAILED, LISTED, FAILED, LISTED, LISTED, FAILED, LISTED, LISTED])
    assert steps == [
        "list",
        "watch 7",
        "wait 1",
        "list",
        "watch 7",
        "wait 2",
        "list",
        "watch 7",
        "wait 4",  # the third failure in a row: polling
        "list",
        "poll 10",  # a list after poll_interval...
        "watch 7",  # ...then a watch again, which fails again: the same backoff, not a longer one
        "wait 4",
        "list",
        "poll 10",
    ]
    assert policy.next_step() == Step(Action.WATCH, resource_version="7")


def test_the_stream_polls_once_more_for_each_list_that_failed_while_polling():
    policy = started(STREAM)
    policy.failures = WATCH_FAILURES_BEFORE_POLLING
    assert trail(policy, [FAILED, FAILED, LISTED, LISTED, LISTED, HEALTHY]) == [
        "poll 10",
        "wait 4",  # the poll's list failed: one failure more (3 -> 2 -> 3)...
        "list",
        "wait 8",  # ...and the relist's too (4)
        "list",
        "poll 10",
        "poll 10",  # 4 -> 3 -> 2: two polls before the watch
        "watch 7",
    ]


def test_a_short_watch_while_the_stream_polls_polls_again_without_a_list_first():
    policy = started(STREAM)
    policy.failures = WATCH_FAILURES_BEFORE_POLLING - 1
    assert trail(policy, [SHORT, LISTED, HEALTHY]) == ["watch 7", "wait 4", "poll 10", "watch 7"]


# ---- 410 Gone -----------------------------------------------------------------------------------------------------


def test_a_410_reads_again_at_once_in_the_synchronous_wait_every_time_without_touching_the_counts():
    policy = started(SYNC)
    policy.failures = 2
    assert trail(policy, [GONE, listed("20"), GONE, listed("30"), GONE]) == [
        "watch 7",
        "list",
        "watch 20",
        "list",
        "watch 30",
    ]
    assert (policy.failures, policy.expired_in_a_row) == (2, 0)


def test_a_410_whose_read_fails_watches_again_from_the_old_version_in_the_synchronous_wait():
    policy = started(SYNC)
    assert trail(policy, [GONE, READ_FAILED, HEALTHY]) == ["watch 7", "list", "watch 7"]


def test_a_410_that_repeats_slows_the_stream_down_until_a_watch_lasts():
    policy = started(STREAM)
    assert [policy.expired() for _ in range(4)] == [0.0, 1.0, 2.0, 4.0]  # the first lists at once
    policy.listed("8")  # a list answering does not reset it
    assert policy.expired() == 8.0
    policy.listed("9")
    policy.next_step()
    policy.watch_ended(delivered=True, seconds=0.5)
    assert policy.expired() == 0.0
    assert policy.next_step() == Step(Action.LIST)


def test_a_410_on_the_polls_list_lists_again_and_the_polling_goes_on():
    policy = started(STREAM)
    policy.failures = WATCH_FAILURES_BEFORE_POLLING + 1
    assert trail(policy, [GONE, LISTED, LISTED, HEALTHY]) == ["poll 10", "list", "poll 10", "watch 7"]


# ---- reads that fail --------------------------------------------------------------------------------------------


def test_a_first_read_that_fails_is_tried_again_after_the_longest_backoff():
    """The pods' first LIST: nothing to watch from yet."""
    policy = ListWatch(SYNC)
    assert trail(policy, [READ_FAILED, READ_FAILED, listed("3"), HEALTHY]) == [
        "list",
        "wait 10",
        "list",
        "wait 10",
        "list",
        "watch 3",
    ]
    assert policy.failures == 0
