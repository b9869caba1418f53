"""The item browser's reads: one item with
its revisions and its work in every stage (for admins, researchers and reviewers only)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from annotation.api import GOLD_FIELD, annotations_visible, sees_annotators, votes_final
from annotation.errors import NotFound
from annotation.models import Annotation, Item, ItemStage, Membership, Project, Stage
from studio.models import Invite


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    """A JSON value as {dotted path: leaf}: ``questions[1].distractors[0].text``."""
    if isinstance(value, dict):
        found: dict[str, Any] = {}
        for key, child in value.items():
            found.update(_leaves(child, f"{path}.{key}" if path else str(key)))
        return found
    if isinstance(value, list) and value:
        found = {}
        for index, child in enumerate(value):
            found.update(_leaves(child, f"{path}[{index}]"))
        return found
    return {path: value}


def revision_changes(diff: dict[str, Any]) -> list[dict[str, Any]]:
    """A revision's field-level diff down to the changed leaves, so that one edited distractor
    shows as one line, not as two copies of the whole question list."""
    changes = []
    for field, change in sorted((diff or {}).items()):
        old, new = _leaves(change.get("old"), field), _leaves(change.get("new"), field)
        for path in sorted(set(old) | set(new)):
            if old.get(path) != new.get(path):
                changes.append({"field": path, "old": old.get(path), "new": new.get(path)})
    return changes


def item_history(
    project: Project, item_id: int, *, viewer: Any, roles: Iterable[str]
) -> dict[str, Any]:
    """One item: its fields, revisions (with diffs), and per stage its state, resolution and
    annotations (who, when, what, in which phase, round and item version), every version of a
    changed answer included (``answer_version``; ``current`` False on replaced ones).

    Blind where it must be: annotations are read through the engine's one rule
    (annotation.selectors.annotations_visible), so `viewer` sees open votes (an item stage still
    collecting or changing answers) only when they are their own; a stage's resolution shows
    once its votes are final (``hidden`` counts the open votes left out). Viewers whose `roles`
    do not see annotators (annotation.selectors.sees_annotators: reviewers) get "Annotator 1,
    2, …" per stage instead of names, no revision authors and no gold field."""
    named = sees_annotators(roles)
    item = Item.objects.filter(project=project, pk=item_id).first()
    if item is None:
        raise NotFound("There is no such item in this project.")
    stages = []
    for item_stage in (
        ItemStage.objects.filter(item=item).select_related("stage").order_by("stage__position")
    ):
        every_version = Annotation.all_versions.filter(item_stage=item_stage)
        annotations = (
            annotations_visible(every_version, viewer).select_related("annotator").order_by("pk")
        )
        shown = list(annotations)
        pseudonyms: dict[Any, str] = {}
        for a in shown:
            pseudonyms.setdefault(
                a.annotator_id or a.external_rater, f"Annotator {len(pseudonyms) + 1}"
            )
        stages.append(
            {
                "item_stage": item_stage,
                "resolution": getattr(item_stage, "resolution", None)
                if votes_final(item_stage)
                else None,
                "hidden": every_version.filter(is_current=True).count()
                - sum(1 for a in shown if a.is_current),
                "annotations": [
                    {
                        "who": (a.annotator.get_username() if a.annotator else a.external_rater)
                        if named
                        else pseudonyms[a.annotator_id or a.external_rater],
                        "when": a.created_at,
                        "phase": a.phase,
                        "round": a.round,
                        "version": a.item_version,
                        "answer_version": a.version,
                        "current": a.is_current,
                        "payload": json.dumps(a.payload, ensure_ascii=False),
                        "seconds": a.seconds_spent,
                    }
                    for a in shown
                ],
            }
        )
    return {
        "item": item,
        "fields": [
            (
                key,
                value
                if isinstance(value, str)
                else json.dumps(value, ensure_ascii=False, indent=1),
            )
            for key, value in (item.payload or {}).items()
            if named or key != GOLD_FIELD
        ],
        "named": named,
        "revisions": [
            {
                "revision": revision,
                "changes": [
                    change
                    for change in revision_changes(revision.diff)
                    if named or re.split(r"[.\[]", change["field"])[0] != GOLD_FIELD
                ],
            }
            for revision in item.revisions.select_related("author", "stage").order_by("-number")
        ],
        "stages": stages,
    }


def project_stages(project: Project) -> list[Stage]:
    """The project's stages in pipeline order."""
    return list(Stage.objects.filter(project=project).order_by("position"))


def project_members(project: Project) -> QuerySet[Membership]:
    """The project's memberships with their users, by role then name (the setup page)."""
    return (
        Membership.objects.filter(project=project)
        .select_related("user")
        .order_by("role", "user__username")
    )


def project_invites(project: Project, *, limit: int = 50) -> list[Invite]:
    """The project's newest invite links (the setup page lists ``limit``)."""
    return list(Invite.objects.filter(project=project)[:limit])
