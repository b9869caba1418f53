"""Workflows: the kinds of project a plug-in offers (ratings, METER, CausalT5k, …).

A project's ``kind`` names a registered workflow; the workflow's key is what import schemas
(imports.core.schema.register_schema) and release layouts (releases.layouts.register_layout)
are registered under. Plug-ins declare theirs in their ``Plugin`` (``annotation.plugins``)::

    Plugin(name="review.meter", workflows=[Workflow("meter", "Verify / edit / filter")], ...)

A workflow may offer a **template** (``create``): a function ``create(*, slug, name,
description) -> Project`` that builds a project with its stages ready for work (the studio's
"New project" page lists every workflow that offers one). The engine registers only ``generic``
(an empty project: stages are added by hand).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from annotation.errors import ApplicationError


@dataclass(frozen=True)
class Workflow:
    key: str
    label: str
    description: str = ""
    #: Builds a ready project of this workflow: create(*, slug, name, description) -> Project.
    create: Callable[..., Any] | None = None


WORKFLOWS: dict[str, Workflow] = {}


def register_workflow(workflow: Workflow) -> Workflow:
    if not workflow.key:
        raise ValueError("a workflow needs a key")
    WORKFLOWS[workflow.key] = workflow
    return workflow


def get_workflow(key: str) -> Workflow:
    try:
        return WORKFLOWS[key]
    except KeyError:
        raise ApplicationError(
            f"Unknown project kind {key!r}; registered: {', '.join(sorted(WORKFLOWS))}.",
            {"kind": key},
        ) from None


def workflow_choices() -> list[tuple[str, str]]:
    return [(workflow.key, workflow.label) for workflow in WORKFLOWS.values()]


def _generic_create(*, slug: str, name: str, description: str = "") -> Any:
    from annotation.services import project_create

    return project_create(slug=slug, name=name, description=description)


#: The engine's own workflow, registered by the engine's plug-in (annotation/apps.py).
GENERIC = Workflow(
    "generic",
    "From scratch",
    "An empty project: add stages of any kind (verify, label, …) yourself.",
    create=_generic_create,
)
