"""The package's structure, held by a ratchet (issue 25): no import cycle, no function over 60 lines but today's
listed ones (which may only shrink), no more modules at the package's root, and the layers kept apart (pure modules
import no Kubernetes or HTTP client; outside triggers/, only the trigger class is taken from the trigger's module).

Pure ``ast``: no cluster, nothing of the provider imported. Every ``import``/``from`` statement counts, also inside
functions (lazy) and under ``if TYPE_CHECKING``; relative imports are resolved, and ``from pkg import sub`` is an
import of the submodule ``pkg.sub`` when ``sub`` is one. When a step of the redesign shortens a function or removes
a module, it tightens the lists below in the same commit (the failures say what to write).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

PACKAGE = "airflow_trainjob"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / PACKAGE

#: Lines a function may take (``end_lineno - lineno + 1``: signature, docstring and body).
MAX_FUNCTION_LINES = 60
#: Today's functions over :data:`MAX_FUNCTION_LINES`, ``module:qualified name`` -> their length now, as a ceiling.
#: One may only shrink: when it does, write its new length here; at 60 lines or fewer, remove it.
LONG_FUNCTIONS: dict[str, int] = {}
#: ``.py`` files directly in ``airflow_trainjob/`` (``__init__.py`` included), at most: the redesign moves them into
#: subpackages; when one goes, lower this to the new count.
ROOT_MODULES = 3

#: Pure modules: what a state means, which deadline passed, what to say. Importing one (with what it imports at
#: module level, transitively) loads no Kubernetes or HTTP client: the trigger's module and the UI import them on
#: an event loop, and their unit tests need no cluster. (``models.manifest`` is pure too, but reaches the clients
#: through ``models.job`` -> ``kubernetes.client``: not listed yet.)
#: Every module of ``domain/`` is one (:func:`domain_modules`); these are the others.
PURE_MODULES = (
    "airflow_trainjob.constants",
    "airflow_trainjob.families",
    "airflow_trainjob.families.kubeflow_v1",
    "airflow_trainjob.families.trainer_v2",
    "airflow_trainjob.families.trainer_v2_status",
    "airflow_trainjob.hooks.addressing",
    "airflow_trainjob.triggers.events",
    "airflow_trainjob.watching.job_cache",
    "airflow_trainjob.watching.list_watch",
    "airflow_trainjob.triggers.log_pacing",
    "airflow_trainjob.watching.stream_source",
    "airflow_trainjob.operators.try_state",
)
#: What ``domain/`` may import of the provider: itself and the bottom layer.
DOMAIN_MAY_IMPORT = ("airflow_trainjob.domain", "airflow_trainjob.constants", "airflow_trainjob.exceptions")
#: The clients a pure module must not load.
CLIENT_LIBRARIES = ("kubernetes", "kubernetes_asyncio", "aiohttp", "urllib3")

#: The trigger's module, and the modules outside ``triggers/`` that may import from it, with the names: the operator's
#: run and the sensor take the trigger class, to build the trigger they defer to. The event's shape is
#: :mod:`airflow_trainjob.triggers.events`'s, what the resumed task writes :mod:`airflow_trainjob.domain.lead_log`'s.
TRIGGER_MODULE = "airflow_trainjob.triggers.training_job"
TRIGGER_NAMES_ALLOWED = {
    "airflow_trainjob.operators.run": {"TrainingJobTrigger"},  # (the return type of trigger())
    "airflow_trainjob.operators.resume": {"TrainingJobTrigger"},  # (trigger_for builds the try's trigger)
    "airflow_trainjob.sensors.training_job": {"TrainingJobTrigger"},
}

#: The drivers: they read a job's API family through the port (``families.family_of``), never the ``kubeflow.org/v1``
#: kind table (``constants.JOB_KINDS``, ``constants.JobKind``) nor an adapter's module: a second family's kinds are in
#: neither. (The table stays with ``constants``, ``models/``, ``families/kubeflow_v1.py`` and the domain's v1
#: specifics, which the adapter calls.)
DRIVER_PACKAGES = ("operators", "watching", "triggers", "sensors", "links", "ui", "hooks")
#: What a driver must not take of ``constants``.
KIND_TABLE_NAMES = frozenset({"JOB_KINDS", "JobKind"})
#: The adapters' modules, which only ``families/`` imports.
ADAPTER_MODULES = (
    "airflow_trainjob.families.kubeflow_v1",
    "airflow_trainjob.families.trainer_v2",
    "airflow_trainjob.families.trainer_v2_status",
)


@dataclass(frozen=True)
class Import:
    """One edge: ``importer`` imports ``target`` (a module, or a name outside the package) at ``line``.

    :param importer: the importing module's dotted name.
    :param target: the imported module's dotted name (``pkg.sub`` for ``from pkg import sub``).
    :param names: for ``from target import a, b``: ``("a", "b")``; else ().
    :param line: the statement's line in the importer's file.
    :param when: ``eager`` (at import time), ``lazy`` (inside a function) or ``type_checking``.
    """

    importer: str
    target: str
    names: tuple[str, ...]
    line: int
    when: str

    def where(self) -> str:
        return f"{module_path(self.importer)}:{self.line} ({self.when})"


@cache
def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file (a package's is its ``__init__.py``)."""
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def module_path(name: str) -> str:
    return str(modules()[name].relative_to(PACKAGE_DIR.parent))


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith("TYPE_CHECKING")


