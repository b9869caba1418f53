"""Simulated METER annotators with set accuracies, driven through the real services
(``review.meter.demo.drive``: leases, submits, resolution), so that what the METER tab and the
agreement app report can be checked against a planted truth.

A binary stage (verify: keep / reject; filter: keep / discard) has a planted answer per item:
"keep" with probability ``prevalence`` (fixed by the seed and the item's external id). An annotator of accuracy ``a``
gives it with probability ``a``, the other answer otherwise (a reject names a random reason, a
discard a random failed criterion). With every annotator at accuracy ``a``, Fleiss' κ is then
``expected_kappa(a, prevalence)``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

from annotation.models import Stage
from review.meter.demo import drive
from review.meter.entries import CRITERIA, LEVELS, VERIFY_REASONS


def _uniform(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` (not by the order work is handed out)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def planted_keep(external_id: str, *, prevalence: float, seed: int) -> bool:
    return _uniform(seed, external_id) < prevalence


def expected_kappa(accuracy: float, prevalence: float) -> float:
    """Fleiss' κ in the population for raters of one accuracy on a binary planted truth: the
    observed agreement a² + (1 − a)² against chance from the share q of "keep" answers."""
    observed = accuracy**2 + (1 - accuracy) ** 2
    keep = prevalence * accuracy + (1 - prevalence) * (1 - accuracy)
    chance = keep**2 + (1 - keep) ** 2
    return (observed - chance) / (1 - chance)


def simulate_binary_stage(
    stage: Stage,
    people: Sequence[Any],
    accuracies: Sequence[float],
    *,
    prevalence: float = 0.6,
    seed: int = 0,
) -> int:
    """Every open item of a verify or filter stage answered by ``people`` (accuracy by index);
    returns the number of annotations."""
    if stage.kind not in ("meter_verify", "meter_filter"):
        raise ValueError(f"{stage.kind} is not a binary METER stage")
    negative = "reject" if stage.kind == "meter_verify" else "discard"

    def answer(index: int, item: Any, phase: str) -> dict[str, Any]:
        # Every draw is fixed by (seed, item, annotator): the same answers whatever the order
        # the engine hands items out in, and whatever ids the database gives.
        truth = planted_keep(item.external_id, prevalence=prevalence, seed=seed)
        right = _uniform(seed, item.external_id, index, "right") < accuracies[index]
        says_keep = truth if right else not truth
        rng = random.Random(f"{seed}:{item.external_id}:{index}")
        if says_keep:
            return {"value": "keep"} if negative == "reject" else {"value": "keep", "failed": []}
        if negative == "reject":
            return {"value": "reject", "reason": rng.choice(list(VERIFY_REASONS))}
        level, criterion = rng.choice(list(LEVELS)), rng.choice(list(CRITERIA))
        return {"value": "discard", "failed": [f"L{level}.{criterion}"]}

    return drive(stage, people, answer)
