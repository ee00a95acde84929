"""Apache Airflow provider for Kubeflow training-operator jobs (``kubeflow.org/v1``)."""

from __future__ import annotations

import copy
from typing import Any

__version__ = "0.1.0"

#: The one integration this provider adds (the name its operators, sensors, hooks and triggers refer to).
INTEGRATION = "Kubeflow Training Operator"

#: Section of the provider info -> the modules it lists under :data:`INTEGRATION`. hooks.retries holds the hook's
#: retry rule, triggers.job_stream the trigger's shared stream: no hook or trigger class in either, so neither is
#: listed.
_MODULES = {
    "operators": ["airflow_trainjob.operators.training_job", "airflow_trainjob.operators.trainjob"],
    "sensors": ["airflow_trainjob.sensors.training_job"],
    "hooks": ["airflow_trainjob.hooks.training_job"],
    "triggers": ["airflow_trainjob.triggers.training_job"],
}

#: The ``[trainjob]`` options: name -> (description, type, example, default). All added in 0.1.0.
_OPTIONS = {
    "job_url_template": (
        "URL of a job for the task's extra link, with {kind}, {plural}, "
        "{namespace} and {name}; a connection extra of the same name overrides it.",
        "string",
        "https://kubeflow.example.com/_/jobs/{namespace}/{name}",
        "",
    ),
    "ui_connections": (
        "Where the Training jobs page looks: a comma-separated list of conn_id "
        "or conn_id/namespace; a connection without a namespace is read in its namespace extra, "
        "else default.",
        "string",
        "kubernetes_default, gpu_cluster/ml-team",
        "kubernetes_default",
    ),
    "min_deferral_seconds": (
        "A deferred training task's trigger fires no earlier than this many seconds after the task "
        "deferred, so that the scheduler has taken in the deferring worker's exit before the task "
        "resumes (Airflow's race, apache/airflow#72716, fails a task that resumes first); 0 turns "
        "it off (the default). Only a job that ends, or a deadline that passes, that soon waits.",
        "float",
        "10",
        "0",
    ),
    "triggerer_gc_freeze": (
        "In the triggerer, move what the process holds at the first training "
        "trigger, and what importing the Kubernetes clients adds, out of the garbage collector's "
        "full collections (gc.freeze), which otherwise stall the triggerer's event loop for "
        "0.3-0.6 s as those triggers start.",
        "boolean",
        "False",
        "True",
    ),
}

#: What :func:`get_provider_info` returns (Airflow's ``provider_info.schema.json`` shape). The UI plugin
#: (airflow_trainjob.ui.plugin) is registered by the "airflow.plugins" entry point, not here: Airflow 3.3 reads a
#: provider's "plugins" only with lazy_discover_providers off (see pyproject.toml).
PROVIDER_INFO: dict[str, Any] = {
    "package-name": "airflow-trainjob",
    "name": "Kubeflow Training Jobs",
    "description": "Run Kubeflow training-operator jobs (PyTorchJob, TFJob, MPIJob, XGBoostJob, "
    "PaddleJob, JAXJob) from Airflow, on the cncf.kubernetes connection.",
    "versions": [__version__],
    "integrations": [
        {
            "integration-name": INTEGRATION,
            "external-doc-url": "https://www.kubeflow.org/docs/components/training/",
            "tags": ["software"],
        }
    ],
    **{
        section: [{"integration-name": INTEGRATION, "python-modules": modules}] for section, modules in _MODULES.items()
    },
    "extra-links": ["airflow_trainjob.links.training_job.TrainingJobLink"],
    "config": {
        "trainjob": {
            "description": "Settings of the airflow-trainjob provider.",
            "options": {
                name: {
                    "description": text,
                    "version_added": "0.1.0",
                    "type": kind,
                    "example": example,
                    "default": default,
                }
                for name, (text, kind, example, default) in _OPTIONS.items()
            },
        }
    },
}


def get_provider_info() -> dict:
    """Describe this provider to Airflow's ``ProvidersManager`` (the ``apache_airflow_provider`` entry point): a copy
    of :data:`PROVIDER_INFO`, which the caller may change."""
    return copy.deepcopy(PROVIDER_INFO)
