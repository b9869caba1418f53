"""Small template filters of the annotation pages."""

from __future__ import annotations

import json
import re
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from annotation.errors import ApplicationError
from annotation.kinds import get_kind

register = template.Library()

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?![*\w])")
_CODE = re.compile(r"`([^`]+)`")


@register.filter
def kind_label(kind_key: str) -> str:
    try:
        return get_kind(kind_key).label
    except ApplicationError:
        return kind_key


def _inline(text: str) -> str:
    text = escape(text)
    text = _CODE.sub(r"<code>\1</code>", text)
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    return _ITALIC.sub(r"<em>\1</em>", text)


@register.filter
def guidelines(text: str) -> SafeString:
    """Render guideline text: paragraphs, "- " bullet lists, **bold**, *italic*, `code`.
    Everything is escaped first, so guideline authors cannot inject markup."""
    blocks = re.split(r"\n\s*\n", (text or "").strip())
    html = []
    for block in blocks:
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        if all(line.startswith(("- ", "* ")) for line in lines):
            items = "".join(f"<li>{_inline(line[2:])}</li>" for line in lines)
            html.append(f"<ul>{items}</ul>")
        else:
            # Lines of one paragraph are joined, as in Markdown: authors hard-wrap their text.
            html.append(f"<p>{_inline(' '.join(lines))}</p>")
    return mark_safe("".join(html))  # noqa: S308 — every fragment was escaped by _inline


@register.filter
def payload_value(value: Any) -> str:
    """A payload value as readable text: strings as they are, lists joined, the rest as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, str | int | float) for part in value):
        return ", ".join(str(part) for part in value)
    return json.dumps(value, ensure_ascii=False, indent=1)


@register.filter
def humanize_field(name: str) -> str:
    return str(name).replace("_", " ").capitalize()


@register.filter
def lease_minutes(seconds: int) -> str:
    """A lease length in words: "10 minutes", "1 hour", "90 seconds"."""
    seconds = int(seconds or 0)
    if seconds < 120:
        return f"{seconds} seconds"
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{round(seconds / 60)} minutes"


@register.filter
def roles_in_order(roles: Any) -> tuple[str, ...]:
    """A user's role values in the order of Role, annotator first (annotation.access)."""
    from annotation.access import roles_in_order as ordered

    return ordered(roles or ())
