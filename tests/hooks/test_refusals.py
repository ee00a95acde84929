"""Every refusal of the API, end to end against the real local apiserver: through the operator (synchronous and
deferrable) and the sensor (poke, reschedule, deferrable), each says in one line what it is, fails with the right
retry class, leaves nothing behind, and nothing the task produced shows a response header or body.

Each refusal of a create or a read of the job is met for a PyTorchJob and for a Kubeflow Trainer v2 TrainJob (the
same hook, the same words: only the kind and its resource differ).

The refusals are the apiserver's own: a kind it does not serve (a private cluster whose PyTorchJob or TrainJob CRD was
deleted), a namespace that does not exist, a job too large for its validation (422), a validating admission
webhook that this test serves and registers (400, and 422 with causes), a ResourceQuota without room, a Role
without a verb, and a token it does not accept.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import structlog
import yaml
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, TaskDeferred
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.constants import (
    GROUP,
    LABEL_JOB_NAME,
    LABEL_JOBSET_NAME,
    TRAINER_GROUP,
    TRAINER_VERSION,
    TRAINJOB_PLURAL,
    VERSION,
)
from airflow_trainjob.exceptions import (
    JobRejectedError,
    KindNotServedError,
    KubernetesAccessError,
    NamespaceNotFoundError,
    QuotaExceededError,
    RuntimeNotFoundError,
    TrainingJobError,
)
from airflow_trainjob.hooks.api_errors import kind_not_served_message
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.operators.trainjob import TrainJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob.triggers.training_job import ERROR
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import first_event
from tests.support.jobs import OK, pytorch_specs
from tests.support.least_privilege import (
    SERVICE_ACCOUNT,
    apply_rbac,
    connection_uri,
    kubeconfig_with_token,
    role_rules,
    token_of,
)
from tests.support.refusals import RescheduleTaskInstance, admission_webhook, assert_nothing_leaks, counted_quota


@dataclass(frozen=True)
class Kind:
    """A job kind the refusals are met for, and where it lives on the API."""

    name: str
    group: str
    version: str
    plural: str

    @property
    def crd(self) -> str:
        """``pytorchjobs.kubeflow.org``: its CustomResourceDefinition's name, and the resource as RBAC names it."""
        return f"{self.plural}.{self.group}"

    @property
    def not_served(self) -> str:
        return kind_not_served_message(f"{self.crd}/{self.version}")


PYTORCHJOB = Kind("PyTorchJob", GROUP, VERSION, "pytorchjobs")
TRAINJOB = Kind("TrainJob", TRAINER_GROUP, TRAINER_VERSION, TRAINJOB_PLURAL)
KINDS = {k.name: k for k in (PYTORCHJOB, TRAINJOB)}
BOTH_KINDS = pytest.mark.parametrize("kind", list(KINDS.values()), ids=list(KINDS))


def operator(kind: Kind = PYTORCHJOB, **kwargs) -> TrainingJobOperator:
    """The task that creates a small job of ``kind``."""
    if kind is TRAINJOB:
        kwargs.setdefault("runtime", "torch-distributed")
        kwargs.setdefault("trainer", {"numNodes": 1, "command": [sys.executable, "-c", OK]})
        return TrainJobOperator(task_id="train", poll_interval=0.5, **kwargs)
    kwargs.setdefault("replica_specs", pytorch_specs(OK, workers=0))
    return TrainingJobOperator(task_id="train", kind="PyTorchJob", poll_interval=0.5, **kwargs)


def sensor(name: str = "made-elsewhere", kind: Kind = PYTORCHJOB, **kwargs) -> TrainingJobSensor:
    kwargs.setdefault("poke_interval", 1)
    kwargs.setdefault("timeout", 120)
    return TrainingJobSensor(task_id="watch", kind=kind.name, job_name=name, **kwargs)


def failure_of(task_step: Callable[[], object]) -> BaseException:
    """Run one entry point of a task as the task runner does: its exception is logged the way Airflow logs it
    (``log.exception``, the whole chain) and returned. A step that does not fail fails the test."""
    try:
        task_step()
    except TaskDeferred:
        raise
    except BaseException as e:
        structlog.get_logger("airflow.task").exception("Task failed with exception")
        return e
    pytest.fail("the task step did not fail")


