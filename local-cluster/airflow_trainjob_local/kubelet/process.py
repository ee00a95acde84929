"""One running instance of a container, as a local process group in its own session.

The process gets the container's argv, environment and working directory; its stdout/stderr go through pipes
into a CRI log file (:class:`~.logs.LogWriter`). It is its own session and process-group leader, so a signal
to the group reaches every helper process a shell or launcher (``torchrun``, ``mpirun``) started — the closest
thing to a container's cgroup without one. ``PR_SET_PDEATHSIG`` makes it die with the kubelet thread that
started it, so a crashed kubelet leaves no container behind.

Exit codes follow the container runtimes: the code the process exited with, or ``128 + N`` when signal ``N``
killed it. A memory limit is enforced by sampling the resident set of the whole process tree (psutil) every
poll and SIGKILLing the group when it is over, reported as ``137`` / ``OOMKilled`` like a cgroup OOM kill.
Unlike a cgroup, a process that allocates faster than the poll interval can overshoot the limit briefly.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from airflow_trainjob_local.kubelet.logs import LogWriter

log = logging.getLogger(__name__)

REASON_COMPLETED = "Completed"
REASON_ERROR = "Error"
REASON_OOM_KILLED = "OOMKilled"
# containerd's exit code and reason for a process that could not be started at all.
START_ERROR_EXIT_CODE = 128
REASON_START_ERROR = "StartError"

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
# Descendants are re-listed this often (seconds) so that ones which left the process group are still found.
_TREE_REFRESH_SECONDS = 1.0
# After the main process exits, how long (seconds) to wait for the pipes to drain before giving up on them.
_LOG_DRAIN_SECONDS = 2.0


def _die_with_parent() -> None:
    # Runs in the child between fork and exec, where little is safe in a threaded parent: one libc call only.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class StartError(Exception):
    """The process could not be started (no such executable, not executable, bad working directory)."""


@dataclass(frozen=True)
class Exit:
    """How a container instance ended. Times in seconds since the epoch."""

    exit_code: int
    reason: str
    started_at: float
    finished_at: float
    signal: int | None = None
    message: str = ""


def exit_code_of(returncode: int) -> tuple[int, int | None]:
    """``(exit code, signal)`` for a ``Popen.returncode``: negative means killed by that signal -> 128 + N."""
    if returncode < 0:
        return 128 - returncode, -returncode
    return returncode, None


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def _children(pid: int) -> list[int]:
    """Direct children of ``pid``, from ``/proc/<pid>/task/<tid>/children`` (no scan of every process).

    :raises FileNotFoundError: ``pid`` is gone.
    """
    children: list[int] = []
    tids = os.listdir(f"/proc/{pid}/task")
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):  # a kernel without CONFIG_PROC_CHILDREN
        try:
            return [child.pid for child in psutil.Process(pid).children()]
        except psutil.NoSuchProcess:
            raise FileNotFoundError(pid) from None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                children += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            pass  # that thread just ended
    return children


def tree_rss_bytes(root: int) -> tuple[int, list[int]]:
    """Resident set size (bytes) of process ``root`` and all its descendants, and the descendants' pids.

    Cheap enough to run every poll: it reads only the tree's own ``/proc`` entries.

    :raises FileNotFoundError: ``root`` is gone.
    """
    descendants: list[int] = []
    pending = _children(root)
    while pending:
        pid = pending.pop()
        descendants.append(pid)
        try:
            pending += _children(pid)
        except FileNotFoundError:
            pass
    total = 0
    for pid in (root, *descendants):
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * _PAGE_SIZE
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            if pid == root:
                raise FileNotFoundError(root) from None
    return total, descendants


class ContainerProcess:
    """A started container instance. Not thread-safe: one pod worker thread owns it.

    :param argv: the container's expanded ``command + args``; ``executable`` is the resolved ``argv[0]``.
    :param memory_limit: ``resources.limits.memory`` in bytes, or ``None`` for no limit.
    :param pid_file: where to record the process group while it runs (see :func:`kill_stale_groups`);
        removed once the instance has ended.
    :raises StartError: from the constructor, when the process cannot be started.
    """

    def __init__(
        self,
        *,
        argv: list[str],
        executable: str,
        env: dict[str, str],
        cwd: str,
        log_path: Path,
        memory_limit: int | None = None,
        pid_file: Path | None = None,
    ) -> None:
        self.memory_limit = memory_limit
        self.started_at = time.time()
        try:
            self._popen = subprocess.Popen(
                argv,
                executable=executable,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as e:
            raise StartError(f"failed to start process {argv[0]!r}: {e.strerror or e}") from e
        self.pid = self._popen.pid
        self.log_path = log_path
        stdout, stderr = self._popen.stdout, self._popen.stderr
        assert stdout is not None and stderr is not None  # both opened as PIPE above
        self._logs = LogWriter(log_path, {"stdout": stdout, "stderr": stderr})
        self._psutil = self._process_or_none(self.pid)
        self._pid_file = pid_file
        if pid_file is not None and self._psutil is not None:
            try:
                # HOSTNAME (the pod name) marks the container's processes; see kill_stale_groups.
                pid_file.write_text(f"{self.pid} {self._psutil.create_time()} {env.get('HOSTNAME', '')}\n")
            except OSError:
                log.warning("cannot write %s", pid_file)
        # Descendants seen so far, as psutil handles: they check the create time, so a reused pid is never hit.
        self._descendants: dict[int, psutil.Process] = {}
        self._tree_seen_at = 0.0
        self._oom_killed = False
        self._exit: Exit | None = None

    @staticmethod
    def _process_or_none(pid: int) -> psutil.Process | None:
        try:
            return psutil.Process(pid)
        except psutil.NoSuchProcess:
            return None

    @property
    def exit(self) -> Exit | None:
        return self._exit

    def poll(self) -> Exit | None:
        """Check the process (and its memory); return its :class:`Exit` once it has ended, else ``None``.

        When the main process ends, whatever it left behind in its group or tree is SIGKILLed (a container
        ends with its PID 1) and its output drained.
        """
        if self._exit is not None:
            return self._exit
        returncode = self._popen.poll()
        if returncode is None:
            self._watch_tree()
            returncode = self._popen.poll()
            if returncode is None:
                return None
        finished_at = time.time()
        self._kill_leftovers()
        self._logs.wait(_LOG_DRAIN_SECONDS)
        if self._pid_file is not None:
            self._pid_file.unlink(missing_ok=True)
        code, sig = exit_code_of(returncode)
        if self._oom_killed and sig == signal.SIGKILL:
            reason = REASON_OOM_KILLED
        else:
            reason = REASON_COMPLETED if code == 0 else REASON_ERROR
        self._exit = Exit(code, reason, self.started_at, finished_at, signal=sig)
        return self._exit

    def _watch_tree(self) -> None:
        now = time.monotonic()
        if self._psutil is None or (self.memory_limit is None and now - self._tree_seen_at < _TREE_REFRESH_SECONDS):
            return
        self._tree_seen_at = now
        try:
            rss, pids = tree_rss_bytes(self.pid)
        except (FileNotFoundError, PermissionError):
            return
        for pid in pids:
            if pid not in self._descendants:
                try:
                    self._descendants[pid] = psutil.Process(pid)
                except psutil.NoSuchProcess:
                    pass
        if self.memory_limit is not None and rss > self.memory_limit:
            log.info("pid %d: tree RSS %d bytes over limit %d bytes: OOM kill", self.pid, rss, self.memory_limit)
            self._oom_killed = True
            self.signal_group(signal.SIGKILL)

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the container's process group (and, for SIGKILL, to every descendant seen)."""
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        if sig == signal.SIGKILL:
            for proc in self._descendants.values():
                try:
                    proc.kill()  # checks the create time first
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass

    def _kill_leftovers(self) -> None:
        # The main process is reaped by now, so its orphans are no longer its children: use what was seen.
        self.signal_group(signal.SIGKILL)

    def wait(self, timeout: float, poll_seconds: float = 0.1) -> Exit | None:
        """Poll until the process ends or ``timeout`` seconds pass; the :class:`Exit`, or ``None`` on timeout."""
        deadline = time.monotonic() + timeout
        while (result := self.poll()) is None and time.monotonic() < deadline:
            time.sleep(poll_seconds)
        return result


