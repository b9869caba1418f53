"""The data manager's columns: their keys, headings and how one row spells them.

A column key is one of ``ITEM_COLUMNS``, ``stage:<stage slug>:<STAGE_COLUMNS key>`` or
``field:<dotted payload path>``. Payload paths are discovered from a sample of the project's
items (``payload_paths``); the gold field (``annotation.api.GOLD_FIELD``) is offered only to
members who see annotators and gold (``annotation.api.sees_annotators``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from annotation.api import GOLD_FIELD
from annotation.models import Item, Stage

#: Item columns: key -> heading. "id" (the external id) is always shown first.
ITEM_COLUMNS = {
    "status": "Status",
    "version": "Version",
    "source": "Source",
    "group": "Group",
    "purpose": "Purpose",
    "batch": "Import batch",
    "tags": "Tags",
    "created": "Added",
}
#: Per-stage columns: key -> heading suffix.
STAGE_COLUMNS = {
    "state": "state",
    "answers": "answers",
    "decision": "decision",
    "agreement": "agreement",
}
#: Items read to discover payload paths; paths nested deeper than this are not offered.
PATH_SAMPLE = 200
PATH_DEPTH = 3
MAX_PATHS = 60


@dataclass(frozen=True)
class Column:
    """One column: its ``key`` (as stored and in forms) and its ``heading``."""

    key: str
    heading: str


def _paths(value: Any, prefix: str, depth: int) -> Iterable[str]:
    """Dotted paths to the leaves (and lists) of a JSON object, ``depth`` levels down."""
    for key, child in value.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(child, dict) and child and depth > 1:
            yield from _paths(child, path, depth - 1)
        else:
            yield path


def payload_paths(payloads: Iterable[dict[str, Any]], *, named: bool) -> list[str]:
    """The payload paths found in ``payloads`` (a sample of the project's items), sorted; the
    gold field left out unless ``named``."""
    found: set[str] = set()
    for payload in payloads:
        if isinstance(payload, dict):
            found.update(_paths(payload, "", PATH_DEPTH))
    return sorted(path for path in found if named or path.split(".")[0] != GOLD_FIELD)[:MAX_PATHS]


def available_columns(stages: Iterable[Stage], paths: Iterable[str]) -> list[Column]:
    """Every column the project offers, in the chooser's order."""
    columns = [Column(key, heading) for key, heading in ITEM_COLUMNS.items()]
    for stage in stages:
        columns += [
            Column(f"stage:{stage.slug}:{key}", f"{stage.name}: {suffix}")
            for key, suffix in STAGE_COLUMNS.items()
        ]
    columns += [Column(f"field:{path}", path) for path in paths]
    return columns


def default_columns(stages: Iterable[Stage]) -> list[str]:
    """The columns shown until a member chooses: status, each stage's state and answers, the
    tags and when the item was added."""
    keys = ["status"]
    for stage in stages:
        keys += [f"stage:{stage.slug}:state", f"stage:{stage.slug}:answers"]
    return keys + ["tags", "created"]


def field_value(payload: Any, path: str) -> Any:
    """The value at a dotted ``path`` of a payload, None where there is none."""
    value = payload
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def cell(item: Item, key: str, stage_rows: dict[str, dict[str, Any]], tags: list[str]) -> Any:
    """One row's value of column ``key``: ``stage_rows`` is {stage slug: stage cells}
    (``selectors.stage_cells``), ``tags`` the item's tag names."""
    if key.startswith("field:"):
        return field_value(item.payload, key.removeprefix("field:"))
    if key.startswith("stage:"):
        _, slug, part = key.split(":", 2)
        return stage_rows.get(slug, {}).get(part)
    if key == "status":
        return item.get_status_display()
    if key == "batch":
        return item.import_batch.filename if item.import_batch else None
    if key == "tags":
        return ", ".join(tags)
    if key == "created":
        return item.created_at
    return getattr(item, key)
