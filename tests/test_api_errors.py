"""``api_errors``: each error answer of the API read into one line and a retry class (no cluster).

The answers are the apiserver's own (bodies as kube-apiserver 1.20 sends them, recorded from the local
cluster), wrapped in the exception either client raises, with the response headers a real answer has.
"""

from __future__ import annotations

import functools
import json
import pickle
import subprocess
import sys

import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException
from kubernetes.client.exceptions import ApiException
from urllib3 import HTTPHeaderDict

from airflow_trainjob.exceptions import (
    JobRejectedError,
    KindNotServedError,
    KubernetesAccessError,
    NamespaceNotFoundError,
    QuotaExceededError,
    TrainingJobError,
)
from airflow_trainjob.hooks import api_errors
from airflow_trainjob.hooks.api_errors import ApiCall, QuietApiException, Refusal, describe, exception_for
from tests.support import api_answers
from tests.support.refusals import LEAK_MARKERS, assert_nothing_leaks

HEADERS = HTTPHeaderDict(
    {
        "Audit-Id": "0f6c1d9e-2b7a-4f57-9d55-6c1e8f0b7a21",
        "Cache-Control": "no-cache, private",
        "Content-Type": "application/json",
        "X-Kubernetes-Pf-Flowschema-Uid": "6c1e8f0b",
        "X-Kubernetes-Pf-Prioritylevel-Uid": "2b7a4f57",
        "Date": "Tue, 01 Dec 2026 19:40:00 GMT",
        "Content-Length": "512",
    }
)
CREATE = ApiCall.for_job("create", "PyTorchJob", "team-a", "train-1", purpose="create a training job")
GET = ApiCall.for_job("get", "PyTorchJob", "team-a", "train-1", purpose="read a training job")


def status(code: int, reason: str, message: str, details: dict | None = None) -> str:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": details or {},
            "code": code,
        }
    )


Response = functools.partial(api_answers.Response, headers=HEADERS)


@pytest.fixture(params=list(api_answers.CLIENT_EXCEPTIONS))
def answer(request):
    """``answer(code, phrase, body)``: the exception the sync or the async client raises for that response."""
    exception_class = api_answers.CLIENT_EXCEPTIONS[request.param]

    def make(code: int, phrase: str, body: str):
        error = api_answers.raised(exception_class, Response(code, phrase, body))
        assert "HTTP response headers" in str(error)  # the raw exception does leak: the point of all this
        return error

    return make


