"""The try's OpenLineage parent run, put in its job's training containers when asked (``openlineage_inject_parent_job_info``).

Off by default, and switched on as the Spark-launching operators of the Google, Amazon and Databricks providers
switch on theirs: per task (the operator's ``openlineage_inject_parent_job_info``), else by the openlineage provider's
``[openlineage] spark_inject_parent_job_info``. That key is reused rather than one of this provider's: it is the one
switch the openlineage provider documents for "a job an Airflow task launches is told its parent run", an
administrator who turned it on meant every such job, and the identity given is the same one the Spark properties
carry (the same macros), in the environment instead. A deployment that enabled it for Spark gets it for training
too; a task turns it off with ``openlineage_inject_parent_job_info=False``.

The identity is read through the openlineage provider's own macros (imported here, when asked, never at import):
``lineage_job_namespace``, ``lineage_job_name``, ``lineage_run_id`` and the ``lineage_root_*`` ones, so it is the
run the provider's listener reports for the task. With the provider not installed, or OpenLineage disabled (its
``[openlineage] disabled``, or no transport configured), nothing is injected; a task that asked for it by its
parameter gets a one-line warning, one that only inherited the config does not. Lineage never fails the task: a
macro that fails is a warning too.

Applied to the try's request (its manifest), when the operator builds it with the try's context: the run id names
the try, so the manifest sent, the rendered ``manifest`` field and the try's record all show the variables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from airflow_trainjob.domain.parent_run import ParentRun, parent_run_env, with_parent_run_env
from airflow_trainjob.operators.request import TrainingJobRequest

#: The openlineage provider's config key that switches the injection on when the task leaves it to the config.
CONFIG_KEY = "spark_inject_parent_job_info"


class ParentRunUnavailable(Exception):
    """The parent run cannot be read: the openlineage provider is not installed, or OpenLineage is disabled."""


def injection_enabled(flag: bool | None) -> bool:
    """Whether this task's job gets its parent run: ``flag``, else ``[openlineage] spark_inject_parent_job_info``
    as the openlineage provider reads it (False when the provider is not installed).

    :param flag: the operator's ``openlineage_inject_parent_job_info`` (None: the config decides).
    """
    if flag is not None:
        return flag
    try:
        from airflow.providers.openlineage import conf as ol_conf
    except ImportError:
        return False
    return bool(ol_conf.spark_inject_parent_job_info())


def parent_run_of(context: Mapping[str, Any]) -> ParentRun:
    """The task instance's OpenLineage run and its root, as the openlineage provider's macros give them.

    :param context: the Airflow task context (its ``ti``).
    :raises ParentRunUnavailable: the provider is not installed, or OpenLineage is disabled.
    """
    try:
        from airflow.providers.openlineage import conf as ol_conf
        from airflow.providers.openlineage.plugins import macros
    except ImportError as e:
        raise ParentRunUnavailable(f"the openlineage provider is not installed ({e})") from None
    if ol_conf.is_disabled():
        raise ParentRunUnavailable("OpenLineage is disabled ([openlineage] disabled, or no transport configured)")
    ti = context["ti"]
    return ParentRun(
        namespace=macros.lineage_job_namespace(),
        job_name=macros.lineage_job_name(ti),
        run_id=macros.lineage_run_id(ti),
        root_namespace=macros.lineage_root_job_namespace(ti),
        root_job_name=macros.lineage_root_job_name(ti),
        root_run_id=macros.lineage_root_run_id(ti),
    )


def with_parent_run(
    request: TrainingJobRequest, context: Mapping[str, Any], flag: bool | None, log: Any
) -> TrainingJobRequest:
    """``request`` with the try's parent run in its job's training containers, when enabled
    (:func:`injection_enabled`); else ``request`` itself. What was injected, and each container that kept the DAG's
    own values, are notes of the request (the task logs them once).

    :param request: the try's request, as built from the parameters.
    :param context: the Airflow task context of the try.
    :param flag: the operator's ``openlineage_inject_parent_job_info`` (None: the config decides).
    :param log: the task's logger (the warning when the parent run cannot be read though the task asked for it).
    """
    if not injection_enabled(flag):
        return request
    try:
        parent = parent_run_of(context)
    except Exception as e:  # lineage never fails the task
        if flag is True or not isinstance(e, ParentRunUnavailable):
            log.warning("OpenLineage parent run not given to the job's containers: %s", e)
        return request
    env = parent_run_env(parent)
    manifest, kept = with_parent_run_env(request.manifest, env)
    notes = [f"OpenLineage parent run {parent.parent_id} (root {parent.root_parent_id}): {', '.join(env)} set"]
    notes += [f"{path}: keeps its own OpenLineage parent ({', '.join(env)} not set there)" for path in kept]
    return dataclasses.replace(request, manifest=manifest, notes=(*request.notes, *notes))
