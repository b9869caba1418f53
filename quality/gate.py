"""How a pause on a stage holds on every path (pages, htmx, the REST API): an annotator gate
(annotation/gates.py) and the item screen's message.

The gate governs the annotators of projects where a stage's quality rule acts (their answers
are evaluated inside each submit's transaction, ``after_submit``) and anyone with an action in
force in the project. Governed people leave the one-statement lease of PostgreSQL's hot path
for the locked transaction (annotation/services/next_item.py): the price of acting at the
answer that meets the rule, paid only in projects that ask for it. People elsewhere pay
nothing (the condition is read inside statements the engine runs anyway).

A paused annotator is refused the stage's next item, submits, skips and changes (nothing
written) and the item screen tells them, without a word of gold answers or figures (gold stays
silent): their work on the stage is paused by the researchers.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from annotation import gates
from annotation.api import quoted
from annotation.gates import AnnotatorGate
from quality import selectors, services
from quality.models import QualityAction, QualityRule

PAUSED = (
    "Your work on {stage} is paused by the researchers: it gives you no more items. "
    "Contact them if you think this is a mistake."
)


def _table(model: Any) -> str:
    return connection.ops.quote_name(model._meta.db_table)


class QualityGate(AnnotatorGate):
    name = "quality"

    def governs(self, *, annotator: str, project: str) -> str:
        r, a = quoted(QualityRule, "qr"), quoted(QualityAction, "qa")
        return (
            f"EXISTS (SELECT 1 FROM {_table(QualityRule)} qr"
            f" WHERE {r.project_id} = {project} AND {r.acts})"
            f" OR EXISTS (SELECT 1 FROM {_table(QualityAction)} qa"
            f" WHERE {a.project_id} = {project} AND {a.annotator_id} = {annotator}"
            f" AND {a.undone_at} IS NULL)"
        )

    def check(
        self, *, annotator_id: int, stage: Any, action: str, answer: Any = None
    ) -> str | None:
        if action in (gates.NEXT, gates.SUBMIT, gates.SKIP, gates.CHANGE) and (
            selectors.is_paused_on(stage.pk, annotator_id)
        ):
            return PAUSED.format(stage=stage.name)
        return None

    def after_submit(self, *, annotator_id: int, stage: Any) -> None:
        services.quality_evaluate(stage=stage, annotator_id=annotator_id)


def paused_cap(request: Any, stage: Any) -> int | None:
    """No items left for a paused person (annotation.navigation.register_progress_cap), so the
    item screen shows ``paused_message`` instead of its start button. Asked on full-page GETs
    only (one indexed query): the htmx swaps after each answer — the annotator's hot path — find
    no item for a paused person anyway and reach ``paused_message`` by themselves."""
    user = getattr(request, "user", None)
    if getattr(request, "htmx", False) or request.method != "GET" or user is None:
        return None
    if user.is_authenticated and selectors.is_paused_on(stage.pk, user.pk):
        return 0
    return None


def paused_message(request: Any, stage: Any) -> str | None:
    """The item screen found no item: say so when the reason is a pause (called only then,
    annotation.navigation.register_work_pending)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    if selectors.is_paused_on(stage.pk, user.pk):
        return PAUSED.format(stage=stage.name)
    return None
