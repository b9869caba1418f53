"""Number formatting for the researchers' pages: fixed decimals, percentages, intervals, and a
dash for figures that are undefined (never "None" or "nan" on a page)."""

from __future__ import annotations

import json
import math
from typing import Any

from django import template
from django.utils.html import format_html

from agreement.selectors import METRIC_LABELS
from agreement.small_sample import small_sample_warning

register = template.Library()
DASH = "—"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


@register.filter
def fixed(value: Any, digits: int = 3) -> str:
    """0.61234 → "0.612"; negative values keep a true minus sign."""
    if _missing(value):
        return DASH
    return f"{float(value):.{int(digits)}f}".replace("-", "−")


@register.filter
def percent(value: Any, digits: int = 0) -> str:
    if _missing(value):
        return DASH
    return f"{100 * float(value):.{int(digits)}f} %"


@register.filter
def seconds(value: Any) -> str:
    if _missing(value):
        return DASH
    value = float(value)
    if value < 60:
        return f"{value:.1f} s"
    return f"{int(value // 60)} min {int(round(value % 60)):02d} s"


@register.simple_tag
def interval(low: Any, high: Any, digits: int = 3) -> str:
    """ "[0.551, 0.688]", or a dash when either bound is missing."""
    if _missing(low) or _missing(high):
        return DASH
    return f"[{fixed(low, digits)}, {fixed(high, digits)}]"


@register.filter
def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric.replace("_", " "))


@register.filter
def per_item(overlap: int, noun: str = "") -> str:
    """A stage's overlap as read: "3 per item" (``noun`` "annotation": "3 annotations per
    item"), or "every annotator" for the stages that give every annotator every item
    (agreement.headlines.EVERYONE_AT_LEAST slots)."""
    from agreement.headlines import EVERYONE_AT_LEAST

    if overlap is not None and overlap >= EVERYONE_AT_LEAST:
        return "every annotator, every item"
    if noun:
        return f"{overlap} {noun}{'' if overlap == 1 else 's'} per item"
    return f"{overlap} per item"


@register.filter
def metric_short(metric: str) -> str:
    """The coefficient's name without its level: "Krippendorff's α" for every α."""
    return metric_label(metric).split(" (")[0]


@register.filter
def metric_level(metric: str) -> str:
    """The level in a metric label ("nominal" for Krippendorff's α (nominal)), or ""."""
    label = metric_label(metric)
    return label.split(" (", 1)[1].rstrip(")") if " (" in label else ""


@register.filter
def vote(value: Any) -> str:
    """A vote value as shown in tables (strings bare, numbers without trailing .0)."""
    if value is None:
        return DASH
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


@register.filter
def get(mapping: Any, key: Any) -> Any:
    """mapping[key] in templates (None when absent)."""
    if mapping is None:
        return None
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def bar(value: Any) -> str:
    """A CSS width for a share in [0, 1] (e.g. "42.0%")."""
    if _missing(value):
        return "0%"
    return f"{max(0.0, min(1.0, float(value))) * 100:.1f}%"


@register.filter
def category_index(value: Any, categories: Any) -> int:
    """The position of a vote among the stage's categories (for colour classes), or 0."""
    try:
        return list(categories).index(value) % 6 + 1
    except (ValueError, TypeError):
        return 0


@register.simple_tag
def small_sample(n_items: Any) -> str:
    """The small-sample warning beside a κ / α over ``n_items`` items
    (``agreement.small_sample``), or nothing."""
    try:
        count = None if n_items is None or n_items == "" else int(n_items)
    except (TypeError, ValueError):
        count = None
    warning = small_sample_warning(count)
    if not warning:
        return ""
    return format_html('<span class="small-sample" role="note">{}</span>', warning)
