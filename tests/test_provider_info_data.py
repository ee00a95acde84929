"""The provider info is data (:data:`airflow_trainjob.PROVIDER_INFO`); each call hands out its own copy."""

from __future__ import annotations

import airflow_trainjob
from airflow_trainjob.domain.deferral_hold import DEFAULT_MIN_DEFERRAL_SECONDS


def test_get_provider_info_returns_the_constant():
    assert airflow_trainjob.get_provider_info() == airflow_trainjob.PROVIDER_INFO


def test_a_caller_changing_its_copy_changes_no_other_callers():
    mine = airflow_trainjob.get_provider_info()
    mine["versions"].append("9.9.9")
    mine["config"]["trainjob"]["options"].clear()
    theirs = airflow_trainjob.get_provider_info()
    assert theirs["versions"] == [airflow_trainjob.__version__]
    assert set(theirs["config"]["trainjob"]["options"]) == {
        "job_url_template",
        "ui_connections",
        "triggerer_gc_freeze",
        "min_deferral_seconds",
    }
    assert mine is not theirs


def test_every_option_is_described_typed_and_defaulted():
    options = airflow_trainjob.PROVIDER_INFO["config"]["trainjob"]["options"]
    assert options["triggerer_gc_freeze"] == {
        "description": options["triggerer_gc_freeze"]["description"],
        "version_added": "0.1.0",
        "type": "boolean",
        "example": "False",
        "default": "True",
    }
    assert options["ui_connections"]["default"] == "kubernetes_default"
    assert options["job_url_template"]["default"] == ""
    # The trigger's fallback when the option is unset is the documented default.
    assert options["min_deferral_seconds"]["type"] == "float"
    assert float(options["min_deferral_seconds"]["default"]) == DEFAULT_MIN_DEFERRAL_SECONDS
    assert all(o["description"].endswith(".") for o in options.values())