PAGE_NOT_FOUND = "404 page not found\n"
JOB_NOT_FOUND = status(
    404,
    "NotFound",
    'pytorchjobs.kubeflow.org "train-1" not found',
    {"name": "train-1", "group": "kubeflow.org", "kind": "pytorchjobs"},
)
NAMESPACE_NOT_FOUND = status(404, "NotFound", 'namespaces "team-a" not found', {"name": "team-a", "kind": "namespaces"})
TOO_LONG = status(
    422,
    "Invalid",
    'PyTorchJob.kubeflow.org "train-1" is invalid: metadata.annotations: Too long: must have at most 262144 bytes',
    {
        "name": "train-1",
        "group": "kubeflow.org",
        "kind": "PyTorchJob",
        "causes": [
            {
                "reason": "FieldValueTooLong",
                "message": "Too long: must have at most 262144 bytes",
                "field": "metadata.annotations",
            }
        ],
    },
)
SCHEMA = status(
    422,
    "Invalid",
    'PyTorchJob.kubeflow.org "train-1" is invalid: [spec.runPolicy: Invalid value: "integer": '
    'spec.runPolicy in body must be of type object: "integer", spec.pytorchReplicaSpecs: Required value]',
    {
        "name": "train-1",
        "group": "kubeflow.org",
        "kind": "PyTorchJob",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "field": "spec.runPolicy",
                "message": 'Invalid value: "integer": spec.runPolicy in body must be of type object: "integer"',
            },
            {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.pytorchReplicaSpecs"},
        ],
    },
)
WEBHOOK_400 = status(
    400, "", 'admission webhook "gpu-policy.example.com" denied the request: no more than 4 GPUs per job'
)
WEBHOOK_422 = status(
    422,
    "Invalid",
    'admission webhook "spec-policy.example.com" denied the request: the job spec breaks team policy',
    {
        "causes": [
            {"field": "spec.runPolicy.backoffLimit", "message": "must be set", "reason": "FieldValueRequired"},
            {"field": "metadata.labels[team]", "message": "required"},
        ]
    },
)
QUOTA = status(
    403,
    "Forbidden",
    'pytorchjobs.kubeflow.org "train-1" is forbidden: exceeded quota: jobs, requested: '
    "count/pytorchjobs.kubeflow.org=1, used: count/pytorchjobs.kubeflow.org=2, limited: "
    "count/pytorchjobs.kubeflow.org=2",
    {"name": "train-1", "group": "kubeflow.org", "kind": "pytorchjobs"},
)
QUOTA_TWO = status(
    403,
    "Forbidden",
    'pods "p" is forbidden: exceeded quota: compute, requested: limits.cpu=4,pods=1, '
    "used: limits.cpu=6,pods=3, limited: limits.cpu=8,pods=3",
    {"name": "p", "kind": "pods"},
)
QUOTA_UNKNOWN = status(
    403,
    "Forbidden",
    'pytorchjobs.kubeflow.org "train-1" is forbidden: status unknown for quota: jobs, '
    "resources: count/pytorchjobs.kubeflow.org",
    {"name": "train-1", "kind": "pytorchjobs"},
)
RBAC = status(
    403,
    "Forbidden",
    'pytorchjobs.kubeflow.org is forbidden: User "system:serviceaccount:team-a:airflow-worker" '
    'cannot create resource "pytorchjobs" in API group "kubeflow.org" in the namespace "team-a"',
    {"group": "kubeflow.org", "kind": "pytorchjobs"},
)
RBAC_LOG = status(
    403,
    "Forbidden",
    'pods "train-1-master-0" is forbidden: User "system:serviceaccount:team-a:airflow-worker" '
    'cannot get resource "pods/log" in API group "" in the namespace "team-a"',
    {"name": "train-1-master-0", "kind": "pods"},
)
TERMINATING = status(
    403,
    "Forbidden",
    'pytorchjobs.kubeflow.org "train-1" is forbidden: unable to create new content in '
    "namespace team-a because it is being terminated",
    {"name": "train-1", "kind": "pytorchjobs"},
)
UNAUTHORIZED = status(401, "Unauthorized", "Unauthorized")
CONFLICT = status(
    409,
    "AlreadyExists",
    'pytorchjobs.kubeflow.org "train-1" already exists',
    {"name": "train-1", "group": "kubeflow.org", "kind": "pytorchjobs"},
)
UNAVAILABLE = status(503, "ServiceUnavailable", "the server is currently unable to handle the request")
UNDECODABLE = status(
    400,
    "BadRequest",
    'PyTorchJob in version "v1" cannot be handled as a PyTorchJob: json: cannot unmarshal string into Go struct '
    "field ReplicaSpec.spec.pytorchReplicaSpecs.replicas of type int32",
)
EXPIRED = status(410, "Expired", "too old resource version: 1200 (1350)")
WATCH = ApiCall.for_job("watch", "PyTorchJob", "team-a", purpose="watch the training jobs")

