"""The TFJob example, run end to end on the local cluster with a logical date and without one."""

from __future__ import annotations

import json
import re

from tests.support.examples import BOTH_WAYS, assert_logical_date, output_of


@BOTH_WAYS
def test_tfjob_config_check_end_to_end(run_example, logical_date):
    output = output_of(run_example("tfjob_config_check", logical_date))
    assert_logical_date(output, "tfjob_config_check", logical_date)
    assert re.search(r"TFJob \S+/tfjob-config-check-check-tf-config-\w+: Succeeded", output)
    # The chief's log in the task log: its TF_CONFIG lists one chief and two workers.
    cluster = json.loads(re.search(r"\[Chief-0\] task chief 0 cluster (\{.*?\})", output).group(1))
    assert len(cluster["chief"]) == 1 and len(cluster["worker"]) == 2
