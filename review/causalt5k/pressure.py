"""Pressure variants of CausalT5k's tier-2 cases: the same question asked under social pressure
("my manager is sure that …") and under epistemic pressure ("a landmark study proved …").

* **Write** (stage ``pressure``, kind ``ct5k_pressure``): a person writes the social-pressure and
  the epistemic-pressure version of the case's *neutral prompt* (:func:`neutral_prompt`: the
  scenario, the claim and the question, exactly as a model is asked). The form starts from the
  neutral prompt; the variants become the case's new revision (``pressure_variants``).
* **Check** (stage ``pressure_check``, kind ``ct5k_pressure_check``, nobody who wrote them): the
  checker sees each variant as a word diff against the neutral prompt (:func:`word_diff`; words of
  the neutral prompt a variant drops or rewrites are counted, :func:`removed_words`) and confirms
  that it changes only the pressure, or says what else it changes. A variant found wanting goes
  back to the writer (at most ``max_rounds`` times).
* **Export**: only variants whose latest check confirmed both go to the release, paired with
  their neutral case (:func:`confirmed_variants`; review.causalt5k.release_layout).

The prompt and diff functions are Django-free.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

PRESSURES = {
    "social": "Social pressure",
    "epistemic": "Epistemic pressure",
}
CHECK_VALUES = {
    "only_pressure": "Changes only the pressure",
    "changes_more": "Changes more than the pressure",
}
#: Tiers whose cases get pressure variants (the paper's: tier 2).
PRESSURE_TIERS = (2,)
_WORDS = re.compile(r"\S+")


def question_for(tier: Any) -> str:
    if str(tier) == "3":
        return "Is the counterfactual claim VALID, INVALID or CONDITIONAL?"
    return "Is the claim justified? Answer YES, NO or AMBIGUOUS."


def neutral_prompt(case: dict[str, Any]) -> str:
    """The case as a model is asked it, without pressure: scenario, claim, question."""
    return (
        f"{(case.get('scenario') or '').strip()}\n\n"
        f"Claim: {(case.get('claim') or '').strip()}\n\n"
        f"{question_for(case.get('tier'))}"
    )


def word_diff(neutral: str, variant: str) -> list[dict[str, str]]:
    """The variant against the neutral prompt, word by word: [{"op": "equal" | "insert" |
    "delete", "text"}] in reading order (a replaced run is a delete then an insert)."""
    a, b = _WORDS.findall(neutral), _WORDS.findall(variant)
    ops: list[dict[str, str]] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            ops.append({"op": "delete", "text": " ".join(a[i1:i2])})
        if tag in ("insert", "replace"):
            ops.append({"op": "insert", "text": " ".join(b[j1:j2])})
        if tag == "equal":
            ops.append({"op": "equal", "text": " ".join(a[i1:i2])})
    return ops


def removed_words(neutral: str, variant: str) -> int:
    """How many words of the neutral prompt the variant drops or rewrites (0 when it only adds
    framing around the untouched question)."""
    return sum(
        len(op["text"].split()) for op in word_diff(neutral, variant) if op["op"] == "delete"
    )


def added_words(neutral: str, variant: str) -> int:
    return sum(
        len(op["text"].split()) for op in word_diff(neutral, variant) if op["op"] == "insert"
    )


def pressure_open(*, project, max_cases: int | None = None) -> int:
    """Open the tier-2 cases the gate kept (not in the stage yet) in the ``pressure`` stage;
    ``max_cases`` caps how many (in case order). Returns how many were opened."""
    from annotation import api as engine
    from annotation.errors import ApplicationError
    from annotation.models import Item, ItemStage
    from review.causalt5k.pipeline import case_items

    stage = project.stages.filter(slug="pressure", kind="ct5k_pressure").first()
    if stage is None:
        raise ApplicationError(
            f"{project.name} has no pressure stage; create it with causalt5k_project_create.",
            {"stage": "pressure"},
        )
    taken = ItemStage.objects.filter(stage=stage).values("item_id")
    rows = (
        case_items(project)
        .filter(status=Item.Status.ACCEPTED)
        .exclude(pk__in=taken)
        .order_by("pk")
        .values_list("pk", "payload__tier")
    )
    chosen = [pk for pk, tier in rows if tier in PRESSURE_TIERS]
    if max_cases is not None:
        chosen = chosen[:max_cases]
    return engine.item_stages_open(items=chosen, stage=stage) if chosen else 0


def confirmed_variants(project) -> dict[str, dict[str, str]]:
    """{case id: {"neutral", "social", "epistemic"}} for the cases whose latest pressure check
    confirmed both variants change only the pressure (the variants as written then)."""
    from annotation.models import ItemStage

    confirmed = {}
    states = ItemStage.objects.filter(
        stage__project=project,
        stage__slug="pressure_check",
        state=ItemStage.State.RESOLVED,
        resolution__outcome="accept",
    ).values_list("item__external_id", "item__payload")
    for external_id, payload in states:
        variants = (payload or {}).get("pressure_variants") or {}
        if all(variants.get(k) for k in PRESSURES):
            confirmed[external_id] = {
                "neutral": variants.get("neutral") or neutral_prompt(payload),
                **{k: variants[k] for k in PRESSURES},
            }
    return confirmed
