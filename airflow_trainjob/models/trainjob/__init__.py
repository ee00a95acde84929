"""The input side of a Kubeflow Trainer v2 ``TrainJob`` (``trainer.kubeflow.org/v1alpha1``): its spec given in
parts (the operator's parameters) or whole, checked with the ``kubeflow_trainer_api`` models and upstream's rules,
in the API's JSON form; and how long its name may be.

- :mod:`.strict`: one part read strictly through the models (unknown fields refused, attribute keys accepted);
- :mod:`.rules`: what the CRD and the admission webhook of kubeflow/trainer v2.3.0 refuse that the models do not;
- :mod:`.spec`: the spec from the parameters (:func:`parse_spec_parts`) or from a whole job (:func:`parse_spec`);
- :mod:`.whole`: a whole TrainJob document (:func:`parse_whole_trainjob`);
- :mod:`.names`: the name's bound, from the pod names its JobSet derives.
"""

from airflow_trainjob.models.trainjob.names import max_generated_name_length, max_name_length
from airflow_trainjob.models.trainjob.spec import TrainJobSpec, parse_spec, parse_spec_parts
from airflow_trainjob.models.trainjob.whole import WholeTrainJob, parse_whole_trainjob

__all__ = [
    "TrainJobSpec",
    "WholeTrainJob",
    "max_generated_name_length",
    "max_name_length",
    "parse_spec",
    "parse_spec_parts",
    "parse_whole_trainjob",
]
