"""Pod templates: accepted as given, normalised to the API's dict form, checked for what a job needs.

PodSpec is not re-modelled here (the official client already does that): a template is either a
``kubernetes.client.V1PodTemplateSpec`` or a dict in the API's camelCase form, and comes out as a
plain JSON-safe dict. Only what no job can run without is checked.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubernetes.client import ApiClient, V1PodTemplateSpec

_TEMPLATE_KEYS = ("metadata", "spec")


def normalize_pod_template(value: Any) -> dict[str, Any]:
    """Return ``value`` as a plain camelCase dict after checking its containers.

    :param value: a ``V1PodTemplateSpec`` or a mapping ``{"metadata": ..., "spec": {...}}``.
    :raises ValueError: when it is neither, has keys other than ``metadata``/``spec``, or its
        ``spec.containers`` is missing, empty, or has a container without a ``name`` or ``image``,
        or two containers with one name.
    """
    template = _as_template_dict(value)
    spec = template.get("spec")
    if not isinstance(spec, dict):
        raise ValueError("'spec' must be a pod spec (a dict with 'containers')")
    _check_containers(spec.get("containers"))
    _quantities_of_spec_as_text(spec)
    return template


def _as_template_dict(value: Any) -> dict[str, Any]:
    """``value`` sanitised to the API's JSON form, once it is a template: a dict of ``metadata``/``spec`` only."""
    if isinstance(value, V1PodTemplateSpec):
        value = ApiClient().sanitize_for_serialization(value)
    if not isinstance(value, dict):
        raise ValueError(
            f"must be a pod template (a dict with 'spec', or a V1PodTemplateSpec), got {type(value).__name__}"
        )
    unknown = sorted(set(value) - set(_TEMPLATE_KEYS))
    if unknown:
        raise ValueError(f"unknown key(s) {unknown}; a pod template has only {list(_TEMPLATE_KEYS)}")
    template: dict[str, Any] = ApiClient().sanitize_for_serialization(value)
    return template


def _check_containers(containers: Any) -> None:
    """Refuse ``spec.containers`` unless it lists containers, each with a unique ``name`` and an ``image``."""
    if not isinstance(containers, list) or not containers:
        raise ValueError("'spec.containers' must list at least one container")
    seen: set[str] = set()
    for index, container in enumerate(containers):
        where = f"spec.containers[{index}]"
        if not isinstance(container, dict):
            raise ValueError(f"'{where}' must be a container (a dict), got {type(container).__name__}")
        name = container.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"'{where}.name' is required (a non-empty string)")
        if name in seen:
            raise ValueError(f"'{where}.name' {name!r} is used by two containers; names must be unique")
        seen.add(name)
        image = container.get("image")
        if not isinstance(image, str) or not image:
            raise ValueError(f"'{where}.image' is required (a non-empty string) in container {name!r}")


def _quantities_of_spec_as_text(spec: dict[str, Any]) -> None:
    """Every container's ``resources`` limits and requests, and the pod's ``overhead``, with float quantities as
    text (:func:`quantity_as_text`), in place."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            for amounts in ((resources or {}).get("limits"), (resources or {}).get("requests")):
                quantities_as_text(amounts)
    quantities_as_text(spec.get("overhead"))


def quantity_as_text(value: Any) -> Any:
    """A float quantity (``cpu: 0.5`` from YAML or Python) as the string ``"0.5"``; anything else as it is.

    A job's CRD types quantities as integer-or-string, so a real API server refuses a JSON float with 422
    (a Pod's own API would parse it): the string is what the user meant, and what every cluster takes.

    :param value: one quantity as given: a float, int or string (``"500m"``).
    """
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        text = format(Decimal(repr(value)), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    return value


def quantities_as_text(amounts: Any) -> None:
    """Turn the float quantities of a resource map (``limits``, ``requests``, ``minResources``) into text, in place.

    :param amounts: resource name -> quantity (``{"cpu": 0.5}``); anything but a dict is left alone.
    """
    if isinstance(amounts, dict):
        for resource, value in amounts.items():
            amounts[resource] = quantity_as_text(value)
