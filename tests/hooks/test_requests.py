"""hooks/requests.py: each operation's request, built once for both clients (no cluster; the requests sent through
both hooks against the local apiserver are in tests/hooks/test_both_hooks.py)."""

from __future__ import annotations

import inspect

import kubernetes.client
import kubernetes_asyncio.client
import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException

from airflow_trainjob.hooks import requests
from airflow_trainjob.hooks.requests import CALL_API, MERGE_PATCH

MANIFEST = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j", "namespace": "ml"}}

#: One request of each operation, as the hooks build them.
EVERY_REQUEST = [
    requests.create_job(MANIFEST),
    requests.get_job("PyTorchJob", "j", "ml"),
    requests.patch_job("PyTorchJob", "j", "ml", {"metadata": {"labels": {"a": None}}}),
    requests.delete_job("PyTorchJob", "j", "ml", uid="u-1", propagation="Foreground"),
    requests.list_jobs("PyTorchJob", "ml", 10, "token"),
    requests.list_job_pods("j", "ml", replica_index=0, kind="PyTorchJob"),
    requests.delete_pod("j-master-0", "ml", uid="u-2"),
    requests.read_pod_log("j-master-0", "ml", "pytorch", 5, None, False),
    requests.read_timestamped_log("j-master-0", "ml", "pytorch", False, "2026-01-01T00:00:00Z", None, None),
    requests.list_events("ml", {"j"}),
]


def positional(method) -> tuple[list[str], list[str]]:
    """A client method's positional parameters after ``self``, and those of them without a default."""
    params = [p for p in list(inspect.signature(method).parameters.values())[1:] if p.kind == p.POSITIONAL_OR_KEYWORD]
    return [p.name for p in params], [p.name for p in params if p.default is inspect.Parameter.empty]


def client_method(client_module, request):
    api = client_module.ApiClient if request.api == CALL_API else getattr(client_module, request.api)
    return getattr(api, request.method)


@pytest.mark.parametrize("request_", EVERY_REQUEST, ids=lambda r: r.operation)
def test_every_request_is_a_method_both_clients_have_with_the_same_parameters(request_):
    """What makes one request serve both hooks: the same API class and method in either client, whose positional
    parameters the request's arguments fill in the same order (every required one)."""
    for client_module in (kubernetes.client, kubernetes_asyncio.client):
        names, required = positional(client_method(client_module, request_))
        assert len(names) >= len(request_.args) and set(required) <= set(names[: len(request_.args)])
    sync_names = positional(client_method(kubernetes.client, request_))[0][: len(request_.args)]
    assert positional(client_method(kubernetes_asyncio.client, request_))[0][: len(request_.args)] == sync_names
    if request_.api == CALL_API:  # the options it passes are call_api's own parameters, in both clients
        for client_module in (kubernetes.client, kubernetes_asyncio.client):
            assert set(request_.options) <= set(inspect.signature(client_method(client_module, request_)).parameters)


def test_the_sender_adds_the_timeout_and_reads_bytes_undecoded():
    get = requests.get_job("PyTorchJob", "j", "ml")
    assert get.client_options((10.0, 60.0)) == {"_request_timeout": (10.0, 60.0)}
    log = requests.read_pod_log("p", "ml", "pytorch", 3, None, False)
    assert log.client_options((1.0, 2.0)) == {
        "previous": False,
        "container": "pytorch",
        "tail_lines": 3,
        "_preload_content": False,
        "_request_timeout": (1.0, 2.0),
    }


def test_jobs_are_addressed_as_custom_objects_and_said_as_jobs_in_errors():
    get = requests.get_job("PyTorchJob", "j", "ml")
    assert (get.api, get.method, get.args) == (
        "CustomObjectsApi",
        "get_namespaced_custom_object",
        ("kubeflow.org", "v1", "ml", "pytorchjobs", "j"),
    )
    assert get.call.target == "PyTorchJob ml/j" and (get.call.verb, get.call.purpose) == ("get", "read a training job")
    create = requests.create_job(MANIFEST)
    assert create.args == ("kubeflow.org", "v1", "ml", "pytorchjobs", MANIFEST)
    assert create.call.target == "PyTorchJob ml/j" and create.call.verb == "create"
    page = requests.list_jobs("PyTorchJob", "ml", None, None)
    assert page.args == ("kubeflow.org", "v1", "ml", "pytorchjobs") and page.form == "bytes"


def test_an_unknown_kind_or_a_job_without_name_is_refused_while_building():
    with pytest.raises(KeyError):
        requests.get_job("NoSuchJob", "j", "ml")
    with pytest.raises(ValueError, match="names no job"):
        requests.get_job("PyTorchJob", "", "ml")


def test_a_patch_is_a_merge_patch_for_both_clients():
    """The sync client sends a dict as a merge patch by default, kubernetes_asyncio as a JSON patch: said once."""
    patch = {"metadata": {"labels": {"a": None}}}
    request = requests.patch_job("PyTorchJob", "j", "ml", patch)
    assert request.args[-1] is patch and request.options == {"_content_type": MERGE_PATCH}
    assert MERGE_PATCH == "application/merge-patch+json"


