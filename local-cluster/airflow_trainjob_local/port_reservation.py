"""The cluster's listening ports: whether they are free, who holds one that is not, and holding them for ``up``.

Why holding: when the ports lie inside the kernel's ephemeral range (``net.ipv4.ip_local_port_range``), any
outgoing connection may get one as its source port — the cluster's own too (kube-apiserver to etcd,
kube-controller-manager to the apiserver) — in the seconds between the first component's start and the last
one's bind. Such a socket blocks the port while it is open and for 60 s of TIME-WAIT after: a client socket has
no ``SO_REUSEADDR``, and Linux lets a listener bind over a TIME-WAIT only when both sockets set it.

:func:`reserved` binds a socket with ``SO_REUSEADDR`` to each port without listening on it. ``connect()``
never picks a port that a ``bind()`` holds as its source port, while a server that also sets ``SO_REUSEADDR``
(every component does: Go's listeners, Python's ``HTTPServer``) may bind and listen on it alongside the
reservation. So ``up`` reserves every port before it starts anything — which is also its check that the
ports are free — and lets go of them once every component listens.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = [
    "EPHEMERAL_RANGE_FILE",
    "RESERVED_PORTS_FILE",
    "PortsInUse",
    "SocketUse",
    "bindable",
    "describe_users",
    "ephemeral_overlap",
    "ephemeral_range",
    "parse_port_list",
    "port_users",
    "reserved",
    "reserved_ports",
]

LOOPBACK = "127.0.0.1"
#: ``low high``: the source ports the kernel gives outgoing connections.
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: ``a,b-c,...``: ports in the ephemeral range that the kernel never gives outgoing connections.
RESERVED_PORTS_FILE = Path("/proc/sys/net/ipv4/ip_local_reserved_ports")
#: Addresses whose sockets conflict with a bind to 127.0.0.1.
_CONFLICTING_ADDRESSES = frozenset({LOOPBACK, "0.0.0.0", "::", "::ffff:127.0.0.1"})


class PortsInUse(OSError):
    """Some ports could not be reserved.

    :param users: port -> who holds it (see :func:`describe_users`; empty when nothing tells).
    """

    def __init__(self, users: dict[int, str]) -> None:
        self.users = users
        super().__init__(f"ports in use on {LOOPBACK}: {', '.join(map(str, sorted(users)))}")


# --- the ephemeral range (pure decisions and /proc) -----------------------------------------------------


def parse_port_list(text: str) -> set[int]:
    """The ports of ``net.ipv4.ip_local_reserved_ports`` syntax: ``"8080,9000-9002"`` -> {8080, 9000, 9001, 9002}.

    :raises ValueError: an item is not a port or a ``low-high`` range.
    """
    ports: set[int] = set()
    for item in text.replace("\n", ",").split(","):
        item = item.strip()
        if not item:
            continue
        low, _, high = item.partition("-")
        ports.update(range(int(low), int(high or low) + 1))
    return ports


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int] | None:
    """``(low, high)``, inclusive, from ``path``; ``None`` when it does not exist or cannot be read (not Linux)."""
    try:
        low, high = path.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return None


def reserved_ports(path: Path = RESERVED_PORTS_FILE) -> set[int]:
    """The ports ``net.ipv4.ip_local_reserved_ports`` keeps from outgoing connections; empty when unknown."""
    try:
        return parse_port_list(path.read_text())
    except (OSError, ValueError):
        return set()


def ephemeral_overlap(
    ports: Iterable[int], port_range: tuple[int, int] | None, exempt: Iterable[int] = ()
) -> list[int]:
    """The ``ports`` (sorted) the kernel may give outgoing connections: inside ``port_range`` and not ``exempt``.

    :param ports: the listening ports to look at.
    :param port_range: ``(low, high)`` inclusive, from :func:`ephemeral_range`; ``None``: unknown, so none.
    :param exempt: ports the kernel skips anyway (:func:`reserved_ports`).
    """
    if port_range is None:
        return []
    low, high = port_range
    skipped = set(exempt)
    return sorted({p for p in ports if low <= p <= high and p not in skipped})


# --- who holds a port -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SocketUse:
    """One TCP socket on a port, as the kernel lists it.

    :param status: psutil's name of the TCP state: ``LISTEN``, ``ESTABLISHED``, ``TIME_WAIT``, ...
    :param remote: ``host:port`` of the peer; empty for a listener.
    :param pid: the owning process; ``None`` for TIME-WAIT (no process owns it) or when it cannot be read.
    :param process: that process's name.
    """

    status: str
    remote: str = ""
    pid: int | None = None
    process: str = ""


def port_users(port: int) -> list[SocketUse]:
    """The TCP sockets whose local address conflicts with a bind to 127.0.0.1:``port``; empty when unknown."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return []
    uses = []
    for conn in connections:
        if not conn.laddr or conn.laddr.port != port or conn.laddr.ip not in _CONFLICTING_ADDRESSES:
            continue
        name = ""
        if conn.pid is not None:
            try:
                name = psutil.Process(conn.pid).name()
            except psutil.Error:
                name = ""
        remote = f"{conn.raddr.ip}:{conn.raddr.port}" if conn.raddr else ""
        uses.append(SocketUse(conn.status, remote, conn.pid, name))
    return uses


