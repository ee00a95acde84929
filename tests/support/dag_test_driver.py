"""Run one DAG in this process as ``airflow dags test`` does, but with no logical date.

``airflow dags test <dag_id>`` always sets one: the date given, else the current time. A run created
through the REST API with ``{"logical_date": null}`` (its default), by an asset event or by
``TriggerDagRunOperator`` without a date has none: no ``logical_date``, ``ds``, ``ts`` or
``data_interval_*`` in the template context, only ``run_id``, ``dag_run`` (with ``run_after``) and the
rest. ``DAG.test(logical_date=None)`` creates exactly such a run (``logical_date`` and
``data_interval`` NULL, ``run_after`` now) and runs its tasks in this process.

Usage: ``python tests/support/dag_test_driver.py <dag_id>`` (dags folder and Airflow home from the
environment). Prints ``dag run <run_id>: <state> (logical_date=<...>, run_after=<ISO 8601>)`` last;
exits 1 unless the run succeeded.
"""

from __future__ import annotations

import sys


def main(dag_id: str) -> int:
    from airflow.utils.cli import get_bagged_dag
    from airflow.utils.providers_configuration_loader import providers_configuration_loaded

    @providers_configuration_loaded  # as the CLI's commands are
    def run():
        return get_bagged_dag(bundle_names=None, dag_id=dag_id).test(logical_date=None)

    dag_run = run()
    print(
        f"dag run {dag_run.run_id}: {dag_run.state} "
        f"(logical_date={dag_run.logical_date}, run_after={dag_run.run_after.isoformat()})",
        flush=True,
    )
    return 0 if dag_run.state == "success" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
