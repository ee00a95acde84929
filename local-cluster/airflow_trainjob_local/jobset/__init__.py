"""The local JobSet controller (``jobset.x-k8s.io/v1alpha2``): a stand-in for kubernetes-sigs/jobset
``v0.12.0`` (the version kubeflow/trainer ``v2.3.0`` builds on), which the local Trainer v2
(:mod:`airflow_trainjob_local.trainer`) runs its TrainJobs with.

The cluster's kube-apiserver (1.20) has no Indexed batch Jobs, so this controller also runs the Jobs a
JobSet owns: one pod per completion index, with the labels and annotations a real Job controller writes.
"""
