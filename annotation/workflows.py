"""Workflows: the kinds of project a plug-in offers (ratings, METER, CausalT5k, …).

A project's ``kind`` names a registered workflow; the workflow's key is what import schemas
(imports.core.schema.register_schema) and release layouts (releases.layouts.register_layout)
are registered under. Plug-ins declare theirs in their ``Plugin`` (``annotation.plugins``)::

    Plugin(name="review.meter", workflows=[Workflow("meter", "Verify / edit / filter")], ...)

A workflow may offer a **template** (``create``): a function ``create(*, slug, name,
description) -> Project`` that builds a project with its stages ready for work (the studio's
"New project" page lists every workflow that offers one, with its ``description``). A template
may build a project of another kind than its own key: the engine's ``verify_label`` builds a
``generic`` project with a verify and a label stage, so the project is kind ``generic``. The
engine registers ``generic`` (an empty project: stages are added by hand) and ``verify_label``.

A workflow may also say how imported items start work (``open_items``): a function
``open_items(*, project, items)`` the import calls, inside the import's transaction, with the
items one upload created. Without it the items are opened in the project's first active stage;
CausalT5k's clusters near-duplicates first and opens the others in its review stage.
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
    #: Starts work on newly imported items: open_items(*, project, items) (module docstring).
    open_items: Callable[..., Any] | None = None
    #: Pages importing the workflow's own files, beside the Imports page: (label, URL name
    #: taking the project's slug), linked from the Imports page.
    import_pages: tuple[tuple[str, str], ...] = ()


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


def _verify_label_create(*, slug: str, name: str, description: str = "") -> Any:
    """A generic project with the demo's two stages (annotation/demo.py): three people keep or
    reject each pair, then three label the relation of the kept ones."""
    from annotation.services import project_create, stage_create

    project = project_create(slug=slug, name=name, description=description)
    stage_create(
        project=project,
        slug="verify",
        name="Verify pairs",
        kind="verify",
        overlap=3,
        instructions="Keep fluent pairs of single events; reject anything else.",
    )
    stage_create(
        project=project,
        slug="label",
        name="Label the relation",
        kind="label",
        overlap=3,
        config={"choices": ["causal", "temporal", "unrelated"]},
        instructions="Does A cause B, merely precede it, or neither?",
    )
    return project


#: The engine's two-stage template (registered with GENERIC by annotation/apps.py).
VERIFY_LABEL = Workflow(
    "verify_label",
    "Verify → label",
    "Sentence pairs kept or rejected by three people, then the kept ones labelled causal, "
    "temporal or unrelated by three.",
    create=_verify_label_create,
)
