"""Figures for the README's report table: tests record rows, the suite prints them.

A test calls ``record(section, **fields)`` once per thing it measured (a bad input refused, a place
searched for secrets, an RBAC lifecycle step, a fault survived...). Each row is

- kept for this pytest session and summarised at the end of the run (``pytest_terminal_summary``,
  hooked in by ``tests/conftest.py``), one line per section;
- appended as one JSON line to the file named by ``$AIRFLOW_TRAINJOB_REPORT``, when it is set, so
  several runs (or sessions) add up; ``python -m tests.support.report FILE`` prints that file's summary as
  a Markdown table.

Fields are JSON scalars. The summary counts rows, sums integer fields and counts ``True`` of
boolean fields; strings are grouping details, shown only as the number of distinct values.
Never record a secret: rows are printed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Environment variable naming the JSON-lines file rows are appended to.
REPORT_ENV = "AIRFLOW_TRAINJOB_REPORT"

_rows: list[dict[str, Any]] = []


def record(section: str, **fields: Any) -> dict[str, Any]:
    """Record one row of ``section`` (e.g. ``"bad_input"``, ``"secrets"``, ``"rbac"``, ``"faults"``).

    :param fields: JSON scalars (str, int, float, bool, None).
    :returns: the row.
    """
    for key, value in fields.items():
        if not isinstance(value, (str, int, float, bool, type(None))):
            raise TypeError(f"report field {key!r} must be a JSON scalar, got {type(value).__name__}")
    row = {"section": section, **fields}
    _rows.append(row)
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
    return row


def rows(section: str | None = None) -> list[dict[str, Any]]:
    """The rows recorded in this session (of one section, or all)."""
    return [r for r in _rows if section is None or r["section"] == section]


def summarize(all_rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Section -> {"rows": n, <int field>: sum, <bool field>: "true/total", <str field>: "k distinct"}."""
    sections: dict[str, dict[str, Any]] = {}
    values: dict[tuple[str, str], list[Any]] = {}
    for row in all_rows:
        summary = sections.setdefault(row["section"], {"rows": 0})
        summary["rows"] += 1
        for key, value in row.items():
            if key != "section":
                values.setdefault((row["section"], key), []).append(value)
    for (section, key), seen in values.items():
        present = [v for v in seen if v is not None]
        if present and all(isinstance(v, bool) for v in present):
            sections[section][key] = f"{sum(present)}/{len(present)}"
        elif present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            sections[section][key] = sum(present)
        else:
            sections[section][key] = f"{len(set(map(str, present)))} distinct"
    return sections


def markdown(all_rows: Iterable[dict[str, Any]]) -> str:
    """The summary as a Markdown table: one row per section, its figures in one cell."""
    lines = ["| section | figures |", "|---|---|"]
    for section, figures in sorted(summarize(all_rows).items()):
        cell = ", ".join(f"{k}: {v}" for k, v in figures.items())
        lines.append(f"| {section} | {cell} |")
    return "\n".join(lines)


def read(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a JSON-lines report file."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print this session's figures (imported into ``tests/conftest.py`` so pytest calls it)."""
    if not _rows:
        return
    terminalreporter.section("airflow-trainjob report")
    for line in markdown(_rows).splitlines():
        terminalreporter.write_line(line)
    path = os.environ.get(REPORT_ENV)
    if path:
        terminalreporter.write_line(f"(rows appended to {path}; print all with: python -m tests.support.report {path})")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.support.report REPORT.jsonl")
    print(markdown(read(sys.argv[1])))
