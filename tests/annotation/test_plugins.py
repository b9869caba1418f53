"""The one plug-in interface (annotation/plugins.py): every app declares one ``Plugin`` in its
``AppConfig.ready()``; nothing registers as a side effect of importing a module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.apps import apps
from django.core import checks

from annotation import plugins
from annotation.kinds import KINDS
from annotation.navigation import ProjectTab
from annotation.plugins import (
    Plugin,
    get_plugin,
    register_plugin,
    registered_plugins,
    temporarily_registered,
)
from annotation.workflows import WORKFLOWS, Workflow

ROOT = Path(__file__).resolve().parents[2]
PROJECT_APPS = [
    config
    for config in apps.get_app_configs()
    if Path(config.path).is_relative_to(ROOT) and ".venv" not in Path(config.path).parts
]


def test_every_project_app_registers_a_plugin_named_after_it():
    names = [plugin.name for plugin in registered_plugins()]
    for config in PROJECT_APPS:
        if config.name == "api":
            continue  # the REST API adds no extension, only a signal receiver
        assert any(name == config.name or name.startswith(config.name + ".") for name in names), (
            config.name
        )
    assert len(names) == len(set(names))
    # The engine's own plug-in comes first, so its demo project is seeded first.
    assert names[0] == "annotation"


def test_a_plugin_registers_once():
    with pytest.raises(ValueError, match="already registered"):
        register_plugin(Plugin(name="annotation"))


def test_an_outer_extension_point_applies_plugins_registered_before_and_after_it(monkeypatch):
    applied = []
    monkeypatch.delitem(plugins._consumers, "release_layouts")
    with temporarily_registered(Plugin(name="early", release_layouts={"early": "layout-a"})):
        # No app applies release layouts yet: the system check names the plug-in and field.
        errors = [error.msg for error in plugins.check_plugins() if error.id.endswith("E001")]
        assert (
            "plug-in 'early' declares 'release_layouts', but no installed app applies it" in errors
        )
        plugins.extension_point("release_layouts", lambda key, value: applied.append((key, value)))
        assert ("early", "layout-a") in applied and "late" not in dict(applied)
        register_plugin(Plugin(name="late", release_layouts={"late": "layout-b"}))
        assert applied[-1] == ("late", "layout-b")
        assert plugins.check_plugins() == []


def test_temporarily_registered_puts_every_registry_back():
    kinds, workflows = dict(KINDS), dict(WORKFLOWS)
    plugin = Plugin(
        name="scratch",
        workflows=[Workflow("scratch", "Scratch")],
        project_tabs=[ProjectTab("Scratch", "annotation:project", ("admin",))],
    )
    with temporarily_registered(plugin):
        assert get_plugin("scratch") is plugin
        assert "scratch" in WORKFLOWS
    assert dict(KINDS) == kinds and dict(WORKFLOWS) == workflows
    with pytest.raises(KeyError, match="no plug-in 'scratch'"):
        get_plugin("scratch")


def test_every_field_of_plugin_is_an_extension_point_documented_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for point in plugins.extension_points():
        assert f"`{point}`" in readme, point
    assert [error for error in checks.run_checks() if error.id.startswith("rungwise.")] == []


def _module_level_registrations(path: Path) -> list[str]:
    """Calls at a module's top level whose name starts with ``register`` (or ``on_``)."""
    found = []
    for node in ast.parse(path.read_text()).body:
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(node, ast.For | ast.If):
            found += [f"{path}:{node.lineno} (a registration loop or branch)"] * any(
                isinstance(inner, ast.Call)
                and getattr(inner.func, "id", getattr(inner.func, "attr", "")).startswith(
                    "register"
                )
                for inner in ast.walk(node)
            )
            continue
        if isinstance(call, ast.Call):
            name = getattr(call.func, "id", getattr(call.func, "attr", ""))
            if name.startswith(("register", "on_item")):
                found.append(f"{path}:{node.lineno} {name}")
    return found


def test_nothing_registers_on_import_of_a_module():
    offenders = []
    for config in PROJECT_APPS:
        for path in Path(config.path).rglob("*.py"):
            # Django's admin and template libraries register on import by their own design.
            if "migrations" not in path.parts and path.name != "admin.py":
                offenders += _module_level_registrations(path)
    assert offenders == []