def deferred_trigger(task_step: Callable[[], object]):
    with pytest.raises(TaskDeferred) as deferred:
        task_step()
    assert deferred.value.method_name == "execute_complete"
    return deferred.value.trigger


def produced(capfd, caplog) -> tuple[str, str, str]:
    """Everything the test's task wrote: stdout, stderr (structlog writes there) and Python logging."""
    out, err = capfd.readouterr()
    return out, err, caplog.text


def assert_not_retried(error: BaseException) -> None:
    assert isinstance(error, AirflowFailException), f"{type(error).__name__} would be retried: {error}"


def assert_retried(error: BaseException) -> None:
    assert isinstance(error, AirflowException) and not isinstance(error, AirflowFailException), type(error).__mro__


def jobs_in(custom_objects, namespace: str, kind: Kind = PYTORCHJOB) -> list[dict]:
    return custom_objects.list_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural)["items"]


def assert_nothing_left(custom_objects, core_v1, namespace: str) -> None:
    """No job of either kind, and no pod of a v1 job or a TrainJob's JobSet, in ``namespace``."""
    for kind in KINDS.values():
        assert jobs_in(custom_objects, namespace, kind) == []
    for label in (LABEL_JOB_NAME, LABEL_JOBSET_NAME):
        assert core_v1.list_namespaced_pod(namespace, label_selector=label).items == []


# ---- the cluster does not serve the kind ---------------------------------------------------------


@pytest.fixture(scope="module", params=list(KINDS.values()), ids=list(KINDS))
def cluster_without_kind(request, kubernetes_only_cluster) -> Iterator:
    """The session's Kubernetes-only cluster (``kubernetes_only_cluster``, ports base+40..43) with the CRD of one kind
    (the fixture's parameter: PyTorchJob, then TrainJob: Trainer v2 not installed) deleted for this module, and
    installed again after it: the shared cluster keeps its CRDs for every other test. Returns ``(cluster, kind)``."""
    from kubernetes import client

    kind: Kind = request.param
    other = TRAINJOB if kind is PYTORCHJOB else PYTORCHJOB
    cluster = kubernetes_only_cluster
    api = cluster.api_client()

    def not_served() -> bool:
        try:
            client.CustomObjectsApi(api).list_namespaced_custom_object(kind.group, kind.version, "default", kind.plural)
        except ApiException as e:
            return e.status == 404 and "page not found" in (e.body or "")
        return False

    try:
        extensions = client.ApiextensionsV1Api(api)
        assert kind.crd in {c.metadata.name for c in extensions.list_custom_resource_definition().items}
        extensions.delete_custom_resource_definition(kind.crd)
        wait_for(not_served, timeout=60, what=f"the apiserver to stop serving {kind.plural}")
        # Other kinds stay served: the answer is about this kind, not a broken cluster.
        client.CustomObjectsApi(api).list_namespaced_custom_object(other.group, other.version, "default", other.plural)
        yield cluster, kind
    finally:
        cluster.install_crds()  # as this module found it
        wait_for(lambda: not not_served(), timeout=60, what=f"the apiserver to serve {kind.plural} again")
        api.close()


@pytest.fixture
def no_crd(cluster_without_kind, monkeypatch):
    """``kubernetes_default`` points at the cluster without the kind's CRD (namespace ``default``); returns the kind."""
    from kubernetes import client

    cluster, kind = cluster_without_kind
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", cluster.airflow_connection("default"))
    api = cluster.api_client()
    yield kind
    assert client.CoreV1Api(api).list_namespaced_pod("default").items == []  # nothing was made instead
    api.close()


def assert_kind_not_served(error: BaseException, verb: str, kind: Kind) -> None:
    assert type(error) is KindNotServedError, repr(error)
    assert_not_retried(error)
    assert str(error) == f"{kind.not_served} (404 Not Found to {verb} {kind.name} default/{error_name(error)})"


