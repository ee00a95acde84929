"""What an error answer of the Kubernetes API means, in one line, and how a task fails on it.

The one place that reads a refused request: the hook, the sensor, the operator and the trigger's stream all
describe API errors here, for the official ``kubernetes`` client's ``ApiException`` and for
``kubernetes_asyncio``'s alike (both have ``status``, ``reason``, ``body`` and ``headers``).
:func:`describe` reads the answer's ``Status`` object (``reason``, ``message``, ``details.name``,
``details.kind``, ``details.causes``) into an :class:`ApiError`: which :class:`Refusal` it is, one line a user
can act on, and whether another try may help. :func:`exception_for` turns it into the exception to raise.

No line made here carries the response's headers or body: a message is built from the Status' fields (and
the apiserver's own one-line message when nothing better can be said), flattened to one line and capped.
The exceptions are meant to be raised ``from None``: Airflow's task log prints ``str()`` of every exception
in a ``__cause__`` chain, and ``str()`` of an ``ApiException`` is its headers and body.

The cases (the rules of :data:`_RULES`, which tries a webhook's denial first, whatever its code), and what each is
raised as (:func:`exception_for`):

- ``KIND_NOT_SERVED``: 404 without a Status naming an object (the apiserver's plain ``404 page not found``) on a
  resource of a non-core group: its CustomResourceDefinition is missing. :class:`KindNotServedError`, not retried.
- ``NAMESPACE_MISSING``: 404 whose Status has ``details.kind`` ``namespaces`` (a create in a namespace that does
  not exist). :class:`NamespaceNotFoundError`, not retried.
- ``INVALID`` (422, the fields of ``details.causes``), ``DENIED`` (an admission webhook's ``admission webhook
  "..." denied the request``, whatever its code: 400 by default, 422 with causes, ...), ``BAD_REQUEST`` (another
  400). :class:`JobRejectedError`, not retried.
- ``QUOTA``: 403 ``exceeded quota`` (which quota, what was requested, used and limited), or ``status unknown for
  quota``. :class:`QuotaExceededError`, retried: a later try may fit.
- ``FORBIDDEN``: 403 of RBAC (``User "..." cannot <verb> resource ...``: who lacks which verb on which resource
  where), or another 403. ``UNAUTHORIZED``: 401. :class:`KubernetesAccessError`, retried (tokens rotate,
  Roles get fixed).
- ``NOT_FOUND`` (404 naming the object), ``CONFLICT`` (409), ``TRANSIENT`` (429, 5xx: spent retries), ``OTHER``:
  answers the caller decides on. :class:`QuietApiException`.

Which failures are transient — worth another attempt — is decided here too (:func:`is_transient`: a 429 or 5xx answer
of either client, or a failure of the connection, :data:`CONNECTION_ERRORS`); :mod:`airflow_trainjob.hooks.retries`
retries what it says, and the trigger's shared stream backs off on :data:`TRANSIENT_ERRORS`.
"""

from __future__ import annotations

import asyncio
import enum
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from kubernetes.client.exceptions import ApiException
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob.exceptions import (
    JobRejectedError,
    KindNotServedError,
    KubernetesAccessError,
    NamespaceNotFoundError,
    QuotaExceededError,
)
from airflow_trainjob.families import JobResource, family_of, family_or_none, known_kinds

#: The longest line :func:`describe` makes (characters); a longer one is cut, with "...".
MAX_LINE = 1000
#: The longest quote of one thing the server said (a cause, a webhook's message), characters.
MAX_QUOTE = 300

#: Answers worth another attempt: too many requests, and the server's or a proxy's failures.
TRANSIENT_STATUS_CODES = frozenset({429, 500, 502, 503, 504})
#: Error answers of either client (both carry ``status``, ``reason``, ``headers`` and ``body``).
API_EXCEPTIONS = (ApiException, AsyncApiException)
#: Connection-level failures of either client's transport: reset, refused, timed out, a broken stream.
CONNECTION_ERRORS = (HTTPError, ConnectionError, TimeoutError, asyncio.TimeoutError, aiohttp.ClientError)
#: Failures without an answer that never end a wait (the connection errors, and any OSError): the trigger's stream backs
#: off and tries again, and :func:`describe` calls them ``TRANSIENT``.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OSError, *CONNECTION_ERRORS)

