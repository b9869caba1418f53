"""Per-annotator quality figures as pure functions (CONTRIBUTING.md, "Statistics are pure
functions"): gold accuracy with its Wilson interval (statsmodels' ``proportion_confint``),
straight-lining (the longest run of one answer and the share of the commonest answer) and how
far an annotator's answers are spread from the stage's (total variation distance). No Django;
quality/selectors.py turns rows into the inputs.

The flag rules (the constants below) are written by hand: they are thresholds on these figures,
which no library decides.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from statistics import median

from statsmodels.stats.proportion import proportion_confint

#: The interval's confidence level.
ALPHA = 0.05
#: Straight-lining: at least this many answers before a flag, and a run of one answer at least
#: this long, or one answer on at least this share of them.
MIN_ANSWERS = 10
LONG_RUN = 10
TOP_SHARE = 0.9
#: Answer distribution: total variation distance from the others' answers at least this large.
DISTANCE = 0.5
#: Time per item: a median under this share of the stage's median is flagged as too fast.
FAST_SHARE = 1 / 3


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson(successes: int, total: int) -> Interval | None:
    """The 95 % Wilson score interval of ``successes`` out of ``total`` (None for no trials)."""
    if total <= 0:
        return None
    low, high = proportion_confint(successes, total, alpha=ALPHA, method="wilson")
    return Interval(float(low), float(high))


def longest_run(answers: Sequence[Hashable]) -> int:
    """The length of the longest run of one answer, in the order given."""
    best = run = 0
    previous: object = object()
    for answer in answers:
        run = run + 1 if answer == previous else 1
        previous = answer
        best = max(best, run)
    return best


def top_share(answers: Sequence[Hashable]) -> float | None:
    """The share of the commonest answer (None for no answers)."""
    if not answers:
        return None
    return Counter(answers).most_common(1)[0][1] / len(answers)


def distribution_distance(
    answers: Sequence[Hashable], others: Mapping[Hashable, int]
) -> float | None:
    """Total variation distance (0 = the same spread, 1 = nothing in common) between the
    annotator's answers and the others' counts per answer; None when either side is empty."""
    total_others = sum(others.values())
    if not answers or not total_others:
        return None
    own = Counter(answers)
    values = set(own) | set(others)
    return 0.5 * sum(
        abs(own.get(value, 0) / len(answers) - others.get(value, 0) / total_others)
        for value in values
    )


def median_or_none(values: Sequence[float]) -> float | None:
    return float(median(values)) if values else None


def flags(
    *,
    answers: Sequence[Hashable],
    others: Mapping[Hashable, int],
    seconds: float | None,
    stage_seconds: float | None,
) -> list[str]:
    """Short sentences naming what looks wrong in one annotator's answers (in submission
    order) against the others' (``others``: answer → count) and the stage's median time."""
    found = []
    if len(answers) >= MIN_ANSWERS:
        run, share = longest_run(answers), top_share(answers) or 0.0
        if run >= LONG_RUN:
            found.append(f"the same answer {run} times in a row")
        if share >= TOP_SHARE:
            found.append(f"one answer on {share:.0%} of items")
        distance = distribution_distance(answers, others)
        if distance is not None and distance >= DISTANCE:
            found.append(f"answers spread unlike the others' (distance {distance:.2f})")
    if seconds is not None and stage_seconds and seconds < FAST_SHARE * stage_seconds:
        found.append(f"median {seconds:.1f} s per item, stage {stage_seconds:.1f} s")
    return found