@pytest.mark.parametrize("error_class", [ApiException, AsyncApiException])
def test_a_deletion_is_done_when_deleted_or_already_gone_and_nothing_else(error_class):
    job = requests.delete_job("PyTorchJob", "j", "ml", uid="u-1", propagation="Foreground")
    assert job.options == {
        "body": {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": "Foreground",
            "preconditions": {"uid": "u-1"},
        }
    }
    pod = requests.delete_pod("p", "ml")
    assert pod.options == {"body": {"apiVersion": "v1", "kind": "DeleteOptions"}}  # no precondition without a uid
    for deletion in (job, pod):
        assert deletion.answer({"kind": "Status"}) is True
        assert deletion.settle(error_class(status=404, reason="Not Found")) is False
        conflict = error_class(status=409, reason="Conflict")  # the uid precondition failed: a successor
        with pytest.raises(error_class) as raised:
            deletion.settle(conflict)
        assert raised.value is conflict
    assert pod.call.target == "pods ml/p" and pod.call.purpose == "delete a pod"


def test_a_404_is_an_error_of_every_request_but_a_deletion():
    gone = ApiException(status=404, reason="Not Found")
    for request in EVERY_REQUEST:
        if request.operation in ("delete_job", "delete_pod"):
            continue
        with pytest.raises(ApiException):
            request.settle(gone)


def test_a_jobs_pods_come_with_their_lists_version_and_by_replica_index_when_asked():
    every = requests.list_job_pods("j", "ml", kind="PyTorchJob")
    assert every.options == {"label_selector": "training.kubeflow.org/job-name=j"} and every.form == "model"
    lead = requests.list_job_pods("j", "ml", replica_index=0, kind="PyTorchJob")
    assert lead.options == {"label_selector": "training.kubeflow.org/job-name=j,training.kubeflow.org/replica-index=0"}
    pods = [{"metadata": {"name": "j-master-0"}}]
    assert every.answer({"kind": "PodList", "metadata": {"resourceVersion": "42"}, "items": pods}) == (pods, "42")
    assert every.answer({"kind": "PodList", "metadata": {}, "items": []}) == ([], None)
    assert every.call.target == "pods in namespace ml"  # the list names no pod


def test_a_log_is_read_as_bytes_and_decoded_here():
    """The clients' own decoding parses a log as JSON first: a log that is one JSON value would come back as
    Python's repr of it. Undecodable bytes are replaced, not raised."""
    request = requests.read_pod_log("p", "ml", None, None, 30, True)
    assert request.form == "bytes" and request.options == {"previous": True, "since_seconds": 30}
    assert request.answer(b'{"loss": 0.5}\n') == '{"loss": 0.5}\n'
    assert request.answer(b"caf\xe9\n") == "caf\ufffd\n"
    assert request.call.resource == "pods/log" and request.call.name == "p"


def test_a_timestamped_read_asks_for_what_is_set():
    request = requests.read_timestamped_log(
        "p", "ml", "pytorch", previous=True, since_time="2026-01-01T00:00:00Z", limit_bytes=100, tail_lines=2
    )
    path, method, path_params, query = request.args[:4]
    assert (request.api, request.method, path, method) == (
        CALL_API,
        "call_api",
        "/api/v1/namespaces/{namespace}/pods/{name}/log",
        "GET",
    )
    assert path_params == {"namespace": "ml", "name": "p"}
    assert query == [
        ("container", "pytorch"),
        ("timestamps", "true"),
        ("previous", "true"),
        ("sinceTime", "2026-01-01T00:00:00Z"),
        ("limitBytes", 100),
        ("tailLines", 2),
    ]
    plain = requests.read_timestamped_log("p", "ml", "pytorch", False, None, None, None)
    assert plain.args[3] == [("container", "pytorch"), ("timestamps", "true")]
    assert plain.form == "bytes" and plain.answer(b"x") == b"x"


def event(name: str, about: str, last: str | None = None, created: str = "2026-01-01T00:00:00Z") -> dict:
    e: dict = {"metadata": {"name": name, "creationTimestamp": created}, "involvedObject": {"name": about}}
    if last:
        e["lastTimestamp"] = last
    return e


def test_events_are_the_ones_about_the_names_oldest_first_whatever_the_server_selected():
    """One name is selected by the server too (``involvedObject.name``), several are not: the answer is chosen by
    name here either way, so the selector only makes the answer smaller."""
    listed = {
        "items": [
            event("late", "j", "2026-01-01T00:00:09Z"),
            event("other", "k", "2026-01-01T00:00:01Z"),
            event("early", "j", "2026-01-01T00:00:02Z"),
            event("pod", "j-master-0", None, created="2026-01-01T00:00:05Z"),
        ]
    }
    one = requests.list_events("ml", {"j"})
    assert one.options == {"field_selector": "involvedObject.name=j"}
    assert [e["metadata"]["name"] for e in one.answer(listed)] == ["early", "late"]
    several = requests.list_events("ml", ["j", "j-master-0"])
    assert several.options == {}
    assert [e["metadata"]["name"] for e in several.answer(listed)] == ["early", "pod", "late"]
    assert requests.list_events("ml", set()).answer(listed) == []
    assert one.form == "model" and one.call.target == "events in namespace ml"
