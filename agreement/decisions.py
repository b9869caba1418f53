"""How a decision is named on every research page: by the policy that made it and the votes
it counted, never by the resolution's status alone.

A resolution's ``status`` says how the votes fell (``majority`` whenever they were not
unanimous), not why the item went where it went: METER's any-reject rule discards an item with
one reject of three, which the status alone would show as "reject · Majority". One function,
``decision_label``, is what the disagreement list, the adjudication queue and the adjudication
page show; it reads the policy's label from the registry (``annotation.policies``).

Also here: who may follow a row's link to the item page (``studio:item``, whose roles are
``studio/access.py``'s ``BROWSE_ROLES``; ``tests/agreement/test_decisions.py`` keeps the two
equal, since this app may not import studio).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from annotation.errors import ApplicationError
from annotation.models import Resolution, Role
from annotation.policies import get_policy

#: The roles that may open an item's page (``studio:item``): the same as studio's
#: ``BROWSE_ROLES``.
ITEM_PAGE_ROLES = frozenset({Role.ADMIN, Role.RESEARCHER, Role.REVIEWER})


def may_open_items(roles: Iterable[str]) -> bool:
    """Whether someone holding ``roles`` in a project may open its items' pages."""
    return bool(ITEM_PAGE_ROLES.intersection(roles))


def policy_label(key: str) -> str:
    """The label a policy registers (``Policy.label``), or its key when no plug-in registers
    it any more."""
    try:
        return get_policy(key).label or key
    except ApplicationError:
        return key


def _shown(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def votes_phrase(resolution: Resolution) -> str:
    """How the counted votes fell, in words ("1 of 3 voted reject", "unanimous, 3 of 3")."""
    votes = {str(key): int(count) for key, count in (resolution.votes or {}).items()}
    total = sum(votes.values()) or resolution.n_annotations
    status = resolution.status
    if status == Resolution.Status.ADJUDICATED:
        return "decided by a reviewer"
    if status == Resolution.Status.MEAN:
        return f"mean of {total} answer{'s' if total != 1 else ''}" if total else "recorded"
    if status == Resolution.Status.NEEDS_ADJUDICATION:
        return "no majority: waiting for a reviewer"
    if status == Resolution.Status.INSUFFICIENT:
        return "too few votes so far"
    if status == Resolution.Status.TIE:
        return "a tie, settled by the stage's default"
    if status == Resolution.Status.UNANIMOUS:
        return f"unanimous, {total} of {total}"
    value = resolution.value
    if value is None:
        return f"{total} vote{'s' if total != 1 else ''}"
    # The decided value's own count: for an any-reject rule, the rejects that decided it.
    counted = votes.get(_shown(value), votes.get(str(value), 0))
    return f"{counted} of {total} voted {_shown(value)}"


def decision_label(resolution: Resolution | None) -> str:
    """The decision in words, naming the policy that made it: "1 of 3 voted reject · Any
    reject discards (METER's raw verification)". Empty for an item not decided yet."""
    if resolution is None:
        return ""
    return f"{votes_phrase(resolution)} · {policy_label(resolution.policy)}"
