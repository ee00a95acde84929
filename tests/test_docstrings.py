"""Public docstrings document every parameter with its own Sphinx ``:param name:`` field.

Checked for every public function, public method and public class of the provider package (a class's
constructor parameters are documented on the class, as Airflow operators do: an explicit ``__init__``, a
dataclass's fields, a pydantic model's fields). Each parameter other than ``self``/``cls``/``*args``/``**kwargs``
has exactly one ``:param name:`` field, no field names something that is not a parameter, and a field names one
parameter (``:param a, b:`` is split).
"""

from __future__ import annotations

import enum
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

import airflow_trainjob

PACKAGE = airflow_trainjob.__name__
PACKAGE_DIR = Path(airflow_trainjob.__file__).parent

#: Overrides of upstream (Airflow) methods whose parameters Airflow documents on the base class: method -> where.
#: Exempt only where the method overrides one defined by a base class outside this package; every entry is in use
#: (an override that takes parameters), see test_every_exemption_is_in_use.
UPSTREAM_DOCUMENTED = {
    "execute": "BaseOperator.execute(context): the task context",
    "render_template_fields": "AbstractOperator.render_template_fields(context, jinja_env)",
    "poke": "BaseSensorOperator.poke(context)",
    "get_link": "BaseOperatorLink.get_link(operator, *, ti_key)",
    "open_shared_stream": "BaseEventTrigger.open_shared_stream(kwargs): one trigger's serialized kwargs",
    "filter_shared_stream": "BaseEventTrigger.filter_shared_stream(shared_stream): the group's raw events",
    "submit_job": "ResumableJobMixin.submit_job(context)",
    "get_job_status": "ResumableJobMixin.get_job_status(external_id, context)",
    "is_job_active": "ResumableJobMixin.is_job_active(status)",
    "is_job_succeeded": "ResumableJobMixin.is_job_succeeded(status)",
    "poll_until_complete": "ResumableJobMixin.poll_until_complete(external_id, context)",
    "get_job_result": "ResumableJobMixin.get_job_result(external_id, context)",
}

_FIELD = re.compile(r"^\s*:param\s+([^:]+):", re.MULTILINE)


def module_names() -> list[str]:
    """Every module of the package, found on disk (a pending module is never imported)."""
    names = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        names.append(name)
    return names


def documented(doc: str | None) -> tuple[list[str], list[str]]:
    """The parameter names of a docstring's ``:param`` fields (in order, repeats kept), and the fields that name
    several parameters at once."""
    names, combined = [], []
    for field in _FIELD.findall(inspect.cleandoc(doc or "")):
        if "," in field:
            combined.append(field.strip())
        else:
            names.append(field.split()[-1])  # ``:param int x:`` names x
    return names, combined


def parameters(signature: inspect.Signature, *, bound: bool) -> list[str]:
    """The parameters a docstring documents: not the bound first one, not ``*args``/``**kwargs``."""
    params = list(signature.parameters.values())
    if bound and params:
        params = params[1:]
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p.name for p in params if p.kind not in variadic]


def problems_of(where: str, doc: str | None, params: list[str], passed_on: frozenset[str] = frozenset()) -> list[str]:
    """``where: missing :param x:`` etc. for one callable whose docstring is ``doc``.

    :param passed_on: names a field may document besides ``params``: keyword arguments an upstream base class's
        constructor takes, which the documented constructor passes on through ``**kwargs``.
    """
    if not params and not _FIELD.search(doc or ""):
        return []
    names, combined = documented(doc)
    out = [f"{where}: one field per parameter: split ':param {field}:'" for field in combined]
    out += [f"{where}: missing :param {p}:" for p in params if p not in names]
    out += [f"{where}: :param {n}: given {names.count(n)} times" for n in dict.fromkeys(names) if names.count(n) > 1]
    out += [
        f"{where}: :param {n}: is not a parameter"
        for n in dict.fromkeys(names)
        if n not in params and n not in passed_on
    ]
    return out


def _passed_on(cls: type) -> frozenset[str]:
    """The keyword arguments of upstream base classes' constructors, when ``cls.__init__`` takes ``**kwargs``."""
    init = vars(cls).get("__init__")
    if init is None or not any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(init).parameters.values()
    ):
        return frozenset()
    return frozenset(
        name
        for base in cls.__mro__[1:]
        if "__init__" in vars(base) and _upstream(base)
        for name in parameters(inspect.signature(vars(base)["__init__"]), bound=True)
    )


def _upstream(cls: type) -> bool:
    """Defined outside this package (``airflow_trainjob_local`` is outside too)."""
    return not (cls.__module__ == PACKAGE or cls.__module__.startswith(PACKAGE + "."))


def _overrides_upstream(cls: type, name: str) -> bool:
    return any(name in vars(base) and _upstream(base) for base in cls.__mro__[1:])


def _constructor_parameters(cls: type) -> list[str] | None:
    """The parameters of the constructor ``cls`` itself defines (None: inherited, or none to document)."""
    if issubclass(cls, enum.Enum):
        return None
    if issubclass(cls, BaseModel):  # by field name, as documented (the signature shows the camelCase aliases)
        return list(cls.model_fields) or None
    if "__init__" in vars(cls):  # explicit, or a dataclass's generated one
        return parameters(inspect.signature(cls.__init__), bound=True)
    return None


def _public(name: str) -> bool:
    return not name.startswith("_")


def _methods(cls: type) -> Iterator[tuple[str, Callable[..., Any], bool]]:
    """``(name, function, bound)`` of each public method ``cls`` defines (properties left out)."""
    for name, attr in vars(cls).items():
        if not _public(name) or isinstance(attr, property):
            continue
        if isinstance(attr, staticmethod | classmethod):
            yield name, attr.__func__, isinstance(attr, classmethod)
        elif inspect.isfunction(attr):
            yield name, attr, True