_WEBHOOK_DENIAL = re.compile(r'admission webhook "(?P<webhook>[^"]*)" denied the request(?::\s*(?P<message>.*))?', re.S)
_QUOTA_EXCEEDED = re.compile(
    r"exceeded quota: (?P<quota>[^,]+), requested: (?P<requested>.*?), used: (?P<used>.*?), limited: (?P<limited>.*)$",
    re.S,
)
_QUOTA_UNKNOWN = re.compile(r"status unknown for quota: (?P<quota>[^,]+)(?:, resources?: (?P<resources>.*))?$", re.S)
_RBAC = re.compile(
    r'(?:User|ServiceAccount) "(?P<user>[^"]*)" cannot (?P<verb>\S+) resource "(?P<resource>[^"]*)"'
    r'(?: in API group "(?P<group>[^"]*)")?(?: in the namespace "(?P<namespace>[^"]*)"| at the cluster scope)?'
)


class Refusal(str, enum.Enum):
    """What an error answer means (see the module's list)."""

    KIND_NOT_SERVED = "kind not served"
    NAMESPACE_MISSING = "namespace missing"
    NOT_FOUND = "not found"
    CONFLICT = "conflict"
    INVALID = "invalid"
    DENIED = "denied by admission"
    BAD_REQUEST = "bad request"
    QUOTA = "quota"
    FORBIDDEN = "forbidden"
    UNAUTHORIZED = "unauthorized"
    TRANSIENT = "transient"
    OTHER = "other"


#: Refusals that the same request meets again on every try.
NOT_RETRIED = frozenset(
    {Refusal.KIND_NOT_SERVED, Refusal.NAMESPACE_MISSING, Refusal.INVALID, Refusal.DENIED, Refusal.BAD_REQUEST}
)


@dataclass(frozen=True)
class ApiCall:
    """One request, as its caller knows it: the words of every message about its failure.

    :param verb: the Kubernetes verb (``create``, ``get``, ``list``, ``watch``, ``patch``, ``delete``), or
        words like ``list or watch``.
    :param resource: the resource's plural (``pytorchjobs``), with a subresource (``pods/log``).
    :param group: its API group; ``""``: the core group (pods, events).
    :param version: its API version.
    :param namespace: the namespace of the request, if any.
    :param name: the object's name, if the request names one.
    :param kind: the object's kind (``PyTorchJob``), for "PyTorchJob ns/name".
    :param purpose: why the provider makes the request (``create a training job``), said when RBAC forbids it.
    """

    verb: str
    resource: str
    group: str = ""
    version: str = "v1"
    namespace: str | None = None
    name: str | None = None
    kind: str | None = None
    purpose: str | None = None

    @classmethod
    def for_job(
        cls, verb: str, kind: str, namespace: str | None, name: str | None = None, purpose: str | None = None
    ) -> ApiCall:
        """A request about the training jobs of ``kind`` (its family's group and version: ``kubeflow.org``, ``v1``).

        :param verb: the Kubernetes verb (``create``, ``get``, ``list``, ``watch``, ``patch``, ``delete``).
        :param kind: a job kind of one of the families (``PyTorchJob``); another string is kept as the resource's
            plural, in the first family's group and version.
        :param namespace: the namespace of the request; None: cluster-wide.
        :param name: the job's ``metadata.name``, if the request names one.
        :param purpose: why the provider makes the request (``create a training job``), said when RBAC forbids it.
        """
        family = family_or_none(kind)
        where = (family or family_of(known_kinds()[0])).resource
        plural = where.plural if family else kind
        return cls(verb, plural, where.group, where.version, namespace, name, kind if family else None, purpose)

    @property
    def resource_ref(self) -> str:
        """``pytorchjobs.kubeflow.org/v1``, or ``pods`` for the core group."""
        return f"{self.resource}.{self.group}/{self.version}" if self.group else self.resource

    @property
    def target(self) -> str:
        """What the request was about: ``PyTorchJob ns/name``, or ``pytorchjobs.kubeflow.org in namespace ns``."""
        if self.name and self.namespace:
            return f"{self.kind or self.resource} {self.namespace}/{self.name}"
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        if self.name:
            what = f"{what} {self.name}"
        return f"{what} in namespace {self.namespace}" if self.namespace else what


