"""Apache Airflow provider for Kubeflow training-operator jobs (``kubeflow.org/v1``)."""

from __future__ import annotations

__version__ = "0.1.0"

#: The one integration this provider adds (the name its operators, sensors, hooks and triggers refer to).
INTEGRATION = "Kubeflow Training Operator"


def get_provider_info() -> dict:
    """Describe this provider to Airflow's ``ProvidersManager`` (the ``apache_airflow_provider`` entry point)."""
    return {
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
        "operators": [{"integration-name": INTEGRATION, "python-modules": ["airflow_trainjob.operators.training_job"]}],
        "sensors": [{"integration-name": INTEGRATION, "python-modules": ["airflow_trainjob.sensors.training_job"]}],
        # hooks.retries holds the hook's retry rule, triggers.job_stream the trigger's shared stream: no hook or
        # trigger class in either, so neither is listed.
        "hooks": [{"integration-name": INTEGRATION, "python-modules": ["airflow_trainjob.hooks.training_job"]}],
        "triggers": [{"integration-name": INTEGRATION, "python-modules": ["airflow_trainjob.triggers.training_job"]}],
        "extra-links": ["airflow_trainjob.links.training_job.TrainingJobLink"],
        # The UI plugin (airflow_trainjob.ui.plugin) is registered by the "airflow.plugins" entry point, not here:
        # Airflow 3.3 reads a provider's "plugins" only with lazy_discover_providers off (see pyproject.toml).
        "config": {
            "trainjob": {
                "description": "Settings of the airflow-trainjob provider.",
                "options": {
                    "job_url_template": {
                        "description": "URL of a job for the task's extra link, with {kind}, {plural}, "
                        "{namespace} and {name}; a connection extra of the same name overrides it.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "https://kubeflow.example.com/_/jobs/{namespace}/{name}",
                        "default": "",
                    },
                    "ui_connections": {
                        "description": "Where the Training jobs page looks: a comma-separated list of conn_id "
                        "or conn_id/namespace; a connection without a namespace is read in its namespace extra, "
                        "else default.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "kubernetes_default, gpu_cluster/ml-team",
                        "default": "kubernetes_default",
                    },
                    "triggerer_gc_freeze": {
                        "description": "In the triggerer, move what the process holds at the first training "
                        "trigger, and what importing the Kubernetes clients adds, out of the garbage collector's "
                        "full collections (gc.freeze), which otherwise stall the triggerer's event loop for "
                        "0.3-0.6 s as those triggers start.",
                        "version_added": "0.1.0",
                        "type": "boolean",
                        "example": "False",
                        "default": "True",
                    },
                },
            }
        },
    }
