"""Adaptive overlap for categorical stages: start with ``overlap`` annotators per item, ask one
more while the decision is not confident enough, stop at ``max_overlap``.

A stage of a policy with ties (``majority``, ``plurality``) turns it on with the policy option
``confidence`` (a probability from 0.5 to 0.999) and, optionally, ``confidence_measure`` (the
key of a registered measure; ``beta`` by default). With ``overlap`` 2, tie policy
``extra_annotation`` and ``confidence`` 0.85, two agreeing answers settle an item (0.875), a
1–1 split asks a third annotator (a tie), 2–1 a fourth (0.69), 3–1 a fifth (0.81); the stage's
``max_overlap`` (0 = overlap + 2) caps it, and at the cap the policy's decision stands.

Where it acts: ``annotation.services.outcomes.item_stage_resolve``, under the item stage's row
lock, after the policy decided and before the route is followed: one more slot is added to
``target_count`` exactly as a tie's ``extra_annotation`` does, so the slot counters, leases and
the overlap CHECK (``submitted + leased ≤ target``) hold as with a fixed overlap.

**The measure interface.** A measure is a callable taking a :class:`ConfidenceQuestion` (the
item stage's id, the decided value, the votes per label, the number of labels the kind offers)
and returning the probability, from 0 to 1, that the decided value is right. The built-in
``beta`` measure is :func:`annotation.resolution.majority_confidence` (the Beta posterior of
the leading label's share against all other labels, with a uniform prior). A model that estimates annotators' reliability (a Dawid–Skene
posterior stored per item stage, say) registers its own with
:func:`register_confidence_measure` and reads whatever it stored for ``item_stage_id``.

Django-free: ``annotation.policies`` validates the options with :func:`validate_options`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from annotation.resolution import majority_confidence

#: The policy options adaptive overlap adds to the policies with ties.
OPTIONS = ("confidence", "confidence_measure")
DEFAULT_MEASURE = "beta"
#: The range of a confidence target: below 0.5 a 2–1 split would already pass.
LOWEST_TARGET, HIGHEST_TARGET = 0.5, 0.999


@dataclass(frozen=True)
class ConfidenceQuestion:
    """What a confidence measure is asked about one decided item stage."""

    item_stage_id: int
    value: Any
    votes: Mapping[str, int]
    #: How many labels the stage's kind offers (at least the number voted for).
    categories: int


ConfidenceMeasure = Callable[[ConfidenceQuestion], float]


def _beta(question: ConfidenceQuestion) -> float:
    return majority_confidence(question.votes)


MEASURES: dict[str, ConfidenceMeasure] = {DEFAULT_MEASURE: _beta}


def register_confidence_measure(key: str, measure: ConfidenceMeasure) -> None:
    """Make ``measure`` available as ``confidence_measure`` ``key`` (a plug-in calls this from
    its ``AppConfig.ready()``)."""
    if not key:
        raise ValueError("a confidence measure needs a key")
    MEASURES[key] = measure


def validate_options(options: Mapping[str, Any]) -> None:
    """ValueError with a sentence a person can act on when the adaptive options cannot work."""
    target = options.get("confidence")
    if target is not None and (
        isinstance(target, bool)
        or not isinstance(target, (int, float))
        or not math.isfinite(target)
        or not LOWEST_TARGET <= target <= HIGHEST_TARGET
    ):
        raise ValueError(
            f"confidence must be a probability from {LOWEST_TARGET} to {HIGHEST_TARGET} "
            f"(e.g. 0.85); got {target!r}."
        )
    measure = options.get("confidence_measure")
    if measure is not None:
        if target is None:
            raise ValueError("confidence_measure needs a confidence target beside it.")
        if measure not in MEASURES:
            raise ValueError(
                f"Unknown confidence_measure {measure!r}; choose one of "
                f"{', '.join(sorted(MEASURES))}."
            )


@dataclass(frozen=True)
class Shortfall:
    """A decision below its stage's confidence target."""

    confidence: float
    target: float

    def reason(self, *, at_cap: int | None = None) -> str:
        said = f"confidence {self.confidence:.2f} is below the target {self.target:.2f}"
        if at_cap is not None:
            return f"{said}, but the stage's cap of {at_cap} annotators is reached"
        return f"{said}: one more annotator asked"


def shortfall(question: ConfidenceQuestion, options: Mapping[str, Any]) -> Shortfall | None:
    """The shortfall of a decided item stage under the stage's policy ``options``; None when
    the stage is not adaptive or the decision is confident enough."""
    target = options.get("confidence")
    if target is None:
        return None
    measure = MEASURES[options.get("confidence_measure") or DEFAULT_MEASURE]
    confidence = float(measure(question))
    if confidence >= float(target):
        return None
    return Shortfall(confidence, float(target))