def error_name(error: BaseException) -> str:
    return str(error).rsplit("/", 1)[1].rstrip(")")


def test_the_trainjob_words_name_trainer_v2():
    assert TRAINJOB.not_served.startswith(
        "the cluster does not serve trainjobs.trainer.kubeflow.org/v1alpha1: Kubeflow Trainer v2 "
        "(trainjobs.trainer.kubeflow.org) is not installed"
    )


def test_missing_kind_operator_synchronous(no_crd, ti, capfd, caplog):
    error = failure_of(lambda: operator(no_crd).execute({"ti": ti}))
    assert_kind_not_served(error, "create", no_crd)
    assert error_name(error) == ti.xcom["job_name"]
    assert_nothing_leaks(error, *produced(capfd, caplog))


def test_missing_kind_operator_deferrable(no_crd, ti, capfd, caplog):
    # The create is made before deferring, in the worker: the refusal is raised there, nothing is deferred.
    error = failure_of(lambda: operator(no_crd, deferrable=True).execute({"ti": ti}))
    assert_kind_not_served(error, "create", no_crd)
    assert_nothing_leaks(error, *produced(capfd, caplog))


def test_missing_kind_sensor_poke_fails_at_once(no_crd, capfd, caplog):
    started = time.monotonic()
    error = failure_of(lambda: sensor(kind=no_crd, mode="poke").execute({}))
    assert time.monotonic() - started < 10  # the first poke: not poking until the 120 s timeout
    assert_kind_not_served(error, "get", no_crd)
    assert_nothing_leaks(error, *produced(capfd, caplog))


def test_missing_kind_sensor_reschedule_fails_instead_of_rescheduling(no_crd, capfd, caplog):
    error = failure_of(lambda: sensor(kind=no_crd, mode="reschedule").execute({"ti": RescheduleTaskInstance()}))
    assert_kind_not_served(error, "get", no_crd)  # not AirflowRescheduleException: no further pokes
    assert_nothing_leaks(error, *produced(capfd, caplog))


def test_missing_kind_sensor_deferrable(no_crd, capfd, caplog):
    deferrable = sensor(kind=no_crd, deferrable=True)
    trigger = deferred_trigger(lambda: deferrable.execute({}))
    event = first_event(trigger, timeout=60)
    assert event["outcome"] == ERROR and event["job"] is None
    # The trigger words it as the synchronous paths do (one function).
    assert f"{no_crd.not_served} (404 Not Found to list or watch {no_crd.crd} in namespace default)" in event["message"]
    error = failure_of(lambda: deferrable.execute_complete({}, event))
    assert_kind_not_served(error, "get", no_crd)
    assert_nothing_leaks(error, json.dumps(event), *produced(capfd, caplog))


# ---- the namespace does not exist ----------------------------------------------------------------


@pytest.mark.parametrize("deferrable", [False, True], ids=["synchronous", "deferrable"])
def test_missing_namespace(deferrable, kubernetes_default_conn, ti, core_v1, capfd, caplog):
    missing = f"t-missing-{uuid.uuid4().hex[:6]}"
    error = failure_of(lambda: operator(namespace=missing, deferrable=deferrable).execute({"ti": ti}))
    assert type(error) is NamespaceNotFoundError
    assert_not_retried(error)
    assert str(error).startswith(
        f'namespace "{missing}" does not exist (404 NotFound to create PyTorchJob '
        f"{missing}/{ti.xcom['job_name']}): create it"
    )
    assert missing not in {n.metadata.name for n in core_v1.list_namespace().items}
    assert_nothing_leaks(error, *produced(capfd, caplog))


# ---- invalid (422) -------------------------------------------------------------------------------


@pytest.mark.parametrize("deferrable", [False, True], ids=["synchronous", "deferrable"])
def test_invalid_names_the_field(
    deferrable, kubernetes_default_conn, namespace, ti, custom_objects, core_v1, capfd, caplog
):
    too_big = operator(annotations={"notes": "x" * 300_000}, deferrable=deferrable)  # the API's limit: 256 KiB in all
    error = failure_of(lambda: too_big.execute({"ti": ti}))
    assert type(error) is JobRejectedError
    assert_not_retried(error)
    assert str(error) == (
        f"the API server refused to create PyTorchJob {namespace}/{ti.xcom['job_name']} as invalid "
        f"(422 Invalid): metadata.annotations: Too long: must have at most 262144 bytes"
    )
    assert_nothing_left(custom_objects, core_v1, namespace)
    assert_nothing_leaks(error, *produced(capfd, caplog))


