"""The TFJob example, run end to end on the local cluster in a run without a logical date (as the REST API makes one:
nothing in this DAG reads the date, so the run with one, covered by retrain_digits and queued_training, adds nothing)."""

from __future__ import annotations

import json
import re

from tests.support.examples import assert_logical_date, output_of


def test_tfjob_config_check_end_to_end(run_example):
    output = output_of(run_example("tfjob_config_check", None))
    assert_logical_date(output, "tfjob_config_check", None)
    assert re.search(r"TFJob \S+/tfjob-config-check-check-tf-config-\w+: Succeeded", output)
    # The chief's log in the task log: its TF_CONFIG lists one chief and two workers.
    cluster = json.loads(re.search(r"\[Chief-0\] task chief 0 cluster (\{.*?\})", output).group(1))
    assert len(cluster["chief"]) == 1 and len(cluster["worker"]) == 2
