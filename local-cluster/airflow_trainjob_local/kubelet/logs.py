"""Container log files in the CRI format, written by pipe pumps and read back with ``kubectl logs`` options.

Layout (as the real kubelet's ``/var/log/pods``): ``<root>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log``.
Each line is ``<RFC3339 time, ns> <stdout|stderr> <F|P> <text>``: ``F`` for a full line (its newline dropped),
``P`` for a partial one (a line longer than :data:`MAX_LINE_BYTES`, or output that ends without a newline) — the
format containerd writes and the kubelet parses. Storing a time per line is what lets ``timestamps``,
``sinceSeconds`` and ``sinceTime`` work.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

# containerd splits lines at 16 KiB as well; bounded lines keep tail/since scans cheap.
MAX_LINE_BYTES = 16 * 1024
_READ_BLOCK = 64 * 1024


def format_timestamp(ns: int) -> str:
    """``ns`` since the epoch as RFC 3339 in UTC with 9 fractional digits (the kubelet's ``RFC3339NanoFixed``)."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanos:09d}Z"


_TS_RE = re.compile(rb"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z$")


def parse_timestamp(raw: bytes) -> int:
    """Nanoseconds since the epoch of a UTC RFC 3339 time as :func:`format_timestamp` writes it.

    :raises ValueError: not in that form.
    """
    match = _TS_RE.match(raw)
    if not match:
        raise ValueError(f"bad log timestamp {raw!r}")
    y, mo, d, h, mi, s, frac = match.groups()
    whole = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=timezone.utc)
    nanos = int((frac or b"0").ljust(9, b"0"))
    return int(whole.timestamp()) * 1_000_000_000 + nanos


class LogWriter:
    """Appends a container instance's stdout and stderr, read from its pipes, to one CRI log file.

    One daemon thread per pipe; :meth:`wait` returns once both pipes reached EOF (the process and every child
    holding them exited or closed them).
    """

    def __init__(self, path: Path, pipes: dict[str, IO[bytes]]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_APPEND + one write per line keeps lines whole for concurrent readers.
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(
                target=self._pump, args=(stream, pipe), name=f"log-{path.parent.name}-{stream}", daemon=True
            )
            for stream, pipe in pipes.items()
        ]
        for thread in self._threads:
            thread.start()

    def _pump(self, stream: str, pipe: IO[bytes]) -> None:
        try:
            while chunk := pipe.readline(MAX_LINE_BYTES):
                full = chunk.endswith(b"\n")
                text = chunk[:-1] if full else chunk
                record = f"{format_timestamp(time.time_ns())} {stream} {'F' if full else 'P'} ".encode() + text + b"\n"
                with self._lock:
                    os.write(self._fd, record)
        except (OSError, ValueError):
            pass  # pipe closed under us (process killed and reaped): nothing more to read
        finally:
            pipe.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until both pipes are drained (or ``timeout`` seconds); ``True`` when they are; closes the file then."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        done = not any(thread.is_alive() for thread in self._threads)
        if done:
            self.close()
        return done

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


@dataclass(frozen=True)
class LogOptions:
    """The kubelet's ``/containerLogs`` query options (``PodLogOptions``); times in ns since the epoch."""

    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since_ns: int | None = None

    @classmethod
    def from_query(cls, query: dict[str, list[str]], now_ns: int | None = None) -> LogOptions:
        """Parse a query string as the apiserver sends it (``follow=true&tailLines=10&sinceSeconds=5``...).

        :raises ValueError: a number or time that does not parse, or a negative value.
        """

        def flag(name: str) -> bool:
            return (query.get(name) or ["false"])[-1].lower() in ("true", "1")

        def number(name: str) -> int | None:
            if name not in query:
                return None
            value = int(query[name][-1])
            if value < 0:
                raise ValueError(f"{name} must not be negative")
            return value

        since_ns = None
        if (since_seconds := number("sinceSeconds")) is not None:
            since_ns = (now_ns if now_ns is not None else time.time_ns()) - since_seconds * 1_000_000_000
        elif "sinceTime" in query:
            since = datetime.fromisoformat(query["sinceTime"][-1].replace("Z", "+00:00"))
            since_ns = int(since.timestamp()) * 1_000_000_000
        return cls(
            follow=flag("follow"),
            previous=flag("previous"),
            timestamps=flag("timestamps"),
            tail_lines=number("tailLines"),
            limit_bytes=number("limitBytes"),
            since_ns=since_ns,
        )


def _tail_offset(fd: int, lines: int) -> int:
    """Byte offset where the last ``lines`` lines of the file start."""
    end = os.fstat(fd).st_size
    if lines == 0:
        return end
    pos = end
    seen = 0
    # The file ends with a newline; that one does not start a line.
    skip_last = True
    while pos > 0:
        start = max(0, pos - _READ_BLOCK)
        block = os.pread(fd, pos - start, start)
        for i in range(len(block) - 1, -1, -1):
            if block[i] == 0x0A:
                if skip_last and start + i == end - 1:
                    continue
                seen += 1
                if seen == lines:
                    return start + i + 1
        skip_last = False
        pos = start
    return 0


