"""The ``graph_question`` kind: a CARL-GT-style question answered yes / no (keys ``y`` / ``n``)
or with a number (typed, Enter submits).

Item payload (graphs.services): ``question``, ``task``, ``answer_type`` ("yes_no" |
"number"), ``graph_id``, ``graph_size``, and the true ``answer``; generated questions also carry
the graph (``nodes``, ``edges``) and the nodes asked about (``x``, ``y``, ``given``).
Annotators see the question, the task and the answer type (the allow-list) and the graph drawn
as SVG (``derived_fields``) — never the answer, nor where the question came from.

Payload: ``{"value": "yes" | "no"}`` or ``{"value": <number>}``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from annotation.errors import ApplicationError
from annotation.kinds import AgreementSpec, KindContext, TaskKind
from graphs.carlgt import TASKS

VISIBLE_FIELDS = ("question", "task", "answer_type")


class GraphQuestionKind(TaskKind):
    key = "graph_question"
    label = "Causal-graph question (CARL-GT-style): yes / no or a number"
    template = "graphs/question.html#form"
    display_template = "graphs/question.html#display"
    policies = ("graph_record",)
    default_policy = "graph_record"
    vote_field = "value"
    agreement = AgreementSpec(None)  # scored against the computed answers (the Graphs tab)
    default_visible_fields = VISIBLE_FIELDS

    def derived_fields(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        from graphs.svg import dag_svg

        derived: dict[str, Any] = {"task_label": TASKS.get(payload.get("task"), "question")}
        if payload.get("edges"):
            x, y = payload.get("x"), payload.get("y")
            derived["graph_svg"] = dag_svg(
                payload["edges"],
                payload.get("nodes"),
                pair=tuple(n for n in (x, y) if n),
                given=tuple(payload.get("given") or ()),
            )
        return derived

    def choices(self, context: KindContext) -> list[Any] | None:
        """``yes`` / ``no`` for a yes-or-no question, None (any number) for the others or
        without an item: what a hand decision on the item page offers (studio/item_views.py)
        and a model's answer schema allows."""
        item = context.item
        if item is None or item.payload.get("answer_type", "yes_no") == "number":
            return None
        return ["yes", "no"]

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"value": (data.get("value") or "").strip()}

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        item = context.item
        answer_type = (item.payload if item is not None else {}).get("answer_type", "yes_no")
        value = payload.get("value")
        if answer_type == "number":
            number = None
            if isinstance(value, int | float) and not isinstance(value, bool):
                number = float(value)
            elif isinstance(value, str):
                try:
                    number = float(value.replace(",", ".").strip())
                except ValueError:
                    number = None
            if number is None or not math.isfinite(number):
                raise ApplicationError(
                    f"Type a number (got {value!r}).", {"value": "a number, e.g. -0.25"}
                )
            return {"value": number}
        if isinstance(value, str) and value.lower() in ("yes", "no", "y", "n"):
            return {"value": "yes" if value.lower().startswith("y") else "no"}
        raise ApplicationError(f"Answer yes or no (got {value!r}).", {"value": "yes or no"})

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("y", "yes"), ("n", "no"), ("Enter", "submit the number typed")]
