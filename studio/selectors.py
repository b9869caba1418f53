"""The item browser's reads: one item with
its revisions, its work in every stage (progress, skips, open leases, why it is stuck) and its
history of admin actions (for admins, researchers and reviewers only)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from annotation.api import (
    GOLD_FIELD,
    annotations_visible,
    item_stages_stranded,
    sees_annotators,
    votes_final,
)
from annotation.errors import NotFound
from annotation.kinds import get_kind
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemEvent,
    ItemStage,
    Membership,
    Project,
    Role,
    Stage,
)
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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def answer_fields(payload: Any, kind: Any) -> dict[str, Any]:
    """An answer as a person reads it: its vote (the kind's, annotation.kinds) and every other
    leaf of the payload as (field, text) — never raw JSON."""
    try:
        vote = kind.vote(payload) if kind is not None else None
    except Exception:  # a payload stored under an older form of the kind: show its fields
        vote = None
    fields = [
        (path, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        for path, value in _leaves(payload).items()
        if path and value not in (None, "", [], {})
    ]
    if isinstance(vote, dict):
        vote = ", ".join(f"{key}: {value}" for key, value in vote.items())
    return {"vote": vote, "fields": fields}


def stuck_reason(item_stage: ItemStage, stranded: Any) -> str:
    """Why an item stage is not moving, in words ("" when it is collecting normally)."""
    state = item_stage.state
    if state == ItemStage.State.RESOLVING:
        return "All answers are in; the decision is being computed."
    if state == ItemStage.State.ADJUDICATION:
        return "Waiting for a reviewer's decision (Adjudication)."
    if state != ItemStage.State.OPEN:
        return ""
    if not item_stage.stage.is_active:
        return f"{item_stage.stage.name} is paused: nobody gets items of it."
    if stranded is not None:
        return (
            f"Stuck: needs {_plural(stranded.missing, 'more answer')}; "
            f"{_plural(stranded.eligible, 'eligible annotator')} can still take it."
        )
    return ""


def item_history(
    project: Project, item_id: int, *, viewer: Any, roles: Iterable[str]
) -> dict[str, Any]:
    """One item: its fields, revisions (with diffs), its history of admin actions
    (``events``: annotation.models.ItemEvent, newest first) and per stage its state,
    progress (answers given / needed), resolution, annotations (who, when, what — as fields,
    never raw JSON — in which phase, round and item version; every version of a changed
    answer included: ``answer_version``, ``current`` False on replaced ones), skips and other
    leases given up (who, why), open leases (who, until when) and why it is stuck, if it is
    (``stuck``; annotation.api.item_stages_stranded).

    Blind where it must be: annotations are read through the engine's one rule
    (annotation.selectors.annotations_visible), so `viewer` sees open votes (an item stage still
    collecting or changing answers) only when they are their own; a stage's resolution shows
    once its votes are final (``hidden`` counts the open votes left out). Viewers whose `roles`
    do not see annotators (annotation.selectors.sees_annotators: reviewers) get "Annotator 1,
    2, …" per stage instead of names — for answers, skips and leases alike —, no revision or
    event authors and no gold field."""
    named = sees_annotators(roles)
    item = Item.objects.filter(project=project, pk=item_id).first()
    if item is None or (not named and item.purpose == Item.Purpose.GOLD):
        # a silent gold item (annotation/gold.py) answers as an unknown one to reviewers
        raise NotFound("There is no such item in this project.")
    item_stages = list(
        ItemStage.objects.filter(item=item).select_related("stage").order_by("stage__position")
    )
    stranded = {
        row.item_stage_id: row
        for row in item_stages_stranded(
            project,
            item_stage_ids=[row.pk for row in item_stages if row.state == ItemStage.State.OPEN],
        )
    }
    stages = []
    for item_stage in item_stages:
        try:
            kind = get_kind(item_stage.stage.kind)
        except Exception:  # a kind whose plug-in is not installed: its answers as fields
            kind = None
        every_version = Annotation.all_versions.filter(item_stage=item_stage)
        annotations = (
            annotations_visible(every_version, viewer).select_related("annotator").order_by("pk")
        )
        shown = list(annotations)
        pseudonyms: dict[Any, str] = {}

        def who(user: Any, external: str = "", pseudonyms: dict[Any, str] = pseudonyms) -> str:
            key = user.pk if user is not None else external
            if named:
                return user.get_username() if user is not None else external
            return pseudonyms.setdefault(key, f"Annotator {len(pseudonyms) + 1}")

        for a in shown:
            who(a.annotator, a.external_rater)
        leases = list(
            Assignment.objects.filter(item_stage=item_stage)
            .exclude(status=Assignment.Status.SUBMITTED)
            .select_related("annotator")
            .order_by("created_at", "pk")
        )
        stages.append(
            {
                "item_stage": item_stage,
                "display_template": getattr(kind, "display_template", None),
                "resolution": getattr(item_stage, "resolution", None)
                if votes_final(item_stage)
                else None,
                "hidden": every_version.filter(is_current=True).count()
                - sum(1 for a in shown if a.is_current),
                "stuck": stuck_reason(item_stage, stranded.get(item_stage.pk)),
                "stranded": item_stage.pk in stranded,
                "annotations": [
                    {
                        "who": who(a.annotator, a.external_rater),
                        "when": a.created_at,
                        "phase": a.phase,
                        "round": a.round,
                        "version": a.item_version,
                        "answer_version": a.version,
                        "current": a.is_current,
                        "answer": answer_fields(a.payload, kind),
                        "seconds": a.seconds_spent,
                    }
                    for a in shown
                ],
                "open_leases": [
                    {
                        "who": who(lease.annotator),
                        "since": lease.created_at,
                        "until": lease.expires_at,
                    }
                    for lease in leases
                    if lease.status == Assignment.Status.ACTIVE
                ],
                "given_up": [
                    {
                        "who": who(lease.annotator),
                        "status": lease.get_status_display(),
                        "skipped": lease.status == Assignment.Status.SKIPPED,
                        "reason": lease.skip_reason,
                        "when": lease.finished_at or lease.expires_at,
                        "round": lease.round,
                        "phase": lease.phase,
                    }
                    for lease in leases
                    if lease.status != Assignment.Status.ACTIVE
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
        "events": list(
            ItemEvent.objects.filter(item=item)
            .select_related("by", "stage")
            .order_by("-created_at", "-pk")
        ),
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


def archived_projects(user) -> list[Project]:
    """The archived projects (``is_active=False``) ``user`` administers, by name; every
    archived project for superusers; none for anyone else."""
    if not user.is_authenticated:
        return []
    found = Project.objects.filter(is_active=False).order_by("name")
    if not user.is_superuser:
        found = found.filter(memberships__user=user.pk, memberships__role=Role.ADMIN).distinct()
    return list(found)
