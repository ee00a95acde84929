"""Waiting in tests for what the cluster does asynchronously, without fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest


def wait_for(
    read: Callable[[], Any],
    done: Callable[[Any], bool] = bool,
    timeout: float = 60.0,
    what: str = "",
    interval: float = 0.2,
) -> Any:
    """Poll ``read()`` every ``interval`` seconds until ``done(value)``; return that value, or fail
    the test after ``timeout`` seconds showing the last value read."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = read()
        if done(value):
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:g}s waiting for {what or done}; last value: {value!r}")


def pod_gone(core_v1: Any, namespace: str, name: str) -> bool:
    """True once the API answers 404 for the pod (a pod being deleted still counts as there)."""
    from kubernetes.client.exceptions import ApiException

    try:
        core_v1.read_namespaced_pod(name, namespace)
    except ApiException as e:
        if e.status == 404:
            return True
        raise
    return False