@dataclass(frozen=True)
class ApiError:
    """An error answer, read.

    :param refusal: what it means.
    :param status: the HTTP status code (None when the error had none).
    :param reason: the Status' ``reason`` (``NotFound``, ``Invalid``, ...), else the HTTP reason phrase.
    :param message: one line for a user: what was refused, why, what to do. No headers, no body.
    :param retryable: whether another try of the task may succeed.
    :param causes: ``(field, message)`` of each of the Status' ``details.causes``.
    """

    refusal: Refusal
    status: int | None
    reason: str
    message: str
    retryable: bool
    causes: tuple[tuple[str, str], ...] = ()


class QuietApiException(ApiException):
    """An ``ApiException`` that the caller handles (404 of an object, 409, a transient failure whose retries
    are spent): the same ``status`` and ``reason``, but ``str()`` is :attr:`api_error`'s one line and it keeps
    neither the response's headers nor its body.

    :param api_error: the answer as :func:`describe` read it: its ``status``, ``reason`` and one-line ``message``.
    """

    def __init__(self, api_error: ApiError) -> None:
        super().__init__(status=api_error.status, reason=api_error.reason)
        Exception.__init__(self, api_error.message)  # args: the line alone (repr shows nothing else)
        self.api_error = api_error

    def __str__(self) -> str:
        return self.api_error.message

    def __reduce__(self) -> tuple[type, tuple[ApiError]]:
        return type(self), (self.api_error,)


def is_transient(exc: BaseException) -> bool:
    """True for the failures worth another attempt: a 429/5xx answer of either client, or a connection error.

    :param exc: the exception a call raised.
    """
    if isinstance(exc, API_EXCEPTIONS):
        return exc.status in TRANSIENT_STATUS_CODES
    return isinstance(exc, CONNECTION_ERRORS)


def is_api_exception(error: BaseException) -> bool:
    """An error answer of either client (``status`` set by the server's response).

    :param error: any exception.
    """
    return isinstance(error, API_EXCEPTIONS)


def read_status(error: BaseException) -> dict[str, Any]:
    """The Kubernetes ``Status`` object the answer's body holds, or ``{}`` (no body, or not a Status).

    :param error: an error answer of either client (its ``body``: JSON text or bytes), or any exception.
    """
    body = getattr(error, "body", None)
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", errors="replace")
    if not isinstance(body, str) or not body.lstrip().startswith("{"):
        return {}
    try:
        status = json.loads(body)
    except ValueError:
        return {}
    return status if isinstance(status, dict) and status.get("kind") == "Status" else {}


def kind_not_served_message(resource_ref: str) -> str:
    """The one wording of "this cluster has no such kind": what is missing, and what installs it (the family's
    :attr:`~airflow_trainjob.domain.family.JobResource.served_by`).

    :param resource_ref: the resource with its group and version, e.g. ``pytorchjobs.kubeflow.org/v1``.
    """
    served_by = _served_by(resource_ref)
    if served_by is None:
        return f"the cluster does not serve {resource_ref} — is the Kubeflow training operator installed?"
    resource = resource_ref.split("/", 1)[0]
    return (
        f"the cluster does not serve {resource_ref}: {served_by} ({resource}) is not installed — install it, or "
        f"point the connection at a cluster that runs it"
    )


def _served_by(resource_ref: str) -> str | None:
    """What installs ``resource_ref`` when its family names something other than the training operator, else None."""
    for kind in known_kinds():
        where = family_of(kind).resource
        if resource_ref == f"{where.name}/{where.version}" and where.served_by != JobResource.served_by:
            return where.served_by
    return None


def describe(error: BaseException, call: ApiCall | None = None, conn_id: str | None = None) -> ApiError:
    """Read an error answer of the Kubernetes API (either client's ``ApiException``) for ``call``: the first rule of
    :data:`_RULES` that finds what it looks for in the answer says what it is and words its line.

    :param error: the exception; one that is not an ``ApiException`` is described by its type and first line
        (``OTHER``, or ``TRANSIENT`` for connection errors and timeouts).
    :param call: what the request was; None: said from the answer alone.
    :param conn_id: the Airflow connection the request went through, named in access errors.
    :returns: the :class:`ApiError`; its ``message`` is one line, at most :data:`MAX_LINE` characters.
    """
    known = getattr(error, "api_error", None)
    if isinstance(known, ApiError):
        return known  # raised by exception_for, which read it for its own call
    if not is_api_exception(error):
        return _not_answered(error, call)
    answer = _Answer.read(error, call, conn_id)
    rule, found = next((rule, found) for rule in _RULES if (found := rule.finds(answer)))
    message = _line(rule.says(answer, found))
    return ApiError(rule.refusal, answer.code, answer.reason, message, rule.refusal not in NOT_RETRIED, answer.causes)


