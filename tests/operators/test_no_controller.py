"""No controller acts on the job: the startup timeout says so, in both modes, instead of "last state: NotStarted".

A private cluster with the job CRDs but no training controller and no kubelet (the session's
``kubernetes_only_cluster``, ports base+40..43).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob.exceptions import TrainingJobTimeoutError
from tests.support.deferred import MODES, defer, first_event, operator_for
from tests.support.jobs import OK, pytorch_specs


@pytest.fixture(scope="module")
def cluster_without_controller(kubernetes_only_cluster) -> Iterator:
    yield kubernetes_only_cluster


@pytest.mark.parametrize("mode", MODES)
def test_startup_timeout_says_no_controller_acted(mode, cluster_without_controller, ti, monkeypatch):
    from kubernetes import client

    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", cluster_without_controller.airflow_connection("default"))
    operator = operator_for(mode, pytorch_specs(OK, workers=0), startup_timeout=2, poll_interval=60)
    with pytest.raises(TrainingJobTimeoutError) as raised:
        if mode == "sync":
            operator.execute({"ti": ti})
        else:
            operator.execute_complete({"ti": ti}, first_event(defer(operator, ti), timeout=60))
    message = str(raised.value)
    assert "startup_timeout of 2 s passed and no controller has acted on the job" in message
    assert "training operator may not be running, or not watching namespace default" in message
    api = cluster_without_controller.api_client()
    try:  # the job was deleted: nothing is left waiting for a controller that may come later
        assert (
            client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, "default", "pytorchjobs")[
                "items"
            ]
            == []
        )
    finally:
        api.close()