def read_log(
    path: Path,
    options: LogOptions,
    *,
    is_active: Callable[[], bool] = lambda: False,
    should_stop: Callable[[], bool] = lambda: False,
    poll_seconds: float = 0.2,
) -> Iterator[bytes]:
    """Yield the container's output from a CRI log file, formatted as ``kubectl logs`` shows it.

    :param is_active: whether the container instance may still write to ``path``; with ``options.follow`` the
        reader keeps polling (every ``poll_seconds``) until it is not and the file is drained.
    :param should_stop: checked while following; ``True`` ends the stream (client went away, kubelet stops).
    """
    remaining = options.limit_bytes
    with open(path, "rb") as log:
        if options.tail_lines is not None:
            log.seek(_tail_offset(log.fileno(), options.tail_lines))
        pending = b""
        while True:
            active = is_active()  # read before draining, so the last lines written are never missed
            data = log.read(_READ_BLOCK)
            if data:
                pending += data
                *lines, pending = pending.split(b"\n")
                out = b"".join(_render(line, options) for line in lines)
                if remaining is not None:
                    out = out[:remaining]
                    remaining -= len(out)
                if out:
                    yield out
                if remaining == 0:
                    return
                continue
            if not options.follow or not active or should_stop():
                return
            time.sleep(poll_seconds)


def _render(line: bytes, options: LogOptions) -> bytes:
    parts = line.split(b" ", 3)
    if len(parts) < 3:  # not a CRI line: nothing to show
        return b""
    stamp, tag, text = parts[0], parts[2], parts[3] if len(parts) == 4 else b""
    if options.since_ns is not None and parse_timestamp(stamp) < options.since_ns:
        return b""
    prefix = stamp + b" " if options.timestamps else b""
    return prefix + text + (b"\n" if tag == b"F" else b"")


class LogNotFound(Exception):
    """No log for the requested container (instance); the message is what the kubelet answers.

    :param status: the HTTP status the kubelet answers with (404 unknown pod, 400 not started / no previous).
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class LogStore:
    """Where each pod's container logs live, which pod UID a name currently means, and which files are live.

    Thread-safe: pod workers register, write and drop; the log server resolves.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._uids: dict[tuple[str, str], str] = {}
        self._active: set[Path] = set()
        self._waiting: set[Path] = set()  # container directories whose last instance ended, the next not started

    def pod_dir(self, namespace: str, name: str, uid: str) -> Path:
        return self.root / f"{namespace}_{name}_{uid}"

    def log_path(self, namespace: str, name: str, uid: str, container: str, restart_count: int) -> Path:
        return self.pod_dir(namespace, name, uid) / container / f"{restart_count}.log"

    def register_pod(self, namespace: str, name: str, uid: str) -> None:
        with self._lock:
            self._uids[(namespace, name)] = uid

    def drop_pod(self, namespace: str, name: str, uid: str) -> None:
        """Forget the pod and delete its logs (the real kubelet garbage-collects them once the pod is gone)."""
        pod_dir = self.pod_dir(namespace, name, uid)
        with self._lock:
            if self._uids.get((namespace, name)) == uid:
                del self._uids[(namespace, name)]
            self._waiting = {p for p in self._waiting if p.parent != pod_dir}
        shutil.rmtree(self.pod_dir(namespace, name, uid), ignore_errors=True)

    def set_active(self, path: Path, active: bool) -> None:
        with self._lock:
            (self._active.add if active else self._active.discard)(path)

    def set_waiting(self, namespace: str, name: str, uid: str, container: str, waiting: bool) -> None:
        """The container's last instance has ended and it waits to start again (back-off, a configuration error):
        its ``lastState`` is that instance, which ``previous`` then reads, as the kubelet reads ``lastState``'s."""
        path = self.pod_dir(namespace, name, uid) / container
        with self._lock:
            (self._waiting.add if waiting else self._waiting.discard)(path)

    def is_active(self, path: Path) -> bool:
        with self._lock:
            return path in self._active

    def resolve(self, namespace: str, name: str, container: str, previous: bool) -> Path:
        """The log file of the container's current (or ``previous``) instance. As the kubelet reads
        ``lastState``'s container for ``previous``: the one before the latest while the latest runs or has ended
        for good, the latest itself while the container waits to start again (``CrashLoopBackOff``); without
        ``previous``, the latest.

        :raises LogNotFound: unknown pod, container not started yet, or no previous instance.
        """
        with self._lock:
            uid = self._uids.get((namespace, name))
            waiting = uid is not None and self.pod_dir(namespace, name, uid) / container in self._waiting
        if uid is None:
            raise LogNotFound(f'pod "{name}" in namespace "{namespace}" does not exist on this node', status=404)
        instances = sorted(
            (int(p.stem) for p in (self.pod_dir(namespace, name, uid) / container).glob("*.log") if p.stem.isdigit()),
        )
        if previous:
            back = 1 if waiting else 2
            if len(instances) < back:
                raise LogNotFound(f'previous terminated container "{container}" in pod "{name}" not found')
            return self.log_path(namespace, name, uid, container, instances[-back])
        if not instances:
            raise LogNotFound(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
        return self.log_path(namespace, name, uid, container, instances[-1])