def one_line(error: BaseException, call: ApiCall | None = None, conn_id: str | None = None) -> str:
    """The one-line description of any error of an API call: the one every log line, event and exception message
    of this provider uses.

    Covers an error answer of either client (``kubernetes.client.ApiException``,
    ``kubernetes_asyncio.client.ApiException``), what :func:`exception_for` raised for one (its own line), and an
    error that got no answer (a connection refused or reset, a timeout, urllib3's and aiohttp's errors:
    ``ConnectionRefusedError: ... (no answer to get PyTorchJob ns/name)``). Never the response's headers or body.

    :param error: the exception the call raised.
    :param call: what the request was (its verb and target are named); None: said from the error alone.
    :param conn_id: the Airflow connection the request went through, named in access errors.
    """
    return describe(error, call, conn_id).message


def exception_for(error: BaseException, call: ApiCall | None = None, conn_id: str | None = None) -> Exception:
    """The exception to raise (``from None``) for an API error of ``call``.

    :param error: the exception the call raised.
    :param call: what the request was; None: said from the answer alone.
    :param conn_id: the Airflow connection the request went through, named in access errors.
    :returns: for a refusal, this provider's Airflow exception (see the module's table), with ``status``,
        ``reason`` and ``api_error`` attributes; for an answer the caller handles (404 of an object, 409, a
        spent transient failure, other codes), a :class:`QuietApiException`; an error that is not an
        ``ApiException`` is returned unchanged.
    """
    if not is_api_exception(error):
        return error  # type: ignore[return-value]
    described = describe(error, call, conn_id)
    exception_class = _RAISED_AS.get(described.refusal)
    if exception_class is None:
        return QuietApiException(described)
    raised = exception_class(described.message)
    raised.status, raised.reason = described.status, described.reason  # type: ignore[attr-defined]
    raised.api_error = described  # type: ignore[attr-defined]
    return raised


_RAISED_AS: dict[Refusal, type[Exception]] = {
    Refusal.KIND_NOT_SERVED: KindNotServedError,
    Refusal.NAMESPACE_MISSING: NamespaceNotFoundError,
    Refusal.INVALID: JobRejectedError,
    Refusal.DENIED: JobRejectedError,
    Refusal.BAD_REQUEST: JobRejectedError,
    Refusal.QUOTA: QuotaExceededError,
    Refusal.FORBIDDEN: KubernetesAccessError,
    Refusal.UNAUTHORIZED: KubernetesAccessError,
}

#: Every exception class :func:`exception_for` makes of an error answer: what a hook call (sync or async) raises
#: when the API refused it, to catch where a refusal is no reason to stop (a best-effort read).
RAISED_ERRORS: tuple[type[Exception], ...] = (QuietApiException, *dict.fromkeys(_RAISED_AS.values()))


# --- the rules of describe ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    """An error answer as :func:`describe`'s rules read it: its code, its Status' fields, and the request."""

    code: int | None
    reason: str  # the Status' reason, else the HTTP reason phrase
    said: str  # the Status' whole message, on one line (for parsing; :attr:`server_says` is capped, to quote)
    details: dict[str, Any]
    causes: tuple[tuple[str, str], ...]
    call: ApiCall | None
    conn_id: str | None

    @classmethod
    def read(cls, error: BaseException, call: ApiCall | None, conn_id: str | None) -> _Answer:
        status = read_status(error)
        details = status["details"] if isinstance(status.get("details"), dict) else {}
        reason = str(status.get("reason") or getattr(error, "reason", None) or "")
        said = " ".join(str(status.get("message") or "").split())
        return cls(getattr(error, "status", None), reason, said, details, _causes(details), call, conn_id)

    @property
    def server_says(self) -> str:
        return _line(self.said)

    @property
    def answered(self) -> str:
        return f"{self.code} {self.reason}".strip()

    @property
    def doing(self) -> str:
        return f"{self.call.verb} {self.call.target}" if self.call else "serve the request"

    @property
    def to(self) -> str:
        return f"{self.answered} to {self.doing}"

    @property
    def via(self) -> str:
        return f" through connection {self.conn_id!r}" if self.conn_id else ""


