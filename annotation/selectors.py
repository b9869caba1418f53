"""Reads of the annotation engine (CONTRIBUTING.md, "Thin views"). Blindness is enforced here: nothing an
annotator's page reads can include another annotator's answers, vote counts or items of a project
they are not a member of."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, Exists, F, Func, IntegerField, OuterRef, Q, QuerySet, Subquery

# The roles that see annotators live with the permission checks; other modules read them here too.
from annotation.access import IDENTITY_ROLES as IDENTITY_ROLES
from annotation.access import ProjectAccess
from annotation.kinds import KindContext, get_kind
from annotation.models import (
    SUBMISSION_ORDER,
    Annotation,
    Assignment,
    Item,
    ItemStage,
    Membership,
    Project,
    Role,
    Stage,
)
from annotation.navigation import project_tabs
from annotation.phases import stage_phases

# The rule of final votes lives in annotation.versions, beside its Python twin and the states it
# is made of; other apps read it from here with the rest of the engine's reads.
from annotation.versions import final_votes as final_votes
from annotation.versions import item_stages_with_final_votes as item_stages_with_final_votes
from annotation.versions import votes_final as votes_final


def projects_for_user(user: User | AnonymousUser) -> list[ProjectAccess]:
    """The active projects the user is a member of, by name, each with the roles they hold
    there (ProjectAccess, as access_project returns it). Superusers see every active project,
    as admin plus the roles they really hold (they annotate only where they are annotators).
    One or two queries."""
    if not user.is_authenticated:
        return []
    held: dict[int, set[str]] = {}
    by_id: dict[int, Project] = {}
    if user.is_superuser:
        for project in Project.objects.filter(is_active=True).order_by("name"):
            held[project.pk] = {Role.ADMIN.value}
            by_id[project.pk] = project
    memberships = (
        Membership.objects.filter(user=user.pk, project__is_active=True)
        .select_related("project")
        .order_by("project__name", "project_id")
    )
    for membership in memberships:
        by_id.setdefault(membership.project_id, membership.project)
        held.setdefault(membership.project_id, set()).add(membership.role)
    return [ProjectAccess(project, frozenset(held[pk])) for pk, project in by_id.items()]


def _count(queryset) -> Subquery:
    """A correlated COUNT(*) subquery of `queryset` (0 when it matches nothing)."""
    counted = queryset.order_by().annotate(count=Func(F("pk"), function="COUNT")).values("count")
    return Subquery(counted, output_field=IntegerField())


def annotator_progress_by_stage(
    user: User | AnonymousUser, stages: Iterable[Stage]
) -> dict[int, tuple[int, int]]:
    """{stage id: (done, left)} for an annotator, in one query whatever the number of stages.

    done: items the user submitted in the stage. left: items the user may still get — open item
    stages with a free slot they have not held in the item stage's current round and phase (a
    checker may vote on the item later) — plus the one they hold now. On stages with phases or
    eligibility rules this is an upper bound: the candidate search (annotation.services.next_item)
    has the last word on who gets what. Only the user's own assignments are read; other
    annotators' work enters only through the slot counters.
    """
    stage_ids = [stage.pk for stage in stages]
    if not stage_ids or not user.is_authenticated:
        return {}
    mine = Assignment.objects.filter(stage=OuterRef("pk"), annotator=user.pk)
    touched = Assignment.objects.filter(
        item_stage=OuterRef("pk"),
        annotator=user.pk,
        round=OuterRef("round"),
        phase=OuterRef("phase"),
    )
    free = ItemStage.objects.filter(
        stage=OuterRef("pk"),
        state=ItemStage.State.OPEN,
        submitted_count__lt=F("target_count") - F("leased_count"),
    ).exclude(Exists(touched))
    rows = (
        Stage.objects.filter(pk__in=stage_ids)
        .annotate(
            done=_count(mine.filter(status=Assignment.Status.SUBMITTED)),
            holding=_count(mine.filter(status=Assignment.Status.ACTIVE)),
            free=_count(free),
        )
        .values_list("pk", "done", "holding", "free")
    )
    return {pk: (done, free + holding) for pk, done, holding, free in rows}


def annotator_stage_progress(user: User | AnonymousUser, stage: Stage) -> tuple[int, int]:
    """(done, left) of one annotator in one stage; see annotator_progress_by_stage."""
    return annotator_progress_by_stage(user, [stage]).get(stage.pk, (0, 0))


def is_annotator(user: User | AnonymousUser, access: ProjectAccess) -> bool:
    """Whether the user annotates in a project they reached (access_project). Superusers hold
    every role for access, but get items only where they are real annotators."""
    if Role.ANNOTATOR not in access.roles:
        return False
    if not user.is_superuser:
        return True
    return Membership.objects.filter(
        project=access.project, user=user.pk, role=Role.ANNOTATOR
    ).exists()


class StageRow(NamedTuple):
    """A stage as a list of stages shows it to one user (home_projects, project_stages)."""

    stage: Stage
    #: (done, left) for an annotator of the stage (annotator_progress_by_stage), else None.
    progress: tuple[int, int] | None
    #: What researchers, reviewers and admins see of the stage (stage_overview), else None.
    overview: dict[str, int] | None = None


@dataclass(frozen=True)
class HomeProject:
    """One project on the user's home page (home_projects)."""

    project: Project
    #: The roles the user holds there, in the order of Role.
    roles: tuple[str, ...]
    #: Its active stages, in pipeline order.
    stages: list[StageRow]
    #: Items waiting for a reviewer over those stages (0 for annotators).
    waiting_for_review: int
    #: The project's pages the user's roles open, besides the project page itself.
    tabs: list[dict[str, Any]]


