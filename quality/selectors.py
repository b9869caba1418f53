"""Reads of the quality app: each annotator's figures on a stage (gold accuracy with its
interval, time per item on the server's clock, straight-lining and spread flags, the action
in force), one annotator's gold answers (what an automatic action reads), the actions of a
stage, and whether someone is paused on a stage (the gate and the queue's message)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model

from annotation.api import gold_matches
from annotation.kinds import get_kind
from annotation.models import SUBMISSION_ORDER, Annotation, Item, Membership, Role, Stage
from quality import stats
from quality.models import QualityAction, QualityRule


def _key(vote: Any) -> Hashable:
    """A vote as something countable (structured votes as their JSON)."""
    if isinstance(vote, (dict, list)):
        return json.dumps(vote, sort_keys=True)
    return vote  # a JSON scalar


#: The purposes whose answers count: every one but practice, named positively. A prepared
#: statement's generic plan (its sixth run on, rungwise/settings.py ``prepare_threshold``)
#: estimates ``purpose <> $n`` as 1 - 1/(the number of distinct purposes): no row at all on a
#: project whose items are all regular, and then joins from every item; ``purpose IN (…)`` is
#: estimated as most of them (benchmarks/README.md, "Historic ratings import at a million
#: ratings", branch ``hr10``).
_ANSWER_PURPOSES = tuple(purpose for purpose in Item.Purpose if purpose != Item.Purpose.PRACTICE)


def _answers(stage: Stage, annotator_id: int | None = None) -> Any:
    """The stage's current answers by people (practice items left out), in submission order."""
    rows = Annotation.objects.filter(
        item_stage__stage=stage,
        annotator__isnull=False,
        item_stage__item__purpose__in=_ANSWER_PURPOSES,
    )
    if annotator_id is not None:
        rows = rows.filter(annotator_id=annotator_id)
    return rows.order_by(*SUBMISSION_ORDER)


def gold_counts(stage: Stage, annotator_id: int) -> tuple[int, int]:
    """(gold answers, right ones) of an annotator on a stage: their answers on item stages
    with a known answer (``ItemStage.gold``: silent gold items, annotation/gold.py, attention
    checks, and any item imported with its answer), judged by the engine's one rule
    (``annotation.api.gold_matches``)."""
    kind = get_kind(stage.kind)
    rows = (
        _answers(stage, annotator_id)
        .filter(item_stage__gold__isnull=False)
        .values_list("payload", "item_stage__gold")
    )
    total = right = 0
    for payload, gold in rows:
        total += 1
        right += bool(gold_matches(kind, payload, gold))
    return total, right


def active_action(stage_id: int, annotator_id: int) -> QualityAction | None:
    """The pause or screen-out in force for an annotator on a stage, if any."""
    return (
        QualityAction.objects.filter(stage_id=stage_id, annotator_id=annotator_id)
        .filter(undone_at__isnull=True)
        .first()
    )


def last_undone(stage_id: int, annotator_id: int) -> QualityAction | None:
    """The annotator's most recent undone action on the stage (an automatic action waits for
    more gold answers after it: quality/services.py)."""
    return (
        QualityAction.objects.filter(
            stage_id=stage_id, annotator_id=annotator_id, undone_at__isnull=False
        )
        .order_by("-undone_at", "-pk")
        .first()
    )


def stage_rule(stage: Stage) -> QualityRule | None:
    return QualityRule.objects.filter(stage=stage).first()


@dataclass
class AnnotatorFigures:
    """One row of the quality page."""

    user_id: int
    name: str
    answers: int = 0
    gold: int = 0
    gold_right: int = 0
    interval: stats.Interval | None = None
    median_seconds: float | None = None
    longest_run: int = 0
    top_share: float | None = None
    distance: float | None = None
    flags: list[str] = field(default_factory=list)
    action: QualityAction | None = None
    below_rule: bool = False

    @property
    def accuracy(self) -> float | None:
        return self.gold_right / self.gold if self.gold else None


