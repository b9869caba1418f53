"""Vote resolution: turn the annotations of one item in one stage into a decision.

Pure functions, no Django: the engine's built-in policies (annotation.policies, where every
policy is registered) call :func:`decide` with the vote values of an item stage; the Celery task
stores the returned :class:`Decision`. ``OUTCOMES`` are the outcomes of these built-in rules;
policies of plug-ins may decide others, which stages route (annotation.routing).

Policies
--------
``majority``
    A value held by strictly more than half of the votes wins (status ``unanimous`` when every vote
    agrees, else ``majority``). No strict majority is a tie, handled by the tie policy.
``plurality``
    The unique most frequent value wins even without half of the votes (useful with many options);
    several values sharing the top count is a tie.
``unanimity_keep``
    A keep/discard gate (METER raw verification): the item is rejected when ANY vote is in
    ``reject_values``, accepted otherwise. Never a tie.
``mean``
    Numeric ratings (ExpliCa 1–10 acceptability): the value is the mean; the item is rejected only
    when ``accept_threshold`` is given and the mean is below it.

Tie policies (majority and plurality)
-------------------------------------
``adjudicate``: status ``needs_adjudication``, outcome ``pending`` — a person decides.
``extra_annotation``: status ``tie``, ``needs_more=True``, outcome ``pending`` — ask for one more
vote (the engine caps how many extra votes a stage may request).
``default``: status ``tie``, value ``default``, outcome by whether the default is a reject value.

Confidence (adaptive overlap)
-----------------------------
:func:`majority_confidence` is the engine's built-in confidence in a decided label: the
posterior probability that the leading label would hold a strict majority of every answer the
crowd could give (a Beta posterior of its share). A stage with the policy option ``confidence`` asks one more annotator (up to
its ``max_overlap``) while it stays below the target (annotation/adaptive.py).

Votes
-----
``None`` and NaN entries are not votes (a skipped answer) and are ignored. Votes are counted by
``str(value)`` — the keys of ``Decision.votes`` — so values must not collide as text (``1`` and
``"1"`` in one call is a ValueError). Decisions do not depend on the order of the votes.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

from scipy import stats as scipy_stats

POLICIES = ("majority", "plurality", "unanimity_keep", "mean")
TIE_POLICIES = ("adjudicate", "extra_annotation", "default")
STATUSES = ("unanimous", "majority", "tie", "needs_adjudication", "insufficient", "mean")
OUTCOMES = ("accept", "reject", "pending")

_POLICIES_WITH_TIES = ("majority", "plurality")


@dataclass(frozen=True)
class Decision:
    """The resolution of one item stage.

    ``value`` is the decided category, the mean rating, or None (pending without a default).
    ``status`` is one of :data:`STATUSES`; ``outcome`` one of :data:`OUTCOMES` (``pending`` means a
    person or more votes are needed). ``needs_more`` is True only when the tie policy asks for one
    more annotation. ``votes`` counts votes per category with string keys, sorted by key; it is
    empty for the ``mean`` policy.
    """

    value: Any
    status: str
    outcome: str
    needs_more: bool
    votes: dict[str, int] = field(default_factory=dict)
    #: A new payload for the item (policies that choose or merge versions), carried out by a
    #: stage route of action "revise"; None keeps the item as it is.
    revision: dict[str, Any] | None = None
    #: Why, in a sentence (shown with the resolution and the revision).
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return {
            "value": _plain(self.value),
            "status": self.status,
            "outcome": self.outcome,
            "needs_more": self.needs_more,
            "votes": dict(self.votes),
            "revision": self.revision,
            "reason": self.reason,
        }


def validate_policy(
    *,
    policy: str,
    tie_policy: str = "adjudicate",
    default: Any = None,
    required: int = 1,
    accept_threshold: float | None = None,
) -> None:
    """Raise ValueError with an actionable message when a policy configuration cannot work.

    :func:`decide` calls this itself; services can call it when a stage is configured, so a bad
    setting is refused there rather than when the first item resolves.
    """
    if policy not in POLICIES:
        raise ValueError(
            f"Unknown resolution policy {policy!r}; choose one of {', '.join(POLICIES)}."
        )
    if tie_policy not in TIE_POLICIES:
        raise ValueError(
            f"Unknown tie policy {tie_policy!r}; choose one of {', '.join(TIE_POLICIES)}."
        )
    if isinstance(required, bool) or not isinstance(required, int) or required < 1:
        raise ValueError("required must be a whole number of votes, at least 1.")
    if policy in _POLICIES_WITH_TIES and tie_policy == "default" and default is None:
        raise ValueError("The 'default' tie policy needs a default value to fall back on.")
    if accept_threshold is not None:
        if policy != "mean":
            raise ValueError("accept_threshold applies only to the 'mean' policy.")
        if not _is_number(accept_threshold):
            raise ValueError("accept_threshold must be a number.")


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
    """Decide an item from its votes under ``policy`` (see the module docstring).

    Fewer than ``required`` votes (after dropping None/NaN) gives status ``insufficient``, outcome
    ``pending``. Raises ValueError for an unknown policy, a ``default`` tie policy without a
    default, non-numeric votes under ``mean``, or votes whose text collides.
    """
    validate_policy(
        policy=policy,
        tie_policy=tie_policy,
        default=default,
        required=required,
        accept_threshold=accept_threshold,
    )
    if isinstance(reject_values, str):
        reject_values = (reject_values,)
    cast = [_plain(value) for value in values if not _is_missing(value)]

    if policy == "mean":
        return _decide_mean(cast, required=required, accept_threshold=accept_threshold)

    votes, value_of = _count(cast)
    if len(cast) < required:
        return Decision(None, "insufficient", "pending", False, votes)
    agreement = "unanimous" if len(votes) == 1 else "majority"

    if policy == "unanimity_keep":
        rejecting = {
            key: count for key, count in votes.items() if _is_reject(value_of[key], reject_values)
        }
        if rejecting:
            return Decision(value_of[_most_common(rejecting)], agreement, "reject", False, votes)
        return Decision(value_of[_most_common(votes)], agreement, "accept", False, votes)

    top = max(votes.values())
    leaders = [key for key, count in votes.items() if count == top]
    if policy == "majority":
        decided = 2 * top > len(cast)
    else:  # plurality
        decided = len(leaders) == 1
    if decided:
        value = value_of[leaders[0]]
        return Decision(value, agreement, _outcome(value, reject_values), False, votes)
    return _tie(votes, tie_policy=tie_policy, default=default, reject_values=reject_values)


def majority_confidence(votes: Mapping[str, int], *, prior: float = 1.0) -> float:
    """The posterior probability that the leading label of ``votes`` holds a strict majority.

    Model: the leading label's share of every answer the crowd could give, against all other
    labels together, is Beta(``prior`` + n_lead, ``prior`` + n − n_lead) (``prior`` 1: a
    uniform prior on the share); the result is P(share > 1/2) under it. It depends on the
    votes alone, not on how many labels are on offer, so two agreeing answers weigh the same
    on a yes / no stage and on a five-label one: 2–0 → 0.875, 2–1 → 0.6875, 3–0 → 0.9375,
    3–1 → 0.8125, 4–1 → 0.890625, 3–2 → 0.65625. No votes: 0.5.
    """
    if prior <= 0 or not math.isfinite(prior):
        raise ValueError("prior must be a positive number.")
    counts = [count for count in votes.values() if count > 0]
    total = sum(counts)
    lead = max(counts, default=0)
    return float(scipy_stats.beta.sf(0.5, prior + lead, prior + total - lead))


def _decide_mean(values: list[Any], *, required: int, accept_threshold: float | None) -> Decision:
    for value in values:
        if not _is_number(value):
            raise ValueError(f"The 'mean' policy needs numeric ratings; got {value!r}.")
    if len(values) < required:
        return Decision(None, "insufficient", "pending", False, {})
    # fsum is correctly rounded, so the mean does not depend on the order of the votes.
    mean = math.fsum(float(value) for value in values) / len(values)
    rejected = accept_threshold is not None and mean < accept_threshold
    return Decision(mean, "mean", "reject" if rejected else "accept", False, {})


def _tie(
    votes: dict[str, int], *, tie_policy: str, default: Any, reject_values: Collection[Any]
) -> Decision:
    if tie_policy == "extra_annotation":
        return Decision(None, "tie", "pending", True, votes)
    if tie_policy == "default":
        return Decision(default, "tie", _outcome(default, reject_values), False, votes)
    return Decision(None, "needs_adjudication", "pending", False, votes)


def _count(values: list[Any]) -> tuple[dict[str, int], dict[str, Any]]:
    """Votes per str(value), sorted by key, and the original value behind each key."""
    counts: dict[str, int] = {}
    value_of: dict[str, Any] = {}
    for value in values:
        key = str(value)
        if key in value_of:
            seen = value_of[key]
            if type(seen) is not type(value) or seen != value:
                raise ValueError(
                    f"Votes {seen!r} and {value!r} read the same as text; use one form per category."
                )
        else:
            value_of[key] = value
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items())), value_of


def _most_common(counts: dict[str, int]) -> str:
    """The key with the most votes; among equals the first in text order."""
    return min(counts, key=lambda key: (-counts[key], key))


def _outcome(value: Any, reject_values: Collection[Any]) -> str:
    return "reject" if _is_reject(value, reject_values) else "accept"


def _is_reject(value: Any, reject_values: Collection[Any]) -> bool:
    # True == 1 in Python; a vote 1 must not count as the reject value True (or 0 as False).
    return any(
        isinstance(value, bool) == isinstance(reject, bool) and value == reject
        for reject in map(_plain, reject_values)
    )


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or _is_numpy_nan(value)


def _is_numpy_nan(value: Any) -> bool:
    item = getattr(value, "item", None)
    if item is None or not callable(item) or type(value).__module__ != "numpy":
        return False
    plain = item()
    return isinstance(plain, float) and math.isnan(plain)


def _plain(value: Any) -> Any:
    """numpy scalars as Python scalars, so votes from arrays and from JSON count alike."""
    if type(value).__module__ == "numpy" and callable(getattr(value, "item", None)):
        return value.item()
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value))
