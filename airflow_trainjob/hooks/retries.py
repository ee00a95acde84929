"""Retrying Kubernetes API calls through transient failures, with tenacity.

Retried: 429 (waiting as long as ``Retry-After`` says), 500, 502, 503, 504, and connection-level
errors (reset, refused, read timeout). Everything else — above all 401/403, 404 and 409, which are
answers, not accidents — is raised at once.
"""

from __future__ import annotations

import logging

import tenacity
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

log = logging.getLogger(__name__)

TRANSIENT_STATUS_CODES = frozenset({429, 500, 502, 503, 504})
#: Attempts per call, including the first.
ATTEMPTS = 6
#: Exponential backoff bounds, seconds.
WAIT_MIN, WAIT_MAX = 0.5, 16.0
#: The longest Retry-After we honour, seconds (a larger one is capped, not obeyed blindly).
RETRY_AFTER_CAP = 60.0


def is_transient(exc: BaseException) -> bool:
    """True for the failures worth another attempt."""
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUS_CODES
    return isinstance(exc, (HTTPError, ConnectionError, TimeoutError))


def retry_after_seconds(exc: BaseException | None) -> float | None:
    """The ``Retry-After`` of a 429/503 answer in seconds, if it gave one as a number."""
    if not isinstance(exc, ApiException) or exc.status not in (429, 503):
        return None
    value = (exc.headers or {}).get("Retry-After")
    try:
        return min(float(value), RETRY_AFTER_CAP) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to backoff


class _WaitRetryAfterOrBackoff(tenacity.wait.wait_base):
    def __init__(self):
        self._backoff = tenacity.wait_exponential(min=WAIT_MIN, max=WAIT_MAX)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        server_says = retry_after_seconds(exc)
        return server_says if server_says is not None else self._backoff(retry_state)


def retry_transient(func):
    """Decorate a Kubernetes API call to retry transient failures, then re-raise the last one."""
    return tenacity.retry(
        stop=tenacity.stop_after_attempt(ATTEMPTS),
        wait=_WaitRetryAfterOrBackoff(),
        retry=tenacity.retry_if_exception(is_transient),
        reraise=True,
        before_sleep=tenacity.before_sleep_log(log, logging.WARNING),
    )(func)
