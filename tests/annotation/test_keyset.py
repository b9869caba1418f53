"""Keyset pages (annotation/keyset.py): walking "Next" from the first page shows every row of
the list once, in the list's order, even when rows share a moment and when rows are added
while someone pages; "Previous" walks back over the same pages; a bad cursor is the first
page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from annotation.keyset import decode_cursor, encode_cursor, keyset_page
from annotation.models import Item
from tests.factories import make_items, make_project

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)


def items_at_moments(count: int, *, every: int = 3):
    """``count`` items whose ``created_at`` repeats in runs of ``every`` (ties the id breaks)."""
    project = make_project()
    make_items(project, count)
    for number, pk in enumerate(
        Item.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)
    ):
        Item.objects.filter(pk=pk).update(created_at=START + timedelta(minutes=number // every))
    return project


def walk(queryset, *, per_page: int, descending: bool = True, between=None):
    """Every page from the first by its "Next" cursor: the pages' primary keys."""
    pages, after = [], None
    while True:
        page = keyset_page(
            queryset, key="created_at", per_page=per_page, after=after, descending=descending
        )
        pages.append([row.pk for row in page.rows])
        assert page.first == (after is None)
        if page.next_cursor is None:
            return pages
        if between is not None:
            between(len(pages))
        after = page.next_cursor


@pytest.mark.parametrize("descending", [True, False])
def test_walking_next_shows_every_row_once_in_order(descending):
    project = items_at_moments(23)
    listed = Item.objects.filter(project=project)
    pages = walk(listed, per_page=5, descending=descending)
    assert [len(page) for page in pages] == [5, 5, 5, 5, 3]
    sign = "-" if descending else ""
    expected = list(listed.order_by(f"{sign}created_at", f"{sign}pk").values_list("pk", flat=True))
    assert [pk for page in pages for pk in page] == expected


def test_rows_added_while_paging_never_make_a_row_show_twice_or_go_missing():
    project = items_at_moments(20)
    listed = Item.objects.filter(project=project)
    before = set(listed.values_list("pk", flat=True))
    added: list[int] = []

    def add_rows(pages_read: int) -> None:
        # One newer than anything listed (it belongs on the pages already read) and one older
        # than anything listed (it belongs at the end, still to come), after every page.
        for moment in (START + timedelta(days=1), START - timedelta(days=pages_read)):
            item = make_items(project, 1, prefix=f"late-{pages_read}-{moment.day}")[0]
            Item.objects.filter(pk=item.pk).update(created_at=moment)
            added.append(item.pk)

    pages = walk(listed, per_page=4, between=add_rows)
    shown = [pk for page in pages for pk in page]
    assert len(shown) == len(set(shown))  # no row twice
    assert before <= set(shown)  # every row listed at the start
    older = [pk for pk in added if Item.objects.get(pk=pk).created_at < START]
    assert set(older) <= set(shown)  # rows added beyond the cursor are reached


def test_previous_walks_back_over_the_same_pages():
    project = items_at_moments(17)
    listed = Item.objects.filter(project=project)
    forward = walk(listed, per_page=4)
    page = keyset_page(listed, key="created_at", per_page=4)
    cursors = []
    while page.next_cursor:
        cursors.append(page.next_cursor)
        page = keyset_page(listed, key="created_at", per_page=4, after=page.next_cursor)
    backward = [[row.pk for row in page.rows]]
    while page.previous_cursor:
        page = keyset_page(listed, key="created_at", per_page=4, before=page.previous_cursor)
        backward.append([row.pk for row in page.rows])
    assert backward[::-1] == forward
    assert page.first and page.previous_cursor is None


def test_a_malformed_cursor_is_the_first_page_and_a_cursor_round_trips():
    project = items_at_moments(6)
    listed = Item.objects.filter(project=project)
    first = keyset_page(listed, key="created_at", per_page=2)
    for bad in ("", "nonsense", "%%%", encode_cursor(START, 1)[:-3] + "!!"):
        assert [
            row.pk for row in keyset_page(listed, key="created_at", per_page=2, after=bad).rows
        ] == [row.pk for row in first.rows]
    moment = datetime(2026, 11, 27, 8, 0, 0, 123456, tzinfo=UTC)
    assert decode_cursor(encode_cursor(moment, 42)) == (moment, 42)