def home_projects(user: User | AnonymousUser) -> list[HomeProject]:
    """The user's projects (see projects_for_user) with their active stages, progress on the
    stages of projects where the user annotates and, for researchers, reviewers and admins,
    each stage's overview (stage_overview), the items waiting for a reviewer and the tabs their
    roles open. Five queries at most, whatever the number of projects and stages."""
    accesses = projects_for_user(user)
    if not accesses:
        return []
    stages = list(
        Stage.objects.filter(
            project__in=[access.project for access in accesses], is_active=True
        ).order_by("project_id", "position")
    )
    by_project: dict[int, list[Stage]] = defaultdict(list)
    for stage in stages:
        by_project[stage.project_id].append(stage)
    annotated = [
        stage
        for access in accesses
        if Role.ANNOTATOR in access.roles
        for stage in by_project[access.project.pk]
    ]
    progress = annotator_progress_by_stage(user, annotated)
    overseen = [
        stage
        for access in accesses
        if access.holds({Role.ADMIN, Role.RESEARCHER, Role.REVIEWER})
        for stage in by_project[access.project.pk]
    ]
    overview = stage_overview(overseen)
    found = []
    for access in accesses:
        project = access.project
        rows = []
        for stage in by_project[project.pk]:
            stage.project = project
            rows.append(StageRow(stage, progress.get(stage.pk), overview.get(stage.pk)))
        found.append(
            HomeProject(
                project=project,
                roles=access.roles_in_order,
                stages=rows,
                waiting_for_review=sum(
                    row.overview["adjudication"] for row in rows if row.overview is not None
                ),
                tabs=[
                    tab
                    for tab in project_tabs(project, access.roles)
                    if tab["url_name"] != "annotation:project"
                ],
            )
        )
    return found


def stage_overview(stages: Iterable[Stage]) -> dict[int, dict[str, int]]:
    """{stage id: {"items", "decided", "adjudication", "open"}} over the stages' item stages, in
    one query: what researchers, reviewers and admins see of a stage on their home page."""
    stage_ids = [stage.pk for stage in stages]
    if not stage_ids:
        return {}
    closed = (ItemStage.State.RESOLVED, ItemStage.State.DISCARDED)
    rows = (
        ItemStage.objects.filter(stage_id__in=stage_ids)
        .values("stage_id")
        .annotate(
            items=Count("pk"),
            decided=Count("pk", filter=Q(state__in=closed)),
            adjudication=Count("pk", filter=Q(state=ItemStage.State.ADJUDICATION)),
        )
    )
    found = {
        row["stage_id"]: {
            "items": row["items"],
            "decided": row["decided"],
            "adjudication": row["adjudication"],
            "open": row["items"] - row["decided"] - row["adjudication"],
        }
        for row in rows
    }
    empty = {"items": 0, "decided": 0, "adjudication": 0, "open": 0}
    return {pk: found.get(pk, dict(empty)) for pk in stage_ids}


