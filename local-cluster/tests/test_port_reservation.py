"""The cluster's port checks without a cluster: the ephemeral range, who holds a port, holding ports for ``up``.

The sockets here are real (loopback, ports the kernel hands out); no component is started.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple
from pathlib import Path

import psutil
import pytest

from airflow_trainjob_local import port_reservation
from airflow_trainjob_local.cluster import PORT_BLOCK, ClusterError, LocalCluster, Ports, _port_list
from airflow_trainjob_local.port_reservation import (
    PortsInUse,
    SocketUse,
    TcpSocket,
    bindable,
    describe_users,
    ephemeral_overlap,
    ephemeral_range,
    frees_itself,
    is_exiting,
    parse_port_list,
    releases_itself,
    reserved,
)
from airflow_trainjob_local.testing.waiting import wait_for


@contextmanager
def listener(port: int = 0, *, reuse: bool = True) -> Iterator[socket.socket]:
    with socket.socket() as sock:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen()
        yield sock


def free_block(size: int = PORT_BLOCK) -> int:
    """The first of ``size`` consecutive ports that are all bindable now."""
    for _ in range(50):
        with listener() as probe:
            base = probe.getsockname()[1]
        if base + size < 65536 and all(bindable(p) for p in range(base, base + size)):
            return base
    raise AssertionError("no block of free ports found")


# --- the ephemeral range ------------------------------------------------------------------------------------


def test_reserved_ports_syntax() -> None:
    assert parse_port_list("8080,9000-9002\n") == {8080, 9000, 9001, 9002}
    assert parse_port_list("\n") == set()
    with pytest.raises(ValueError):
        parse_port_list("80-x")


def test_ephemeral_range_is_read_from_proc_or_unknown(tmp_path: Path) -> None:
    path = tmp_path / "ip_local_port_range"
    path.write_text("32768\t60999\n")
    assert ephemeral_range(path) == (32768, 60999)
    assert ephemeral_range(tmp_path / "absent") is None
    path.write_text("garbage\n")
    assert ephemeral_range(path) is None


def test_overlap_with_the_ephemeral_range() -> None:
    linux = (32768, 60999)
    # The user's report: base 33443, the kubelet's port 33446 was given to the apiserver's etcd connection.
    assert ephemeral_overlap(astuple(Ports.from_base(33443)), linux) == [33443, 33444, 33445, 33446]
    assert ephemeral_overlap(astuple(Ports.from_base(26443)), linux) == []
    # Both ends are inclusive; a block that straddles the start overlaps only in part.
    assert ephemeral_overlap([32764, 32765, 32766, 32767], linux) == []
    assert ephemeral_overlap([32766, 32767, 32768, 32769], linux) == [32768, 32769]
    assert ephemeral_overlap([60999, 61000], linux) == [60999]
    # Ports in net.ipv4.ip_local_reserved_ports are never given to outgoing connections.
    assert ephemeral_overlap([40000, 40001], linux, exempt={40001}) == [40000]
    assert ephemeral_overlap([40000], None) == []


def test_port_list_collapses_runs() -> None:
    assert _port_list([34446, 34443, 34444, 34445, 40000]) == "34443-34446, 40000"
    assert _port_list([7]) == "7"


# --- who holds a port ---------------------------------------------------------------------------------------


def test_description_prefers_the_listener_and_explains_time_wait() -> None:
    listening = SocketUse("LISTEN", pid=4242, process="etcd")
    connected = SocketUse("ESTABLISHED", "127.0.0.1:33444", pid=99, process="kube-apiserver")
    time_wait = SocketUse("TIME_WAIT", "127.0.0.1:33444", orphan=True)
    assert describe_users([]) == ""
    assert describe_users([connected, listening]) == "listened on by etcd (pid 4242), and 1 more socket(s)"
    assert describe_users([connected]) == (
        "the source port of a connection to 127.0.0.1:33444 of kube-apiserver (pid 99) (ESTABLISHED)"
    )
    assert describe_users([time_wait]) == (
        "a closed connection to 127.0.0.1:33444 in TIME-WAIT (no process; the kernel frees it within 60 s)"
    )
    assert describe_users([SocketUse("LISTEN")]) == "listened on by a process not visible here"
    # A process being torn down: still showing the socket, or already past closing its file table.
    assert describe_users([SocketUse("LISTEN", pid=7, process="python", exiting=True)]) == (
        "listened on by python (pid 7), which is exiting"
    )
    assert describe_users([SocketUse("LISTEN", own_user=True)]) == (
        "listened on by a process of this user that is exiting (no process shows the socket any more)"
    )


# The rows of /proc/net/tcp and tcp6 as a little-endian kernel prints them (addresses word by word in host order).
_TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:4E23 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 58501 1 0 100 0 0 10 0
   1: 0100007F:4E23 0100007F:4E20 06 00000000:00000000 03:00000ABC 00000000     0        0 0 3 0
   2: 0100007F:A2B8 0100007F:4E21 01 00000000:00000000 00:00000000 00000000  1000        0 61234 1 0 20 4 30 10 -1
   3: garbage
"""
_TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF00000100007F:4E23 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1 0
   1: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 778 1 0
