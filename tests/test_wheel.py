"""The provider wheel holds the provider only, and both distributions declare exactly what they import.

The wheel is built once for this module (a few seconds) from a copy of the work tree — what a clean clone holds,
less what ``.gitignore`` names — so that a leftover in-tree ``build/`` (whose stale files setuptools would pack)
neither fools the test nor is written into the checkout. No cluster.
"""

from __future__ import annotations

import ast
import configparser
import email.parser
import shutil
import subprocess
import sys
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "airflow_trainjob"
#: Names of what a clean clone does not hold (.gitignore) and caches of local tools.
NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git", ".venv*", "venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".demo"
)


@dataclass(frozen=True)
class Wheel:
    path: Path
    names: list[str]
    metadata: email.message.Message
    entry_points: configparser.ConfigParser


def build_requirements_missing() -> list[str]:
    """``[build-system].requires`` that this environment does not satisfy (``wheel`` is not needed: setuptools
    builds wheels itself since 70.1)."""
    missing = []
    for text in tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]:
        req = Requirement(text)
        if canonicalize_name(req.name) == "wheel":
            continue
        try:
            installed = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            missing.append(text)
            continue
        if not req.specifier.contains(installed, prereleases=True):
            missing.append(text)
    return missing


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Wheel:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=NOT_IN_A_CLONE)
    out = tmp / "dist"
    # Without build isolation (seconds, no package index) when this environment has the build backend's
    # requirements, else pip sets up an isolated build environment.
    isolation = [] if build_requirements_missing() else ["--no-build-isolation"]
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            *isolation,
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, f"pip wheel failed:\n{build.stdout}\n{build.stderr}"
    (path,) = out.glob("airflow_trainjob-*.whl")
    with zipfile.ZipFile(path) as zf:
        names = sorted(zf.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.optionxform = str  # type: ignore[assignment,method-assign]  # keep the names' case
        if f"{dist_info}/entry_points.txt" in names:
            entry_points.read_string(zf.read(f"{dist_info}/entry_points.txt").decode())
    return Wheel(path, names, meta, entry_points)


def test_wheel_holds_the_provider_package_and_its_dist_info_only(wheel: Wheel) -> None:
    print(f"{wheel.path.name}:", *wheel.names, sep="\n  ")
    stray = [
        n
        for n in wheel.names
        if PurePosixPath(n).parts[0] != PACKAGE and not PurePosixPath(n).parts[0].endswith(".dist-info")
    ]
    assert stray == []
    parts = {part for n in wheel.names for part in PurePosixPath(n).parts}
    assert not {p for p in parts if p.startswith("airflow_trainjob_local")}
    assert "local" not in parts
    assert not {p for p in parts if p in ("tests", "test", "conftest.py") or p.startswith("test_")}
    assert "example_dags" not in parts


def test_wheel_ships_py_typed_and_the_rbac_manifest(wheel: Wheel) -> None:
    assert f"{PACKAGE}/py.typed" in wheel.names
    assert f"{PACKAGE}/rbac.yaml" in wheel.names


def test_wheel_ships_the_ui_pages(wheel: Wheel) -> None:
    static = sorted(n.rsplit("/", 1)[1] for n in wheel.names if n.startswith(f"{PACKAGE}/ui/static/"))
    assert static == ["jobs.html", "task_instance.html", "trainjob.css", "trainjob.js"]


def test_wheel_requirements(wheel: Wheel) -> None:
    requirements = [Requirement(r) for r in wheel.metadata.get_all("Requires-Dist") or []]
    names = {canonicalize_name(r.name) for r in requirements}
    assert "cryptography" not in names and "psutil" not in names  # the local cluster's, not the provider's
    for client in ("kubernetes", "kubernetes-asyncio"):
        (req,) = [r for r in requirements if canonicalize_name(r.name) == client and r.marker is None]
        assert req.specifier, f"{client} is not bounded: {req}"
        # Bounded below the next major: no 37 (nor anything after it), pre-releases included.
        assert not any(req.specifier.contains(v, prereleases=True) for v in ("37.0.0a1", "37.0.0", "99.0.0")), req


def test_wheel_entry_points(wheel: Wheel) -> None:
    assert wheel.entry_points.get("apache_airflow_provider", "provider_info") == f"{PACKAGE}:get_provider_info"
    assert wheel.entry_points.get("airflow.plugins", "airflow_trainjob") == f"{PACKAGE}.ui.plugin:TrainingJobsPlugin"
    scripts = dict(wheel.entry_points["console_scripts"]) if wheel.entry_points.has_section("console_scripts") else {}
    assert "airflow-trainjob-local" not in scripts
    assert not wheel.entry_points.has_section("pytest11")  # the cluster fixtures are the local cluster's plugin


# ---- dependencies exactly as imported ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Distribution:
    """A distribution of this repository: its import package, its pyproject and which extras its subpackages use."""

    id: str
    root: Path  # the directory of its pyproject.toml
    package: str
    #: extra -> the subpackages and modules (relative to ``root``) that alone may import what the extra declares
    extras_used_by: dict[str, tuple[str, ...]]

    def scope_of(self, rel: str) -> str:
        """The extra whose imports the file ``rel`` (relative to ``root``) may make, else ``dependencies``."""
        for extra, places in self.extras_used_by.items():
            if any(rel == place or rel.startswith(f"{place}/") for place in places):
                return extra
        return "dependencies"


DISTRIBUTIONS = [
    # The openlineage provider is imported (lazily) by the lineage modules only: without it they do nothing.
    Distribution(
        "provider",
        REPO,
        PACKAGE,
        {
            "openlineage": (
                "airflow_trainjob/operators/parent_run.py",
                "airflow_trainjob/operators/lineage.py",
                "airflow_trainjob/operators/lineage_facets.py",
            )
        },
    ),
    Distribution(
        "local-cluster",
        REPO / "local-cluster",
        "airflow_trainjob_local",
        {"testing": ("airflow_trainjob_local/testing",)},
    ),
]


def absolute_imports(path: Path) -> list[tuple[str, int]]:
    """``(module, line)`` of each absolute import in ``path``; ``from a import b`` gives ``a.b`` (``b`` may be an
    attribute rather than a module: :func:`owner` resolves the longest prefix that is a file)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names if alias.name != "*"]
    return found


@pytest.fixture(scope="module")
def file_owners() -> dict[str, str]:
    """Installed module file (relative to its site directory, POSIX) -> the canonical name of its distribution, for
    the distributions that install a top-level name some distribution of this repository imports.

    Static (nothing is imported), and exact for namespace packages: ``airflow.triggers.base`` is
    apache-airflow-core's, ``airflow.providers.cncf.kubernetes.hooks.kubernetes`` the cncf provider's."""
    by_top = metadata.packages_distributions()
    tops = {
        module.split(".")[0]
        for d in DISTRIBUTIONS
        for path in (d.root / d.package).rglob("*.py")
        for module, _ in absolute_imports(path)
    }
    owners: dict[str, str] = {}
    for name in sorted({dist for top in tops for dist in by_top.get(top, ())}):
        for f in metadata.distribution(name).files or ():
            if f.suffix in (".py", ".so", ".pyd"):
                owners.setdefault(f.as_posix(), canonicalize_name(name))
    owners.update({f"<top-level>/{top}": canonicalize_name(d[0]) for top, d in by_top.items() if len(d) == 1})
    return owners


def owner(module: str, file_owners: dict[str, str]) -> str | None:
    """The distribution that installs ``module`` (its longest prefix that is a module file), or None."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        base = "/".join(parts[:n])
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if candidate in file_owners:
                return file_owners[candidate]
    return file_owners.get(f"<top-level>/{parts[0]}")  # e.g. an extension module, or files the RECORD lacks


def pinned_parts(name: str) -> set[str]:
    """What a meta-package pins exactly and unconditionally: apache-airflow -> apache-airflow-core, -task-sdk."""
    try:
        requires = metadata.requires(name) or []
    except metadata.PackageNotFoundError:
        return set()
    pinned: set[str] = set()
    for r in map(Requirement, requires):
        if r.marker is None and [s.operator for s in r.specifier] == ["=="]:
            pinned.add(canonicalize_name(r.name))
    return pinned


def declared(requirements: list[str]) -> dict[str, str]:
    """Canonical name -> the declared requirement; a meta-package's exactly pinned parts count as declared by it."""
    names: dict[str, str] = {}
    for text in requirements:
        name = canonicalize_name(Requirement(text).name)
        names[name] = text
        for part in pinned_parts(name):
            names.setdefault(part, f"{text} (pins {part})")
    return names


def import_table(dist: Distribution, file_owners: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Scope (``dependencies`` or an extra) -> owning distribution -> where it is imported (``file:line module``)."""
    table: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted((dist.root / dist.package).rglob("*.py")):
        rel = path.relative_to(dist.root).as_posix()
        scope = dist.scope_of(rel)
        for module, line in absolute_imports(path):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top == dist.package:
                continue
            table[scope][owner(module, file_owners) or f"<not installed: {top}>"].append(f"{rel}:{line} {module}")
    return table


def pyproject(dist: Distribution) -> dict:
    return tomllib.loads((dist.root / "pyproject.toml").read_text())["project"]


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.id)
def test_every_import_is_declared(dist: Distribution, file_owners: dict[str, str]) -> None:
    project = pyproject(dist)
    base = declared(project["dependencies"])
    undeclared = {}
    for scope, owners in import_table(dist, file_owners).items():
        allowed = base if scope == "dependencies" else {**base, **declared(project["optional-dependencies"][scope])}
        where = "[project].dependencies" if scope == "dependencies" else f"[project].dependencies or extra {scope!r}"
        for name, sites in owners.items():
            if name not in allowed:
                undeclared[f"{name} (not in {where})"] = sites
    lines = [f"  {name}: {', '.join(sites)}" for name, sites in sorted(undeclared.items())]
    assert undeclared == {}, "\n".join(
        [f"imported by {dist.package} but not declared in {dist.root.name}/pyproject.toml:", *lines]
    )


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.id)
def test_every_dependency_is_imported(dist: Distribution, file_owners: dict[str, str]) -> None:
    project = pyproject(dist)
    table = import_table(dist, file_owners)
    scopes = {"dependencies": project["dependencies"]}
    scopes.update({extra: project["optional-dependencies"][extra] for extra in dist.extras_used_by})
    unused = {}
    for scope, requirements in scopes.items():
        # An extra's requirements are used by its places; the dependencies anywhere in the package.
        imported = set(table[scope]) if scope != "dependencies" else {n for owners in table.values() for n in owners}
        for text in requirements:
            name = canonicalize_name(Requirement(text).name)
            if name not in imported and not pinned_parts(name) & imported:
                unused[text] = (
                    "[project].dependencies"
                    if scope == "dependencies"
                    else (f"extra {scope!r}, for {', '.join(dist.extras_used_by[scope])}")
                )
    lines = [f"  {text} ({where})" for text, where in sorted(unused.items())]
    assert unused == {}, "\n".join(
        [f"declared in {dist.root.name}/pyproject.toml but not imported by {dist.package}:", *lines]
    )