def kill_stale_groups(pid_files: list[Path], started_before: float) -> int:
    """SIGKILL what is left of container instances a previous kubelet started; remove their pid files.

    A pid file exists only while its instance runs, so one found at start belongs to a kubelet that died
    without stopping its pods. It holds the instance's process-group id (its leader's pid), the leader's
    create time and the container's ``HOSTNAME`` (the pod name). A process is killed only if all three
    match: it is in that group, was created between that time and ``started_before`` (this kubelet's start,
    seconds since the epoch), and inherited that ``HOSTNAME`` — so an unrelated process that happens to
    reuse the group id is left alone. Returns how many processes were killed.
    """
    groups: dict[int, tuple[float, str]] = {}
    for path in pid_files:
        try:
            pgid, created, hostname = path.read_text().strip().split(None, 2)
            groups[int(pgid)] = (float(created), hostname)
        except (OSError, ValueError):
            pass
        path.unlink(missing_ok=True)
    groups.pop(os.getpgrp(), None)  # never the kubelet's own group
    killed = 0
    if not groups:
        return 0
    for proc in psutil.process_iter(["pid", "create_time"]):
        try:
            group = groups.get(os.getpgid(proc.pid))
            if group is None or not group[0] <= proc.info["create_time"] < started_before:
                continue
            if proc.environ().get("HOSTNAME") == group[1]:
                proc.kill()
                killed += 1
        except (ProcessLookupError, psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return killed