"""


@pytest.mark.skipif(sys.byteorder != "little", reason="the sample rows are a little-endian kernel's")
def test_tcp_tables_are_parsed_from_proc() -> None:
    rows = port_reservation.parse_tcp_table(_TCP)
    assert rows == [
        TcpSocket(("127.0.0.1", 20003), ("0.0.0.0", 0), "LISTEN", 0, 58501),
        TcpSocket(("127.0.0.1", 20003), ("127.0.0.1", 20000), "TIME_WAIT", 0, 0),
        TcpSocket(("127.0.0.1", 41656), ("127.0.0.1", 20001), "ESTABLISHED", 1000, 61234),
    ]
    assert port_reservation.parse_tcp_table(_TCP6) == [
        TcpSocket(("::ffff:127.0.0.1", 20003), ("::", 0), "LISTEN", 1000, 777),
        TcpSocket(("::", 8080), ("::", 0), "LISTEN", 0, 778),
    ]


def test_a_process_is_exiting_once_a_zombie_or_flagged_pf_exiting() -> None:
    # /proc/<pid>/stat flags of the SIGKILLed kubelet (0x40840c, PF_EXITING set) and of a sleeping Python (0x400100).
    assert is_exiting("R", 0x40840C)
    assert is_exiting("Z", 0x40840C)
    assert is_exiting("X", 0)
    assert not is_exiting("S", 0x400100)
    assert not is_exiting("D", 0x400040)


OWN = (20000, 20001, 20002, 20003)


@pytest.mark.parametrize(
    ("use", "releases"),
    [
        # A process that has the socket open: only when it is exiting.
        (SocketUse("LISTEN", pid=7, process="python", exiting=True), True),
        (SocketUse("LISTEN", pid=7, process="python"), False),
        (SocketUse("ESTABLISHED", "127.0.0.1:20000", pid=7, process="python"), False),
        # Open, no process shows it: this user's (being torn down, past closing its files), not another's.
        (SocketUse("LISTEN", own_user=True), True),
        (SocketUse("LISTEN"), False),
        # No process has it: a closing connection to one of the cluster's ports is the cluster's own.
        (SocketUse("TIME_WAIT", "127.0.0.1:20000", orphan=True), True),
        (SocketUse("FIN_WAIT2", "127.0.0.1:20001", orphan=True), True),
        (SocketUse("TIME_WAIT", "127.0.0.1:8080", orphan=True), False),
        (SocketUse("TIME_WAIT", "", orphan=True), False),
        (SocketUse("SYN_RECV", "127.0.0.1:20000", orphan=True), False),
    ],
)
def test_which_sockets_let_go_of_their_port_by_themselves(use: SocketUse, releases: bool) -> None:
    assert releases_itself(use, OWN) is releases


def test_a_port_frees_itself_when_what_refuses_the_bind_goes_away() -> None:
    dying = SocketUse("LISTEN", own_user=True)
    live = SocketUse("LISTEN", pid=7, process="nginx")
    # A dying listener's accepted connections (their client's port is not the cluster's) go with it.
    accepted = SocketUse("ESTABLISHED", "127.0.0.1:45000", own_user=True, orphan=True)
    own_time_wait = SocketUse("TIME_WAIT", "127.0.0.1:20000", orphan=True)
    foreign_time_wait = SocketUse("TIME_WAIT", "127.0.0.1:8080", orphan=True)
    assert frees_itself([dying, accepted], OWN)
    assert not frees_itself([dying, live], OWN)
    assert not frees_itself([live, own_time_wait], OWN)
    # Without a listener, every socket must go.
    assert frees_itself([own_time_wait], OWN)
    assert not frees_itself([own_time_wait, foreign_time_wait], OWN)
    # Nothing shows what holds it: not enough to wait on.
    assert not frees_itself([], OWN)


# --- holding ports ------------------------------------------------------------------------------------------


def test_a_listened_port_is_refused_and_named_with_its_process() -> None:
    base = free_block(3)
    waited: list[int] = []
    with listener(base + 1), listener(base + 2):
        with (
            pytest.raises(PortsInUse) as caught,
            reserved(
                [base, base + 1, base + 2], own_ports=[base, base + 1, base + 2], on_wait=lambda p, _: waited.append(p)
            ),
        ):
            pytest.fail("reserved() must not enter its body when a port is taken")
    # A live process's listener is refused at once, never waited for.
    assert waited == []
    assert sorted(caught.value.users) == [base + 1, base + 2]
    me = f"{psutil.Process().name()} (pid {os.getpid()})"
    assert caught.value.users[base + 1] == f"listened on by {me}"
    # The free port it had bound first is let go again.
    with socket.socket() as plain:
        plain.bind(("127.0.0.1", base))


def test_a_reserved_port_still_takes_a_listener_with_reuseaddr() -> None:
    base = free_block(1)
    with reserved([base]):
        # What each component does (Go's listeners and Python's HTTPServer set SO_REUSEADDR).
        with listener(base) as server, socket.create_connection(("127.0.0.1", base)):
            assert server.accept()[0]
        # A listener without SO_REUSEADDR could not share it: every component must set it.
        with pytest.raises(OSError), listener(base, reuse=False):
            pass
    assert bindable(base)


def leave_time_wait(port: int, *, closed_by: str) -> None:
    """Leave 127.0.0.1:``port`` held by one connection in TIME-WAIT, as its server (whose listener sets
    SO_REUSEADDR, as every component's does) or as its client (a socket without it, as every dialer's).

    Only on ports of :func:`free_block`: a client's TIME-WAIT blocks its port for 60 s.
    """
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if closed_by == "server":
            server.bind(("127.0.0.1", port))
            server.listen()
            with socket.create_connection(("127.0.0.1", port)) as client:
                server.accept()[0].close()  # the server closes first: its side goes to TIME-WAIT
                assert client.recv(1) == b""
        else:
            server.bind(("127.0.0.1", 0))
            server.listen()
            with socket.socket() as client:
                client.bind(("127.0.0.1", port))
                client.connect(server.getsockname())
                accepted = server.accept()[0]
                client.close()  # the client closes first: its side goes to TIME-WAIT
                assert accepted.recv(1) == b""
                accepted.close()
    wait_for(
        lambda: [use.status for use in port_reservation.port_users(port)],
        lambda states: states == ["TIME_WAIT"],
        timeout=10,
        what=f"port {port} held by TIME-WAIT only",
    )


def test_time_wait_blocks_only_when_its_socket_had_no_reuseaddr() -> None:
    """A server's closed connection (its listener set SO_REUSEADDR) leaves a TIME-WAIT a listener may bind over;
    a client's (no SO_REUSEADDR, as every dialer's) blocks the port for 60 s, for the real server too."""
    server_side, client_side = free_block(1), free_block(1)
    leave_time_wait(server_side, closed_by="server")
    leave_time_wait(client_side, closed_by="client")

    assert bindable(server_side)
    with reserved([server_side]):
        pass
    assert not bindable(client_side)
    with pytest.raises(PortsInUse) as caught, reserved([client_side]):
        pass
    assert "TIME-WAIT" in caught.value.users[client_side]


def test_a_time_wait_is_waited_for_only_when_it_is_the_clusters_own() -> None:
    """A client's TIME-WAIT on the port: its peer one of ``own_ports`` (one component's connection to another)
    is waited for; to any other port, refused at once as before."""
    port = free_block(1)
    leave_time_wait(port, closed_by="client")
    peer = next(int(use.remote.rsplit(":", 1)[1]) for use in port_reservation.port_users(port))

    waited: list[tuple[int, str]] = []
    with pytest.raises(PortsInUse) as caught, reserved([port], on_wait=lambda *args: waited.append(args)):
        pass
    assert waited == []
    assert "TIME-WAIT" in caught.value.users[port]

    started = time.monotonic()
    with (
        pytest.raises(PortsInUse) as caught,
        reserved([port], own_ports=[peer], release_timeout=0.5, on_wait=lambda *args: waited.append(args)),
    ):
        pass
    assert time.monotonic() - started >= 0.5
    assert waited == [
        (port, f"a closed connection to 127.0.0.1:{peer} in TIME-WAIT (no process; the kernel frees it within 60 s)")
    ]
    assert caught.value.users[port].endswith("(still held after 0.5 s)")


# A server like the kubelet: a listener with SO_REUSEADDR, a few threads, memory to tear down.
_DYING_SERVER = textwrap.dedent(
    """
    import socket, sys, threading, time
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(sys.argv[1])))
    server.listen()
    ballast = bytearray(100 << 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    for _ in range(8):
        threading.Thread(target=time.sleep, args=(300,), daemon=True).start()
    print("listening", flush=True)
    time.sleep(300)
    """
)


def _leader_exited(pid: int) -> bool:
    """The process's main thread has exited (a zombie) or it is gone: what ``up`` sees as not running."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _kill_and_reserve_again(port: int) -> float | None:
    """Start the server on ``port``, SIGKILL it, and once its main thread has exited, reserve the port; the
    seconds reserved() waited, or None when it did not have to."""
    server = subprocess.Popen([sys.executable, "-c", _DYING_SERVER, str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline() == "listening\n"
        server.kill()
        wait_for(lambda: _leader_exited(server.pid), timeout=30, interval=0.001, what="the main thread to exit")
        started = time.monotonic()
        holders: list[str] = []
        with reserved([port], on_wait=lambda _, who: holders.append(who)):
            waited = time.monotonic() - started
        if not holders:
            return None
        assert "exiting" in holders[0], holders
        return waited
    finally:
        server.kill()
        server.wait()


def test_a_port_whose_listener_was_just_killed_is_waited_for() -> None:
    """The report: SIGKILLed, a server's main thread is a zombie while its other threads are still torn down,
    holding the listener (for 30-110 ms with 100 MB to unmap, about a second on a loaded machine). reserved()
    waits for it, every time, instead of refusing."""
    port = free_block(1)
    waits = [_kill_and_reserve_again(port) for _ in range(10)]
    waited = [w for w in waits if w is not None]
    print(f"waited in {len(waited)} of 10 restarts, up to {max(waited, default=0):.3f} s")
    assert bindable(port)


_CONNECT_SKIPS_RESERVED = textwrap.dedent(
    """
    import socket, sys
    from airflow_trainjob_local.port_reservation import reserved
    low = int(sys.argv[1])
    with socket.create_server(("127.0.0.1", low + 10)) as server, reserved([low, low + 2]):
        got = []
        for _ in range(3):
            client = socket.socket()
            try:
                client.connect(("127.0.0.1", low + 10))
            except OSError as e:
                got.append(type(e).__name__)
            else:
                got.append(client.getsockname()[1])
        print(sorted(map(str, got)))
    """
)


@pytest.mark.skipif(not (shutil.which("unshare") and shutil.which("ip")), reason="needs unshare(1) and ip(8)")
def test_outgoing_connections_never_get_a_reserved_port() -> None:
    """In a network namespace of its own whose ephemeral range is four ports, two of them reserved: connections
    get the other two, then none; never a reserved one."""
    low = 40000
    script = (
        f'ip link set lo up && echo "{low} {low + 3}" > /proc/sys/net/ipv4/ip_local_port_range && '
        f'exec "$0" -c "$1" {low}'
    )
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--net", "sh", "-c", script, sys.executable, _CONNECT_SKIPS_RESERVED],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no user and network namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(sorted([str(low + 1), str(low + 3), "OSError"]))


# --- up's decision, before it starts anything ---------------------------------------------------------------


def test_up_refuses_taken_ports_naming_each_with_its_component(tmp_path: Path) -> None:
    ports = Ports.from_base(free_block())
    cluster = LocalCluster(tmp_path / "cluster", ports)
    with listener(ports.etcd_peer), listener(ports.kubelet):
        with pytest.raises(ClusterError) as caught, cluster._ports_reserved(cluster.components()):
            pytest.fail("the ports were taken")
    message = str(caught.value)
    me = f"{psutil.Process().name()} (pid {os.getpid()})"
    assert f"{ports.etcd_peer} (etcd): listened on by {me}" in message
    assert f"{ports.kubelet} (kubelet): listened on by {me}" in message
    assert str(ports.apiserver) not in message
    assert "nothing was started" in message and "--port-base" in message


def test_up_warns_when_its_ports_are_in_the_ephemeral_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base = free_block()
    cluster = LocalCluster(tmp_path / "cluster", Ports.from_base(base))
    monkeypatch.setattr(port_reservation, "reserved_ports", lambda: {base + 3})
    monkeypatch.setattr(port_reservation, "ephemeral_range", lambda: (base + 1, 60999))
    with cluster._ports_reserved(cluster.components()):
        pass
    err = capsys.readouterr().err
    # base + 3 is reserved; base + 4 is the controller's TrainJob status server.
    warning = (
        f"warning: port(s) {base + 1}-{base + 2}, {base + 4} lie in the kernel's ephemeral port range {base + 1}-60999"
    )
    assert warning in err
    assert f"--port-base of at most {base + 1 - PORT_BLOCK}" in err

    monkeypatch.setattr(port_reservation, "ephemeral_range", lambda: (base + PORT_BLOCK, 60999))
    with cluster._ports_reserved(cluster.components()):
        pass
    assert capsys.readouterr().err == ""


def test_up_names_a_time_wait_that_would_block_the_server(tmp_path: Path) -> None:
    """The user's report: the apiserver's connection to etcd had used the kubelet's port as its source port, and
    its TIME-WAIT blocked the kubelet's listener. up now says so before it starts anything."""
    ports = Ports.from_base(free_block())
    cluster = LocalCluster(tmp_path / "cluster", ports)
    leave_time_wait(ports.kubelet, closed_by="client")
    with pytest.raises(ClusterError) as caught, cluster._ports_reserved(cluster.components()):
        pytest.fail("the kubelet's port was held")
    assert f"{ports.kubelet} (kubelet): a closed connection to 127.0.0.1:" in str(caught.value)
    assert "in TIME-WAIT (no process; the kernel frees it within 60 s)" in str(caught.value)