def _statements(node: ast.AST, when: str = "eager") -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement under ``node``, with when it runs."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, when
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.body:
                yield from _statements(ast.Module(body=[statement], type_ignores=[]), "type_checking")
            for statement in child.orelse:
                yield from _statements(ast.Module(body=[statement], type_ignores=[]), when)
        else:
            inner = "lazy" if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else when
            yield from _statements(child, inner)


def _base(importer: str, statement: ast.ImportFrom) -> str:
    """The absolute module a ``from`` statement imports from (relative ones resolved)."""
    if not statement.level:
        return statement.module or ""
    package = importer if modules()[importer].name == "__init__.py" else importer.rpartition(".")[0]
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - (statement.level - 1)])
    return f"{base}.{statement.module}" if statement.module else base


@cache
def parsed(module: str) -> ast.Module:
    path = modules()[module]
    return ast.parse(path.read_text(), str(path))


@cache
def imports() -> tuple[Import, ...]:
    """Every import statement of every module of the package, one edge per imported module."""
    found = []
    for importer in modules():
        for statement, when in _statements(parsed(importer)):
            if isinstance(statement, ast.Import):
                found += [Import(importer, a.name, (), statement.lineno, when) for a in statement.names]
                continue
            base = _base(importer, statement)
            names = tuple(a.name for a in statement.names)
            submodules = [n for n in names if f"{base}.{n}" in modules()]
            found += [Import(importer, f"{base}.{n}", (), statement.lineno, when) for n in submodules]
            rest = tuple(n for n in names if n not in submodules)
            if rest:
                found.append(Import(importer, base, rest, statement.lineno, when))
    return tuple(found)


def internal_graph() -> dict[str, list[Import]]:
    """Module -> its imports of the package's own modules (an import of ``a.b.c`` as one of ``a.b.c``)."""
    graph: dict[str, list[Import]] = {name: [] for name in modules()}
    for edge in imports():
        if edge.target in modules() and edge.target != edge.importer:
            graph[edge.importer].append(edge)
    return graph


