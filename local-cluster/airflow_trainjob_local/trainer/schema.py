"""Structural OpenAPI v3 schemas of the Trainer v2 kinds and of JobSet, for the local cluster's CRDs.

Derived from the generated API models of ``kubeflow_trainer_api`` (the pydantic v2 models of kubeflow/trainer
``v2.3.0``, which embed jobset ``v1alpha2`` and the Kubernetes core API): :func:`structural_schema` walks a
model's ``model_json_schema()`` and inlines every ``$ref``. What the JSON Schema of a pydantic model says that an
``apiextensions.k8s.io/v1`` CRD cannot is rewritten:

- an optional field is ``anyOf: [<type>, {type: null}]``: the ``null`` branch is dropped (the apiserver drops a
  ``null`` it is sent for a non-nullable field, as for the real CRDs);
- ``IoK8sApimachineryPkgUtilIntstrIntOrString`` and ``IoK8sApimachineryPkgApiResourceQuantity`` are modelled as
  pydantic one-of wrapper objects: they become :data:`~airflow_trainjob_local.crd_schema.INT_OR_STRING` and
  :data:`~airflow_trainjob_local.crd_schema.QUANTITY` (the v1 pod API's constants);
- ``IoK8sApimachineryPkgApisMetaV1ObjectMeta`` is the top-level ``metadata`` (``type: object``, which the
  apiserver fills itself) or, anywhere below (templates, patches, claim templates), an object that keeps its
  content;
- a model met again below itself (none today) becomes an object that keeps its content;
- ``title``, ``description``, ``uniqueItems`` (refused by the apiserver) and the models' client-side ``default``
  values are dropped; the API's own defaults, enums and list markers are added from :data:`FIELD_EXTRAS`, written
  from the Go API's markers (``+kubebuilder:default``, ``+kubebuilder:validation:Enum``, ``+listType`` of
  kubeflow/trainer ``pkg/apis/trainer/v1alpha1/*_types.go`` and jobset ``api/jobset/v1alpha2/jobset_types.go``).

Differences from upstream's CRDs (kubeflow/trainer v2.3.0 ``manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml``,
``..._trainingruntimes.yaml``, ``..._clustertrainingruntimes.yaml``; jobset v0.12.0
``config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml``), found by comparing after the fact:

- No CEL (``x-kubernetes-validations``; the 1.20 apiserver has none). Dropped, in ``trainer.kubeflow.org_trainjobs.yaml``:
  ``metadata.name`` an RFC 1035 label of at most 63 characters; ``spec.runtimeRef``, ``spec.trainer``,
  ``spec.initializer``, ``spec.activeDeadlineSeconds``, ``spec.managedBy``, ``spec.runtimePatches[].manager`` and,
  in a runtime patch's pod spec, ``containers``, ``initContainers``, ``volumes``, ``imagePullSecrets``,
  ``securityContext``, ``serviceAccountName``, ``terminationGracePeriodSeconds`` immutable; ``storageUri`` empty or
  ``scheme://...``; ``status.trainerStatus`` needs ``lastUpdatedTime``. (The rule that ``spec.managedBy`` is one
  of its two values is kept, as an enum.) In both runtime CRDs: at most one framework in ``spec.mlPolicy``; ``mlPolicy.flux.numProcPerNode``
  at least 1; ``mlPolicy.torch.envInjection.targets[].containerNames`` never ``node``; and the JobSet rules below
  under ``spec.template.spec``. In ``jobset.x-k8s.io_jobsets.yaml``: ``startupPolicy`` ``InOrder`` and
  ``dependsOn`` exclusive; ``failurePolicy``, ``network``, ``startupPolicy``, ``successPolicy``,
  ``volumeClaimPolicies`` and ``replicatedJobs[].dependsOn`` immutable; no ``namespace`` in a volume claim
  policy's templates. A real cluster refuses these on create or update; this one stores them.
- Limits not checked: ``maxLength``, ``minLength``, ``maxItems``, ``minItems``, ``minProperties`` (``status`` of
  a TrainJob, ``spec`` and ``spec.template`` of a runtime), ``minimum``/``maximum`` (e.g.
  ``activeDeadlineSeconds >= 1``, ``ttlSecondsAfterFinished >= 0``, ``progressPercentage <= 100``) and the
  ``pattern`` of condition ``type`` and ``reason``.
- Integers carry no ``int32``/``int64`` format (the generated models only say ``integer``).
- Embedded ``metadata`` keeps every field, untyped; upstream types ``name``, ``namespace``, ``labels``,
  ``annotations`` and ``finalizers`` (refusing e.g. a label that is not a string) and prunes the rest.
- The Kubernetes types (pod template, Job spec, volume claims, selectors) have the fields of upstream's but none
  of their defaults (``""`` for reference names, ``fileKeyRef.optional: false``, ``ports[].protocol: TCP``, ...)
  and no list or map markers (as :mod:`airflow_trainjob_local.crd_schema` for v1): a template port is read back
  without ``protocol: TCP``, duplicate container names are not refused by the schema, server-side apply replaces
  such lists whole. That includes the TrainJob's ``spec.trainer.resourcesPerNode.claims`` and the
  ``secretRef.name`` of its initializers.
- ``mlPolicy.jax`` and ``mlPolicy.xgboost`` (empty structs in the Go API, free-form objects in the generated
  models) keep what they are sent; upstream prunes their content.
- Quantities follow :data:`~airflow_trainjob_local.crd_schema.QUANTITY` (integer exponents only).
- No ``description`` anywhere.

``""``, ``0`` and ``false`` are values in every typed field, as on a real cluster (an earlier build of this
cluster's apiserver refused ``""`` as null; :data:`airflow_trainjob_local.build.SOURCE_PATCHES` fixes it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from airflow_trainjob_local import crd_schema
from airflow_trainjob_local.crd_schema import ANY, ANY_OBJECT, INT_OR_STRING, QUANTITY, Schema
from airflow_trainjob_local.trainer import constants as c

#: ``$defs`` names of the generated models that the apiserver knows as special types.
_INT_OR_STRING_MODEL = "IoK8sApimachineryPkgUtilIntstrIntOrString"
_QUANTITY_MODEL = "IoK8sApimachineryPkgApiResourceQuantity"
_OBJECT_META_MODEL = "IoK8sApimachineryPkgApisMetaV1ObjectMeta"
_CONDITION_MODEL = "IoK8sApimachineryPkgApisMetaV1Condition"

#: Keywords of pydantic's JSON Schema that a CRD schema does not take (or that say nothing to the apiserver).
_DROPPED_KEYWORDS = frozenset({"title", "description", "default", "uniqueItems", "$defs"})


def _map_list(*keys: str) -> Schema:
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


def _enum(*values: str) -> Schema:
    return {"enum": list(values)}


_ATOMIC: Schema = {"x-kubernetes-list-type": "atomic"}

#: ``(model, JSON field) -> keywords`` merged into that field's schema: the Go API's ``+kubebuilder:default``,
#: ``+kubebuilder:validation:Enum`` and ``+listType``/``+listMapKey`` markers (what changes behaviour on a 1.20
#: apiserver: a default written on create, a value refused, a duplicate key refused).
FIELD_EXTRAS: Mapping[tuple[str, str], Schema] = {
    # trainer.kubeflow.org/v1alpha1: TrainJob
    ("TrainerV1alpha1TrainJobSpec", "suspend"): {"default": False},
    ("TrainerV1alpha1TrainJobSpec", "managedBy"): {
        "default": c.MANAGED_BY_TRAINER,
        **_enum(c.MANAGED_BY_TRAINER, c.MANAGED_BY_MULTIKUEUE),
    },
    ("TrainerV1alpha1TrainJobSpec", "runtimePatches"): _map_list("manager"),
    ("TrainerV1alpha1JobSetSpecPatch", "replicatedJobs"): _map_list("name"),
    ("TrainerV1alpha1RuntimeRef", "apiGroup"): {"default": c.GROUP},
    ("TrainerV1alpha1RuntimeRef", "kind"): {"default": c.CLUSTER_TRAINING_RUNTIME_KIND},
    ("TrainerV1alpha1Trainer", "command"): _ATOMIC,
    ("TrainerV1alpha1Trainer", "args"): _ATOMIC,
    ("TrainerV1alpha1Trainer", "env"): _map_list("name"),
    ("TrainerV1alpha1DatasetInitializer", "env"): _map_list("name"),
    ("TrainerV1alpha1ModelInitializer", "env"): _map_list("name"),
    ("TrainerV1alpha1TrainJobStatus", "conditions"): _map_list("type"),
    ("TrainerV1alpha1TrainJobStatus", "jobsStatus"): _map_list("name"),
    ("TrainerV1alpha1TrainerStatus", "metrics"): _ATOMIC,
    # trainer.kubeflow.org/v1alpha1: (Cluster)TrainingRuntime
    ("TrainerV1alpha1MPIMLPolicySource", "mpiImplementation"): {"default": "OpenMPI", **_enum("OpenMPI", "")},
    ("TrainerV1alpha1MPIMLPolicySource", "numProcPerNode"): {"default": 1},
    ("TrainerV1alpha1MPIMLPolicySource", "runLauncherAsNode"): {"default": False},
    ("TrainerV1alpha1MPIMLPolicySource", "sshAuthMountPath"): {"default": "/root/.ssh"},
    ("TrainerV1alpha1FluxMLPolicySource", "numProcPerNode"): {"default": 1},
    ("TrainerV1alpha1EnvInjection", "targets"): _map_list("jobName"),
    ("TrainerV1alpha1EnvInjectionTarget", "containerNames"): {"x-kubernetes-list-type": "set"},
    ("TrainerV1alpha1CoschedulingPodGroupPolicySource", "scheduleTimeoutSeconds"): {"default": 60},
    ("SchedulingV1beta1NetworkTopologySpec", "highestTierAllowed"): {"default": 1},
    ("SchedulingV1beta1NetworkTopologySpec", "mode"): {"default": "hard", **_enum("hard", "soft")},
    # jobset.x-k8s.io/v1alpha2 (a JobSet's spec, and a runtime's spec.template.spec)
    ("JobsetV1alpha2JobSetSpec", "replicatedJobs"): _map_list("name"),
    ("JobsetV1alpha2JobSetSpec", "volumeClaimPolicies"): _ATOMIC,
    ("JobsetV1alpha2ReplicatedJob", "replicas"): {"default": 1},
    ("JobsetV1alpha2ReplicatedJob", "groupName"): {"default": "default"},
    ("JobsetV1alpha2ReplicatedJob", "dependsOn"): _map_list("name"),
    ("JobsetV1alpha2DependsOn", "status"): _enum("Ready", "Complete"),
    ("JobsetV1alpha2FailurePolicy", "restartStrategy"): {
        "default": "Recreate",
        **_enum("Recreate", "BlockingRecreate", "InPlaceRestart"),
    },
    ("JobsetV1alpha2FailurePolicyRule", "action"): _enum(
        "FailJobSet",
        "RestartJobSet",
        "RestartJobSetAndIgnoreMaxRestarts",
        "RestartJob",
        "RestartJobAndIgnoreMaxRestarts",
    ),
    ("JobsetV1alpha2FailurePolicyRule", "targetReplicatedJobs"): _ATOMIC,
    ("JobsetV1alpha2StartupPolicy", "startupPolicyOrder"): _enum("AnyOrder", "InOrder"),
    ("JobsetV1alpha2SuccessPolicy", "operator"): _enum("All", "Any"),
    ("JobsetV1alpha2SuccessPolicy", "targetReplicatedJobs"): _ATOMIC,
    ("JobsetV1alpha2VolumeClaimPolicy", "templates"): _ATOMIC,
    ("JobsetV1alpha2VolumeRetentionPolicy", "whenDeleted"): {"default": "Delete", **_enum("Delete", "Retain")},
    ("JobsetV1alpha2JobSetStatus", "conditions"): _map_list("type"),
    ("JobsetV1alpha2JobSetStatus", "replicatedJobsStatus"): _map_list("name"),
    ("JobsetV1alpha2ReplicatedJobStatus", "jobRestarts"): _ATOMIC,
    ("JobsetV1alpha2ReplicatedJobStatus", "jobRestartsCountTowardsMax"): _ATOMIC,
    # meta/v1 Condition (the status conditions of both APIs)
    (_CONDITION_MODEL, "status"): _enum("True", "False", "Unknown"),
}


def structural_schema(model: type[BaseModel], *, description: str = "") -> Schema:
    """The ``openAPIV3Schema`` of one kind, from its generated model.

    :param model: the kind's model, e.g. ``kubeflow_trainer_api.models.TrainerV1alpha1TrainJob``.
    :param description: the schema's top-level ``description``.
    :raises ValueError: the model's JSON Schema has a node this converter does not know (a ``$ref`` to a
        missing definition, a type it cannot express).
    """
    json_schema = model.model_json_schema()
    walker = _Walker(json_schema.get("$defs") or {})
    schema = walker.model(model.__name__, json_schema, ())
    # The apiserver owns the top-level metadata; a CRD may only say it is an object.
    schema["properties"]["metadata"] = {"type": "object"}
    if description:
        schema["description"] = description
    return schema


def structural_problems(schema: Schema) -> list[str]:
    """What makes ``schema`` not structural, or ``[]`` (the v1 CRDs' check, plus ``nullable`` and
    ``anyOf``/``oneOf``/``allOf``, which this converter never writes)."""
    problems = crd_schema.structural_problems(schema)
    for path, node in crd_schema.walk(schema):
        for keyword in ("nullable", "anyOf", "oneOf", "allOf", "uniqueItems", "$defs"):
            if keyword in node:
                problems.append(f"{path or '<root>'}: {keyword}")
    return problems


class _Walker:
    """Inlines the ``$defs`` of one model's JSON Schema into a structural schema."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.definitions = definitions

    def model(self, name: str, definition: Mapping[str, Any], above: tuple[str, ...]) -> Schema:
        """One model (a ``$defs`` entry, or the root): an object with its properties and required fields."""
        properties: dict[str, Schema] = {}
        for field, node in (definition.get("properties") or {}).items():
            properties[field] = self.node(node, (*above, name))
            if extras := FIELD_EXTRAS.get((name, field)):
                properties[field].update(copy.deepcopy(extras))
        if not properties:
            return dict(ANY_OBJECT)
        schema: Schema = {"type": "object", "properties": properties}
        if required := definition.get("required"):
            schema["required"] = list(required)
        return schema

    def reference(self, ref: str, above: tuple[str, ...]) -> Schema:
        name = ref.rsplit("/", 1)[-1]
        if name == _INT_OR_STRING_MODEL:
            return dict(INT_OR_STRING)
        if name == _QUANTITY_MODEL:
            return dict(QUANTITY)
        if name == _OBJECT_META_MODEL or name in above:
            # Embedded metadata keeps its content; a model below itself cannot be inlined.
            return dict(ANY_OBJECT)
        try:
            definition = self.definitions[name]
        except KeyError:
            raise ValueError(f"$ref to a missing definition {ref!r}") from None
        return self.model(name, definition, above)

    def node(self, node: Mapping[str, Any], above: tuple[str, ...]) -> Schema:
        """Any node of the JSON Schema below a model's properties."""
        if "$ref" in node:
            return self.reference(node["$ref"], above)
        if "anyOf" in node:
            return self.any_of(node["anyOf"], above)
        kind = node.get("type")
        if kind == "array":
            return {"type": "array", "items": self.node(node.get("items") or {}, above)}
        if kind == "object":
            return self.object(node, above)
        if kind in ("string", "integer", "number", "boolean"):
            schema: Schema = {"type": kind}
            if "format" in node:
                schema["format"] = node["format"]
            if "enum" in node:
                schema["enum"] = list(node["enum"])
            return schema
        if kind is None and not (set(node) - _DROPPED_KEYWORDS):
            return dict(ANY)  # `{}`: any value
        raise ValueError(f"cannot express {node!r} in a structural schema")

    def object(self, node: Mapping[str, Any], above: tuple[str, ...]) -> Schema:
        if "properties" in node:
            return self.model("", node, above)
        values = node.get("additionalProperties")
        if isinstance(values, Mapping) and values:
            return {"type": "object", "additionalProperties": self.node(values, above)}
        return dict(ANY_OBJECT)  # a free-form object

    def any_of(self, branches: list[Mapping[str, Any]], above: tuple[str, ...]) -> Schema:
        kept = [branch for branch in branches if branch.get("type") != "null"]
        if len(kept) == 1:
            return self.node(kept[0], above)
        if {branch.get("type") for branch in kept} == {"integer", "string"}:
            return dict(INT_OR_STRING)
        raise ValueError(f"cannot express anyOf {branches!r} in a structural schema")
