"""tests/support/report.py: rows recorded by tests add up to the figures the README's table shows."""

from __future__ import annotations

import pytest

from tests.support import report


def test_rows_go_to_the_file_and_summarize(tmp_path, monkeypatch):
    path = tmp_path / "report.jsonl"
    monkeypatch.setenv(report.REPORT_ENV, str(path))
    report.record("example", case="a", refused=True, places=3)
    report.record("example", case="b", refused=False, places=4)
    rows = report.read(path)
    assert [r["case"] for r in rows] == ["a", "b"]
    assert report.summarize(rows) == {"example": {"rows": 2, "case": "2 distinct", "refused": "1/2", "places": 7}}
    assert "| example | rows: 2, case: 2 distinct, refused: 1/2, places: 7 |" in report.markdown(rows)
    report._rows[:] = [r for r in report._rows if r["section"] != "example"]  # keep the session's summary clean


def test_only_scalars_are_recorded():
    with pytest.raises(TypeError):
        report.record("example", token={"not": "a scalar"})
