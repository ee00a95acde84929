"""Structural OpenAPI v3 schemas of the ``kubeflow.org/v1`` job kinds, for the local cluster's CRDs.

Two independent sources, neither of them the training operator's generated CRD files:

- **The pod template** is walked from the official Kubernetes Python client's model metadata: starting at
  ``kubernetes.client.V1PodTemplateSpec``, every model's ``openapi_types`` (``str``, ``int``, ``bool``,
  ``float``, ``datetime``, ``list[X]``, ``dict[str, X]``, ``object`` or another model) and ``attribute_map``
  (the JSON names). A field is required when the model's setter refuses ``None`` under client-side
  validation (how the client encodes the API's ``required``). The client types IntOrString and
  ``resource.Quantity`` as ``object`` and ``str``; the few such fields of the pod API are listed in
  :data:`_INT_OR_STRING_FIELDS` and :data:`_QUANTITY_FIELDS`. Any other ``object`` keeps its content
  (``x-kubernetes-preserve-unknown-fields``), and so does every ``V1ObjectMeta`` (``metadata`` of the template
  and of ephemeral-volume claim templates: ``type: object``, content kept, as the apiserver allows for nested
  metadata). A model met again below itself would make the schema recursive, which a CRD schema cannot be:
  that node becomes an object that keeps its content (the pod API has no such cycle today).
- **The job types** are written out below from the Go API (``pkg/apis/kubeflow.org/v1/*_types.go`` of
  kubeflow/training-operator) as a reader of those files types them: ``int32``/``int64`` for integer fields,
  the restart and clean-pod policies and ``managedBy`` as enums, ``runPolicy.suspend`` defaulting to
  ``false`` (the API's ``+kubebuilder:default``), condition ``type`` and ``status`` required (no
  ``omitempty``). This is deliberately not derived from the provider's own models (:mod:`airflow_trainjob.models`),
  so a test can catch the provider sending what a cluster refuses.

Every node has a ``type`` or is ``x-kubernetes-int-or-string`` / ``x-kubernetes-preserve-unknown-fields``, no
``$ref`` is used (:func:`structural_problems` checks that), so the apiserver accepts the schemas for ``v1`` CRDs
and prunes unknown fields as a real cluster's training-operator CRDs do.

Differences from the training operator's CRDs (release 1.9, ``manifests/base/crds``), found by comparing after
the fact:

- Embedded ``metadata`` (pod template, ephemeral volume claim template) keeps every field here; the real CRDs
  type only ``name``, ``namespace``, ``labels``, ``annotations`` and ``finalizers`` and prune the rest.
- Defaults: only ``runPolicy.suspend: false`` here. The real CRDs also carry the pod API's defaults, e.g.
  ``ports[].protocol: TCP``, ``""`` for the ``name`` of ConfigMap/Secret references and ``imagePullSecrets``,
  ``grpc.service: ""``, and volume-plugin defaults (``rbd.pool``, ``azureDisk.fsType``, ...): a real cluster
  reads a template port back with ``protocol: TCP`` added.
- No ``x-kubernetes-list-type`` / ``-list-map-keys`` / ``-map-type`` markers: a real cluster refuses duplicate
  keys in keyed lists (two ports with one ``containerPort``/``protocol``, two ``volumeMounts`` with one
  ``mountPath``) and merges those lists by key under server-side apply; this schema does neither.
- Pod-template integers have no ``int32``/``int64`` format (the client's models only say ``int``).
- ``restartPolicy``, ``cleanPodPolicy`` (also MPIJob's deprecated spec-level one) and ``managedBy`` are enums
  here; the real CRDs type them as plain strings (a bad value passes the apiserver and is refused later by the
  operator's webhook or controller).
- No CEL rules: the real ``schedulingPolicy.queue`` is immutable (``x-kubernetes-validations``), which the
  1.20 apiserver of the local cluster cannot express.
- No ``scale`` subresource (the real PyTorchJob, PaddleJob and JAXJob CRDs scale ``Worker``).
- ``elasticPolicy.metrics`` (autoscaling/v2 ``MetricSpec``) is kept as sent; the real CRDs type it fully.
- The pod API is the one of the installed ``kubernetes`` client, newer than the operator's: fields such as
  ``restartPolicyRules``, ``env[].valueFrom.fileKeyRef``, ``lifecycle.stopSignal``, ``hostnameOverride``
  or pod-level ``resources`` are accepted here and pruned by the real CRDs.
- Quantities: the pattern is written from the quantity grammar; it allows only integer exponents (``1e3``),
  the real one also decimal ones. No ``description`` anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from kubernetes import client as k8s

Schema = dict[str, Any]

#: Any JSON value, kept as sent (the client's ``object``: a type it cannot express).
ANY: Schema = {"x-kubernetes-preserve-unknown-fields": True}
#: Any JSON object, kept as sent.
ANY_OBJECT: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
INT_OR_STRING: Schema = {"x-kubernetes-int-or-string": True}
#: A ``resource.Quantity``: an integer, or a string of the quantity grammar (``<signed number><suffix>``:
#: binary ``Ki``..``Ei``, decimal ``n u m "" k M G T P E``, or an exponent ``e<signed integer>``).
QUANTITY: Schema = {
    "x-kubernetes-int-or-string": True,
    "pattern": r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$",
}
STRING: Schema = {"type": "string"}
BOOLEAN: Schema = {"type": "boolean"}
INT32: Schema = {"type": "integer", "format": "int32"}
INT64: Schema = {"type": "integer", "format": "int64"}
TIME: Schema = {"type": "string", "format": "date-time"}

#: Pod-API fields the client types as ``object`` that are IntOrString (probe and lifecycle handler ports).
_INT_OR_STRING_FIELDS = frozenset({("V1HTTPGetAction", "port"), ("V1TCPSocketAction", "port")})
#: Pod-API fields holding ``resource.Quantity`` values (the client types them ``str`` / ``dict[str, str]``).
_QUANTITY_FIELDS = frozenset(
    {
        ("V1ResourceRequirements", "limits"),
        ("V1ResourceRequirements", "requests"),
        ("V1VolumeResourceRequirements", "limits"),
        ("V1VolumeResourceRequirements", "requests"),
        ("V1PodSpec", "overhead"),
        ("V1EmptyDirVolumeSource", "size_limit"),
        ("V1ResourceFieldSelector", "divisor"),
    }
)
#: Models kept whole: embedded object metadata (only its identity, labels and annotations mean anything there).
_OPAQUE_MODELS = frozenset({"V1ObjectMeta"})

_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict[\[(]str, (.+)[\])]$")
_PRIMITIVES: dict[str, Schema] = {
    "str": STRING,
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": BOOLEAN,
    "datetime": TIME,
    "date": {"type": "string", "format": "date"},
}


# --- the pod template, from the client's models ---------------------------------------------------------------


def model_schema(model: str) -> Schema:
    """The structural schema of a ``kubernetes.client`` model, e.g. ``"V1PodTemplateSpec"`` (a fresh copy)."""
    return _copy(_model_schema(model, ()))


def pod_template_schema() -> Schema:
    """``core/v1 PodTemplateSpec``: ``metadata`` kept whole, ``spec`` fully typed."""
    return model_schema("V1PodTemplateSpec")


def _model_schema(model: str, above: tuple[str, ...]) -> Schema:
    if model in _OPAQUE_MODELS or model in above:
        return dict(ANY_OBJECT)
    cls = getattr(k8s, model)
    properties: dict[str, Schema] = {}
    required: list[str] = []
    for attribute, type_name in cls.openapi_types.items():
        json_name = cls.attribute_map[attribute]
        if (model, attribute) in _QUANTITY_FIELDS:
            properties[json_name] = _wrap(type_name, QUANTITY)
        elif (model, attribute) in _INT_OR_STRING_FIELDS:
            properties[json_name] = dict(INT_OR_STRING)
        else:
            properties[json_name] = _type_schema(type_name, (*above, model))
        if _required(cls, attribute):
            required.append(json_name)
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _wrap(type_name: str, leaf: Schema) -> Schema:
    """``leaf`` in the shape of ``type_name`` (a map or list of it, or itself)."""
    if match := _DICT.match(type_name):
        return {"type": "object", "additionalProperties": _wrap(match.group(1), leaf)}
    if match := _LIST.match(type_name):
        return {"type": "array", "items": _wrap(match.group(1), leaf)}
    return dict(leaf)


def _type_schema(type_name: str, above: tuple[str, ...]) -> Schema:
    if match := _LIST.match(type_name):
        return {"type": "array", "items": _type_schema(match.group(1), above)}
    if match := _DICT.match(type_name):
        return {"type": "object", "additionalProperties": _type_schema(match.group(1), above)}
    if type_name in _PRIMITIVES:
        return dict(_PRIMITIVES[type_name])
    if type_name == "object":
        return dict(ANY)
    if hasattr(k8s, type_name):
        return _model_schema(type_name, above)
    raise ValueError(f"unknown type {type_name!r} in the kubernetes client's models")


@cache
def _validating_configuration() -> k8s.Configuration:
    configuration = k8s.Configuration()
    configuration.client_side_validation = True
    return configuration


def _required(cls: type, attribute: str) -> bool:
    """Whether the model's setter refuses ``None`` (the client's encoding of a required field)."""
    instance: Any = object.__new__(cls)
    instance.local_vars_configuration = _validating_configuration()
    try:
        setattr(instance, attribute, None)
    except ValueError:
        return True
    return False


# --- the kubeflow.org/v1 types, written from the Go API -------------------------------------------------------


def _object(properties: Mapping[str, Schema], *, required: tuple[str, ...] = (), description: str = "") -> Schema:
    schema: Schema = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    if description:
        schema["description"] = description
    return schema


def _enum(*values: str) -> Schema:
    return {"type": "string", "enum": list(values)}


def _array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def _map(values: Schema) -> Schema:
    return {"type": "object", "additionalProperties": values}


CLEAN_POD_POLICY = _enum("All", "Running", "None")
RESTART_POLICY = _enum("Always", "OnFailure", "Never", "ExitCode")
MANAGED_BY = _enum("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")
#: ``autoscaling/v2 MetricSpec`` entries of the elastic policies: kept as sent.
METRICS = _array(dict(ANY_OBJECT))


def replica_spec_schema() -> Schema:
    """``ReplicaSpec``: replicas, the pod template, the restart policy."""
    return _object({"replicas": INT32, "template": pod_template_schema(), "restartPolicy": RESTART_POLICY})


def run_policy_schema() -> Schema:
    """``RunPolicy``, with ``schedulingPolicy``; ``suspend`` defaults to false."""
    scheduling = _object(
        {
            "minAvailable": INT32,
            "queue": STRING,
            "minResources": _map(dict(QUANTITY)),
            "priorityClass": STRING,
            "scheduleTimeoutSeconds": INT32,
        }
    )
    return _object(
        {
            "cleanPodPolicy": CLEAN_POD_POLICY,
            "ttlSecondsAfterFinished": INT32,
            "activeDeadlineSeconds": INT64,
            "backoffLimit": INT32,
            "schedulingPolicy": scheduling,
            "suspend": {"type": "boolean", "default": False},
            "managedBy": MANAGED_BY,
        }
    )


def _pytorch_fields() -> dict[str, Schema]:
    elastic = _object(
        {
            "minReplicas": INT32,
            "maxReplicas": INT32,
            "rdzvBackend": STRING,
            "rdzvPort": INT32,
            "rdzvHost": STRING,
            "rdzvId": STRING,
            "rdzvConf": _array(_object({"key": STRING, "value": STRING})),
            "standalone": BOOLEAN,
            "nProcPerNode": INT32,
            "maxRestarts": INT32,
            "metrics": METRICS,
        }
    )
    return {"elasticPolicy": elastic, "nprocPerNode": STRING}


def _tf_fields() -> dict[str, Schema]:
    return {"successPolicy": STRING, "enableDynamicWorker": BOOLEAN}


def _mpi_fields() -> dict[str, Schema]:
    # cleanPodPolicy at the spec level is deprecated in favour of runPolicy.cleanPodPolicy, but still in v1.
    return {"slotsPerWorker": INT32, "cleanPodPolicy": CLEAN_POD_POLICY, "mainContainer": STRING}


def _paddle_fields() -> dict[str, Schema]:
    elastic = _object({"minReplicas": INT32, "maxReplicas": INT32, "maxRestarts": INT32, "metrics": METRICS})
    return {"elasticPolicy": elastic}


#: Each kind's own ``spec`` fields besides ``runPolicy`` and its replica specs.
_KIND_FIELDS = {
    "PyTorchJob": _pytorch_fields,
    "TFJob": _tf_fields,
    "MPIJob": _mpi_fields,
    "PaddleJob": _paddle_fields,
    "XGBoostJob": dict,
    "JAXJob": dict,
}


def spec_schema(kind: str, replica_specs_key: str) -> Schema:
    """``<Kind>Spec``: ``runPolicy``, the (required) replica-spec map, the kind's own fields."""
    try:
        own = _KIND_FIELDS[kind]()
    except KeyError:
        raise ValueError(f"no schema for kind {kind!r}") from None
    return _object(
        {"runPolicy": run_policy_schema(), replica_specs_key: _map(replica_spec_schema()), **own},
        required=(replica_specs_key,),
    )


