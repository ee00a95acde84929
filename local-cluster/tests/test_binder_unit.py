"""The binder's pure decisions: which pods wait for it, which it binds, which it has already marked."""

from __future__ import annotations

from typing import Any

from airflow_trainjob_local.kubelet import binder

NODE = {"kubernetes.io/hostname": "n", "kubernetes.io/os": "linux"}


def pending(node_selector: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec, "status": status}


def test_a_pod_whose_selector_the_node_does_not_match_waits_but_is_not_schedulable():
    pod = pending({"node-type": "training"})
    assert binder.waiting_for_this_scheduler(pod)
    assert not binder.selector_matches(pod, NODE)
    assert not binder.schedulable(pod, NODE)


def test_a_pod_whose_selector_matches_is_schedulable():
    assert binder.schedulable(pending({"kubernetes.io/os": "linux"}), NODE)
    assert binder.schedulable(pending(), NODE)


def test_a_pod_of_another_scheduler_or_finished_does_not_wait_for_this_one():
    other = pending()
    other["spec"]["schedulerName"] = "volcano"
    assert not binder.waiting_for_this_scheduler(other)
    assert not binder.waiting_for_this_scheduler(pending(phase="Succeeded"))


def test_marked_unschedulable_reads_the_pod_scheduled_condition():
    assert not binder.marked_unschedulable(pending())
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    assert binder.marked_unschedulable(pending(conditions=[unschedulable]))
    assert not binder.marked_unschedulable(pending(conditions=[{**unschedulable, "status": "True", "reason": ""}]))
