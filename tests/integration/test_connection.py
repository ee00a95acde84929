"""The connection line the local cluster prints is one Airflow's own cncf.kubernetes hook authenticates with."""

from __future__ import annotations


def test_kubernetes_hook_reaches_the_cluster(kubernetes_default_conn: str, namespace: str) -> None:
    from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook

    hook = KubernetesHook(conn_id=kubernetes_default_conn)
    assert hook.get_namespace() == namespace
    assert hook.core_v1_client.list_namespaced_pod(namespace).items == []
