"""The data manager's search (annotation/search.py): every item is queued or indexed, whatever
writes it, so a search finds it before the indexing and after; a changed item is found by its
new content only; a deleted one leaves nothing behind. Runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import Item, ItemSearch, ItemSearchPending
from annotation.search import item_search_index, items_containing, items_waiting_count
from annotation.tasks import item_search_index as item_search_index_task
from tests.factories import make_items, make_project

pytestmark = pytest.mark.django_db


def _found(project, text: str) -> set[str]:
    items = Item.objects.filter(project=project)
    return set(
        items_containing(items, text, project_id=project.pk).values_list("external_id", flat=True)
    )


def _queued(project) -> set[str]:
    return set(
        Item.objects.filter(
            project=project, pk__in=ItemSearchPending.objects.values("item_id")
        ).values_list("external_id", flat=True)
    )


def test_items_are_queued_by_the_database_whatever_writes_them():
    """The triggers (migration 0015_item_search_table) queue items written by a service, by a
    bare ORM create and by a bulk create alike: if a migration drops them, this fails."""
    project = make_project()
    make_items(project, 3)
    Item.objects.create(project=project, external_id="bare", payload={"text": "x"})
    Item.objects.bulk_create([Item(project=project, external_id="bulk", payload={"t": 1})])
    assert _queued(project) == {"item-00000", "item-00001", "item-00002", "bare", "bulk"}
    assert items_waiting_count(project.pk) == 5
    assert not ItemSearch.objects.filter(project_id=project.pk).exists()


def test_search_finds_every_match_before_and_after_the_indexing():
    project = make_project()
    other = make_project()
    make_items(project, 12)
    Item.objects.create(project=project, external_id="odd-one", payload={"animal": "Quokka"})
    make_items(other, 3, prefix="other")  # another project's items never match
    Item.objects.create(project=other, external_id="quokka-elsewhere", payload={})
    expectations = {
        "quokka": {"odd-one"},
        "ITEM-0001": {"item-00010", "item-00011"},
        "river ROSE": {f"item-{index:05d}" for index in range(12)},
        "nothing like this": set(),
    }
    before = {text: _found(project, text) for text in expectations}
    assert item_search_index(chunk=5) == 12 + 1 + 3 + 1  # several chunks, every project
    assert not ItemSearchPending.objects.exists()
    assert ItemSearch.objects.filter(project_id=project.pk).count() == 13
    after = {text: _found(project, text) for text in expectations}
    assert before == after == expectations
    assert item_search_index() == 0  # nothing left: running again changes nothing


def test_partly_indexed_project_is_searched_whole():
    """Indexed and queued items in one search: nothing is lost at the seam."""
    project = make_project()
    make_items(project, 10)
    assert item_search_index(limit=4) == 4
    assert len(_queued(project)) == 6
    assert _found(project, "sentence") == {f"item-{index:05d}" for index in range(10)}


def test_many_queued_matches_are_searched_in_sql_and_a_few_by_id(monkeypatch):
    """Queued matches are named by id up to ``QUEUED_BY_ID``, read in SQL beyond: both halves
    find the same items, indexed and queued alike."""
    from annotation import search

    project = make_project()
    make_items(project, 10)
    item_search_index(limit=4)
    expected = {f"item-{index:05d}" for index in range(10)}
    monkeypatch.setattr(search, "QUEUED_BY_ID", 6)  # the 6 queued ones, by id
    assert _found(project, "sentence") == expected
    monkeypatch.setattr(search, "QUEUED_BY_ID", 5)  # one too many: read in SQL
    assert _found(project, "sentence") == expected
    item_search_index()  # nothing queued: the search table alone
    assert _found(project, "sentence") == expected
    assert _found(project, "item-00003") == {"item-00003"}


def test_a_changed_item_is_found_by_its_new_content_only():
    project = make_project()
    [item] = make_items(project, 1)
    item_search_index()
    assert _found(project, "river") == {"item-00000"}
    services.item_revise(item=item, payload={"text": "A heron waited."}, author=None, reason="t")
    # Queued again by the database: its stale search row no longer answers for it.
    assert _queued(project) == {"item-00000"}
    assert _found(project, "river") == set()
    assert _found(project, "heron") == {"item-00000"}
    item_search_index_task.apply()  # the Celery task itself, run here
    assert not ItemSearchPending.objects.exists()
    assert _found(project, "river") == set()
    assert _found(project, "HERON") == {"item-00000"}
    # A status change is no content change: nothing is queued.
    Item.objects.filter(pk=item.pk).update(status=Item.Status.ACCEPTED)
    assert not ItemSearchPending.objects.exists()


def test_a_deleted_item_leaves_no_search_or_queue_row():
    project = make_project()
    first, second = make_items(project, 2)
    item_search_index(limit=1)
    Item.objects.filter(pk__in=[first.pk, second.pk]).delete()
    assert not ItemSearch.objects.exists()
    assert not ItemSearchPending.objects.exists()


@pytest.mark.postgres
def test_deleting_items_after_a_large_import_forgets_them_by_key_not_by_walking_the_queue(
    postgres,
):
    """The delete trigger (migration 0023) removes queue and search rows through their primary
    key: 100-item deletes after 20,000 queued items read neither table whole, however stale
    the planner's figures and the session's cached plans are (here: both made while the
    tables were empty)."""
    from django.db import connection

    project = make_project()
    with connection.cursor() as cursor:
        # Statistics taken while both tables are empty, as autovacuum may leave them.
        cursor.execute("ANALYZE annotation_itemsearch, annotation_itemsearchpending")
    for _ in range(8):  # the trigger's plans cached by this session while the queue is empty
        Item.objects.filter(pk__in=[make_items(project, 1)[0].pk])._raw_delete("default")
    Item.objects.bulk_create(
        Item(project=project, external_id=f"bulk-{number}", payload={"text": "t"})
        for number in range(20_000)
    )
    item_search_index(limit=5_000)  # some indexed, most still queued
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE relname IN"
            " ('annotation_itemsearch', 'annotation_itemsearchpending')"
        )
        before = dict(cursor.fetchall())
    doomed = list(Item.objects.filter(project=project).order_by("pk").values_list("pk", flat=True))
    for start in range(0, 1_000, 100):
        Item.objects.filter(pk__in=doomed[start : start + 100])._raw_delete("default")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE relname IN"
            " ('annotation_itemsearch', 'annotation_itemsearchpending')"
        )
        after = dict(cursor.fetchall())
    assert after == {name: before.get(name, 0) for name in after}, (before, after)
    remaining = set(doomed[:1_000])
    assert not ItemSearch.objects.filter(item_id__in=remaining).exists()
    assert not ItemSearchPending.objects.filter(item_id__in=remaining).exists()
    assert ItemSearchPending.objects.count() + ItemSearch.objects.count() == 19_000


@pytest.mark.postgres
def test_truncating_the_items_empties_the_queue_and_the_search_so_an_id_can_come_back(postgres):
    """TRUNCATE fires no delete trigger: migration 0025's truncate trigger empties the queue and
    the search table with the items, so no queued id outlives its item. The insert trigger
    queues without ON CONFLICT (an inserted id is new), so an item given a former item's id is
    written and queued, not refused by a leftover queue row; without the truncate trigger this
    fails on the queue's primary key."""
    from django.db import connection

    project = make_project()
    indexed, queued = make_items(project, 2)
    item_search_index()
    Item.objects.filter(pk=queued.pk).update(payload={"text": "changed, queued again"})
    assert _queued(project) == {queued.external_id}
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE waits for no deferred check
        cursor.execute("TRUNCATE annotation_item CASCADE")
    assert not ItemSearchPending.objects.exists()
    assert not ItemSearch.objects.exists()
    for pk, name in ((indexed.pk, "back-1"), (queued.pk, "back-2")):
        Item.objects.create(pk=pk, project=project, external_id=name, payload={"text": "kiwi"})
    assert _queued(project) == {"back-1", "back-2"}
    assert _found(project, "kiwi") == {"back-1", "back-2"}
    assert _found(project, "river") == set()  # the former items' content is gone
