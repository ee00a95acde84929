"""Helpers of the provider's tests, importable from any test module (a test module imports no other test module
and no conftest; fixtures stay in the conftest files, built on these helpers).

- :mod:`~tests.support.jobs`: task-instance and task-state-store stand-ins, replica specs and container code,
  reads of the cluster's jobs, an operator run in a thread;
- :mod:`~tests.support.deferred`: a trigger run as the triggerer runs it (first event, rebuilt from its
  serialized form, under Airflow's ``SharedStreamManager``), a task in either mode;
- :mod:`~tests.support.fake_hook`: an in-memory stand-in for the hook, for the operator's branches;
- :mod:`~tests.support.fault_proxy`, :mod:`~tests.support.faults`: the fault-injecting proxy, the job-creation
  watch, the orphan count, the fault report rows, the shortened backoff of the fault tier;
- :mod:`~tests.support.refusals`, :mod:`~tests.support.least_privilege`: refusal and least-privilege support;
- :mod:`~tests.support.examples`: running the example DAGs as a user does;
- :mod:`~tests.support.report`: the figures tests record for the README's report;
- scripts run in a process of their own: ``run_try.py`` (``python -m tests.support.run_try``: a try or a
  trigger to SIGKILL), ``dag_test_driver.py`` (a DAG run with no logical date).
"""
