"""Who may update a TrainJob's status: the bearer token of a status update, checked by the real apiserver.

Upstream (``pkg/statusserver/auth.go``) verifies the projected service-account token itself against the cluster's
OIDC issuer, with the audience ``trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status``, and
requires its ``kubernetes.io.namespace`` claim to be the TrainJob's namespace. The 1.20 apiserver serves no OIDC
discovery, so this asks it instead with a TokenReview naming that audience (what the KEP, proposal 2779, first
described): the apiserver checks the signature, expiry, audience and the pod the token is bound to.

Upstream answers 403 to every refusal; here a missing, malformed or unknown token gets 401 and only a genuine
token that is not for this TrainJob (another TrainJob's audience, another namespace) gets 403: a token the
apiserver authenticates for the audiences it claims is genuine.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from typing import Any

from kubernetes import client

from airflow_trainjob_local.trainer.trainjob_status import token_audience

__all__ = ["TokenReviewAuthorizer", "Verdict", "bearer_token", "claimed_audiences", "service_account_namespace"]

SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:"


class Verdict(enum.Enum):
    """The outcome of checking a request's token."""

    ALLOWED = "allowed"
    #: No token, or one the apiserver does not authenticate: 401.
    UNAUTHENTICATED = "unauthenticated"
    #: A genuine token, not for this TrainJob: 403.
    FORBIDDEN = "forbidden"


def bearer_token(header: str | None) -> str | None:
    """The credentials of an RFC 7235 ``Bearer`` Authorization header (scheme case-insensitive, any whitespace),
    or ``None`` when the header does not carry exactly one, as upstream's ``extractRawToken``.

    :param header: the ``Authorization`` header's value, if any.
    """
    parts = (header or "").split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    return parts[1]


def claimed_audiences(token: str) -> list[str]:
    """The ``aud`` claim of a JWT, read WITHOUT verifying it (only to ask the apiserver whether the token is genuine
    for what it claims); ``[]`` when it is not a JWT.

    :param token: the raw bearer token.
    """
    parts = token.split(".")
    if len(parts) != 3:
        return []
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return []
    aud = claims.get("aud") if isinstance(claims, dict) else None
    if isinstance(aud, str):
        return [aud]
    return [a for a in aud if isinstance(a, str)] if isinstance(aud, list) else []


def service_account_namespace(username: str) -> str | None:
    """The namespace of a ``system:serviceaccount:<namespace>:<name>`` user, else ``None``.

    :param username: ``status.user.username`` of a TokenReview.
    """
    if not username.startswith(SERVICE_ACCOUNT_USER_PREFIX):
        return None
    namespace, sep, _name = username[len(SERVICE_ACCOUNT_USER_PREFIX) :].partition(":")
    return namespace if sep else None


class TokenReviewAuthorizer:
    """Checks status-update tokens with TokenReviews (the caller needs ``create`` on ``tokenreviews``).

    :param api_client: client for the cluster.
    """

    def __init__(self, api_client: client.ApiClient) -> None:
        self.auth = client.AuthenticationV1Api(api_client)

    def authorize(self, header: str | None, namespace: str, name: str) -> Verdict:
        """May the request with Authorization ``header`` update TrainJob ``namespace/name``?

        :param header: the request's ``Authorization`` header.
        :param namespace: the TrainJob's namespace (from the URL).
        :param name: the TrainJob's name (from the URL).
        :raises kubernetes.client.exceptions.ApiException: a TokenReview failed (the server answers 500).
        """
        token = bearer_token(header)
        if token is None:
            return Verdict.UNAUTHENTICATED
        audience = token_audience(namespace, name)
        review = self._review(token, [audience])
        if review.get("authenticated") and audience in (review.get("audiences") or []):
            user = (review.get("user") or {}).get("username") or ""
            return Verdict.ALLOWED if service_account_namespace(user) == namespace else Verdict.FORBIDDEN
        others = [aud for aud in claimed_audiences(token) if aud != audience]
        if others and self._review(token, others).get("authenticated"):
            return Verdict.FORBIDDEN
        return Verdict.UNAUTHENTICATED

    def _review(self, token: str, audiences: list[str]) -> dict[str, Any]:
        body = client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token, audiences=audiences))
        status = self.auth.create_token_review(body).status
        return self.auth.api_client.sanitize_for_serialization(status) or {}