def _exempt(cls: type, name: str) -> bool:
    return name in UPSTREAM_DOCUMENTED and _overrides_upstream(cls, name)


def class_problems(module: str, cls: type) -> Iterator[str]:
    """The problems of a class's constructor and of its public methods."""
    init = _constructor_parameters(cls)
    if init is not None:
        yield from problems_of(f"{module}:{cls.__qualname__}", cls.__doc__, init, _passed_on(cls))
    for name, function, bound in _methods(cls):
        if not _exempt(cls, name):
            where = f"{module}:{cls.__qualname__}.{name}"
            yield from problems_of(where, function.__doc__, parameters(inspect.signature(function), bound=bound))


def package_classes() -> Iterator[type]:
    """Every public class the checked modules define."""
    for module_name in module_names():
        for name, obj in vars(importlib.import_module(module_name)).items():
            if _public(name) and inspect.isclass(obj) and obj.__module__ == module_name:
                yield obj


def module_problems(module_name: str) -> Iterator[str]:
    """The problems of a module's public functions and classes (those it defines, not those it imports)."""
    module = importlib.import_module(module_name)
    for name, obj in vars(module).items():
        if not _public(name) or getattr(obj, "__module__", None) != module_name:
            continue  # private, or imported from elsewhere (checked where it is defined)
        if inspect.isclass(obj):
            yield from class_problems(module_name, obj)
        elif inspect.isfunction(obj):
            yield from problems_of(
                f"{module_name}:{obj.__qualname__}", obj.__doc__, parameters(inspect.signature(obj), bound=False)
            )


def all_problems() -> list[str]:
    """The problems of every checked module, one ``module:qualname: what`` line each."""
    return [problem for name in module_names() for problem in module_problems(name)]


def test_every_public_parameter_has_one_param_field():
    problems = all_problems()
    assert not problems, f"{len(problems)} docstring problems:\n" + "\n".join(problems)


def test_the_walk_covers_the_whole_package():
    names = module_names()
    assert f"{PACKAGE}.operators.training_job" in names and f"{PACKAGE}.models.common" in names
    assert f"{PACKAGE}.ui.app" in names and f"{PACKAGE}.domain.records" in names


def test_every_exemption_is_in_use():
    used = {
        name
        for cls in package_classes()
        for name, function, bound in _methods(cls)
        if _exempt(cls, name) and parameters(inspect.signature(function), bound=bound)
    }
    assert used == set(UPSTREAM_DOCUMENTED), f"not needed: {sorted(set(UPSTREAM_DOCUMENTED) - used)}"


# ---- the checker itself -------------------------------------------------------------------------------------


def _sample(a: int, b: str, *args: Any, c: float = 1.0, **kwargs: Any) -> None:
    """Sample.

    :param a: documented.
    :param b, c: two at once.
    :param d: not a parameter.
    :param a: again.
    """


def test_the_checker_reports_missing_combined_repeated_and_unknown_fields():
    params = parameters(inspect.signature(_sample), bound=False)
    assert params == ["a", "b", "c"]
    assert problems_of("m:_sample", _sample.__doc__, params) == [
        "m:_sample: one field per parameter: split ':param b, c:'",
        "m:_sample: missing :param b:",
        "m:_sample: missing :param c:",
        "m:_sample: :param a: given 2 times",
        "m:_sample: :param d: is not a parameter",
    ]
    assert problems_of("m:f", ":param int x: typed.", ["x"]) == []


class _Base:
    def __init__(self, retries: int = 0) -> None:
        self.retries = retries

    def execute(self, context: Any) -> None:
        """Documented here."""


class _Sub(_Base):
    """A class.

    :param size: bytes.
    :param retries: passed on to the base class.
    """

    def __init__(self, size: int, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.size, self.name = size, name

    def execute(self, context: Any) -> None:  # overrides _Base's: exempt only when _Base is upstream
        pass

    def poke(self, timeout: float) -> None:  # named like an exempt method, overrides nothing
        """Pokes."""

    @classmethod
    def build(cls, text: str) -> None:
        """Builds.

        :param text: the text.
        """


@pytest.mark.parametrize("upstream", [True, False])
def test_the_checker_exempts_only_overrides_of_upstream_methods(upstream):
    # _Base as if upstream (outside this package) or this package's: only an upstream execute is exempt, and only
    # an upstream constructor's keyword argument may be documented as passed on; poke is named like an exempt
    # method but overrides nothing, so it is checked either way.
    _Base.__module__ = "upstream" if upstream else f"{PACKAGE}.fake"
    try:
        found = sorted(class_problems("m", _Sub))
    finally:
        _Base.__module__ = __name__
    expected = ["m:_Sub.poke: missing :param timeout:", "m:_Sub: missing :param name:"]
    if not upstream:
        expected += ["m:_Sub.execute: missing :param context:", "m:_Sub: :param retries: is not a parameter"]
    assert found == sorted(expected)


@dataclass(frozen=True)
class _Point:
    """A point.

    :param x: metres.
    """

    x: float
    y: float


class _Model(BaseModel):
    """A model whose fields have camelCase aliases.

    :param min_replicas: ``minReplicas``.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    min_replicas: int = 1
    max_replicas: int = 1


def test_the_checker_reads_dataclass_and_model_fields_as_constructor_parameters():
    assert list(class_problems("m", _Point)) == ["m:_Point: missing :param y:"]
    assert list(class_problems("m", _Model)) == ["m:_Model: missing :param max_replicas:"]  # the field, not its alias
