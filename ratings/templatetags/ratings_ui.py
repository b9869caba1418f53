"""Template filters of the ratings pages."""

from __future__ import annotations

import math
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from ratings.kinds import marked_text

register = template.Library()


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


@register.filter
def fixed(value: Any, digits: int = 3) -> str:
    """A number with `digits` decimals; blank for None/NaN."""
    number = _number(value)
    return "–" if number is None else f"{number:.{int(digits)}f}"


@register.filter
def percent(value: Any, digits: int = 1) -> str:
    number = _number(value)
    return "–" if number is None else f"{100 * number:.{int(digits)}f} %"


@register.filter
def marked(payload: Any) -> SafeString:
    """An item payload's text with its connective marked (as on the rating screen)."""
    payload = payload or {}
    return marked_text(payload.get("text", ""), payload.get("mark"))


@register.filter
def svg(document: str) -> SafeString:
    """An SVG document produced by ratings.plots (matplotlib escapes every text it writes)."""
    return mark_safe(document or "")  # noqa: S308 — generated server-side, text escaped
