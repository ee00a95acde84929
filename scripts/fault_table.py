"""Print the fault-injection figures as a Markdown table, one line per fault, from a report file.

    python scripts/fault_table.py report.jsonl

The file is what a test run with ``AIRFLOW_TRAINJOB_REPORT=report.jsonl`` appended (see tests/support/report.py); the
fault rows are its ``faults/<mode>`` sections.

Each row is one fault tried by one test (see tests/support/faults.py): the job's kind (PyTorchJob, TrainJob; a row
of a report written before TrainJobs counts as PyTorchJob), the fault's kind, the mode (synchronous or
deferred), where it was injected, how often the proxy or the test really injected it, whether the task came
through right (verdict, one job, nothing left behind), and the jobs duplicated and objects orphaned counted.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def job_kind(row: dict) -> str:
    """The row's job kind; a report written before TrainJobs has none: its jobs were PyTorchJobs."""
    return row.get("job_kind") or "PyTorchJob"


def main(path: str) -> None:
    rows = [row for row in map(json.loads, filter(str.strip, open(path))) if row["section"].startswith("faults/")]
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(job_kind(row), row["kind"], row["mode"])].append(row)
    print("| job | fault | mode | injected at | tried | survived | jobs duplicated | objects orphaned |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for (job, kind, mode), group in sorted(groups.items(), key=lambda item: (item[0][0], item[0][2], item[0][1])):
        where = ", ".join(sorted({r["where"] for r in group}))
        print(
            f"| {job} | {kind} | {mode} | {where} | {len(group)} | {sum(r['survived'] for r in group)} | "
            f"{sum(r['duplicated'] for r in group)} | {sum(r['orphaned'] for r in group)} |"
        )
    for job, mode in sorted({(job_kind(r), r["mode"]) for r in rows}):
        of_mode = [r for r in rows if r["mode"] == mode and job_kind(r) == job]
        print(
            f"| **{job}** | **all** | **{mode}** | | **{len(of_mode)}** | **{sum(r['survived'] for r in of_mode)}** | "
            f"**{sum(r['duplicated'] for r in of_mode)}** | **{sum(r['orphaned'] for r in of_mode)}** |"
        )
    never = [r["test"] for r in rows if not r["injected"]]
    failed = [r for r in rows if not r["survived"]]
    print()
    print(f"{len(rows)} faults tried; {len(rows) - len(never)} confirmed injected; {len(failed)} not survived.")
    for r in failed:
        print(f"- not survived: {r['test']}: {r['error'].splitlines()[0] if r['error'] else '?'}")
    for test in never:
        print(f"- never injected (a defect of the test): {test}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fault_table.py REPORT.jsonl")
    main(sys.argv[1])
