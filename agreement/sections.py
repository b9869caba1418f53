"""Sections another app adds to a stage's Agreement page (and to the workflow tabs that include
them), with their figures and CSV tables.

The Agreement page shows what this app computes; an app that compares something else with the
stage's people (the llm app's "Models against people": llm/calibration.py) declares a
:class:`StageSection` in its Plugin's ``stage_sections`` (annotation/plugins.py; this app's
``ready()`` declares the extension point), so that this app never imports it (the apps
above it import this one). A section's figures and tables are served by the stage's own figure
and CSV URLs (``agreement:plot``, ``agreement:csv``) under the names it declares, behind the
page's access rule (researchers and admins).

``context(stage)`` returns what the section's ``template`` reads (under the name ``section``),
or None when the stage has nothing to show: the page then shows nothing of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: A CSV table: its header and its rows.
Table = tuple[Sequence[str], Iterable[Sequence[Any]]]


@dataclass(frozen=True)
class StageSection:
    """A section of a stage's Agreement page: its ``template`` (included with the section's
    context as ``section``, the page's ``project`` and ``stage``), the figures (name → SVG of a
    stage) and CSV tables (name → Table of a stage) it links to. Names must not be the page's
    own (``agreement.figures.PLOTS``, ``agreement.exports.CSV_TABLES``)."""

    key: str
    template: str
    context: Callable[[Any], Any | None]
    figures: dict[str, Callable[[Any, str], str]] = field(default_factory=dict)
    tables: dict[str, Callable[[Any], Table]] = field(default_factory=dict)


@dataclass(frozen=True)
class ShownSection:
    """A section with something to show on one stage."""

    key: str
    template: str
    stage: Any
    context: Any


_sections: dict[str, StageSection] = {}


def register_stage_section(section: StageSection) -> StageSection:
    """Add ``section`` to every stage page (registering a key again replaces it)."""
    _sections[section.key] = section
    return section


def shown_sections(stage: Any) -> list[ShownSection]:
    """The registered sections with something to show on ``stage``, in registration order."""
    shown = []
    for section in _sections.values():
        context = section.context(stage)
        if context is not None:
            shown.append(ShownSection(section.key, section.template, stage, context))
    return shown


def project_sections(stages: Iterable[Any]) -> list[ShownSection]:
    """The sections with something to show on each of ``stages``, stage by stage (what a
    workflow tab includes: ``agreement/includes/stage_sections.html``)."""
    return [shown for stage in stages for shown in shown_sections(stage)]


def figure_names() -> set[str]:
    return {name for section in _sections.values() for name in section.figures}


def table_names() -> set[str]:
    return {name for section in _sections.values() for name in section.tables}


def figure(stage: Any, name: str) -> str:
    """The SVG of a registered figure (the caller checked ``name`` is in ``figure_names()``)."""
    for section in _sections.values():
        if name in section.figures:
            return section.figures[name](stage, name)
    raise KeyError(name)


def table(stage: Any, name: str) -> Table:
    """A registered CSV table (the caller checked ``name`` is in ``table_names()``)."""
    for section in _sections.values():
        if name in section.tables:
            return section.tables[name](stage)
    raise KeyError(name)
