"""The one plug-in interface: every app declares what it adds as one ``Plugin`` object and
registers it with one call in its ``AppConfig.ready()``.

    from django.apps import AppConfig

    class MyWorkflowConfig(AppConfig):
        name = "myworkflow"

        def ready(self) -> None:
            from annotation.plugins import Plugin, register_plugin
            from myworkflow import kinds, policies, services

            register_plugin(
                Plugin(
                    name=self.name,
                    kinds=[kinds.MyKind()],
                    policies=[policies.MyPolicy()],
                    workflows=[Workflow("myworkflow", "My workflow", create=services.create)],
                    import_schemas={"myworkflow": services.SCHEMA},
                    release_layouts={"myworkflow": services.layout},
                    project_tabs=[ProjectTab("Mine", "myworkflow:page", roles=MONITOR)],
                    demo=services.demo_seed,
                )
            )

Nothing registers as a side effect of importing a module: a views module, a policies module and
the engine itself declare their contributions here too (``annotation/apps.py``).

**Contract.**

* Each field names one extension point; its contract is documented where the extension point
  lives (the table in README.md, "Architecture"). Sequences are registered in order; mappings
  are keyed by workflow key (the project kind).
* The engine's extension points (kinds, policies, eligibility rules, workflows, project tabs,
  annotator gates, work gates, progress caps, pending-work hooks, the events) are applied at
  once by ``register_plugin``.
* Extension points owned by the apps above the engine (import schemas and item mappers:
  ``imports``; release layouts, identities and dataset configurations: ``releases``; agreement headlines: ``agreement``; model
  generators and release scorers: ``llm``)
  are applied by those apps: each declares, in its own ``ready()``, ``extension_point(field,
  register)``. Plug-ins registered before that declaration are applied when it comes, those
  registered after it at once, so the order of ``INSTALLED_APPS`` does not matter. The engine
  names these fields but imports none of those apps. A plug-in that fills a field no installed
  app consumes fails the system check ``rungwise.plugins.E001`` (``manage.py check``).
* ``demo(users=...)`` seeds the plug-in's demo projects (``manage.py seed_demo``, in the order
  the plug-ins were registered); it must be safe to run again.
* ``clone(source=..., copy=..., stages=..., by=...)`` copies the plug-in's own setup of a
  project when its setup is cloned (``plugins_clone``, called by studio's clone).
* Registering a plug-in of the same ``name`` twice is refused (``ValueError``): an app registers
  once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.core import checks

from annotation import events, gates, navigation
from annotation.advisory import AdvisoryProvider, register_advisory_provider
from annotation.eligibility import RULES, Rule, register_rule
from annotation.events import (
    DecidedListener,
    ProjectEventListener,
    ResolvedListener,
    on_item_stage_decided,
    on_item_stages_resolved,
    on_project_event,
)
from annotation.gates import AnnotatorGate, register_annotator_gate
from annotation.kinds.base import KINDS, TaskKind, register_kind
from annotation.navigation import (
    ParticipantView,
    ProgressCap,
    ProjectTab,
    WorkGate,
    WorkPending,
    register_participant_view,
    register_progress_cap,
    register_project_tab,
    register_work_gate,
    register_work_pending,
)
from annotation.policies import POLICIES, Policy, register_policy
from annotation.workflows import WORKFLOWS, Workflow, register_workflow

#: ``demo(users={demo name: user})`` (see ``annotation.fixtures.demo_users``); what it returns
#: is ignored.
DemoSeed = Callable[..., object]
#: ``clone(source=, copy=, stages=, by=)`` → a few words on what it copied, or None (see
#: ``plugins_clone``).
CloneHook = Callable[..., "str | None"]


@dataclass(frozen=True)
class Plugin:
    """What one app adds to Rungwise. Every field is optional; see the module docstring."""

    #: The app's name (its AppConfig ``name``): who declared what, in errors and checks.
    name: str
    # -- the engine's extension points (annotation/) --------------------------------------
    kinds: Sequence[TaskKind] = ()
    policies: Sequence[Policy] = ()
    eligibility_rules: Sequence[Rule] = ()
    workflows: Sequence[Workflow] = ()
    project_tabs: Sequence[ProjectTab] = ()
    annotator_gates: Sequence[AnnotatorGate] = ()
    work_gates: Sequence[WorkGate] = ()
    progress_caps: Sequence[ProgressCap] = ()
    work_pending: Sequence[WorkPending] = ()
    #: Who sees the item screen without staff chrome (annotation.navigation.PARTICIPANT_VIEWS).
    participant_views: Sequence[ParticipantView] = ()
    #: Listeners of ``annotation.events.on_item_stages_resolved`` (after commit).
    on_item_stages_resolved: Sequence[ResolvedListener] = ()
    #: Listeners of ``annotation.events.on_item_stage_decided`` (inside the decision).
    on_item_stage_decided: Sequence[DecidedListener] = ()
    #: ``annotation.advisory`` providers: annotators whose answers a stage measures but does
    #: not count in its decisions.
    advisory_raters: Sequence[AdvisoryProvider] = ()
    #: Listeners of ``annotation.events.on_project_event`` (project milestones, in a savepoint
    #: of the work's transaction; webhooks).
    on_project_event: Sequence[ProjectEventListener] = ()
    # -- extension points of the apps above the engine, keyed by workflow key ---------------
    #: ``imports.core.schema.RowSchema`` per workflow (imports/).
    import_schemas: Mapping[str, Any] = field(default_factory=dict)
    #: ``imports.services.ItemMapper`` per workflow (imports/).
    item_mappers: Mapping[str, Any] = field(default_factory=dict)
    #: ``releases.layouts.Layout`` per workflow (releases/).
    release_layouts: Mapping[str, Any] = field(default_factory=dict)
    #: ``releases.identities.IdentityRule`` per workflow (releases/).
    release_identities: Mapping[str, Any] = field(default_factory=dict)
    #: ``agreement.headlines.Provider`` functions (agreement/).
    headline_providers: Sequence[Any] = ()
    #: ``agreement.sections.StageSection`` objects: sections of a stage's Agreement page
    #: (agreement/).
    stage_sections: Sequence[Any] = ()
    #: ``llm.generation.ModelGenerator`` objects: what a model writes for a workflow (llm/).
    model_generators: Sequence[Any] = ()
    #: ``llm.evaluation.scoring.ReleaseScorer`` per workflow (llm/).
    release_scorers: Mapping[str, Any] = field(default_factory=dict)
    #: ``releases.hf_dataset.DatasetLayout`` per workflow: the Hugging Face dataset configurations
    #: of its releases (releases/; a workflow without one gets a ``default`` configuration).
    release_datasets: Mapping[str, Any] = field(default_factory=dict)
    # -- the demo ---------------------------------------------------------------------------
    demo: DemoSeed | None = None
    # -- cloning a project's setup ----------------------------------------------------------
    #: ``clone(source=, copy=, stages=, by=)``: copy the plug-in's own setup of ``source`` into
    #: ``copy`` (see ``plugins_clone``).
    clone: CloneHook | None = None
    # -- after answers are stored ---------------------------------------------------------
    #: Listeners of ``annotation.events.on_answers_stored`` (after a submit commits; ratings'
    #: live stopping).
    on_answers_stored: Sequence[events.StoredListener] = ()


#: The engine's own extension points: field name -> how one entry is registered.
_ENGINE_POINTS: dict[str, Callable[[Any], Any]] = {
    "kinds": register_kind,
    "policies": register_policy,
    "eligibility_rules": register_rule,
    "workflows": register_workflow,
    "project_tabs": lambda tab: register_project_tab(
        tab.label, tab.url_name, roles=tab.roles, order=tab.order, kinds=tab.kinds
    ),
    "annotator_gates": register_annotator_gate,
    "work_gates": register_work_gate,
    "progress_caps": register_progress_cap,
    "work_pending": register_work_pending,
    "participant_views": register_participant_view,
    "advisory_raters": register_advisory_provider,
    "on_answers_stored": events.on_answers_stored,
    "on_item_stages_resolved": on_item_stages_resolved,
    "on_item_stage_decided": on_item_stage_decided,
    "on_project_event": on_project_event,
}
#: Fields applied by apps above the engine through ``extension_point``.
_OUTER_POINTS = (
    "import_schemas",
    "item_mappers",
    "release_layouts",
    "release_identities",
    "headline_providers",
    "stage_sections",
    "model_generators",
    "release_scorers",
    "release_datasets",
)
#: ``register`` of each declared outer extension point: ``register(key, value)`` for a
#: mapping field, ``register(value)`` for a sequence field.
_consumers: dict[str, Callable[..., Any]] = {}
_plugins: dict[str, Plugin] = {}
#: Every registry a plug-in can add to (dicts and lists), for ``temporarily_registered``; the
#: apps above the engine add theirs with ``extension_point(..., registry=...)``.
_registries: list[dict[Any, Any] | list[Any]] = [
    KINDS,
    POLICIES,
    RULES,
    WORKFLOWS,
    navigation.PROJECT_TABS,
    navigation.WORK_GATES,
    navigation.PROGRESS_CAPS,
    navigation.WORK_PENDING,
    gates.ANNOTATOR_GATES,
    events._stored_listeners,
    events._resolved_listeners,
    events._decided_listeners,
    events._project_event_listeners,
]


def _apply(plugin: Plugin, point: str, register: Callable[..., Any]) -> None:
    value = getattr(plugin, point)
    if isinstance(value, Mapping):
        for key, entry in value.items():
            register(key, entry)
    else:
        for entry in value:
            register(entry)


def register_plugin(plugin: Plugin) -> Plugin:
    """Register everything ``plugin`` declares (see the module docstring); returns it."""
    if not plugin.name:
        raise ValueError("a plug-in needs a name (its app's name)")
    if plugin.name in _plugins:
        raise ValueError(f"plug-in {plugin.name!r} is already registered")
    _plugins[plugin.name] = plugin
    for point, register in _ENGINE_POINTS.items():
        _apply(plugin, point, register)
    for point, register in _consumers.items():
        _apply(plugin, point, register)
    return plugin


def extension_point(
    point: str,
    register: Callable[..., Any],
    *,
    registry: dict[Any, Any] | list[Any] | None = None,
) -> None:
    """Declare that this app applies the ``Plugin`` field ``point`` with ``register``: every
    plug-in registered so far is applied now, later ones when they register. ``registry``: the
    dict or list ``register`` writes to, restored by ``temporarily_registered``."""
    if point not in _OUTER_POINTS:
        raise ValueError(f"{point!r} is not an extension point of an app above the engine")
    if point in _consumers:
        raise ValueError(f"extension point {point!r} is already declared")
    _consumers[point] = register
    if registry is not None:
        _registries.append(registry)
    for plugin in _plugins.values():
        _apply(plugin, point, register)


def registered_plugins() -> list[Plugin]:
    """Every registered plug-in, in registration order (the order of INSTALLED_APPS)."""
    return list(_plugins.values())


@contextmanager
def temporarily_registered(plugin: Plugin) -> Iterator[Plugin]:
    """Register ``plugin`` for the length of a ``with`` block, then put every registry back as
    it was (tests of a plug-in that is not an installed app: tests/test_adding_a_workflow.py)."""
    saved = [
        (registry, dict(registry) if isinstance(registry, dict) else list(registry))
        for registry in _registries
    ]
    plugins = dict(_plugins)
    try:
        yield register_plugin(plugin)
    finally:
        for registry, copy in saved:
            registry.clear()
            if isinstance(registry, dict):
                registry.update(copy)
            else:
                registry.extend(copy)
        _plugins.clear()
        _plugins.update(plugins)


def get_plugin(name: str) -> Plugin:
    """The registered plug-in called ``name`` (KeyError naming the registered ones otherwise)."""
    try:
        return _plugins[name]
    except KeyError:
        raise KeyError(f"no plug-in {name!r}; registered: {', '.join(_plugins)}") from None


def demos_seed(users: Mapping[str, Any]) -> None:
    """Run every plug-in's ``demo`` in registration order (``manage.py seed_demo``)."""
    for plugin in registered_plugins():
        if plugin.demo is not None:
            plugin.demo(users=dict(users))


