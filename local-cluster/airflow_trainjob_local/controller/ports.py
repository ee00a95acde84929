"""Loopback ports for replicas.

On a real cluster every pod has its own IP, so all replicas of a kind listen on the same default port
(e.g. 23456 for PyTorch) behind per-replica service names. Here every pod of every job is a process on one
host, so the controller gives each replica its own free TCP port on 127.0.0.1 and points the injected
environment at ``127.0.0.1:<port>``. The ports are recorded on the job in the
:data:`~airflow_trainjob_local.constants.ANNOTATION_LOCAL_PORTS` annotation, so a restarted controller (and a
recreated pod) gets the same ones.
"""

from __future__ import annotations

import json
import random
import socket
import threading

from airflow_trainjob_local.constants import ANNOTATION_LOCAL_PORTS

__all__ = ["PortAllocator", "ports_annotation", "read_ports"]


class PortAllocator:
    """Hands out TCP ports that are free on 127.0.0.1 right now and were not handed out before.

    A port is "free" when binding a socket to it succeeds; the process that will listen on it starts later,
    so the allocator also remembers every port it gave out (in this controller's lifetime) and never gives
    it twice.

    :param low: lowest port to use, inclusive.
    :param high: highest port to use, inclusive. The default range 20000-29999 sits below Linux's ephemeral
        range (32768-60999), so outgoing connections do not take these ports in the meantime.
    """

    def __init__(self, low: int = 20000, high: int = 29999) -> None:
        if not 0 < low <= high < 65536:
            raise ValueError(f"bad port range {low}-{high}")
        self._low, self._high = low, high
        self._given: set[int] = set()
        self._lock = threading.Lock()

    def reserve(self, ports: list[int] | set[int]) -> None:
        """Never hand out these ports (e.g. ports already recorded on existing jobs)."""
        with self._lock:
            self._given.update(ports)

    def allocate(self) -> int:
        """Return a free port.

        :raises RuntimeError: no free port is left in the range.
        """
        with self._lock:
            candidates = [p for p in range(self._low, self._high + 1) if p not in self._given]
            random.shuffle(candidates)
            for port in candidates:
                if _is_free(port):
                    self._given.add(port)
                    return port
        raise RuntimeError(f"no free TCP port left in {self._low}-{self._high}")


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def read_ports(annotations: dict[str, str]) -> dict[str, int]:
    """The ports recorded on a job: ``{"<replicatype lowercase>-<index>": port}``; ``{}`` if none or unreadable."""
    raw = annotations.get(ANNOTATION_LOCAL_PORTS)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
        return {str(k): int(v) for k, v in data.items()}
    except (TypeError, ValueError, AttributeError):
        return {}


def ports_annotation(ports: dict[str, int]) -> str:
    """The annotation value recording ``ports`` (sorted JSON, stable across writes)."""
    return json.dumps(ports, sort_keys=True, separators=(",", ":"))
