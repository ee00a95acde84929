"""Provider metadata: Airflow finds and lists this provider through its entry point."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from importlib import resources
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

import jsonschema
import pytest
from airflow.plugins_manager import is_valid_plugin
from airflow.providers.common.compat.sdk import BaseHook, BaseOperator, BaseOperatorLink, BaseSensorOperator
from airflow.triggers.base import BaseTrigger

import airflow_trainjob


def test_provider_info():
    info = airflow_trainjob.get_provider_info()
    assert info["package-name"] == "airflow-trainjob"
    assert info["versions"] == [airflow_trainjob.__version__]
    assert info["name"] and info["description"]


def test_entry_point_resolves_to_get_provider_info():
    (point,) = [e for e in entry_points(group="apache_airflow_provider") if e.value.startswith("airflow_trainjob")]
    assert point.load() is airflow_trainjob.get_provider_info


def test_airflow_providers_list_shows_the_provider(tmp_path):
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path)}
    airflow = Path(sys.executable).with_name("airflow")
    result = subprocess.run(
        [str(airflow), "providers", "list", "--output", "json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert '"package_name": "airflow-trainjob"' in result.stdout
    assert f'"version": "{airflow_trainjob.__version__}"' in result.stdout


def test_py_typed_is_shipped():
    assert (Path(airflow_trainjob.__file__).parent / "py.typed").exists()


# ---- the provider info against Airflow's schema and against the code -----------------------------------------

#: The sections that name modules, the package their modules live in, and the class a listed module must define.
MODULE_SECTIONS = {
    "operators": ("airflow_trainjob.operators", BaseOperator),
    "sensors": ("airflow_trainjob.sensors", BaseSensorOperator),
    "hooks": ("airflow_trainjob.hooks", BaseHook),
    "triggers": ("airflow_trainjob.triggers", BaseTrigger),
}


def provider_info_schema() -> dict:
    """The schema Airflow's ProvidersManager validates every provider's info against (the installed Airflow's)."""
    return json.loads(resources.files("airflow").joinpath("provider_info.schema.json").read_text())


def import_dotted(path: str) -> object:
    """The object a ``module.Name`` path names, imported as Airflow imports it."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def defines_subclass(module: ModuleType, base: type) -> bool:
    """True when ``module`` itself defines (not merely imports) a subclass of ``base``."""
    return any(
        inspect.isclass(obj) and issubclass(obj, base) and obj.__module__ == module.__name__
        for obj in vars(module).values()
    )


def listed_modules(info: dict, section: str) -> list[str]:
    return [module for entry in info.get(section, []) for module in entry["python-modules"]]


def test_provider_info_validates_against_airflows_schema():
    schema = provider_info_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(airflow_trainjob.get_provider_info()), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_provider_info_keys():
    info = airflow_trainjob.get_provider_info()
    for key in ("package-name", "name", "description", "versions", "integrations", *MODULE_SECTIONS, "extra-links"):
        assert info.get(key), key
    (integration,) = info["integrations"]
    assert integration["integration-name"] == airflow_trainjob.INTEGRATION
    assert integration["external-doc-url"] == "https://www.kubeflow.org/docs/components/training/"
    assert integration["tags"] == ["software"]


def test_every_section_names_a_declared_integration():
    info = airflow_trainjob.get_provider_info()
    declared = {i["integration-name"] for i in info["integrations"]}
    for section in MODULE_SECTIONS:
        for entry in info[section]:
            assert entry["integration-name"] in declared, (section, entry)


def test_every_dotted_path_in_the_provider_info_imports():
    info = airflow_trainjob.get_provider_info()
    for section, (_, base) in MODULE_SECTIONS.items():
        for name in listed_modules(info, section):
            module = importlib.import_module(name)
            assert defines_subclass(module, base), f"{section}: {name} defines no {base.__name__}"
    for path in info.get("extra-links", []):
        link = import_dotted(path)
        assert inspect.isclass(link) and issubclass(link, BaseOperatorLink), path
    for connection in info.get("connection-types", []):
        assert issubclass(import_dotted(connection["hook-class-name"]), BaseHook), connection
    for decorator in info.get("task-decorators", []):
        assert callable(import_dotted(decorator["class-name"])), decorator
    for path in (*info.get("notifications", []), *info.get("secrets-backends", []), *info.get("executors", [])):
        assert inspect.isclass(import_dotted(path)), path
    for plugin in info.get("plugins", []):
        assert is_valid_plugin(import_dotted(plugin["plugin-class"])), plugin


def submodules(package: str) -> list[ModuleType]:
    return [
        importlib.import_module(name)
        for _, name, _ in pkgutil.iter_modules(importlib.import_module(package).__path__, f"{package}.")
    ]


def test_every_module_with_an_operator_sensor_hook_or_trigger_is_listed():
    """The other direction: a new module with, say, a trigger class must be added to the provider info."""
    info = airflow_trainjob.get_provider_info()
    for section, (package, base) in MODULE_SECTIONS.items():
        found = {module.__name__ for module in submodules(package) if defines_subclass(module, base)}
        assert found == set(listed_modules(info, section)), section
    links = {
        f"{module.__name__}.{obj.__name__}"
        for module in submodules("airflow_trainjob.links")
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, BaseOperatorLink) and obj.__module__ == module.__name__
    }
    assert links == set(info["extra-links"])


# ---- the UI plugin ---------------------------------------------------------------------------------------------


def test_the_ui_plugin_is_registered_by_its_entry_point_alone():
    from importlib.metadata import entry_points

    from airflow_trainjob.ui.plugin import JOBS_VIEW, TASK_INSTANCE_VIEW, TrainingJobsPlugin

    (entry,) = [e for e in entry_points(group="airflow.plugins") if e.value.startswith("airflow_trainjob")]
    assert (entry.name, entry.load()) == ("airflow_trainjob", TrainingJobsPlugin)
    assert is_valid_plugin(TrainingJobsPlugin)
    # Not in the provider info as well: with lazy_discover_providers off Airflow would load it twice (an import error).
    assert "plugins" not in airflow_trainjob.get_provider_info()
    assert [a["url_prefix"] for a in TrainingJobsPlugin.fastapi_apps] == ["/trainjob"]
    assert TrainingJobsPlugin.external_views == [TASK_INSTANCE_VIEW, JOBS_VIEW]


@pytest.mark.parametrize("lazy_discover_providers", ["True", "False"])
def test_airflow_plugins_lists_the_ui_plugin_once(tmp_path, lazy_discover_providers):
    """``airflow plugins`` of the installed Airflow finds the plugin with Airflow's default settings (providers
    discovered lazily) and with eager discovery, once and without an import error."""
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__LAZY_DISCOVER_PROVIDERS": lazy_discover_providers,
    }
    airflow = Path(sys.executable).with_name("airflow")
    result = subprocess.run(
        [str(airflow), "plugins", "--output", "json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "already registered" not in result.stdout + result.stderr
    (plugin,) = [p for p in json.loads(result.stdout) if p["name"] == "airflow_trainjob"]
    assert plugin["fastapi_apps"] == [
        {"app": "airflow_trainjob.ui.plugin.LazyApp", "url_prefix": "/trainjob", "name": "Kubeflow training jobs"}
    ]
    # Relative hrefs: resolved against the UI's <base href>, so they work under a base_url path too.
    assert [(v["destination"], v["url_route"], v["href"]) for v in plugin["external_views"]] == [
        (
            "task_instance",
            "training-job",
            "trainjob/ui/task-instance?dag_id={DAG_ID}&run_id={RUN_ID}&task_id={TASK_ID}&map_index={MAP_INDEX}",
        ),
        ("nav", "training-jobs", "trainjob/ui/jobs"),
    ]


def test_loading_the_plugin_imports_no_web_code():
    code = (
        "import sys; import airflow_trainjob.ui.plugin; "
        "print(sorted(m for m in ('fastapi', 'airflow_trainjob.ui.app', 'airflow_trainjob.ui.routes', "
        "'airflow_trainjob.ui.cache') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