# ---- denied by a validating admission webhook (400; 422 with causes) -----------------------------


@pytest.fixture
def webhook(local_cluster, kube_api_client, core_v1, custom_objects, namespace, tmp_path):
    """A real webhook for this test's namespace only, reviewing every create of a PyTorchJob there."""
    with admission_webhook(
        kube_api_client, local_cluster.state_dir / "pki", tmp_path / "webhook-tls", core_v1, namespace
    ) as hook:
        hook.denial = {"message": "probe"}
        hook.wait_until_called(custom_objects, namespace)
        hook.reviews.clear()
        yield hook


DENIALS = {
    # No code: the apiserver makes it 400 BadRequest.
    "400": (
        {"message": "no more than 4 GPUs per job in this namespace"},
        "(400 Bad Request): no more than 4 GPUs per job in this namespace",
    ),
    "422-causes": (
        {
            "code": 422,
            "reason": "Invalid",
            "message": "the job breaks team policy",
            "details": {
                "causes": [
                    {"field": "spec.runPolicy.backoffLimit", "message": "must be set", "reason": "FieldValueRequired"},
                    {"field": "metadata.labels[team]", "message": "required"},
                ]
            },
        },
        "(422 Invalid): the job breaks team policy; spec.runPolicy.backoffLimit: must be set; "
        "metadata.labels[team]: required",
    ),
}


@BOTH_KINDS
@pytest.mark.parametrize("deferrable", [False, True], ids=["synchronous", "deferrable"])
@pytest.mark.parametrize("denial", sorted(DENIALS))
def test_webhook_denial_names_the_webhook_and_fields(
    denial, deferrable, kind, kubernetes_default_conn, webhook, namespace, ti, custom_objects, core_v1, capfd, caplog
):
    webhook.denial, said = DENIALS[denial]
    error = failure_of(lambda: operator(kind, deferrable=deferrable).execute({"ti": ti}))
    assert type(error) is JobRejectedError
    assert_not_retried(error)
    assert str(error) == (
        f'admission webhook "{webhook.name}" denied the request to create {kind.name} '
        f"{namespace}/{ti.xcom['job_name']} {said}"
    )
    assert len(webhook.create_reviews()) == 1  # one create: neither the hook nor the operator tried again
    assert_nothing_left(custom_objects, core_v1, namespace)
    assert_nothing_leaks(error, *produced(capfd, caplog))


# ---- a TrainJob's runtime that does not exist (read before the create) ---------------------------

RUNTIMES = {
    "ClusterTrainingRuntime": ("clustertrainingruntimes", "", "kubectl get clustertrainingruntimes"),
    "TrainingRuntime": ("trainingruntimes", " in namespace {ns}", "kubectl get trainingruntimes -n {ns}"),
}


@pytest.mark.parametrize("runtime_kind", sorted(RUNTIMES))
@pytest.mark.parametrize("deferrable", [False, True], ids=["synchronous", "deferrable"])
def test_missing_runtime_fails_at_once_naming_it(
    deferrable, runtime_kind, kubernetes_default_conn, namespace, ti, custom_objects, core_v1, capfd, caplog
):
    # Without its runtime the trainer only records a warning and tries again: the task would wait until a deadline.
    plural, where, listing = RUNTIMES[runtime_kind]
    runtime = {"name": "no-such-runtime", "kind": runtime_kind}
    started = time.monotonic()
    error = failure_of(lambda: operator(TRAINJOB, runtime=runtime, deferrable=deferrable).execute({"ti": ti}))
    assert time.monotonic() - started < 10
    assert type(error) is RuntimeNotFoundError
    assert_not_retried(error)
    assert str(error) == (
        f'TrainJob {namespace}/{ti.xcom["job_name"]} names {runtime_kind} "no-such-runtime"'
        f"{where.format(ns=namespace)}, which does not exist (404 NotFound to get {plural}.trainer.kubeflow.org "
        f"no-such-runtime): name one that exists ({listing.format(ns=namespace)}) or create it; nothing was created"
    )
    assert_nothing_left(custom_objects, core_v1, namespace)
    assert_nothing_leaks(error, *produced(capfd, caplog))


