"""``api_errors.one_line``: the one-line description of any error of an API call — either client's
``ApiException``, what the hooks raise for one, and errors that got no answer (no cluster). Never a response
header, a body beyond the Status' message, or a credential."""

from __future__ import annotations

import asyncio
import functools
import logging

import aiohttp
import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException
from urllib3 import HTTPHeaderDict
from urllib3.exceptions import MaxRetryError, ProtocolError, ReadTimeoutError

from airflow_trainjob.hooks import retries
from airflow_trainjob.hooks.api_errors import (
    RAISED_ERRORS,
    ApiCall,
    QuietApiException,
    Refusal,
    describe,
    exception_for,
    one_line,
)
from tests.support import api_answers

TOKEN = "eyJhbGciOiJSUzI1NiJ9.secret-token-7f3a"
HEADERS = HTTPHeaderDict(
    {
        "Audit-Id": "0f6c1d9e-2b7a",
        "Content-Type": "application/json",
        "Www-Authenticate": f"Bearer {TOKEN}",
        "Set-Cookie": f"session={TOKEN}",
    }
)
GET = ApiCall.for_job("get", "PyTorchJob", "team-a", "train-1", purpose="read a training job")
LIST = ApiCall.for_job("list or watch", "PyTorchJob", "team-a")
FORBIDDEN = (
    '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pytorchjobs.kubeflow.org '
    '\\"train-1\\" is forbidden: User \\"system:serviceaccount:team-a:airflow\\" cannot get resource '
    '\\"pytorchjobs\\" in API group \\"kubeflow.org\\" in the namespace \\"team-a\\"","reason":"Forbidden",'
    '"details":{"name":"train-1","group":"kubeflow.org","kind":"pytorchjobs"},"code":403}'
)
UNAVAILABLE = '{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcd is down","reason":"ServiceUnavailable","code":503}'


Response = functools.partial(api_answers.Response, headers=HEADERS)


@pytest.fixture(params=list(api_answers.CLIENT_EXCEPTIONS))
def answer(request):
    """The exception the sync or the async client raises for a response (headers holding a token)."""
    exception_class = api_answers.CLIENT_EXCEPTIONS[request.param]

    def make(code: int, phrase: str, body: str):
        error = api_answers.raised(exception_class, Response(code, phrase, body))
        assert TOKEN in str(error)  # the raw exception prints its headers: what one_line must never do
        return error

    return make


def assert_clean(line: str) -> None:
    assert "\n" not in line and TOKEN not in line
    assert "HTTP response headers" not in line and "Audit-Id" not in line and "HTTPHeaderDict" not in line


def test_an_answer_of_either_client_is_one_clean_line(answer):
    line = one_line(answer(403, "Forbidden", FORBIDDEN), GET, "kubernetes_default")
    assert_clean(line)
    assert line.startswith(
        'RBAC does not allow user "system:serviceaccount:team-a:airflow" to get '
        'pytorchjobs.kubeflow.org in namespace "team-a"'
    )
    assert "needed to read a training job" in line and "'kubernetes_default'" in line


def test_both_clients_are_described_alike():
    sync = ApiException(http_resp=Response(503, "Service Unavailable", UNAVAILABLE))
    asynchronous = AsyncApiException(http_resp=Response(503, "Service Unavailable", UNAVAILABLE))
    for error in (sync, asynchronous):
        error.body = error.body.decode()
    assert (
        one_line(sync, LIST)
        == one_line(asynchronous, LIST)
        == ("503 ServiceUnavailable to list or watch pytorchjobs.kubeflow.org in namespace team-a: etcd is down")
    )
    assert describe(asynchronous, LIST).refusal is Refusal.TRANSIENT


def test_an_answer_without_a_call_still_says_what_happened(answer):
    line = one_line(answer(503, "Service Unavailable", UNAVAILABLE))
    assert_clean(line)
    assert line == "503 ServiceUnavailable to serve the request: etcd is down"


def test_what_the_hooks_raise_keeps_its_own_line(answer):
    raised = exception_for(
        answer(404, "Not Found", '{"kind":"Status","reason":"NotFound","details":{"name":"train-1"},"code":404}'), GET
    )
    assert isinstance(raised, QuietApiException) and isinstance(raised, RAISED_ERRORS)
    assert one_line(raised) == one_line(raised, LIST) == "PyTorchJob team-a/train-1 does not exist (404 NotFound)"
    refused = exception_for(answer(403, "Forbidden", FORBIDDEN), GET, "conn")
    assert isinstance(refused, RAISED_ERRORS) and one_line(refused) == str(refused)
    assert_clean(str(refused))


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connection refused"),
        ConnectionResetError(104, "Connection reset by peer"),
        TimeoutError("timed out"),
        asyncio.TimeoutError(),
        ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")),
        ReadTimeoutError(None, "/apis", "Read timed out. (read timeout=60.0)"),
        MaxRetryError(None, "/apis/kubeflow.org/v1", ConnectionRefusedError(111, "refused")),
        aiohttp.ServerDisconnectedError(),
        aiohttp.ClientPayloadError("Response payload is not completed"),
        aiohttp.ClientConnectionError("Cannot connect to host 10.0.0.1:6443"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_without_an_answer(error):
    line = one_line(error, GET)
    assert_clean(line)
    assert line.startswith(type(error).__name__)
    assert line.endswith("(no answer to get PyTorchJob team-a/train-1)")
    assert describe(error, GET).refusal is Refusal.TRANSIENT
    assert retries.is_transient(error)
    assert one_line(error) == line.removesuffix(" (no answer to get PyTorchJob team-a/train-1)")


def test_an_error_without_words_is_named_by_its_type():
    assert one_line(asyncio.TimeoutError()) == "TimeoutError"
    assert one_line(aiohttp.ServerDisconnectedError()) == "ServerDisconnectedError: Server disconnected"


def test_other_errors_are_not_transient():
    assert describe(ValueError("bad\nvalue"), GET).refusal is Refusal.OTHER
    assert (
        one_line(ValueError("bad\nvalue"), GET) == "ValueError: bad value"
    )  # no "no answer": it is no transport error


def test_a_retried_call_logs_one_line_per_retry(answer, caplog):
    """tenacity's own retry log prints ``str()`` of the exception, headers and all: the hooks' does not."""
    failures = [answer(503, "Service Unavailable", UNAVAILABLE)]

    @retries.retry_transient
    def call():
        if failures:
            raise failures.pop()
        return "ok"

    with caplog.at_level(logging.WARNING, logger=retries.log.name):
        assert call.retry_with(sleep=lambda _: None)() == "ok"
    (record,) = [r for r in caplog.records if r.name == retries.log.name]
    message = record.getMessage()
    assert_clean(message)
    assert "attempt 1 of" in message and "503 ServiceUnavailable" in message and "etcd is down" in message
