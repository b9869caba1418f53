"""Keyset ("cursor") pages of a long list: "Next" / "Previous" links that carry the last row's
sort key instead of a page number, so a page costs the same however deep it is and nobody
counts the whole list (Django's ``Paginator`` counts every row and skips with ``OFFSET``,
which re-reads every row before the page).

The list is a queryset ordered by one timestamp ``key`` (a field or an annotation, never NULL
on a listed row) and then by the primary key, both in the same direction; the caller keeps an
index whose order is that one so each page is an index walk (the disagreement list and the
adjudication queue: ``annotation.models.ItemStage.Meta.indexes``). A row inserted or changed
while someone pages is shown on the page its key falls on: no row of the list as it stands
when a page is read is shown twice or skipped by walking "Next" from the first page.

Hand-written (about eighty lines): DRF's ``CursorPagination`` serves the API's lists but is
bound to DRF requests and responses; the HTML pages need the same walk over a queryset.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet


@dataclass(frozen=True)
class KeysetPage:
    """One page of a keyset walk: its rows, and the cursors of the pages after and before it
    (None when there is none); ``first`` says whether it is the list's first page."""

    rows: Sequence[Any]
    next_cursor: str | None
    previous_cursor: str | None
    first: bool


def encode_cursor(moment: datetime, pk: int) -> str:
    """The cursor of a row (its key and primary key), safe in a URL as it is."""
    text = f"{moment.isoformat()}|{pk}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[datetime, int] | None:
    """The (key, primary key) of ``cursor``, or None for a missing or malformed one (the list
    then starts from its first page, as ``Paginator.get_page`` does for a bad page number)."""
    if not cursor:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        moment, pk = text.rsplit("|", 1)
        return datetime.fromisoformat(moment), int(pk)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None


def keyset_page(
    queryset: QuerySet[Any],
    *,
    key: str,
    per_page: int,
    after: str | None = None,
    before: str | None = None,
    descending: bool = True,
) -> KeysetPage:
    """The page of ``queryset`` (ordered here by ``key`` then ``pk``, newest first when
    ``descending``) that starts right after the row of cursor ``after``, or ends right before
    the row of cursor ``before`` (``after`` wins when both are given), or the first page.
    Reads ``per_page + 1`` rows in one query, walking the list's index from the cursor."""
    position = decode_cursor(after)
    forward = True
    if position is None:
        position = decode_cursor(before)
        forward = position is None
    # Walking away from the list's start goes the list's way; walking back towards it, the
    # other way (then the rows are turned round).
    walk_descending = descending if forward else not descending
    sign = "-" if walk_descending else ""
    rows = queryset.order_by(f"{sign}{key}", f"{sign}pk")
    if position is not None:
        moment, pk = position
        beyond, reach = ("lt", "lte") if walk_descending else ("gt", "gte")
        # The plain range on the key alone lets the index walk start at the cursor; the
        # tie-break on the primary key is a filter on the rows at the cursor's moment.
        rows = rows.filter(
            Q(**{f"{key}__{beyond}": moment}) | Q(**{key: moment, f"pk__{beyond}": pk}),
            **{f"{key}__{reach}": moment},
        )
    found = list(rows[: per_page + 1])
    more = len(found) > per_page
    found = found[:per_page]
    if not forward:
        found.reverse()
    if not forward and not more:
        # Back at the list's start: the first page, full, rather than the rows left over.
        return keyset_page(queryset, key=key, per_page=per_page, descending=descending)
    if not found:
        return KeysetPage(rows=[], next_cursor=None, previous_cursor=None, first=position is None)

    def cursor(row: Any) -> str:
        return encode_cursor(getattr(row, key), row.pk)

    if forward:
        has_next, has_previous = more, position is not None
    else:
        has_next, has_previous = True, more
    return KeysetPage(
        rows=found,
        next_cursor=cursor(found[-1]) if has_next else None,
        previous_cursor=cursor(found[0]) if has_previous else None,
        first=not has_previous,
    )