class StageFirst(NamedTuple):
    """An earlier stage an annotator must finish before a stage gives them items."""

    stage: Stage
    #: Its items the annotator has not answered yet.
    unanswered: int


def stage_to_finish_first(user: User | AnonymousUser, stage: Stage) -> StageFirst | None:
    """The stage that an ``after_stage`` eligibility rule of ``stage`` (annotation/eligibility.py:
    "practice first") still holds this annotator back for, with the number of its items they
    have not answered; None when no such rule holds them back. The same condition as the rule's
    SQL: every item stage of that stage carries an answer of theirs."""
    if not user.is_authenticated:
        return None
    for spec in stage.eligibility or []:
        if not isinstance(spec, dict) or spec.get("rule") != "after_stage":
            continue
        first = Stage.objects.filter(project_id=stage.project_id, slug=spec.get("stage")).first()
        if first is None:
            continue
        answered = Annotation.objects.filter(item_stage=OuterRef("pk"), annotator=user.pk)
        unanswered = ItemStage.objects.filter(stage=first).exclude(Exists(answered)).count()
        if unanswered:
            return StageFirst(first, unanswered)
    return None


def next_stage_with_work(user: User | AnonymousUser, stage: Stage) -> Stage | None:
    """The user's next active stage of the same project (pipeline order, wrapping around) where
    work is left for them, for the done screen; None when there is none."""
    stages = list(
        Stage.objects.filter(project_id=stage.project_id, is_active=True).order_by("position")
    )
    progress = annotator_progress_by_stage(user, [s for s in stages if s.pk != stage.pk])
    index = next((i for i, s in enumerate(stages) if s.pk == stage.pk), 0)
    for other in stages[index + 1 :] + stages[:index]:
        if progress.get(other.pk, (0, 0))[1] > 0:
            return other
    return None


def project_stages(user: User | AnonymousUser, access: ProjectAccess) -> list[StageRow]:
    """The active stages of a project the user reached (access_project), with their progress
    for an annotator (None for other roles)."""
    project = access.project
    stages = list(project.stages.filter(is_active=True).order_by("position"))
    progress = annotator_progress_by_stage(user, stages) if is_annotator(user, access) else {}
    rows = []
    for stage in stages:
        stage.project = project
        rows.append(StageRow(stage, progress.get(stage.pk)))
    return rows


def item_payload_for_annotator(item: Item, stage: Stage) -> dict[str, Any]:
    """The part of an item's payload an annotator of `stage` may see: only the fields its kind
    allows (an allow-list: TaskKind.visible_fields, or the stage's config "visible_fields"),
    never a field starting with "_", plus what the kind derives for them
    (TaskKind.derived_fields). Every page and API response that shows an item to an annotator
    goes through here."""
    kind = get_kind(stage.kind)
    context = KindContext(stage=stage, item=item)
    allowed = kind.visible_fields(context)
    payload = item.payload or {}
    visible = {
        name: payload[name] for name in allowed if name in payload and not str(name).startswith("_")
    }
    visible.update(kind.derived_fields(payload, context))
    return visible


#: The item payload's field of known answers (per stage slug; annotation.services.item_stages_open).
GOLD_FIELD = "gold"


def sees_annotators(roles: Iterable[str]) -> bool:
    """Whether a member holding `roles` sees annotators' names and gold answers (IDENTITY_ROLES;
    ProjectAccess.sees_annotators says the same of an access_project result).
    What annotators see of an item is item_payload_for_annotator's allow-list instead."""
    return bool(IDENTITY_ROLES & set(roles))


