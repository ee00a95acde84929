"""The node agent's pure decision: the not-ready taint follows the Ready condition, other taints are kept."""

from __future__ import annotations

from airflow_trainjob_local.kubelet.node import NOT_READY_TAINT, taints_for

OTHER = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def test_a_ready_node_loses_the_not_ready_taint_and_keeps_the_others():
    stored = {**NOT_READY_TAINT, "timeAdded": None}
    assert taints_for(True, [OTHER, stored]) == [OTHER]
    assert taints_for(True, []) == []


def test_a_not_ready_node_gets_the_taint_once():
    assert taints_for(False, [OTHER]) == [OTHER, NOT_READY_TAINT]
    assert taints_for(False, [NOT_READY_TAINT]) == [NOT_READY_TAINT]


def test_a_not_ready_no_execute_taint_is_not_the_one_managed():
    no_execute = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
    assert taints_for(True, [no_execute]) == [no_execute]
