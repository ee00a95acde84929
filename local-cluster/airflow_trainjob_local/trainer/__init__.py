"""The local Kubeflow Trainer v2 (``trainer.kubeflow.org/v1alpha1``): a stand-in for the trainer controller of
kubeflow/trainer ``v2.3.0`` that turns a ``TrainJob`` and the ``TrainingRuntime`` or ``ClusterTrainingRuntime``
it names into one JobSet of the same name, and writes the TrainJob's status from it.

The JobSet is run by the local JobSet controller (:mod:`airflow_trainjob_local.jobset`), its pods by the
process kubelet. Like :mod:`airflow_trainjob_local.controller` for v1, this package keeps its own copy of the
API's strings (:mod:`.constants`), read from upstream's Go code, never from the provider.
"""
