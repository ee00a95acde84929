"""Resource requirements as the trainer reads them: the torch plugin's count of CPUs and GPUs per node
(``pkg/runtime/framework/plugins/torch/torch.go``, ``pkg/runtime/runtime.go``) and the merge of
``trainer.resourcesPerNode`` into the runtime's ``node`` container (``pkg/util/trainingruntime``).
"""

from __future__ import annotations

import copy
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["cpus_per_node", "gpus_per_node", "merge_resources", "quantity_value"]

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([a-zA-Z]*|[eE][+-]?[0-9]+)$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def quantity_value(quantity: Any) -> int:
    """A Kubernetes quantity rounded up to an integer, as ``resource.Quantity.Value()`` returns it.

    :param quantity: e.g. ``"2"``, ``"500m"`` (-> 1), ``"1.5"`` (-> 2), ``"4Gi"``, ``"1e3"``, or a number
        (the API stores an unquoted YAML number as one).
    :raises ValueError: not a quantity.
    """
    if isinstance(quantity, bool):
        raise ValueError(f"not a quantity: {quantity!r}")
    if isinstance(quantity, (int, float)):
        return math.ceil(quantity)
    match = _QUANTITY.match(str(quantity).strip())
    if not match:
        raise ValueError(f"not a quantity: {quantity!r}")
    number, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation as exc:
        raise ValueError(f"not a quantity: {quantity!r}") from exc
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value = value.scaleb(_DECIMAL[suffix])
    elif suffix[:1] in ("e", "E"):
        value = value.scaleb(int(suffix[1:]))
    else:
        raise ValueError(f"not a quantity: {quantity!r}")
    return math.ceil(value)


def _value_or_zero(quantity: Any) -> int:
    try:
        return quantity_value(quantity)
    except ValueError:
        return 0


def cpus_per_node(resources: dict[str, Any] | None) -> int:
    """CPUs of one node: the ``cpu`` request rounded up, or the limit when no (or a zero) request is set; 0 when
    neither is set (the torch plugin then uses 1).

    :param resources: a container's ``resources`` (``requests``/``limits`` maps), or ``None``.
    """
    resources = resources or {}
    request = (resources.get("requests") or {}).get("cpu")
    if request is None or _value_or_zero(request) == 0:
        limit = (resources.get("limits") or {}).get("cpu")
        return 0 if limit is None else _value_or_zero(limit)
    return _value_or_zero(request)


def gpus_per_node(resources: dict[str, Any] | None) -> int:
    """GPUs of one node: the first resource whose name contains ``gpu`` (any case) among the requests, else among
    the limits; 0 when none.

    :param resources: a container's ``resources``, or ``None``.
    """
    resources = resources or {}

    def first_gpu(resource_list: dict[str, Any] | None) -> int:
        for name, quantity in (resource_list or {}).items():
            if "gpu" in name.lower():
                return _value_or_zero(quantity)
        return 0

    count = first_gpu(resources.get("requests"))
    if count == 0:
        count = first_gpu(resources.get("limits"))
    return count


def merge_resources(base: dict[str, Any] | None, override: dict[str, Any]) -> dict[str, Any]:
    """``override`` merged into ``base`` key by key (limits and requests; claims by name), as upstream's strategic
    merge of ``resourcesPerNode`` into the runtime's ``node`` container does.

    :param base: the runtime container's ``resources`` (or ``None``).
    :param override: ``trainer.resourcesPerNode``.
    """
    merged = copy.deepcopy(base or {})
    for key in ("limits", "requests"):
        if override.get(key):
            merged[key] = {**(merged.get(key) or {}), **copy.deepcopy(override[key])}
    if override.get("claims"):
        claims = list(merged.get("claims") or [])
        for claim in override["claims"]:
            names = [c.get("name") for c in claims]
            if claim.get("name") in names:
                claims[names.index(claim.get("name"))] = copy.deepcopy(claim)
            else:
                claims.append(copy.deepcopy(claim))
        merged["claims"] = claims
    return merged
