"""A pytest plugin: the provider files a reader must open to follow one test's run.

A file counts when at least one of its functions (not only the module's import-time code) ran during the test's
call phase, in any thread (``sys.setprofile`` and ``threading.setprofile``). For each test it writes the files and
their line counts, as JSON (``{test id: {file: lines}}``), to ``$READING_PATH_OUT``, merged with what is there.

Run it on one synchronous and one deferred run, for the code before and after a change, each against the real local
apiserver (the tests' own cluster; give each run its own port base)::

    PYTHONPATH=<tree>:<tree>/local-cluster:benchmarks/reading_path READING_PATH_OUT=/tmp/reading.json \\
      .venv/bin/python -m pytest -p reading_path -q <tree>/tests/operators/test_training_job.py::test_success_returns_summary_streams_lead_log_and_deletes_job \\
      <tree>/tests/operators/test_deferred_lead_log.py::test_the_task_log_has_every_lead_line_once_shown_while_waiting_and_kept_after_the_pod_is_gone
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

_seen: set[str] = set()
_root = ""


def _profile(frame: FrameType, event: str, arg: Any) -> None:
    if event == "call":
        code = frame.f_code
        if code.co_name != "<module>" and code.co_filename.startswith(_root):
            _seen.add(code.co_filename)


def _lines(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    global _root
    import airflow_trainjob

    _root = os.path.dirname(airflow_trainjob.__file__) + os.sep
    _seen.clear()
    sys.setprofile(_profile)
    threading.setprofile(_profile)
    try:
        yield
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        out = os.environ["READING_PATH_OUT"]
        data: dict[str, Any] = {}
        if os.path.exists(out):
            with open(out, encoding="utf-8") as f:
                data = json.load(f)
        package_parent = os.path.dirname(_root.rstrip(os.sep))
        data[item.nodeid] = {os.path.relpath(p, package_parent): _lines(p) for p in sorted(_seen)}
        with open(out, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
