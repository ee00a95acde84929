"""API answers as both Kubernetes clients turn them into an ``ApiException``, for the tests of how the provider
describes and classifies them (tests/test_api_errors.py, tests/test_one_line.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException

#: Each client's exception for an API answer, by the client's name (the ids of the tests' ``answer`` fixtures).
CLIENT_EXCEPTIONS: dict[str, type[ApiException] | type[AsyncApiException]] = {
    "kubernetes": ApiException,
    "kubernetes_asyncio": AsyncApiException,
}


class Response:
    """What both clients build an ``ApiException`` from: status, reason phrase, body bytes, headers."""

    def __init__(self, code: int, phrase: str, body: str, headers: Mapping[str, str]):
        self.status, self.reason, self.data, self.headers = code, phrase, body.encode(), headers

    def getheaders(self) -> Mapping[str, str]:
        return self.headers


def raised(exception_class: type[ApiException] | type[AsyncApiException], response: Response) -> Any:
    """The exception ``exception_class`` raises for ``response``, its body decoded as the clients' ApiClient does."""
    error: Any = exception_class(http_resp=response)
    error.body = error.body.decode()
    return error
