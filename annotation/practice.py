"""Practice feedback: after an annotator answers a practice item (``Item.Purpose.PRACTICE``),
the item screen shows whether the answer matched the item's known answer, and the item's
explanation, before the next item (annotation/views.py, ``stage.html#item``; every kind alike).

**The known answer** is the item stage's ``gold`` (``payload["gold"][<stage slug>]`` at import,
annotation/services/setup.py): a value the vote is compared with, or ``{"min", "max"}`` for a
number; else the item's ``expected_min`` / ``expected_max`` (ratings' practice items). The
vote is the kind's (``TaskKind.vote``), so a structured vote is compared whole. No known
answer: the feedback shows the explanation only.

**The explanation** is the item's ``explanation`` field, or its ``feedback`` field (ratings'
column name). Both are shown only here, after the answer is stored, and only for practice
items: a regular item's or an attention check's known answer is never shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from annotation.kinds.base import TaskKind

#: Item fields that may explain a practice item's answer, in order of preference.
EXPLANATION_FIELDS = ("explanation", "feedback")


@dataclass(frozen=True)
class PracticeFeedback:
    """What the annotator is told after a practice answer: their ``answer`` (the vote), the
    ``known`` answer in words ("" when there is none), whether they ``matched`` it (None: no
    known answer) and the item's ``explanation`` ("" when it has none)."""

    answer: Any
    known: str
    matched: bool | None
    explanation: str


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _shown(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, Mapping):
        return ", ".join(f"{key}: {_shown(part)}" for key, part in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_shown(part) for part in value)
    return str(value)


def _range(low: Any, high: Any) -> str:
    if low is not None and high is not None:
        return f"from {_shown(low)} to {_shown(high)}"
    return f"{_shown(high)} or less" if high is not None else f"{_shown(low)} or more"


def practice_feedback(
    kind: TaskKind, *, answer_payload: Mapping[str, Any], gold: Any, item_payload: Mapping
) -> PracticeFeedback:
    """The feedback on one practice answer (module docstring): ``answer_payload`` as stored,
    ``gold`` the item stage's, ``item_payload`` the item's whole payload (server side)."""
    vote = kind.vote(answer_payload)
    explanation = next(
        (
            str(item_payload[name]).strip()
            for name in EXPLANATION_FIELDS
            if str(item_payload.get(name) or "").strip()
        ),
        "",
    )
    low = high = None
    if isinstance(gold, Mapping) and ("min" in gold or "max" in gold):
        low, high = gold.get("min"), gold.get("max")
    elif gold is not None:
        return PracticeFeedback(vote, _shown(gold), vote == gold, explanation)
    elif (
        item_payload.get("expected_min") is not None or item_payload.get("expected_max") is not None
    ):
        low, high = item_payload.get("expected_min"), item_payload.get("expected_max")
    else:
        return PracticeFeedback(vote, "", None, explanation)
    number, low_n, high_n = _number(vote), _number(low), _number(high)
    matched = number is not None and not (
        (low_n is not None and number < low_n) or (high_n is not None and number > high_n)
    )
    return PracticeFeedback(vote, _range(low, high), matched, explanation)