def describe_users(uses: Sequence[SocketUse]) -> str:
    """One phrase for who holds a port (the listener first), e.g. ``"listened on by etcd (pid 4242)"``, or
    ``"a closed connection to 127.0.0.1:33444 in TIME-WAIT (no process; the kernel frees it within 60 s)"``;
    empty when ``uses`` is empty."""
    if not uses:
        return ""
    ordered = sorted(uses, key=lambda u: (u.status != "LISTEN", u.pid is None))
    use = ordered[0]
    owner = f"{use.process or 'a process'} (pid {use.pid})" if use.pid is not None else "a process not visible here"
    if use.status == "LISTEN":
        phrase = f"listened on by {owner}"
    elif use.status == "TIME_WAIT":
        phrase = (
            f"a closed connection to {use.remote} in TIME-WAIT (no process; the kernel frees it within 60 s)"
            if use.remote
            else "a closed connection in TIME-WAIT (no process; the kernel frees it within 60 s)"
        )
    else:
        to = f" to {use.remote}" if use.remote else ""
        phrase = f"the source port of a connection{to} of {owner} ({use.status.replace('_', '-')})"
    if len(ordered) > 1:
        phrase += f", and {len(ordered) - 1} more socket(s)"
    return phrase


# --- holding ports --------------------------------------------------------------------------------------


def _bind(port: int, host: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # What every component's listener sets: with it, the reservation and the listener share the port, and a
        # TIME-WAIT left by a socket that also set it (a closed server connection) does not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def bindable(port: int, host: str = LOOPBACK) -> bool:
    """Whether a listener with ``SO_REUSEADDR`` (as the components' are) could bind ``host:port`` now."""
    try:
        _bind(port, host).close()
    except OSError:
        return False
    return True


@contextmanager
def reserved(ports: Iterable[int], host: str = LOOPBACK) -> Iterator[None]:
    """Hold every one of ``ports`` on ``host`` (bound with ``SO_REUSEADDR``, not listening) for the ``with`` body.

    Meanwhile no outgoing connection gets one as its source port, and servers that set ``SO_REUSEADDR`` can still
    bind and listen on them.

    :param ports: TCP ports, each 1-65535.
    :raises PortsInUse: one or more could not be bound (nothing is held then); lists every such port, not only
        the first.
    """
    held: list[socket.socket] = []
    busy: dict[int, str] = {}
    try:
        for port in dict.fromkeys(ports):
            try:
                held.append(_bind(port, host))
            except OSError:
                busy[port] = describe_users(port_users(port))
        if busy:
            raise PortsInUse(busy)
        yield
    finally:
        for sock in held:
            sock.close()
