"""Workflows: the kinds of project a plug-in offers (ratings, METER, CausalT5k, …).

A project's ``kind`` names a registered workflow; the workflow's key is what import schemas
(imports.core.schema.register_schema) and release layouts (releases.layouts.register_layout)
are registered under. Plug-ins register theirs in ``AppConfig.ready()``::

    from annotation.workflows import Workflow, register_workflow
    register_workflow(Workflow("meter", "Verify / edit / filter (METER-style)"))

The engine registers only ``generic``.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.errors import ApplicationError


@dataclass(frozen=True)
class Workflow:
    key: str
    label: str
    description: str = ""


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


register_workflow(Workflow("generic", "Generic", "Stages of the engine's own kinds."))