@dataclass(frozen=True)
class StageQuality:
    stage: Stage
    rule: QualityRule | None
    rows: list[AnnotatorFigures]
    stage_seconds: float | None
    history: list[QualityAction]

    @property
    def flagged(self) -> int:
        return sum(1 for row in self.rows if row.flags or row.below_rule)

    @property
    def acting(self) -> int:
        return sum(1 for row in self.rows if row.action is not None)


def stage_quality(stage: Stage) -> StageQuality:
    """Every annotator of the stage's project (and anyone who answered in the stage) with their
    figures, the actions in force and the stage's action history, flagged rows first."""
    kind = get_kind(stage.kind)
    answers: dict[int, list[Hashable]] = defaultdict(list)
    seconds: dict[int, list[float]] = defaultdict(list)
    figures: dict[int, AnnotatorFigures] = {}
    rows = _answers(stage).values_list(
        "annotator_id", "payload", "item_stage__gold", "assignment__created_at",
        "assignment__finished_at",
    )  # fmt: skip
    for annotator_id, payload, gold, leased, submitted in rows:
        row = figures.setdefault(annotator_id, AnnotatorFigures(annotator_id, ""))
        vote = kind.vote(payload)
        row.answers += 1
        answers[annotator_id].append(_key(vote))
        if gold is not None:
            row.gold += 1
            row.gold_right += bool(gold_matches(kind, payload, gold))
        if leased is not None and submitted is not None:
            # The server's clock: the lease to the first submit (changing an answer later
            # adds nothing), never the browser's figure.
            seconds[annotator_id].append(max((submitted - leased).total_seconds(), 0.0))
    annotators = Membership.objects.filter(
        project_id=stage.project_id, role=Role.ANNOTATOR
    ).values_list("user_id", flat=True)
    for user_id in annotators:
        figures.setdefault(user_id, AnnotatorFigures(user_id, ""))
    names = dict(
        get_user_model().objects.filter(pk__in=list(figures)).values_list("pk", "username")
    )
    actions = {
        action.annotator_id: action
        for action in QualityAction.objects.filter(stage=stage, undone_at__isnull=True)
    }
    rule = stage_rule(stage)
    totals: Counter[Hashable] = Counter(key for keys in answers.values() for key in keys)
    stage_seconds = stats.median_or_none([value for values in seconds.values() for value in values])
    for user_id, row in figures.items():
        own = answers.get(user_id, [])
        others = totals - Counter(own)
        row.name = names.get(user_id, f"annotator {user_id}")
        row.interval = stats.wilson(row.gold_right, row.gold)
        row.median_seconds = stats.median_or_none(seconds.get(user_id, []))
        row.longest_run = stats.longest_run(own)
        row.top_share = stats.top_share(own)
        row.distance = stats.distribution_distance(own, others)
        row.flags = stats.flags(
            answers=own, others=others, seconds=row.median_seconds, stage_seconds=stage_seconds
        )
        row.action = actions.get(user_id)
        row.below_rule = bool(
            rule
            and row.interval
            and row.gold >= rule.min_gold
            and row.interval.high < rule.min_accuracy
        )
    ordered = sorted(
        figures.values(),
        key=lambda row: (
            row.action is None,
            not (row.flags or row.below_rule),
            row.accuracy if row.accuracy is not None else 2.0,
            row.name.lower(),
        ),
    )
    history = list(
        QualityAction.objects.filter(stage=stage).select_related("annotator", "by", "undone_by")[
            :50
        ]
    )
    return StageQuality(stage, rule, ordered, stage_seconds, history)


def is_paused_on(stage_id: int, annotator_id: int) -> bool:
    return QualityAction.objects.filter(
        stage_id=stage_id, annotator_id=annotator_id, undone_at__isnull=True
    ).exists()