def annotations_visible(
    annotations: QuerySet[Annotation], viewer: User | AnonymousUser | None
) -> QuerySet[Annotation]:
    """`annotations` without the open votes (annotation.versions.final_votes) of anyone but
    `viewer`: an open vote is seen by its author alone, whatever their role, until its item
    stage is decided or waits for a reviewer. The one rule for every page, partial, CSV and API
    response that shows the annotations of an item or item stage (the item browser, the
    disagreement drill-down and its CSV, the adjudication page); callers check the viewer's
    role first (access_project)."""
    shown = final_votes()
    if viewer is not None and viewer.is_authenticated:
        shown |= Q(annotator_id=viewer.pk)
    return annotations.filter(shown)


def assignment_held(assignment_id: int | None, stage: Stage) -> Assignment | None:
    """The annotator's active lease in `stage` (its id from access_stage_for_annotator), with
    its item, read without renewing it; None when they hold none."""
    if assignment_id is None:
        return None
    held = (
        Assignment.objects.select_related("item_stage__item")
        .filter(pk=assignment_id, status=Assignment.Status.ACTIVE)
        .first()
    )
    if held is not None:
        held.stage = stage
    return held


def annotations_shown(assignment: Assignment) -> list[dict[str, Any]]:
    """Earlier answers the annotator's phase may see (the phase's ``shows``, annotation.phases):
    the cleaned payloads of this round's submitted annotations of those phases, as
    {"phase", "label", "payload"} in submission order, labelled "A", "B", … — never who wrote
    them. Empty for stages without phases: annotators never see each other's work otherwise."""
    stage, item_stage = assignment.stage, assignment.item_stage
    if not stage.phases:
        return []
    phases = stage_phases(stage)
    shows = set(phases[min(assignment.phase, len(phases) - 1)].shows)
    indices = [phase.index for phase in phases if phase.name in shows]
    if not indices:
        return []
    rows = Annotation.objects.filter(
        item_stage_id=item_stage.pk, round=assignment.round, phase__in=indices
    ).order_by(*SUBMISSION_ORDER)
    return [
        {
            "phase": phases[phase].name,
            "label": chr(ord("A") + number) if number < 26 else str(number + 1),
            "payload": payload,
        }
        for number, (phase, payload) in enumerate(rows.values_list("phase", "payload"))
    ]


#: Payload field pairs rendered as "event A → event B" (ExpliCa/METER-style sentence pairs).
PAIR_FIELDS = (
    ("sentence_a", "sentence_b"),
    ("event_a", "event_b"),
    ("cause", "effect"),
    ("premise", "hypothesis"),
)
TEXT_FIELDS = ("text", "sentence", "question")


def item_display(item: Item, stage: Stage) -> dict[str, Any]:
    """How the item screen shows an item: {"layout": "pair"|"text"|"fields", ...}.

    pair: `first`, `second`, the pair's field names, and `rest` (other fields as key/value);
    text: `text` and `rest`; fields: `rest` only. Hidden fields never appear."""
    payload = item_payload_for_annotator(item, stage)
    for first, second in PAIR_FIELDS:
        if isinstance(payload.get(first), str) and isinstance(payload.get(second), str):
            rest = [(key, value) for key, value in payload.items() if key not in {first, second}]
            return {
                "layout": "pair",
                "first": payload[first],
                "second": payload[second],
                "first_name": first.replace("_", " "),
                "second_name": second.replace("_", " "),
                "rest": rest,
            }
    for field in TEXT_FIELDS:
        if isinstance(payload.get(field), str):
            rest = [(key, value) for key, value in payload.items() if key != field]
            return {"layout": "text", "text": payload[field], "rest": rest}
    return {"layout": "fields", "rest": list(payload.items())}


def project_items(project: Project, *, status: str | None = None) -> QuerySet[Item]:
    items = Item.objects.filter(project=project).order_by("pk")
    if status:
        items = items.filter(status=status)
    return items


