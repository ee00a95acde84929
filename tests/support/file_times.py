"""Seconds per test file of each shard of a whole-suite run, from the shards' JUnit XML: what balancing the shards
of ``scripts/test.sh`` goes by.

``python -m tests.support.file_times 1.xml 2.xml ...`` prints, per shard, its total and its slowest files (setup,
call and teardown of every test, as pytest's ``--junitxml`` times them; a session fixture's start counts in the
first test that needs it).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

#: Files listed per shard.
SLOWEST = 12


def file_seconds(junit_xml: Path) -> dict[str, float]:
    """Test file -> seconds, from one pytest JUnit XML report (``classname`` is the file's dotted module path,
    followed by a class name for tests in a class)."""
    seconds: defaultdict[str, float] = defaultdict(float)
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        module = case.get("file") or _module_path(case.get("classname", ""))
        seconds[module] += float(case.get("time") or 0.0)
    return dict(seconds)


def _module_path(classname: str) -> str:
    parts = classname.split(".")
    while parts and parts[-1][:1].isupper():  # a test class
        parts.pop()
    return "/".join(parts) + ".py"


def main(paths: list[str]) -> int:
    for path in paths:
        seconds = file_seconds(Path(path))
        print(f"{Path(path).stem}: {sum(seconds.values()):.0f} s in {len(seconds)} files")
        for name, value in sorted(seconds.items(), key=lambda item: -item[1])[:SLOWEST]:
            print(f"  {value:7.0f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
