"""Template filters of the import and release pages."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def _inline(text: str) -> str:
    text = escape(text)
    text = _CODE.sub(r"<code>\1</code>", text)
    return _BOLD.sub(r"<strong>\1</strong>", text)


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1]
    cells = re.split(r"(?<!\\)\|", inner)
    return [cell.strip().replace("\\|", "|").replace("\\\\", "\\") for cell in cells]


@register.filter
def datasheet(text: str) -> SafeString:
    """Render the Markdown subset the datasheet uses (headings, paragraphs, pipe tables, fenced
    code). Everything is escaped first: project names and notes cannot inject markup."""
    lines = (text or "").splitlines()
    html: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            block = []
            index += 1
            while index < len(lines) and not lines[index].startswith("```"):
                block.append(lines[index])
                index += 1
            html.append(f"<pre>{escape(chr(10).join(block))}</pre>")
        elif line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")) + 1, 4)
            html.append(f"<h{level}>{_inline(line.lstrip('#').strip())}</h{level}>")
        elif line.startswith("|"):
            rows = []
            while index < len(lines) and lines[index].startswith("|"):
                rows.append(lines[index])
                index += 1
            index -= 1
            header, body = _cells(rows[0]), [_cells(row) for row in rows[2:]]
            head = "".join(f"<th>{_inline(cell)}</th>" for cell in header)
            rows_html = "".join(
                "<tr>" + "".join(f"<td>{_inline(cell)}</td>" for cell in row) + "</tr>"
                for row in body
            )
            html.append(
                f'<table class="table"><thead><tr>{head}</tr></thead><tbody>{rows_html}</tbody></table>'
            )
        elif line.strip():
            paragraph = [line]
            while (
                index + 1 < len(lines)
                and lines[index + 1].strip()
                and not lines[index + 1].startswith(("#", "|", "```"))
            ):
                index += 1
                paragraph.append(lines[index])
            html.append(f"<p>{_inline(' '.join(paragraph))}</p>")
        index += 1
    return mark_safe("".join(html))  # noqa: S308 — every fragment was escaped


@register.filter
def duration(seconds) -> str:
    """12 s, 3 min 05 s, 1 h 02 min."""
    if seconds is None:
        return "—"
    if float(seconds) < 1:
        return f"{float(seconds):.2f} s"
    if float(seconds) < 10:
        return f"{float(seconds):.1f} s"
    seconds = int(round(float(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@register.filter
def filesize(size) -> str:
    size = float(size or 0)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} GB"  # pragma: no cover


@register.inclusion_tag("imports/includes/columns.html")
def import_columns(slug: str, schema_name: str, formats: str = "csv") -> dict:
    """The column table of the schema registered as ``schema_name`` with a download of its
    sample file in each of ``formats`` ("csv", "jsonl" or "csv jsonl"), for a workflow's own
    import page (``imports.views.schema_sample``)."""
    from django.urls import reverse

    from imports.selectors import registered_schema

    schema = registered_schema(schema_name)
    if schema is None:
        raise template.TemplateSyntaxError(f"no import schema {schema_name!r} is registered")
    labels = {"csv": "Download a sample file (CSV)", "jsonl": "Download a sample file (JSON Lines)"}
    return {
        "columns": schema.describe(),
        "samples": [
            {
                "label": labels[fmt],
                "url": reverse("imports:schema_sample", args=[slug, schema.name, fmt]),
            }
            for fmt in formats.split()
        ],
    }
