"""The vocabulary of CausalT5k's validation stages (Django-free): review verdicts and attacks,
the fields a reviewer or author may edit, the scoring rubric and its composite.

The default rubric is the paper's: four dimensions scored 0–10 — structural validity,
ground-truth agreement, self-containment, ecological realism — with equal weights, composite
0–10; a case is kept when the mean composite of its reviewers is at least 9.0. A stage may set
its own criteria, scales and weights (``clean_rubric``, called by the kind's validate_config).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from review.causalt5k.vocab import LABELS_T3, LABELS_T12, TRAPS

VERDICTS = {
    "pass": "Pass: nothing breaks it",
    "minor": "Minor revision (edit in place)",
    "major": "Major restructure (back to the author)",
    "remove": "Remove",
}
#: verdict → the policy's outcome (routed by the review stage).
VERDICT_OUTCOMES = {"pass": "accept", "minor": "revise", "major": "major", "remove": "remove"}

ATTACKS = {
    "label_wrong": "The gold label is wrong",
    "trap_mislabelled": "Trap or design mislabelled",
    "not_self_contained": "Not self-contained",
    "ambiguous": "Ambiguous",
    "unrealistic": "Unrealistic",
    "answer_leaked": "Answer leaked in the scenario",
    "duplicate": "Duplicate of another case",
}

#: What a reviewer (minor revision) or an author (major restructure) may edit, with the widget.
EDITABLE_FIELDS = {
    "scenario": ("Scenario", "text"),
    "claim": ("Claim", "text"),
    "label": ("Gold label", "label"),
    "trap": ("Trap (W) or design (S)", "trap"),
    "rationale": ("Rationale", "text"),
    "key_insight": ("Key insight", "text"),
    "pivotal_question": ("Pivotal question", "text"),
    "refusal_template": ("Wise refusal", "text"),
}

#: The whole case as a reviewer sees it (gold answer included: they try to break it).
CASE_FIELDS = (
    "case_id",
    "tier",
    "pearl_level",
    "domain",
    "domain_name",
    "subdomain",
    "scenario",
    "claim",
    "label",
    "variables",
    "trap",
    "trap_name",
    "trap_family",
    "difficulty",
    "causal_structure",
    "key_insight",
    "rationale",
    "missing_info",
    "pivotal_question",
    "refusal_template",
    "conditional_answers",
    "counterfactual_antecedent",
    "invariants",
    "reasoning_trace",
)

DEFAULT_RUBRIC = [
    {
        "key": "structural_validity",
        "label": "Structural validity",
        "min": 0,
        "max": 10,
        "weight": 1,
    },
    {"key": "ground_truth", "label": "Ground-truth agreement", "min": 0, "max": 10, "weight": 1},
    {"key": "self_containment", "label": "Self-containment", "min": 0, "max": 10, "weight": 1},
    {"key": "ecological_realism", "label": "Ecological realism", "min": 0, "max": 10, "weight": 1},
]
DEFAULT_GATE = 9.0
DEFAULT_MAX_DISTANCE = 2.0
COMPOSITE_MAX = 10.0


class RubricError(ValueError):
    """A rubric that cannot work; the message names the criterion."""


def labels_for(tier: Any) -> tuple[str, ...]:
    return LABELS_T3 if str(tier) == "3" else LABELS_T12


def trap_choices() -> dict[str, str]:
    return dict(TRAPS)


def clean_rubric(criteria: Any) -> list[dict[str, Any]]:
    """A stage's rubric, checked: a non-empty list of {key, label, min, max, weight} with
    distinct keys, whole-number scales min < max, weights > 0 (weights are relative)."""
    if criteria is None:
        return [dict(c) for c in DEFAULT_RUBRIC]
    if not isinstance(criteria, list) or not criteria:
        raise RubricError("rubric must be a non-empty list of criteria.")
    clean, seen = [], set()
    for index, criterion in enumerate(criteria):
        where = f"rubric[{index}]"
        if not isinstance(criterion, Mapping):
            raise RubricError(f"{where}: a criterion is {{key, label, min, max, weight}}.")
        key = criterion.get("key")
        if not isinstance(key, str) or not key.isidentifier():
            raise RubricError(f"{where}: key must be a name like 'self_containment'.")
        if key in seen:
            raise RubricError(f"{where}: the key {key!r} appears twice.")
        seen.add(key)
        low, high = criterion.get("min", 0), criterion.get("max", 10)
        for name, value in (("min", low), ("max", high)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise RubricError(f"{where} ({key}): {name} must be a whole number.")
        if low >= high:
            raise RubricError(f"{where} ({key}): min must be below max.")
        weight = criterion.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
            raise RubricError(f"{where} ({key}): weight must be a positive number.")
        label = str(criterion.get("label") or key.replace("_", " ").capitalize())[:100]
        clean.append({"key": key, "label": label, "min": low, "max": high, "weight": weight})
    return clean


def composite(scores: Mapping[str, Any], rubric: list[dict[str, Any]]) -> float:
    """The weighted mean of the scores, each rescaled to 0–10 by its criterion's scale, on 0–10
    (with the default rubric: the plain mean of the four scores)."""
    total = sum(c["weight"] for c in rubric)
    value = sum(c["weight"] * (scores[c["key"]] - c["min"]) / (c["max"] - c["min"]) for c in rubric)
    return round(COMPOSITE_MAX * value / total, 4)


def gate_decision(
    composites: list[float], *, gate: float, max_distance: float
) -> tuple[str, float | None, str]:
    """The scoring rule on the reviewers' composites, in submission order: ("more", None, why)
    when the first two are more than ``max_distance`` apart and no third has scored; otherwise
    ("keep" | "drop", the mean, why). With three, the mean of the two closest (the outlier
    dropped; the earliest pair on a tie)."""
    if len(composites) < 2:
        mean = composites[0] if composites else None
        if mean is None:
            return "more", None, "no scores"
        used = composites
    elif len(composites) == 2:
        if abs(composites[0] - composites[1]) > max_distance:
            return (
                "more",
                None,
                f"the reviewers are {abs(composites[0] - composites[1]):.1f} apart "
                f"(more than {max_distance:g}): a third reviewer scores",
            )
        used = composites
    else:
        first3 = composites[:3]
        pairs = [(0, 1), (0, 2), (1, 2)]
        i, j = min(pairs, key=lambda p: abs(first3[p[0]] - first3[p[1]]))
        used = [first3[i], first3[j]]
    mean = round(sum(used) / len(used), 4)
    verdict = "keep" if mean >= gate else "drop"
    why = f"composite mean {mean:.2f} {'≥' if verdict == 'keep' else '<'} gate {gate:g}"
    if len(composites) >= 3:
        why += " (the two closest of three reviewers)"
    return verdict, mean, why
