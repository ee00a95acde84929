"""tests/support/file_times.py: seconds per test file from a shard's JUnit XML."""

from __future__ import annotations

from tests.support.file_times import file_seconds

REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.ui.test_e2e_ui" name="test_a" time="100.5"/>
<testcase classname="tests.ui.test_e2e_ui.TestTab" name="test_b" time="20.0"/>
<testcase classname="local-cluster.tests.test_kubelet" name="test_c" time="3.25"/>
<testcase classname="tests.test_names" name="test_d"/>
</testsuite></testsuites>"""


def test_seconds_add_up_per_file_with_classes_folded_into_their_file(tmp_path):
    path = tmp_path / "shard-1.xml"
    path.write_text(REPORT)
    assert file_seconds(path) == {
        "tests/ui/test_e2e_ui.py": 120.5,
        "local-cluster/tests/test_kubelet.py": 3.25,
        "tests/test_names.py": 0.0,
    }