def status_schema() -> Schema:
    """``JobStatus``: conditions, per-replica-type counts and selectors, the job's times."""
    condition = _object(
        {
            "type": STRING,
            "status": STRING,
            "reason": STRING,
            "message": STRING,
            "lastUpdateTime": TIME,
            "lastTransitionTime": TIME,
        },
        required=("type", "status"),
    )
    replica_status = _object(
        {
            "active": INT32,
            "succeeded": INT32,
            "failed": INT32,
            "labelSelector": model_schema("V1LabelSelector"),
            "selector": STRING,
        }
    )
    return _object(
        {
            "conditions": _array(condition),
            "replicaStatuses": _map(replica_status),
            "startTime": TIME,
            "completionTime": TIME,
            "lastReconcileTime": TIME,
        }
    )


def job_schema(kind: str, replica_specs_key: str) -> Schema:
    """The ``openAPIV3Schema`` of one job kind."""
    return _object(
        {
            "apiVersion": STRING,
            "kind": STRING,
            "metadata": {"type": "object"},
            "spec": spec_schema(kind, replica_specs_key),
            "status": status_schema(),
        },
        description=f"{kind} is a kubeflow.org/v1 training job.",
    )


# --- checks ---------------------------------------------------------------------------------------------------


def walk(schema: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every node of ``schema`` with its path (``.properties.x``, ``.items``, ``.additionalProperties``)."""
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        yield from walk(child, f"{path}.properties.{name}")
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], f"{path}.items")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from walk(schema["additionalProperties"], f"{path}.additionalProperties")
    for keyword in ("anyOf", "allOf", "oneOf"):
        for index, child in enumerate(schema.get(keyword) or []):
            yield from walk(child, f"{path}.{keyword}[{index}]")


def structural_problems(schema: Schema) -> list[str]:
    """What makes ``schema`` not structural (as the apiserver judges ``v1`` CRD schemas), or ``[]``.

    Checked: every node outside ``anyOf``/``allOf``/``oneOf`` has a ``type`` unless it is int-or-string or keeps
    unknown fields; no ``$ref``; ``properties`` and ``additionalProperties`` never both on one node; an
    int-or-string node has no ``type``; ``items`` is one schema.
    """
    problems = []
    for path, node in walk(schema):
        where = path or "<root>"
        logical = any(f".{k}[" in path for k in ("anyOf", "allOf", "oneOf"))
        if "$ref" in node:
            problems.append(f"{where}: $ref")
        int_or_string = node.get("x-kubernetes-int-or-string") is True
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        if not logical and "type" not in node and not (int_or_string or preserve):
            problems.append(f"{where}: no type")
        if int_or_string and "type" in node:
            problems.append(f"{where}: int-or-string with a type")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{where}: both properties and additionalProperties")
        if "items" in node and not isinstance(node["items"], dict):
            problems.append(f"{where}: items is not one schema")
        if node.get("type") == "array" and "items" not in node:
            problems.append(f"{where}: array without items")
    return problems


def _copy(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _copy(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_copy(v) for v in schema]
    return schema
