"""Apache Airflow provider for Kubeflow training-operator jobs (``kubeflow.org/v1``)."""

from __future__ import annotations

__version__ = "0.1.0"


def get_provider_info() -> dict:
    """Describe this provider to Airflow's ``ProvidersManager`` (the ``apache_airflow_provider`` entry point)."""
    return {
        "package-name": "airflow-trainjob",
        "name": "Kubeflow Training Jobs",
        "description": "Run Kubeflow training-operator jobs (PyTorchJob, TFJob, MPIJob, XGBoostJob, "
        "PaddleJob, JAXJob) from Airflow, on the cncf.kubernetes connection.",
        "versions": [__version__],
    }