# ---- a ResourceQuota without room (403 exceeded quota) -------------------------------------------


@BOTH_KINDS
@pytest.mark.parametrize("deferrable", [False, True], ids=["synchronous", "deferrable"])
def test_quota_says_which_and_what_was_requested(
    deferrable, kind, kubernetes_default_conn, namespace, ti, custom_objects, core_v1, capfd, caplog
):
    counted_quota(core_v1, namespace, "training-jobs", {f"count/{kind.crd}": "0"})
    error = failure_of(lambda: operator(kind, deferrable=deferrable).execute({"ti": ti}))
    assert type(error) is QuotaExceededError
    assert_retried(error)  # a later try may fit
    assert str(error) == (
        f'ResourceQuota "training-jobs" in namespace {namespace} has no room to create {kind.name} '
        f"{namespace}/{ti.xcom['job_name']} (403 Forbidden, exceeded quota): "
        f"count/{kind.crd}: requested 1, used 0, limited to 0; a later try may fit once "
        f"usage drops or the quota is raised"
    )
    assert_nothing_left(custom_objects, core_v1, namespace)
    assert_nothing_leaks(error, *produced(capfd, caplog))


# ---- RBAC without a verb (403) -------------------------------------------------------------------


@pytest.fixture
def role_without(local_cluster, namespace, service_account_api_client, kube_api_client, tmp_path, monkeypatch):
    """``role_without(verb)``: bind the shipped Role minus ``verb`` on the job kinds to a ServiceAccount, and point
    ``kubernetes_default`` at that account's token. Returns the account's user name."""
    sa_client = service_account_api_client(SERVICE_ACCOUNT)

    def make(verb: str, kind: Kind = PYTORCHJOB) -> str:
        rules = []
        for rule in role_rules():
            if kind.group in rule["apiGroups"] and kind.plural in rule["resources"]:
                rule = {**rule, "verbs": [v for v in rule["verbs"] if v != verb]}
            rules.append(rule)
        apply_rbac(kube_api_client, namespace, rules=rules)
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig_with_token(local_cluster, token_of(sa_client), namespace)))
        path.chmod(0o600)
        monkeypatch.setenv(
            "AIRFLOW_CONN_KUBERNETES_DEFAULT", connection_uri({"kube_config_path": str(path), "namespace": namespace})
        )
        from kubernetes import client

        granted = "get" if verb != "get" else "list"  # wait until the Role is in force: a verb it keeps works

        def in_force() -> bool:
            api = client.CustomObjectsApi(sa_client)
            try:
                if granted == "get":
                    api.get_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, "absent")
                else:
                    api.list_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural)
            except ApiException as e:
                return e.status == 404
            return True

        wait_for(in_force, timeout=30, what="the Role to take effect")
        return f"system:serviceaccount:{namespace}:{SERVICE_ACCOUNT}"

    return make


def rbac_line(user: str, verb: str, namespace: str, kind: Kind = PYTORCHJOB) -> str:
    return f'RBAC does not allow user "{user}" to {verb} {kind.crd} in namespace "{namespace}" (403 Forbidden to '


def rbac_advice(verb: str, kind: Kind = PYTORCHJOB) -> str:
    return f'bind it to a Role that allows verb "{verb}" on resource "{kind.plural}" in API group "{kind.group}"'