@dataclass(frozen=True)
class _Rule:
    """One case of :func:`describe`: ``finds`` what makes it apply (a regular expression's match, or True; falsy: it
    does not), ``says`` the line of the answer and what was found, and ``refusal`` says what it is (and so whether
    it is retried: :data:`NOT_RETRIED`, and as what it is raised: :data:`_RAISED_AS`)."""

    refusal: Refusal
    finds: Callable[[_Answer], Any]
    says: Callable[[_Answer, Any], str]


def _webhook_denial(a: _Answer) -> re.Match[str] | None:
    """Whatever code the webhook chose (400 by default, 403, 422 with causes, ...); a 429 or 5xx is no denial."""
    return _WEBHOOK_DENIAL.search(a.said) if a.code not in TRANSIENT_STATUS_CODES else None


def _denied(a: _Answer, denial: re.Match[str]) -> str:
    said = _quote(denial.group("message") or "")
    fields = _causes_text(a.causes)
    why = "; ".join(part for part in (said if not fields or said not in fields else "", fields) if part)
    to_do = f" to {a.doing}" if a.call else ""
    return (
        f'admission webhook "{denial.group("webhook")}" denied the request{to_do} '
        f"({a.answered}): {why or 'without explanation'}"
    )


def _names_missing_namespace(a: _Answer) -> bool:
    """A 404 whose Status names a namespace, to a request that was not about namespaces."""
    return (
        a.code == 404 and a.details.get("kind") == "namespaces" and (a.call is None or a.call.resource != "namespaces")
    )


def _namespace_missing(a: _Answer, _: object) -> str:
    name = a.details.get("name") or (a.call.namespace if a.call else "?")
    return (
        f'namespace "{name}" does not exist ({a.to}): create it, or set the task\'s namespace '
        f"(or the connection's namespace extra) to an existing one"
    )


def _unserved_kind(a: _Answer) -> ApiCall | None:
    """A plain 404 (no Status names an object) to a request for a non-core group's resource: the kind is not served
    (the request)."""
    unserved = a.code == 404 and a.call is not None and a.call.group and not a.details.get("name")
    return a.call if unserved else None


def _kind_not_served(a: _Answer, call: ApiCall) -> str:
    return f"{kind_not_served_message(call.resource_ref)} ({a.to})"


def _object_missing(a: _Answer, _: object) -> str:
    if a.call is None:
        return f"{a.answered}: {a.server_says or 'no such object or path'}"
    return f"{a.call.target} does not exist ({a.answered})"


def _refused_as(wording: str) -> Callable[[_Answer, object], str]:
    """A 400's or 422's line: ``wording`` is how the server took the request (``invalid``, ``a bad request``)."""

    def says(a: _Answer, _: object) -> str:
        why = _causes_text(a.causes) or a.server_says or "no reason given"
        return f"the API server refused to {a.doing} as {wording} ({a.answered}): {why}"

    return says


def _quota_exceeded(a: _Answer, exceeded: re.Match[str]) -> str:
    requested, used, limited = (_quantities(exceeded.group(g)) for g in ("requested", "used", "limited"))
    usage = "; ".join(
        f"{resource}: requested {amount}, used {used.get(resource, '?')}, limited to {limited.get(resource, '?')}"
        for resource, amount in requested.items()
    ) or _quote(a.said)
    where = f" in namespace {a.call.namespace}" if a.call and a.call.namespace else ""
    return (
        f'ResourceQuota "{exceeded.group("quota").strip()}"{where} has no room to {a.doing} '
        f"({a.answered}, exceeded quota): {usage}; a later try may fit once usage drops or the "
        f"quota is raised"
    )


def _quota_unknown(a: _Answer, unknown: re.Match[str]) -> str:
    resources = f" ({unknown.group('resources').strip()})" if unknown.group("resources") else ""
    return (
        f'ResourceQuota "{unknown.group("quota").strip()}"{resources} has no computed usage yet, '
        f"so the API server refuses to {a.doing} ({a.answered}, status unknown for quota): is "
        f"kube-controller-manager's resourcequota controller running?"
    )


def _rbac_forbids(a: _Answer, rbac: re.Match[str]) -> str:
    group = rbac.group("group") if rbac.group("group") is not None else (a.call.group if a.call else "")
    resource, verb = rbac.group("resource"), rbac.group("verb")
    scope = f'in namespace "{rbac.group("namespace")}"' if rbac.group("namespace") else "at the cluster scope"
    qualified = f"{resource}.{group}" if group else resource
    in_group = f'API group "{group}"' if group else "the core API group"
    why = f", needed to {a.call.purpose}" if a.call and a.call.purpose else ""
    return (
        f'RBAC does not allow user "{rbac.group("user")}" to {verb} {qualified} {scope} '
        f'({a.to}{a.via}{why}): bind it to a Role that allows verb "{verb}" on resource '
        f'"{resource}" in {in_group}'
    )


