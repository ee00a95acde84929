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

Why waiting: a component killed a moment ago (SIGKILL, a crash) still holds its listening socket while the
kernel tears the process down — tens of milliseconds on an idle machine, about a second on a loaded one, and
meanwhile its thread-group leader is already a zombie, so no process shows the socket. A port held only by such
a socket, or by the TIME-WAIT of a connection between the cluster's own ports, frees itself:
:func:`reserved` waits for it, up to :data:`RELEASE_TIMEOUT`. A port held by a live process is refused at once
(:func:`frees_itself` decides which).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = [
    "EPHEMERAL_RANGE_FILE",
    "RELEASE_TIMEOUT",
    "RESERVED_PORTS_FILE",
    "PortsInUse",
    "SocketUse",
    "TcpSocket",
    "bindable",
    "describe_users",
    "ephemeral_overlap",
    "ephemeral_range",
    "frees_itself",
    "is_exiting",
    "parse_port_list",
    "parse_tcp_table",
    "port_users",
    "releases_itself",
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
#: Seconds :func:`reserved` waits, at most, for a port held only by sockets that free themselves: the kernel's
#: TIME-WAIT (60 s on Linux) and a margin. A process being torn down lets go far sooner: 20-40 ms measured on an
#: idle machine, about a second on a loaded one.
RELEASE_TIMEOUT = 65.0
#: Seconds between two tries to bind a port being waited for.
_RELEASE_POLL_SECONDS = 0.05


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

#: The kernel's TCP states (``include/net/tcp_states.h``), as ``/proc/net/tcp`` numbers them, by psutil's names.
_TCP_STATES = {
    1: "ESTABLISHED",
    2: "SYN_SENT",
    3: "SYN_RECV",
    4: "FIN_WAIT1",
    5: "FIN_WAIT2",
    6: "TIME_WAIT",
    7: "CLOSE",
    8: "CLOSE_WAIT",
    9: "LAST_ACK",
    10: "LISTEN",
    11: "CLOSING",
}
#: States of a connection its process has let go of and the kernel is closing on its own timers.
_CLOSING_STATES = frozenset({"FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE", "LAST_ACK", "CLOSING"})
#: ``task_struct.flags`` bit the kernel sets once a process has begun to exit (``include/linux/sched.h``).
_PF_EXITING = 0x4
_TCP_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


@dataclass(frozen=True)
class SocketUse:
    """One TCP socket on a port, as the kernel lists it.

    :param status: psutil's name of the TCP state: ``LISTEN``, ``ESTABLISHED``, ``TIME_WAIT``, ...
    :param remote: ``host:port`` of the peer; empty for a listener.
    :param pid: the process that has it open; ``None`` for TIME-WAIT (no process owns it) or when no process
        shows it (another user's, or one being torn down).
    :param process: that process's name.
    :param exiting: that process has begun to exit (killed, or ending): the kernel closes its sockets shortly.
    :param orphan: no process has it open any more (``/proc/net/tcp`` inode 0): a connection the kernel finishes
        closing on its own timers (TIME-WAIT, FIN-WAIT, ...).
    :param own_user: the socket was opened by this user (or this is root, who sees every process), so while a
        process has it open, that process shows it here unless it is being torn down.
    """

    status: str
    remote: str = ""
    pid: int | None = None
    process: str = ""
    exiting: bool = False
    orphan: bool = False
    own_user: bool = False


@dataclass(frozen=True)
class TcpSocket:
    """One row of ``/proc/net/tcp`` or ``/proc/net/tcp6``.

    :param local: ``(address, port)``; IPv6 and IPv4-mapped addresses as :func:`socket.inet_ntop` writes them.
    :param remote: ``(address, port)``; ``("0.0.0.0", 0)`` (or ``("::", 0)``) for a listener.
    :param status: psutil's name of the state (see :data:`_TCP_STATES`); ``"NONE"`` for an unknown number.
    :param uid: the user that opened it (0 for TIME-WAIT, which keeps none).
    :param inode: the socket's inode; 0 when no process has it open.
    """

    local: tuple[str, int]
    remote: tuple[str, int]
    status: str
    uid: int
    inode: int


def _address(hex_address: str) -> str:
    # The kernel prints each 32-bit word of the address in host byte order.
    raw = bytes.fromhex(hex_address)
    if sys.byteorder == "little":
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


def _endpoint(text: str) -> tuple[str, int]:
    address, port = text.split(":")
    return _address(address), int(port, 16)


def parse_tcp_table(text: str) -> list[TcpSocket]:
    """The rows of ``/proc/net/tcp`` or ``/proc/net/tcp6`` text (header line first); malformed rows are skipped."""
    rows = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        try:
            rows.append(
                TcpSocket(
                    local=_endpoint(fields[1]),
                    remote=_endpoint(fields[2]),
                    status=_TCP_STATES.get(int(fields[3], 16), "NONE"),
                    uid=int(fields[7]),
                    inode=int(fields[9]),
                )
            )
        except (IndexError, ValueError, OSError):
            continue
    return rows


def _socket_owners(inodes: set[int]) -> dict[int, int]:
    """inode -> pid of a process that has that socket open, from ``/proc/<pid>/fd``."""
    owners: dict[int, int] = {}
    if not inodes:
        return owners
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            fds = list(fd_dir.iterdir())
        except OSError:
            continue  # gone meanwhile, or another user's
        for fd in fds:
            try:
                link = os.readlink(fd)
            except OSError:
                continue  # closed meanwhile (the listing's own directory fd, in this process)
            if link.startswith("socket:[") and int(link[8:-1]) in inodes:
                owners[int(link[8:-1])] = int(fd_dir.parent.name)
    return owners


def is_exiting(state: str, flags: int) -> bool:
    """Whether a process with this ``/proc/<pid>/stat`` state (field 3) and flags (field 9) is exiting: a zombie
    (or dead), or ``PF_EXITING`` set — the kernel is tearing it down (killed, or ending), though its threads may
    still hold its files and sockets for a moment."""
    return state in ("Z", "X") or bool(flags & _PF_EXITING)


def _exiting(pid: int) -> bool:
    """Whether process ``pid`` is exiting (:func:`is_exiting`) or gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return is_exiting(fields[0], int(fields[6]))
    except (OSError, IndexError, ValueError):
        return True


def port_users(port: int) -> list[SocketUse]:
    """The TCP sockets whose local address conflicts with a bind to 127.0.0.1:``port``; empty when unknown
    (no ``/proc/net/tcp``, as off Linux)."""
    rows = []
    for table in _TCP_TABLES:
        try:
            rows += parse_tcp_table(table.read_text())
        except OSError:
            continue
    rows = [r for r in rows if r.local[1] == port and r.local[0] in _CONFLICTING_ADDRESSES]
    owners = _socket_owners({r.inode for r in rows if r.inode})
    processes = {pid: (_process_name(pid), _exiting(pid)) for pid in set(owners.values())}
    me = os.geteuid()
    uses = []
    for row in rows:
        pid = owners.get(row.inode)
        name, exiting = processes[pid] if pid is not None else ("", False)
        remote = f"{row.remote[0]}:{row.remote[1]}" if row.remote[1] else ""
        uses.append(
            SocketUse(
                row.status,
                remote,
                pid,
                name,
                exiting=exiting,
                orphan=row.inode == 0,
                own_user=me == 0 or row.uid == me,
            )
        )
    return uses


def _process_name(pid: int) -> str:
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return ""


def _remote_port(use: SocketUse) -> int | None:
    try:
        return int(use.remote.rsplit(":", 1)[1])
    except (IndexError, ValueError):
        return None


def releases_itself(use: SocketUse, own_ports: Collection[int]) -> bool:
    """Whether ``use`` lets go of its port with nobody acting, within seconds (a process being torn down) or
    the kernel's 60 s of TIME-WAIT.

    :param own_ports: the cluster's ports: a closing connection to one of them is the cluster's own.
    """
    if use.pid is not None:
        return use.exiting
    if use.orphan:
        return use.status in _CLOSING_STATES and _remote_port(use) in own_ports
    # Open, yet no process shows it: one of this user's that is past closing its file table (its thread-group
    # leader a zombie already) but not its sockets; another user's process would not show here anyway.
    return use.own_user


def frees_itself(uses: Sequence[SocketUse], own_ports: Collection[int]) -> bool:
    """Whether a port a bind was refused on is held only by sockets that :func:`releases_itself` says go away.

    A listener is what refuses the bind whenever one is there, so with one the listeners alone decide (a dying
    server's accepted connections go with it, and a live one's do not matter); without, every socket must go.
    ``uses`` empty (nothing shows what holds the port) is not enough to wait on.

    :param uses: the sockets on the port (:func:`port_users`).
    :param own_ports: the cluster's ports (see :func:`releases_itself`).
    """
    listeners = [u for u in uses if u.status == "LISTEN"]
    deciding = listeners or uses
    return bool(deciding) and all(releases_itself(u, own_ports) for u in deciding)


def describe_users(uses: Sequence[SocketUse]) -> str:
    """One phrase for who holds a port (the listener first), e.g. ``"listened on by etcd (pid 4242)"``, or
    ``"a closed connection to 127.0.0.1:33444 in TIME-WAIT (no process; the kernel frees it within 60 s)"``;
    empty when ``uses`` is empty."""
    if not uses:
        return ""
    ordered = sorted(uses, key=lambda u: (u.status != "LISTEN", u.pid is None))
    use = ordered[0]
    if use.pid is not None:
        owner = f"{use.process or 'a process'} (pid {use.pid})" + (", which is exiting" if use.exiting else "")
    elif use.own_user and not use.orphan:
        owner = "a process of this user that is exiting (no process shows the socket any more)"
    else:
        owner = "a process not visible here"
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
def reserved(
    ports: Iterable[int],
    host: str = LOOPBACK,
    *,
    own_ports: Collection[int] = (),
    release_timeout: float = RELEASE_TIMEOUT,
    on_wait: Callable[[int, str], None] | None = None,
) -> Iterator[None]:
    """Hold every one of ``ports`` on ``host`` (bound with ``SO_REUSEADDR``, not listening) for the ``with`` body.

    Meanwhile no outgoing connection gets one as its source port, and servers that set ``SO_REUSEADDR`` can still
    bind and listen on them. A port held only by sockets that free themselves (:func:`frees_itself`: a process
    being torn down, a TIME-WAIT between ``own_ports``) is waited for, up to ``release_timeout`` seconds, while
    the others stay held; any other holder is refused at once.

    :param ports: TCP ports, each 1-65535.
    :param own_ports: the cluster's ports, whose connections among themselves are its own.
    :param release_timeout: seconds to wait, at most, for ports that free themselves; 0: refuse at once.
    :param on_wait: called once per port that is waited for, with the port and who holds it
        (:func:`describe_users`).
    :raises PortsInUse: one or more could not be bound (nothing is held then); lists every such port, not only
        the first, and what holds it.
    """
    held: list[socket.socket] = []
    deadline = time.monotonic() + release_timeout
    announced: set[int] = set()
    try:
        pending = [port for port in dict.fromkeys(ports) if not _hold(port, host, held)]
        while pending:
            users = {port: port_users(port) for port in pending}
            if time.monotonic() >= deadline or not all(frees_itself(u, own_ports) for u in users.values()):
                # Once more before refusing: whoever held a port may have let go since its bind was refused.
                refused = {
                    port: describe_users(uses)
                    + (f" (still held after {release_timeout:g} s)" if port in announced else "")
                    for port, uses in users.items()
                    if not _hold(port, host, held)
                }
                if refused:
                    raise PortsInUse(refused)
                break
            for port in pending:
                if port not in announced and on_wait is not None:
                    on_wait(port, describe_users(users[port]))
                announced.add(port)
            time.sleep(_RELEASE_POLL_SECONDS)
            pending = [port for port in pending if not _hold(port, host, held)]
        yield
    finally:
        for sock in held:
            sock.close()


def _hold(port: int, host: str, held: list[socket.socket]) -> bool:
    """Bind ``port`` and add the socket to ``held``; False when the bind is refused."""
    try:
        held.append(_bind(port, host))
    except OSError:
        return False
    return True
