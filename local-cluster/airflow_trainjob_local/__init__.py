"""A local Kubernetes for training jobs: a real kube-apiserver built from Debian's source package, etcd,
kube-controller-manager, the six ``kubeflow.org/v1`` CRDs, a local training controller and a process kubelet.

A distribution of its own (``airflow-trainjob-local``), never installed with the provider: nothing in the provider
imports it, and it imports nothing of the provider. It exists for the tests, for CI and for DAG authors who want
to run a training DAG on one Linux machine.

- :mod:`.build` finds or builds the kube-apiserver and kube-controller-manager binaries (cached by version).
- :mod:`.pki` generates the CA, serving certificate, tokens and service-account key.
- :mod:`.crds` generates the CustomResourceDefinitions from :data:`airflow_trainjob_local.constants.JOB_KINDS`.
- :mod:`.cluster` starts, checks and stops the processes (:class:`~.cluster.LocalCluster`).
- :mod:`.controller` (the stand-in training operator) and :mod:`.kubelet` (the process kubelet) share
  :mod:`.kube` (client, API error checks, timestamps), :mod:`.informer` (the one list-then-watch loop) and
  :mod:`.events` (Event bodies and their aggregation).
- :mod:`.testing` is the pytest plugin with the cluster fixtures, for this distribution's tests and the provider's.
- ``python -m airflow_trainjob_local up|down|status|build`` is the command line (:mod:`.__main__`).
"""

__version__ = "0.1.0"