@BOTH_KINDS
@pytest.mark.parametrize("deferrable", [False, True], ids=["synchronous", "deferrable"])
def test_rbac_operator_names_verb_resource_namespace(
    deferrable, kind, role_without, namespace, ti, custom_objects, core_v1, capfd, caplog
):
    user = role_without("create", kind)
    error = failure_of(lambda: operator(kind, deferrable=deferrable).execute({"ti": ti}))
    assert type(error) is KubernetesAccessError
    assert_retried(error)
    message = str(error)
    assert message.startswith(rbac_line(user, "create", namespace, kind))
    assert (
        f"to create {kind.name} {namespace}/{ti.xcom['job_name']} through connection 'kubernetes_default', "
        f"needed to create a training job): {rbac_advice('create', kind)}"
    ) in message
    assert_nothing_left(custom_objects, core_v1, namespace)
    assert_nothing_leaks(error, *produced(capfd, caplog))


@pytest.mark.parametrize("mode", ["poke", "reschedule"])
def test_rbac_sensor_names_the_verb(mode, role_without, namespace, custom_objects, core_v1, capfd, caplog):
    user = role_without("get")
    context = {"ti": RescheduleTaskInstance()} if mode == "reschedule" else {}
    error = failure_of(lambda: sensor(mode=mode).execute(context))
    assert type(error) is KubernetesAccessError
    assert_retried(error)
    assert str(error).startswith(rbac_line(user, "get", namespace) + f"get PyTorchJob {namespace}/made-elsewhere")
    assert rbac_advice("get") in str(error)
    assert_nothing_left(custom_objects, core_v1, namespace)
    assert_nothing_leaks(error, *produced(capfd, caplog))


def test_rbac_sensor_deferrable_names_the_verb_the_watch_lacks(
    role_without, namespace, custom_objects, core_v1, capfd, caplog
):
    user = role_without("list")
    deferrable = sensor(deferrable=True)
    event = first_event(deferred_trigger(lambda: deferrable.execute({})), timeout=60)
    assert event["outcome"] == ERROR
    assert (
        rbac_line(user, "list", namespace) + f"list or watch pytorchjobs.kubeflow.org in namespace {namespace}"
        in event["message"]
    )
    error = failure_of(lambda: deferrable.execute_complete({}, event))
    assert type(error) is TrainingJobError  # the job itself can be read: the event's refusal, retryable
    assert rbac_advice("list") in str(error)
    assert_nothing_left(custom_objects, core_v1, namespace)
    assert_nothing_leaks(error, json.dumps(event), *produced(capfd, caplog))


# ---- credentials not accepted (401) --------------------------------------------------------------


def test_unaccepted_token(local_cluster, namespace, monkeypatch, ti, custom_objects, core_v1, capfd, caplog):
    token = f"not-a-real-token-{uuid.uuid4().hex}"
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT",
        connection_uri(
            {"kube_config": json.dumps(kubeconfig_with_token(local_cluster, token, namespace)), "namespace": namespace}
        ),
    )
    error = failure_of(lambda: operator().execute({"ti": ti}))
    assert type(error) is KubernetesAccessError
    assert_retried(error)  # tokens rotate: the next try reads them again
    assert str(error).startswith(
        f"401 Unauthorized to create PyTorchJob {namespace}/{ti.xcom['job_name']}: the API "
        f"server did not accept the credentials of connection 'kubernetes_default'"
    )
    poked = failure_of(lambda: sensor().poke({}))
    assert type(poked) is KubernetesAccessError and str(poked).startswith("401 Unauthorized to get PyTorchJob")
    assert_nothing_left(custom_objects, core_v1, namespace)
    said = produced(capfd, caplog)
    assert_nothing_leaks(error, *said)
    assert_nothing_leaks(poked)
    assert all(token not in text for text in said) and token not in str(error) + repr(error)


# ---- the check itself ----------------------------------------------------------------------------


def test_the_leak_check_finds_a_raw_refusal_in_the_log(
    kubernetes_default_conn, namespace, custom_objects, capfd, caplog
):
    """Control: the same search finds headers when a raw ApiException is logged as Airflow logs it."""
    error = failure_of(
        lambda: custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", "x")
    )
    with pytest.raises(AssertionError, match="HTTP response headers"):
        assert_nothing_leaks(None, *produced(capfd, caplog))
    with pytest.raises(AssertionError, match="HTTPHeaderDict"):
        assert_nothing_leaks(error)
