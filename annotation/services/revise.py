"""Changing an answer: a new version of one's own annotation that supersedes the one the
annotator saw, while the item is undecided (annotation/versions.py says when)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from annotation import gates, sql
from annotation.access import NO_SUCH_ANSWER
from annotation.errors import Conflict, NotFound
from annotation.inputs import check_payload, clean_client_info
from annotation.kinds import KindContext, get_kind
from annotation.models import Annotation, ItemStage, Membership, Role, Stage
from annotation.services.submit import _check_seconds_spent
from annotation.versions import change_refusal


def annotation_revise(
    *,
    annotation_id: int,
    annotator: User,
    payload: Mapping[str, Any],
    seconds_spent: float | None = None,
    client_info: Mapping[str, Any] | None = None,
) -> tuple[Annotation, bool]:
    """Change one's own answer: store `payload` as a new version that supersedes the annotation
    `annotation_id` (the version the annotator saw); returns (current version, created).

    Allowed while annotation.versions.change_refusal finds nothing (the item stage still open
    or waiting for its resolution, in the answer's round and phase); otherwise 409 with that
    sentence. The new row keeps the assignment, round and phase, gets ``version`` + 1 and
    ``supersedes``; the old row keeps its payload and only loses ``is_current``. Counters do
    not move: the annotator is still counted once.

    Idempotent, keyed by the version replaced (as a submit is keyed by its assignment): a
    retried change of the same version with the same answer returns the version it created
    (``created=False``); an answer equal to the current one creates nothing. A change of a
    version that another change already replaced with a different answer is refused (409):
    the annotator saw an out-of-date answer.

    Locking: the item stage's row is locked first (FOR UPDATE), the lock resolution
    (services.item_stage_resolve) takes before it reads the answers, so a change either lands
    before the decision and is counted in it, or finds the item decided and is refused.
    """
    payload = check_payload(payload)
    client_info = clean_client_info(client_info)
    _check_seconds_spent(seconds_spent)
    try:
        return _annotation_revise(annotation_id, annotator, payload, seconds_spent, client_info)
    except IntegrityError:
        # Another connection replaced the same version at the same moment (the partial unique
        # constraint on current versions stopped this one): answer as a retry would.
        return _annotation_revise(annotation_id, annotator, payload, seconds_spent, client_info)


@transaction.atomic
def _annotation_revise(
    annotation_id: int,
    annotator: User,
    payload: Mapping[str, Any],
    seconds_spent: float | None,
    client_info: Mapping[str, Any],
) -> tuple[Annotation, bool]:
    base = None
    if sql.in_range(Annotation, annotation_id):
        base = (
            Annotation.all_versions.filter(pk=annotation_id, annotator_id=annotator.pk)
            .only("pk", "item_stage_id", "assignment_id")
            .first()
        )
    if base is None or base.assignment_id is None:
        raise NotFound(NO_SUCH_ANSWER)
    assignment_id: int = base.assignment_id  # a version keeps its assignment
    gated = Stage.objects.filter(item_stages=base.item_stage_id).only("pk", "project_id").get()
    if gates.governed(annotator_id=annotator.pk, project_id=gated.project_id):
        current = Annotation.objects.filter(assignment_id=assignment_id).first()
        gates.check(
            annotator_id=annotator.pk, stage=gated, action=gates.CHANGE, answer=current or base
        )
    item_stage = (
        ItemStage.objects.select_for_update(of=("self",))
        .select_related("stage__project", "item")
        .get(pk=base.item_stage_id)
    )
    # Read again under the lock: another change may have committed while this one waited.
    base = Annotation.all_versions.get(pk=base.pk)
    stage = item_stage.stage
    kind = get_kind(stage.kind)
    if not base.is_current:
        current = Annotation.objects.filter(assignment_id=assignment_id).first()
        clean = kind.validate(
            payload, KindContext(stage=stage, item_stage=item_stage, annotator_id=annotator.pk)
        )
        if current is not None and current.supersedes_id == base.pk and current.payload == clean:
            return current, False
        raise Conflict(
            "Your answer to this item was changed since this page was opened (it is now "
            f"version {current.version if current else '?'}); open it again to change it.",
            {"current": current.pk if current else None},
        )
    refusal = change_refusal(base, item_stage, stage)
    if refusal is None:
        paused = (
            Membership.objects.filter(
                project_id=stage.project_id, user_id=annotator.pk, role=Role.ANNOTATOR
            )
            .values_list("is_paused", flat=True)
            .first()
        )
        if paused is None:
            refusal = "You are no longer an annotator of this project, so nothing was changed."
        elif paused:
            refusal = "Your annotation in this project is paused, so nothing was changed."
    if refusal is not None:
        raise Conflict(refusal, {"state": item_stage.state})
    clean = kind.validate(
        payload if isinstance(payload, Mapping) else {},
        KindContext(stage=stage, item_stage=item_stage, annotator_id=annotator.pk),
    )
    if clean == base.payload:
        return base, False
    updated = Annotation.all_versions.filter(pk=base.pk, is_current=True).update(is_current=False)
    if not updated:  # pragma: no cover - the row lock above makes this unreachable
        raise Conflict("Your answer changed meanwhile; open it again to change it.")
    revised = Annotation.all_versions.create(
        item_stage=item_stage,
        assignment_id=assignment_id,
        annotator=annotator,
        payload=clean,
        seconds_spent=seconds_spent,
        client_info=dict(client_info or {}),
        round=base.round,
        phase=base.phase,
        item_version=item_stage.item.version,
        supersedes=base,
        version=base.version + 1,
        is_current=True,
    )
    return revised, True
