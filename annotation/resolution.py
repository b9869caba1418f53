"""Pure vote resolution (no Django). Placeholder kept minimal; see the agreement work."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from typing import Any

POLICIES = ("majority", "unanimity_keep", "mean")
TIE_POLICIES = ("adjudicate", "extra_annotation", "default")


@dataclass(frozen=True)
class Decision:
    value: Any
    status: str
    outcome: str
    needs_more: bool
    votes: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def decide(
    values: Sequence[Any],
    *,
    policy: str,
    tie_policy: str = "adjudicate",
    default: Any = None,
    required: int = 1,
    reject_values: Collection[Any] = ("reject",),
    accept_threshold: float | None = None,
) -> Decision:
    votes = Counter(str(value) for value in values)
    by_key = {str(value): value for value in values}
    if len(values) < required:
        return Decision(None, "insufficient", "pending", False, dict(votes))
    if policy == "mean":
        mean = sum(float(v) for v in values) / len(values)
        outcome = "reject" if accept_threshold is not None and mean < accept_threshold else "accept"
        return Decision(mean, "mean", outcome, False, {})
    status = "unanimous" if len(votes) == 1 else "majority"
    if policy == "unanimity_keep":
        rejected = any(value in reject_values for value in values)
        value = "reject" if rejected else by_key[votes.most_common(1)[0][0]]
        return Decision(value, status, "reject" if rejected else "accept", False, dict(votes))
    (top, top_count), *_ = votes.most_common(1)
    if top_count * 2 > len(values):
        value = by_key[top]
        return Decision(value, status, "reject" if value in reject_values else "accept", False, dict(votes))
    if tie_policy == "extra_annotation":
        return Decision(None, "tie", "pending", True, dict(votes))
    if tie_policy == "default":
        return Decision(default, "tie", "reject" if default in reject_values else "accept", False, dict(votes))
    return Decision(None, "needs_adjudication", "pending", False, dict(votes))
