"""hooks/retries.py: which failures are retried, and how long to wait."""

from __future__ import annotations

import asyncio
import contextvars

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError

from airflow_trainjob.hooks import retries


def api_error(status, headers=None):
    error = ApiException(status=status, reason="test")
    error.headers = headers or {}
    return error


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_transient_statuses_are_retried(status):
    assert retries.is_transient(api_error(status))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 410, 422])
def test_answers_are_not_retried(status):
    assert not retries.is_transient(api_error(status))


def test_connection_errors_are_retried():
    assert retries.is_transient(ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")))
    assert retries.is_transient(ConnectionRefusedError())


def test_retry_after():
    assert retries.retry_after_seconds(api_error(429, {"Retry-After": "3"})) == 3.0
    assert retries.retry_after_seconds(api_error(429, {"Retry-After": "3600"})) == retries.RETRY_AFTER_CAP
    assert retries.retry_after_seconds(api_error(429, {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"})) is None
    assert retries.retry_after_seconds(api_error(500, {"Retry-After": "3"})) is None


def test_decorated_call_retries_then_returns():
    waits = []
    answers = [api_error(503), api_error(429, {"Retry-After": "2"}), "ok"]

    @retries.retry_transient
    def call():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert call.retry_with(sleep=waits.append)() == "ok"  # record the waits instead of sleeping
    assert len(waits) == 2 and waits[1] == 2.0


def test_decorated_call_raises_answers_at_once():
    calls = []

    @retries.retry_transient
    def call():
        calls.append(1)
        raise api_error(403)

    with pytest.raises(ApiException):
        call()
    assert calls == [1]


def test_backoff_doubles_from_wait_min_up_to_wait_max():
    """The backoff's real shape (fault tests run it at a hundredth of its length: tests/support/faults.py): a
    call that keeps failing waits exponentially longer between its ATTEMPTS attempts, never longer than WAIT_MAX."""
    waits = []

    @retries.retry_transient
    def call():
        raise api_error(503)

    with pytest.raises(ApiException):
        call.retry_with(sleep=waits.append)()
    assert len(waits) == retries.ATTEMPTS - 1
    assert waits == [min(retries.WAIT_MAX, max(retries.WAIT_MIN, 2.0**n)) for n in range(retries.ATTEMPTS - 1)]
    assert waits == sorted(waits) and waits[-1] == retries.WAIT_MAX  # it grows until the cap, which it reaches


def test_no_retries_gives_one_attempt_to_calls_and_the_tasks_they_start():
    """The UI's reads (``no_retries``) fail at their first transient failure; outside the block, and in another
    task of the loop, the same call retries as before."""
    attempts: list[str] = []

    @retries.retry_transient
    async def call(who: str) -> None:
        attempts.append(who)
        raise ConnectionRefusedError("refused")

    async def main() -> None:
        quick = call.retry_with(sleep=lambda seconds: asyncio.sleep(0))
        with retries.no_retries():
            with pytest.raises(ConnectionRefusedError):
                await asyncio.create_task(quick("ui"))  # a task started in the block inherits it
            other = contextvars.Context().run(asyncio.ensure_future, quick("task"))  # another task's context
        with pytest.raises(ConnectionRefusedError):
            await other

    asyncio.run(main())
    assert attempts.count("ui") == 1
    assert attempts.count("task") == retries.ATTEMPTS