#: (id, call, code, phrase, body, refusal, exception class, words the message must have)
CASES = [
    (
        "kind-not-served",
        CREATE,
        404,
        "Not Found",
        PAGE_NOT_FOUND,
        Refusal.KIND_NOT_SERVED,
        KindNotServedError,
        [
            "the cluster does not serve pytorchjobs.kubeflow.org/v1 — is the Kubeflow training operator installed?",
            "404 Not Found to create PyTorchJob team-a/train-1",
        ],
    ),
    (
        "kind-not-served-get",
        GET,
        404,
        "Not Found",
        PAGE_NOT_FOUND,
        Refusal.KIND_NOT_SERVED,
        KindNotServedError,
        ["the cluster does not serve pytorchjobs.kubeflow.org/v1"],
    ),
    (
        "kind-not-served-status-without-name",
        GET,
        404,
        "Not Found",
        status(404, "NotFound", "the server could not find the requested resource"),
        Refusal.KIND_NOT_SERVED,
        KindNotServedError,
        ["the cluster does not serve pytorchjobs.kubeflow.org/v1"],
    ),
    (
        "job-not-found",
        GET,
        404,
        "Not Found",
        JOB_NOT_FOUND,
        Refusal.NOT_FOUND,
        QuietApiException,
        ["PyTorchJob team-a/train-1 does not exist (404 NotFound)"],
    ),
    (
        "namespace-not-found",
        CREATE,
        404,
        "Not Found",
        NAMESPACE_NOT_FOUND,
        Refusal.NAMESPACE_MISSING,
        NamespaceNotFoundError,
        ['namespace "team-a" does not exist', "404 NotFound to create PyTorchJob team-a/train-1"],
    ),
    (
        "invalid",
        CREATE,
        422,
        "Unprocessable Entity",
        TOO_LONG,
        Refusal.INVALID,
        JobRejectedError,
        ["as invalid (422 Invalid): metadata.annotations: Too long: must have at most 262144 bytes"],
    ),
    (
        "invalid-two-fields",
        CREATE,
        422,
        "Unprocessable Entity",
        SCHEMA,
        Refusal.INVALID,
        JobRejectedError,
        ['spec.runPolicy: Invalid value: "integer"', "; spec.pytorchReplicaSpecs: Required value"],
    ),
    (
        "webhook-400",
        CREATE,
        400,
        "Bad Request",
        WEBHOOK_400,
        Refusal.DENIED,
        JobRejectedError,
        [
            'admission webhook "gpu-policy.example.com" denied the request to create PyTorchJob team-a/train-1 '
            "(400 Bad Request): no more than 4 GPUs per job"
        ],
    ),
    (
        "webhook-422-causes",
        CREATE,
        422,
        "Unprocessable Entity",
        WEBHOOK_422,
        Refusal.DENIED,
        JobRejectedError,
        [
            'admission webhook "spec-policy.example.com" denied',
            "(422 Invalid): the job spec breaks team policy; "
            "spec.runPolicy.backoffLimit: must be set; metadata.labels[team]: required",
        ],
    ),
    (
        "quota",
        CREATE,
        403,
        "Forbidden",
        QUOTA,
        Refusal.QUOTA,
        QuotaExceededError,
        [
            'ResourceQuota "jobs" in namespace team-a has no room to create PyTorchJob team-a/train-1',
            "count/pytorchjobs.kubeflow.org: requested 1, used 2, limited to 2",
            "a later try may fit",
        ],
    ),
    (
        "quota-two-resources",
        ApiCall("create", "pods", namespace="team-a", name="p"),
        403,
        "Forbidden",
        QUOTA_TWO,
        Refusal.QUOTA,
        QuotaExceededError,
        ["limits.cpu: requested 4, used 6, limited to 8; pods: requested 1, used 3, limited to 3"],
    ),
    (
        "quota-not-computed",
        CREATE,
        403,
        "Forbidden",
        QUOTA_UNKNOWN,
        Refusal.QUOTA,
        QuotaExceededError,
        ['ResourceQuota "jobs" (count/pytorchjobs.kubeflow.org) has no computed usage yet', "resourcequota controller"],
    ),
    (
        "rbac",
        CREATE,
        403,
        "Forbidden",
        RBAC,
        Refusal.FORBIDDEN,
        KubernetesAccessError,
        [
            'RBAC does not allow user "system:serviceaccount:team-a:airflow-worker" to create pytorchjobs.kubeflow.org in '
            'namespace "team-a"',
            "needed to create a training job",
            'allows verb "create" on resource "pytorchjobs" in API group "kubeflow.org"',
        ],
    ),
    (
        "rbac-core-subresource",
        ApiCall("get", "pods/log", namespace="team-a", name="train-1-master-0"),
        403,
        "Forbidden",
        RBAC_LOG,
        Refusal.FORBIDDEN,
        KubernetesAccessError,
        ['to get pods/log in namespace "team-a"', 'verb "get" on resource "pods/log" in the core API group'],
    ),
    (
        "forbidden-other",
        CREATE,
        403,
        "Forbidden",
        TERMINATING,
        Refusal.FORBIDDEN,
        KubernetesAccessError,
        [
            "403 Forbidden to create PyTorchJob team-a/train-1 through connection 'kubernetes_default': ",
            "because it is being terminated",
        ],
    ),
    (
        "unauthorized",
        GET,
        401,
        "Unauthorized",
        UNAUTHORIZED,
        Refusal.UNAUTHORIZED,
        KubernetesAccessError,
        ["401 Unauthorized to get PyTorchJob team-a/train-1", "credentials of connection 'kubernetes_default'"],
    ),
    (
        "conflict",
        CREATE,
        409,
        "Conflict",
        CONFLICT,
        Refusal.CONFLICT,
        QuietApiException,
        ['409 AlreadyExists to create PyTorchJob team-a/train-1: pytorchjobs.kubeflow.org "train-1" already exists'],
    ),
    (
        "unavailable",
        GET,
        503,
        "Service Unavailable",
        UNAVAILABLE,
        Refusal.TRANSIENT,
        QuietApiException,
        ["503 ServiceUnavailable to get PyTorchJob team-a/train-1: the server is currently unable"],
    ),
    (
        "no-body",
        GET,
        500,
        "Internal Server Error",
        "",
        Refusal.TRANSIENT,
        QuietApiException,
        ["500 Internal Server Error to get PyTorchJob team-a/train-1"],
    ),
    (
        "bad-request",
        CREATE,
        400,
        "Bad Request",
        UNDECODABLE,
        Refusal.BAD_REQUEST,
        JobRejectedError,
        [
            "the API server refused to create PyTorchJob team-a/train-1 as a bad request (400 BadRequest): "
            'PyTorchJob in version "v1" cannot be handled as a PyTorchJob'
        ],
    ),
    (
        "expired",
        WATCH,
        410,
        "Gone",
        EXPIRED,
        Refusal.OTHER,
        QuietApiException,
        ["410 Expired to watch pytorchjobs.kubeflow.org in namespace team-a: too old resource version: 1200 (1350)"],
    ),
]
NOT_RETRIED = {KindNotServedError, NamespaceNotFoundError, JobRejectedError}


