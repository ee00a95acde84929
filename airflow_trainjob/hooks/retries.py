"""Retrying Kubernetes API calls through transient failures, with tenacity: one policy for the sync hook
(``kubernetes``, urllib3) and the async hook (``kubernetes_asyncio``, aiohttp), on the classification of
:mod:`airflow_trainjob.hooks.api_errors` (:func:`~airflow_trainjob.hooks.api_errors.is_transient`; its names are importable from
here too).

Retried: 429 (waiting as long as ``Retry-After`` says), 500, 502, 503, 504, and connection-level
errors (reset, refused, read timeout). Everything else — above all 401/403, 404 and 409, which are
answers, not accidents — is raised at once. :func:`retry_transient` decorates plain and ``async`` functions alike
(tenacity sleeps with ``asyncio.sleep`` for a coroutine function: the event loop is never blocked).

A caller that must answer at once (a page of the UI, whose user is waiting) makes its calls inside
:func:`no_retries`: each is tried once and its first failure raised.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import tenacity

from airflow_trainjob.hooks.api_errors import (
    API_EXCEPTIONS,
    CONNECTION_ERRORS,
    TRANSIENT_STATUS_CODES,
    is_transient,
    one_line,
)

__all__ = [
    "API_EXCEPTIONS",
    "ATTEMPTS",
    "CONNECTION_ERRORS",
    "RETRY_AFTER_CAP",
    "TRANSIENT_STATUS_CODES",
    "WAIT_MAX",
    "WAIT_MIN",
    "is_transient",
    "no_retries",
    "retry_after_seconds",
    "retry_transient",
]

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

#: Attempts per call, including the first.
ATTEMPTS = 6
#: Exponential backoff bounds, seconds.
WAIT_MIN, WAIT_MAX = 0.5, 16.0
#: The longest Retry-After we honour, seconds (a larger one is capped, not obeyed blindly).
RETRY_AFTER_CAP = 60.0

#: Set by :func:`no_retries`: the calls made in this context (and the asyncio tasks it starts) get one attempt.
_NO_RETRIES: contextvars.ContextVar[bool] = contextvars.ContextVar("airflow_trainjob_no_retries", default=False)


@contextlib.contextmanager
def no_retries() -> Iterator[None]:
    """Within the block, a call decorated by :func:`retry_transient` makes one attempt and raises its failure: for a
    reader that answers a person now (the UI) rather than a task that may wait. A context variable: it holds for the
    coroutines awaited in the block and the asyncio tasks started there, not for other tasks of the loop.
    """
    token = _NO_RETRIES.set(True)
    try:
        yield
    finally:
        _NO_RETRIES.reset(token)


class _StopWhenNoRetries(tenacity.stop.stop_base):
    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        return _NO_RETRIES.get()


def retry_after_seconds(exc: BaseException | None) -> float | None:
    """The ``Retry-After`` of a 429/503 answer in seconds (capped at :data:`RETRY_AFTER_CAP`), if it gave one as a
    number.

    :param exc: the exception the last attempt raised, or None.
    """
    if not isinstance(exc, API_EXCEPTIONS) or exc.status not in (429, 503):
        return None
    value = (exc.headers or {}).get("Retry-After")
    try:
        return min(float(value), RETRY_AFTER_CAP) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to backoff


class _WaitRetryAfterOrBackoff(tenacity.wait.wait_base):
    def __init__(self) -> None:
        self._backoff = tenacity.wait_exponential(min=WAIT_MIN, max=WAIT_MAX)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        server_says = retry_after_seconds(exc)
        return server_says if server_says is not None else self._backoff(retry_state)


def _log_retry(retry_state: tenacity.RetryCallState) -> None:
    """Say which call is retried, when, and why in one line (tenacity's own ``before_sleep_log`` prints ``str()``
    of the exception: an ``ApiException``'s is its response headers and body)."""
    exc = retry_state.outcome.exception() if retry_state.outcome else None
    seconds = retry_state.next_action.sleep if retry_state.next_action else 0.0
    name = getattr(retry_state.fn, "__qualname__", "a Kubernetes API call")
    log.warning(
        "Retrying %s in %.1f s (attempt %d of %d failed: %s)",
        name,
        seconds,
        retry_state.attempt_number,
        ATTEMPTS,
        one_line(exc) if exc is not None else "no error",
    )


def retry_transient(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a Kubernetes API call (a function or a coroutine function) to retry transient failures, then
    re-raise the last one (at once, without a retry, inside :func:`no_retries`).

    :param func: the call to decorate: a function or a coroutine function; the wrapper keeps its signature.
    """
    return tenacity.retry(
        stop=tenacity.stop_after_attempt(ATTEMPTS) | _StopWhenNoRetries(),
        wait=_WaitRetryAfterOrBackoff(),
        retry=tenacity.retry_if_exception(is_transient),
        reraise=True,
        before_sleep=_log_retry,
    )(func)