def _unauthorized(a: _Answer, _: object) -> str:
    via = f" of connection {a.conn_id!r}" if a.conn_id else ""
    return (
        f"{a.to}: the API server did not accept the credentials{via} (an expired or rotated token, or the "
        f"wrong kubeconfig, context or user); a new try reads them again"
    )


def _answered(a: _Answer, _: object) -> str:
    """The request and the answer's code, with the server's own line, if any."""
    return a.to + (f": {a.server_says}" if a.server_says else "")


def _with_code(*codes: int) -> Callable[[_Answer], bool]:
    return lambda a: a.code in codes


def _forbidden_and(pattern: re.Pattern[str]) -> Callable[[_Answer], re.Match[str] | None]:
    """A 403 whose message matches ``pattern`` (the match)."""
    return lambda a: pattern.search(a.said) if a.code == 403 else None


#: The cases of :func:`describe`, in the order they are tried (the module's docstring lists them); the last one
#: takes any answer.
_RULES: tuple[_Rule, ...] = (
    _Rule(Refusal.DENIED, _webhook_denial, _denied),
    _Rule(Refusal.NAMESPACE_MISSING, _names_missing_namespace, _namespace_missing),
    _Rule(Refusal.KIND_NOT_SERVED, _unserved_kind, _kind_not_served),
    _Rule(Refusal.NOT_FOUND, _with_code(404), _object_missing),
    _Rule(Refusal.INVALID, _with_code(422), _refused_as("invalid")),
    _Rule(Refusal.BAD_REQUEST, _with_code(400), _refused_as("a bad request")),
    _Rule(Refusal.QUOTA, _forbidden_and(_QUOTA_EXCEEDED), _quota_exceeded),
    _Rule(Refusal.QUOTA, _forbidden_and(_QUOTA_UNKNOWN), _quota_unknown),
    _Rule(Refusal.FORBIDDEN, _forbidden_and(_RBAC), _rbac_forbids),
    _Rule(Refusal.FORBIDDEN, _with_code(403), lambda a, _: f"{a.to}{a.via}: {_quote(a.said) or 'no reason given'}"),
    _Rule(Refusal.UNAUTHORIZED, _with_code(401), _unauthorized),
    _Rule(Refusal.CONFLICT, _with_code(409), _answered),
    _Rule(Refusal.TRANSIENT, _with_code(*TRANSIENT_STATUS_CODES), _answered),
    _Rule(Refusal.OTHER, lambda a: True, _answered),
)


# --- the pieces -----------------------------------------------------------------------------------


def _not_answered(error: BaseException, call: ApiCall | None) -> ApiError:
    """An error that is no answer of the API: ``TRANSIENT`` for the transport's (connection, timeout, urllib3,
    aiohttp), else ``OTHER``; its type and first words, never more than one capped line."""
    transient = isinstance(error, TRANSIENT_ERRORS)
    said = " ".join(str(error).split())
    what = f"{type(error).__name__}: {said}" if said else type(error).__name__
    if transient and call is not None:
        what = f"{what} (no answer to {call.verb} {call.target})"
    return ApiError(Refusal.TRANSIENT if transient else Refusal.OTHER, None, type(error).__name__, _line(what), True)


def _quantities(text: str) -> dict[str, str]:
    """``count/pytorchjobs.kubeflow.org=1,pods=2`` as a dict (the quota admission plugin's pretty-print)."""
    pairs = (item.split("=", 1) for item in text.split(",") if "=" in item)
    return {k.strip(): v.strip() for k, v in pairs}


def _causes(details: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """``(field, message)`` of each of a Status' ``details.causes`` (the reason when a cause has no message)."""
    return tuple(
        (str(c.get("field") or ""), str(c.get("message") or c.get("reason") or ""))
        for c in details.get("causes") or []
        if isinstance(c, dict)
    )


def _causes_text(causes: tuple[tuple[str, str], ...]) -> str:
    return "; ".join(
        _quote(f"{field}: {message}" if field else message) for field, message in causes if field or message
    )


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 3] + "..."


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "..."