@pytest.mark.parametrize(
    ("call", "code", "phrase", "body", "refusal", "raised_as", "words"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_each_answer_is_one_line_of_its_class(answer, call, code, phrase, body, refusal, raised_as, words):
    error = answer(code, phrase, body)
    described = describe(error, call, conn_id="kubernetes_default")
    assert described.refusal is refusal
    assert described.status == code
    assert described.retryable is (raised_as not in NOT_RETRIED)
    raised = exception_for(error, call, conn_id="kubernetes_default")
    assert type(raised) is raised_as
    message = str(raised)
    assert message == described.message and "\n" not in message
    for word in words:
        assert word in message
    if raised_as in NOT_RETRIED:
        assert isinstance(raised, AirflowFailException)
    elif raised_as is not QuietApiException:
        assert isinstance(raised, TrainingJobError) and not isinstance(raised, AirflowFailException)
    assert raised.status == code
    assert_nothing_leaks(raised)


def test_every_rule_is_the_first_to_apply_to_some_answer():
    """No rule of describe's table is shadowed by an earlier one: each is the one that reads some answer of CASES."""
    first = {
        next(
            i
            for i, rule in enumerate(api_errors._RULES)
            if rule.finds(api_errors._Answer.read(ApiException(http_resp=Response(code, phrase, body)), call, None))
        )
        for _, call, code, phrase, body, *_ in CASES
    }
    assert first == set(range(len(api_errors._RULES)))
    assert api_errors._RULES[-1].finds(api_errors._Answer.read(ApiException(status=0), None, None))  # takes any


def test_the_raw_exception_is_what_leaks(answer):
    """The check itself finds headers and body in a raw ApiException (so its silence elsewhere means something)."""
    with pytest.raises(AssertionError, match="HTTP response headers"):
        assert_nothing_leaks(answer(403, "Forbidden", RBAC))


def test_quiet_exception_is_still_an_api_exception_for_callers():
    raised = exception_for(ApiException(http_resp=Response(404, "Not Found", JOB_NOT_FOUND)), GET)
    assert isinstance(raised, ApiException) and raised.status == 404 and raised.reason == "NotFound"
    assert raised.body is None and raised.headers is None
    assert repr(raised) == "QuietApiException('PyTorchJob team-a/train-1 does not exist (404 NotFound)')"
    copy = pickle.loads(pickle.dumps(raised))
    assert str(copy) == str(raised) and copy.status == 404


def test_refusals_carry_status_reason_and_the_reading():
    raised = exception_for(ApiException(http_resp=Response(422, "Unprocessable Entity", TOO_LONG)), CREATE)
    assert (raised.status, raised.reason) == (422, "Invalid")
    assert raised.api_error.causes == (("metadata.annotations", "Too long: must have at most 262144 bytes"),)
    assert raised.args == (str(raised),)  # repr shows the message alone
    assert describe(raised) is raised.api_error  # describing what exception_for made reads nothing again


def test_a_refusal_is_described_without_knowing_the_call():
    error = ApiException(http_resp=Response(403, "Forbidden", RBAC))
    message = describe(error).message
    assert (
        'RBAC does not allow user "system:serviceaccount:team-a:airflow-worker" to create pytorchjobs.kubeflow.org'
        in message
    )
    assert "403 Forbidden" in message
    plain = ApiException(http_resp=Response(404, "Not Found", PAGE_NOT_FOUND))
    assert describe(plain).message == "404 Not Found: no such object or path"  # a core path could be anything


def test_core_resources_are_never_an_unserved_kind():
    """pods/log of a pod the kubelet does not know may answer a plain-text 404; pods are always served."""
    error = ApiException(http_resp=Response(404, "Not Found", PAGE_NOT_FOUND))
    call = ApiCall("get", "pods/log", namespace="team-a", name="p")
    assert describe(error, call).refusal is Refusal.NOT_FOUND
    assert isinstance(exception_for(error, call), QuietApiException)


def test_errors_that_are_not_answers():
    assert api_errors.describe(ConnectionResetError("peer reset")).refusal is Refusal.TRANSIENT
    assert api_errors.one_line(ValueError("a\nb")) == "ValueError: a b"
    error = TimeoutError("slow")
    assert exception_for(error) is error  # nothing to read: raised as it is


def test_a_long_answer_is_capped_to_one_line():
    causes = [{"field": f"spec.field{i}", "message": "x" * 500} for i in range(20)]
    error = ApiException(
        http_resp=Response(422, "Unprocessable Entity", status(422, "Invalid", "bad\nlines", {"causes": causes}))
    )
    message = describe(error, CREATE).message
    assert len(message) <= api_errors.MAX_LINE and "\n" not in message and message.endswith("...")
    assert "spec.field0: " in message


def test_the_missing_kind_has_one_wording():
    assert api_errors.kind_not_served_message("tfjobs.kubeflow.org/v1") == (
        "the cluster does not serve tfjobs.kubeflow.org/v1 — is the Kubeflow training operator installed?"
    )


def test_a_missing_trainjob_kind_names_trainer_v2():
    assert api_errors.kind_not_served_message("trainjobs.trainer.kubeflow.org/v1alpha1") == (
        "the cluster does not serve trainjobs.trainer.kubeflow.org/v1alpha1: Kubeflow Trainer v2 "
        "(trainjobs.trainer.kubeflow.org) is not installed — install it, or point the connection at a cluster that "
        "runs it"
    )
    call = api_errors.ApiCall.for_job("create", "TrainJob", "ml", "train-1", "create a training job")
    error = ApiException(http_resp=Response(404, "Not Found", PAGE_NOT_FOUND))
    described = describe(error, call)
    assert described.refusal is api_errors.Refusal.KIND_NOT_SERVED and not described.retryable
    assert described.message.endswith("(404 Not Found to create TrainJob ml/train-1)")
    assert isinstance(api_errors.exception_for(error, call), KindNotServedError)


def test_classes_follow_airflow_retry_rules():
    for cls in (KindNotServedError, NamespaceNotFoundError, JobRejectedError):
        assert issubclass(cls, AirflowFailException)
    for cls in (QuotaExceededError, KubernetesAccessError):
        assert issubclass(cls, AirflowException) and not issubclass(cls, AirflowFailException)


def test_markers_cover_what_a_raw_exception_prints():
    raw = str(ApiException(http_resp=Response(403, "Forbidden", RBAC)))
    assert any(marker in raw for marker in LEAK_MARKERS)
    assert "HTTPHeaderDict" in raw and "Audit-Id" in raw


def test_which_failures_are_transient_is_decided_here_and_read_by_the_retries():
    """One classification, one way (issue 25, cycle C1): ``hooks.retries`` imports it from here; this module imports
    no retry policy. Its names stay importable from ``hooks.retries`` and the stream, as the same objects."""
    from airflow_trainjob.hooks import retries
    from airflow_trainjob.watching import job_stream

    for name in ("TRANSIENT_STATUS_CODES", "API_EXCEPTIONS", "CONNECTION_ERRORS", "is_transient"):
        assert getattr(retries, name) is getattr(api_errors, name), name
    assert job_stream.TRANSIENT_ERRORS is api_errors.TRANSIENT_ERRORS
    imported = "import sys, airflow_trainjob.hooks.api_errors; print('airflow_trainjob.hooks.retries' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", imported], capture_output=True, text=True, check=True, timeout=120)
    assert run.stdout.strip() == "False"
