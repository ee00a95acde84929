"""The fault proxy itself: each fault kind, as the official Kubernetes client sees it through the proxy."""

from __future__ import annotations

import time

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from tests.support.fault_proxy import Fault


@pytest.fixture
def api(fault_proxy, local_cluster):
    """An official client through the proxy, with urllib3's own silent retries off (the test sees each fault)."""
    configuration = client.Configuration()
    config.load_kube_config(
        config_file=str(fault_proxy.kubeconfig(local_cluster.kubeconfig)), client_configuration=configuration
    )
    configuration.retries = False
    with client.ApiClient(configuration) as api_client:
        yield client.CoreV1Api(api_client)


def test_requests_pass_through_with_the_callers_own_credentials(api, fault_proxy, namespace):
    assert api.read_namespace(namespace).metadata.name == namespace
    assert fault_proxy.requests[-1] == {
        "method": "GET",
        "path": f"/api/v1/namespaces/{namespace}",
        "watch": False,
        "answer": 200,
    }
    anonymous = client.Configuration()
    anonymous.host, anonymous.ssl_ca_cert = fault_proxy.url, api.api_client.configuration.ssl_ca_cert
    with client.ApiClient(anonymous) as api_client, pytest.raises(ApiException) as refused:
        client.CoreV1Api(api_client).read_namespace(namespace)
    assert refused.value.status in (401, 403)  # the apiserver, not the proxy, decides who may do what
    assert fault_proxy.hits() == 0


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_status_faults_are_answered_as_kubernetes_status(api, fault_proxy, namespace, status):
    fault = fault_proxy.add(
        Fault(
            "status",
            method="GET",
            path="/namespaces/",
            status=status,
            times=2,
            retry_after=3 if status == 429 else None,
        )
    )
    for _ in range(2):
        with pytest.raises(ApiException) as raised:
            api.read_namespace(namespace)
        assert raised.value.status == status
    assert (raised.value.headers.get("Retry-After") == "3") == (status == 429)
    assert api.read_namespace(namespace).metadata.name == namespace  # times=2: the third passes
    assert fault_proxy.hits(fault) == 2


def test_status_after_forward_loses_only_the_answer(api, fault_proxy, namespace):
    fault = fault_proxy.add(Fault("status", method="POST", path="/configmaps", status=504, after_forward=True))
    with pytest.raises(ApiException) as raised:
        api.create_namespaced_config_map(namespace, {"metadata": {"name": "made"}, "data": {"a": "b"}})
    assert raised.value.status == 504
    assert api.read_namespaced_config_map("made", namespace).data == {"a": "b"}  # the apiserver did create it
    assert fault_proxy.hits(fault) == 1


@pytest.mark.parametrize("action", ["reset", "drop"])
def test_connection_faults_reach_the_client_as_connection_errors(api, fault_proxy, namespace, action):
    fault = fault_proxy.add(Fault(action, method="GET", path=f"/namespaces/{namespace}$"))
    with pytest.raises(HTTPError):
        api.read_namespace(namespace)
    assert fault_proxy.hits(fault) == 1
    assert api.read_namespace(namespace).metadata.name == namespace


def test_delay_holds_the_request_and_trips_a_client_read_timeout(api, fault_proxy, namespace):
    fault = fault_proxy.add(Fault("delay", method="GET", seconds=3, times=2))
    with pytest.raises(HTTPError):  # urllib3's ReadTimeoutError
        api.read_namespace(namespace, _request_timeout=(5, 0.5))
    started = time.monotonic()
    assert api.read_namespace(namespace).metadata.name == namespace
    assert time.monotonic() - started >= 3  # the answer came, after the delay
    assert fault_proxy.hits(fault) == 2


def _config_maps(api, namespace, count):
    for i in range(count):
        api.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{i}"}})


def test_cut_ends_a_watch_mid_stream(api, fault_proxy, namespace):
    _config_maps(api, namespace, 3)
    fault = fault_proxy.add(Fault("cut", watch=True, path="/configmaps", after_events=2))
    seen = []
    with pytest.raises(HTTPError):  # urllib3's ProtocolError: the chunked stream broke off
        for event in watch.Watch().stream(api.list_namespaced_config_map, namespace, timeout_seconds=20):
            seen.append(event["object"].metadata.name)
    assert len(seen) == 2 and set(seen) < {"cm-0", "cm-1", "cm-2"}, seen  # a list's ADDED events come in any order
    assert fault_proxy.hits(fault) == 1


def test_expire_answers_a_watch_with_410_gone(api, fault_proxy, namespace):
    fault = fault_proxy.add(Fault("expire", watch=True, path="/configmaps"))
    with pytest.raises(ApiException) as raised:
        for _ in watch.Watch().stream(
            api.list_namespaced_config_map, namespace, resource_version="1", timeout_seconds=5
        ):
            pass
    assert raised.value.status == 410 and "Expired" in raised.value.reason
    assert fault_proxy.hits(fault) == 1


def test_rules_match_by_method_path_watch_and_count(api, fault_proxy, namespace):
    fault = fault_proxy.add(
        Fault("status", method="GET", path="/configmaps/", watch=False, status=500, skip=1, times=1)
    )
    _config_maps(api, namespace, 1)  # POST: no match
    api.read_namespaced_config_map("cm-0", namespace)  # first match: skipped
    with pytest.raises(ApiException):
        api.read_namespaced_config_map("cm-0", namespace)
    api.read_namespaced_config_map("cm-0", namespace)  # times=1: used up
    assert fault_proxy.hits(fault) == 1
    assert [r["answer"] for r in fault_proxy.requests if r["path"].endswith("/cm-0")] == [200, 500, 200]