def plugins_clone(*, source: Any, copy: Any, stages: Mapping[int, Any], by: Any) -> list[str]:
    """Run every plug-in's ``clone`` in registration order, inside the caller's transaction
    (studio.services.project_clone, once the copy's stages exist): ``stages`` maps each stage id
    of ``source`` to its copy in ``copy``; ``by`` is who clones. A hook copies the plug-in's own
    setup of the project (llm: prompts with their versions, model raters) — never items,
    answers, runs or secrets — and may raise ApplicationError to refuse the whole clone.
    Returns what the hooks said they copied ("2 prompts, 1 model rater"), for the page."""
    said = []
    for plugin in registered_plugins():
        if plugin.clone is not None:
            words = plugin.clone(source=source, copy=copy, stages=dict(stages), by=by)
            if words:
                said.append(str(words))
    return said


def extension_points() -> tuple[str, ...]:
    """Every field of ``Plugin`` that names an extension point (the engine's and the outer
    apps'), for tests that check each one is documented and applied."""
    return (*_ENGINE_POINTS, *_OUTER_POINTS)


def _unconsumed(plugins: Iterable[Plugin]) -> list[tuple[str, str]]:
    return [
        (plugin.name, point)
        for plugin in plugins
        for point in _OUTER_POINTS
        if getattr(plugin, point) and point not in _consumers
    ]


@checks.register()
def check_plugins(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``rungwise.plugins.E001``: a plug-in fills a field no installed app applies."""
    return [
        checks.Error(
            f"plug-in {name!r} declares {point!r}, but no installed app applies it",
            hint="install the app that owns this extension point (README.md, 'Architecture')",
            id="rungwise.plugins.E001",
        )
        for name, point in _unconsumed(registered_plugins())
    ]
