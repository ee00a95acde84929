"""constants.py: the per-kind table is internally consistent and agrees with the models."""

from __future__ import annotations

import pytest

from airflow_trainjob.constants import API_VERSION, JOB_KINDS
from airflow_trainjob.models.kinds import KIND_FIELDS_MODELS


def test_the_six_kinds():
    assert list(JOB_KINDS) == ["PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"]
    assert API_VERSION == "kubeflow.org/v1"


@pytest.mark.parametrize("kind", list(JOB_KINDS))
def test_kind_row_is_consistent(kind):
    row = JOB_KINDS[kind]
    assert row.kind == kind
    assert row.plural == kind.lower() + "s"
    assert row.replica_specs_key.endswith("ReplicaSpecs")
    for listed in (row.lead_replica_types, row.required_replica_types, row.single_replica_types, row.exclusive_replica_types):
        assert set(listed) <= set(row.replica_types)
    assert 0 < row.default_port < 65536
    aliases = {f.alias for f in KIND_FIELDS_MODELS[kind].model_fields.values()}
    assert aliases == set(row.kind_fields)
