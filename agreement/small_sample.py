"""The one rule for a coefficient of agreement over too few items: wherever a page shows κ or
α, it shows this warning beside the value when the value rests on fewer than
``SMALL_SAMPLE_ITEMS`` items (the template tag ``{% small_sample n_items %}`` in
``agreement/templatetags/research_ui.py``; the agreement, METER and Graphs pages use it).

Why a threshold and not the interval alone: with two or three items the interval is either
absurdly wide or, when every item happened to agree, not computed at all, and a bare "κ = 1.000"
reads as a finding. Ten is a floor chosen here, not a rule from the literature: below it the
page says so in words; above it the interval beside the value carries the uncertainty.
"""

from __future__ import annotations

#: Fewer items than this and κ / α is flagged as resting on too few items.
SMALL_SAMPLE_ITEMS = 10


def small_sample_warning(n_items: int | None) -> str:
    """The warning for a κ / α over ``n_items`` items, or "" when there are enough (or the
    count is unknown: nothing is claimed then)."""
    if n_items is None or n_items >= SMALL_SAMPLE_ITEMS:
        return ""
    items = "one item" if n_items == 1 else f"{n_items} items"
    return f"Only {items}: too few to read (fewer than {SMALL_SAMPLE_ITEMS})."