def find_cycle(graph: dict[str, list[Import]]) -> list[Import] | None:
    """One import cycle, as its edges in order, or None (a depth-first search for an edge back to the path)."""
    state: dict[str, str] = {}  # "open": on the current path; "done": no cycle through it
    path: list[Import] = []

    def visit(name: str) -> list[Import] | None:
        state[name] = "open"
        for edge in graph[name]:
            if state.get(edge.target) == "open":
                start = next((i for i, e in enumerate(path) if e.importer == edge.target), len(path))
                return [*path[start:], edge]
            if edge.target not in state:
                path.append(edge)
                if (cycle := visit(edge.target)) is not None:
                    return cycle
                path.pop()
        state[name] = "done"
        return None

    for name in graph:
        if name not in state and (cycle := visit(name)) is not None:
            return cycle
    return None


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """Each function and method under ``node`` (nested ones too), by qualified name, with its length in lines."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            yield name, (child.end_lineno or child.lineno) - child.lineno + 1
            yield from _functions(child, f"{name}.")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def function_lengths() -> dict[str, int]:
    """``module:qualified name`` -> lines, for every function of the package."""
    return {f"{module}:{name}": lines for module in modules() for name, lines in _functions(parsed(module))}


def eager_closure(module: str) -> dict[str, list[str]]:
    """What importing ``module`` imports, at module level and transitively: imported name -> the chain of modules
    that leads to it (the package's own modules are followed; ``TYPE_CHECKING`` and function-level imports are not)."""
    chains: dict[str, list[str]] = {}
    todo: list[tuple[str, list[str]]] = [(module, [])]
    while todo:
        target, chain = todo.pop()
        parts = target.split(".")
        # Importing the package's a.b.c runs a and a.b first.
        own = target.startswith(f"{PACKAGE}.") or target == PACKAGE
        for name in [".".join(parts[: i + 1]) for i in range(len(parts))] if own else [target]:
            if name in chains:
                continue
            chains[name] = [*chain, name]
            if name in modules():
                todo += [(e.target, chains[name]) for e in imports() if e.importer == name and e.when == "eager"]
    return chains


# --- the assertions ------------------------------------------------------------------------------------------------


def test_the_walk_sees_every_module_and_the_kinds_of_import():
    """The checks below are only as good as the walk: it finds the package's modules and all three kinds of edge."""
    assert len(modules()) > 40 and f"{PACKAGE}.operators.run" in modules()
    kinds = {e.when for e in imports() if e.target in modules()}
    assert kinds == {"eager", "lazy", "type_checking"}, kinds


def test_no_import_cycle_among_the_providers_modules():
    cycle = find_cycle(internal_graph())
    assert cycle is None, (
        "Import cycle: "
        + " -> ".join([cycle[0].importer, *(e.target for e in cycle)])
        + " ("
        + "; ".join(f"{e.where()} imports {e.target}" for e in cycle)
        + "). Lazy and TYPE_CHECKING imports count too. Break it: move what both sides need into a lower module "
        "that imports neither (as ui/urls.py did for ui/app.py and ui/plugin.py), or pass it in as a parameter."
    )


def test_no_function_is_longer_than_60_lines_but_the_listed_ones_which_only_shrink():
    lengths = function_lengths()
    problems = []
    for name, lines in sorted(lengths.items()):
        ceiling = LONG_FUNCTIONS.get(name)
        if ceiling is None and lines > MAX_FUNCTION_LINES:
            problems.append(
                f"{name} is {lines} lines (at most {MAX_FUNCTION_LINES}): split it into smaller single-purpose "
                "functions; do not add it to LONG_FUNCTIONS."
            )
        elif ceiling is not None and lines > ceiling:
            problems.append(
                f"{name} grew to {lines} lines (its ceiling in LONG_FUNCTIONS is {ceiling}): split it; a listed "
                "function may only shrink."
            )
        elif ceiling is not None and lines <= MAX_FUNCTION_LINES:
            problems.append(
                f"{name} is {lines} lines now: remove it from LONG_FUNCTIONS in tests/test_architecture.py."
            )
        elif ceiling is not None and lines < ceiling:
            problems.append(f"{name} shrank to {lines} lines: set its ceiling in LONG_FUNCTIONS to {lines}.")
    problems += [
        f"{name} is in LONG_FUNCTIONS but no such function exists: remove it (or list it under its new name, with "
        "its length, only if it is still over 60 lines)."
        for name in LONG_FUNCTIONS
        if name not in lengths
    ]
    assert not problems, "\n".join(problems)


def test_the_package_root_holds_no_more_modules():
    root = sorted(p.name for p in PACKAGE_DIR.glob("*.py"))
    assert len(root) <= ROOT_MODULES, (
        f"{len(root)} .py files in {PACKAGE}/ (at most {ROOT_MODULES}): {', '.join(root)}. Put the new module in the "
        "subpackage of its layer (operators/, triggers/, hooks/, ...), not at the root."
    )
    assert len(root) == ROOT_MODULES, (
        f"{len(root)} .py files in {PACKAGE}/ now: set ROOT_MODULES in tests/test_architecture.py to {len(root)}."
    )


def domain_modules() -> list[str]:
    """The modules of ``airflow_trainjob/domain/``."""
    return [name for name in modules() if name.startswith(f"{PACKAGE}.domain.")]


def test_the_domain_imports_only_the_domain_and_the_bottom_layer():
    assert domain_modules(), "airflow_trainjob/domain/ holds the pure domain"
    problems = [
        f"{edge.where()} imports {edge.target}: domain/ is the bottom of the provider; pass what it needs in as "
        "data, or move the code that needs it to hooks/, watching/, operators/ or triggers/."
        for edge in imports()
        if edge.importer.startswith(f"{PACKAGE}.domain")
        and edge.target.startswith(PACKAGE)
        and not edge.target.startswith(DOMAIN_MAY_IMPORT)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", [*PURE_MODULES, *domain_modules()])
def test_a_pure_module_loads_no_kubernetes_or_http_client(module):
    loaded: dict[str, list[str]] = {}  # client library -> the shortest chain to one of its modules
    for name, chain in eager_closure(module).items():
        library = name.split(".")[0]
        if library in CLIENT_LIBRARIES and len(chain) < len(loaded.get(library, [*chain, ""])):
            loaded[library] = chain
    assert not loaded, "\n".join(
        f"importing {module} imports {library} at module level, through {' -> '.join(chain)}: a pure module imports "
        "no client; pass what it needs in as data, or import the client-side module inside the function that "
        "needs it (or move that code to hooks/, operators/ or triggers/)."
        for library, chain in loaded.items()
    )


def test_outside_the_triggers_only_the_trigger_class_is_taken_from_the_triggers_module():
    problems = []
    for edge in imports():
        if edge.target != TRIGGER_MODULE or edge.importer.startswith(f"{PACKAGE}.triggers"):
            continue
        allowed = TRIGGER_NAMES_ALLOWED.get(edge.importer, set())
        extra = sorted(set(edge.names or ("the module itself",)) - allowed)
        if extra:
            problems.append(
                f"{edge.where()} imports {', '.join(extra)} from {TRIGGER_MODULE}: the trigger's module is the "
                "triggerer's; take the event's shape from triggers/events.py and what is pure from its pure module "
                "(domain/lead_log.py, constants.py, ...)."
            )
    for importer, allowed in TRIGGER_NAMES_ALLOWED.items():
        used = {n for e in imports() if e.importer == importer and e.target == TRIGGER_MODULE for n in e.names}
        if allowed - used:
            problems.append(
                f"{importer} no longer imports {', '.join(sorted(allowed - used))} from {TRIGGER_MODULE}: remove "
                "them from TRIGGER_NAMES_ALLOWED in tests/test_architecture.py."
            )
    assert not problems, "\n".join(problems)


def driver_modules() -> list[str]:
    """The modules of the drivers' packages (:data:`DRIVER_PACKAGES`)."""
    return [name for name in modules() if name.split(".")[1:2] and name.split(".")[1] in DRIVER_PACKAGES]


def test_no_driver_reads_the_v1_kind_table_or_an_adapter_directly():
    assert len(driver_modules()) > 20, "the walk finds the drivers' modules"
    problems = [
        f"{edge.where()} imports {', '.join(sorted(KIND_TABLE_NAMES & set(edge.names)))} from {edge.target}: "
        "a driver reads the job's family through the port (airflow_trainjob.families.family_of(kind)); if it "
        "needs something the port lacks, add one documented member to domain/family.py's JobFamily and its "
        "adapters."
        for edge in imports()
        if edge.importer in driver_modules()
        and edge.target == f"{PACKAGE}.constants"
        and KIND_TABLE_NAMES & set(edge.names)
    ]
    problems += [
        f"{module_path(module)}:{node.lineno} reads {ast.unparse(node)}: a driver asks the job's family "
        "(airflow_trainjob.families.family_of(kind)), not the v1 kind table."
        for module in driver_modules()
        for node in ast.walk(parsed(module))
        if isinstance(node, ast.Attribute) and node.attr in KIND_TABLE_NAMES
    ]
    problems += [
        f"{edge.where()} imports {edge.target}: a driver gets the job's family by its kind "
        "(airflow_trainjob.families.family_of), never an adapter's module."
        for edge in imports()
        if edge.importer in driver_modules() and edge.target in ADAPTER_MODULES
    ]
    assert not problems, "\n".join(problems)