def item_stage_results(item: Item) -> list[dict[str, Any]]:
    """The item's state in every stage with its resolution (value, status, outcome, tally of
    votes); the resolution only once the votes are final (votes_final): an item stage open
    again for one more vote still carries the tally of the votes being collected."""
    rows = (
        ItemStage.objects.filter(item=item)
        .select_related("stage", "resolution")
        .order_by("stage__position")
    )
    results = []
    for row in rows:
        resolution = getattr(row, "resolution", None) if votes_final(row) else None
        results.append(
            {
                "stage": row.stage.slug,
                "state": row.state,
                "submitted_count": row.submitted_count,
                "target_count": row.target_count,
                "resolution": None
                if resolution is None
                else {
                    "value": resolution.value,
                    "status": resolution.status,
                    "outcome": resolution.outcome,
                    "votes": resolution.votes,
                },
            }
        )
    return results


def project_stages_with_counts(project: Project) -> list[Stage]:
    """The project's stages by position, each with ``items_total``, ``items_open`` and
    ``items_resolved``. Two queries: the stages, and the item stages counted by (stage, state)
    straight from the ``(stage, state)`` index (joining the stages to their item stages and
    grouping by stage read every item stage's row: seconds on a stage of 300,000 items)."""
    stages = list(Stage.objects.filter(project=project).order_by("position"))
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    for stage_id, state, number in (
        ItemStage.objects.filter(stage__in=[stage.pk for stage in stages])
        .values_list("stage_id", "state")
        .annotate(number=Count("*"))
        .order_by()
    ):
        counts[stage_id][state] = number
    for stage in stages:
        by_state = counts.get(stage.pk, {})
        stage.items_total = sum(by_state.values())  # type: ignore[attr-defined]
        stage.items_open = by_state.get(ItemStage.State.OPEN, 0)  # type: ignore[attr-defined]
        stage.items_resolved = by_state.get(ItemStage.State.RESOLVED, 0)  # type: ignore[attr-defined]
    return stages


#: How many of their latest answers an annotator sees in a stage's "My recent answers".
RECENT_ANSWERS = 20


def _own_answers(user: User, stage: Stage) -> QuerySet[Annotation]:
    """The annotator's current answers in `stage` that no annotator gate sealed."""
    from annotation import gates

    answers = Annotation.objects.filter(
        annotator=user, item_stage__stage=stage, assignment__isnull=False
    )
    sealed = gates.sealed_before(annotator_id=user.pk, project_id=stage.project_id)
    if sealed is not None:
        answers = answers.filter(created_at__gte=sealed)
    return answers


class RecentAnswer(NamedTuple):
    """One of the annotator's answers on My recent answers (annotator_recent_answers)."""

    #: The answer (its current version), with its item stage and item.
    annotation: Annotation
    #: Its vote, as the stage's kind reads it.
    vote: Any
    #: Why it can no longer be changed (annotation.versions.change_refusal), None while it can.
    refusal: str | None


def annotator_recent_answers(
    user: User, stage: Stage, *, limit: int = RECENT_ANSWERS
) -> list[RecentAnswer]:
    """The annotator's latest answers in `stage` (current versions, newest lease first: one
    lease at a time per stage, so lease order is answer order), each with its vote and why it
    can no longer be changed (RecentAnswer). Answers an annotator gate sealed (annotation.gates.sealed_before) are
    left out. Three queries."""
    from annotation.versions import change_refusal

    kind = get_kind(stage.kind)
    rows = list(
        _own_answers(user, stage)
        .select_related("item_stage__item")
        .order_by("-assignment_id")[:limit]
    )
    return [
        RecentAnswer(
            annotation,
            kind.vote(annotation.payload),
            change_refusal(annotation, annotation.item_stage, stage),
        )
        for annotation in rows
    ]


def annotator_latest_answer(
    user: User, stage: Stage, *, before: Annotation | None = None
) -> Annotation | None:
    """The annotator's latest answer in `stage` (current version), or the one given just
    before `before`; None when there is none (sealed answers left out, as above)."""
    answers = _own_answers(user, stage)
    if before is not None:
        answers = answers.filter(assignment_id__lt=before.assignment_id)
    return answers.order_by("-assignment_id").only("pk").first()
