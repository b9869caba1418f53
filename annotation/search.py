"""The data manager's text search, kept off the items table's insert path.

An item's id and content are searched in ``ItemSearch``, whose trigram indexes (PostgreSQL,
migration ``0015_item_search_table``) serve ``icontains``; the items table carries no search
index, so an import writes only the items and their queue rows. The contract:

* every item is either queued in ``ItemSearchPending`` or has an up-to-date ``ItemSearch``
  row: the database's triggers queue every inserted item and every change of an item's
  ``external_id`` or ``payload`` (migration ``0015_item_search_table``), and
  ``item_search_index`` replaces a queued item's row and takes it off the queue in one
  transaction;
* ``items_containing`` therefore finds every matching item, indexed or not: the indexed
  ones through ``ItemSearch`` (leaving out queued items, whose row may be stale), the queued
  ones by their own columns (a scan bounded by the queue, not by the table), read first and
  named by id when there are few (``QUEUED_BY_ID``; the usual case: the queue is emptied within
  a minute), so the search is one plain condition on ``ItemSearch`` whose size the planner
  estimates from the trigram indexes' statistics. A union of the two halves, which
  PostgreSQL estimates at 200 rows whatever it holds, made it compute every match of a
  common word before the page's first 50 (benchmarks/README.md, "Pages at scale").

Why a queue written by triggers and a Celery task (``annotation.tasks.item_search_index``)
rather than the trigram indexes on the items: they cost about 80 % of PostgreSQL's work per
imported item (benchmarks/io_scale.py), and a search that is complete from the moment an
import commits matters more than one that is fast for the minutes the indexing takes. The
task is sent when an import commits (imports/services/run.py) and every minute by beat
(rungwise/settings.py), for items written any other way.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast

from annotation.models import Item, ItemSearch, ItemSearchPending

#: Queued items indexed per transaction.
INDEX_CHUNK = 5000
#: At most this many queued items matching a search are named by id in its condition; beyond,
#: the search reads the queue in SQL (a union: correct, slower for common words).
QUEUED_BY_ID = 1000


def _text_match(text: str) -> Q:
    # The same lookups on both tables, so an item matches the same texts queued or indexed.
    return Q(external_id__icontains=text) | Q(content__icontains=text)


def items_containing(items: QuerySet[Item], text: str, *, project_id: int) -> QuerySet[Item]:
    """``items`` (of the project ``project_id``) whose external id or content (the payload as
    JSON text) contains ``text``, ignoring case: indexed items through ``ItemSearch``, queued
    ones read directly (module docstring). The queued matches are read when this is called
    (one statement, bounded by the queue) and named by id when at most ``QUEUED_BY_ID``: a
    queryset evaluated later (a long export) sees the queue as it was then."""
    queued = ItemSearchPending.objects.filter(item_id=OuterRef("item_id"))
    indexed = (
        ItemSearch.objects.filter(project_id=project_id)
        .filter(_text_match(text))
        .filter(~Exists(queued))
        .values("item_id")
    )
    waiting = (
        Item.objects.filter(
            project_id=project_id, pk__in=ItemSearchPending.objects.values("item_id")
        )
        .annotate(content=Cast("payload", TextField()))
        .filter(_text_match(text))
        .values("pk")
        .order_by()
    )
    waiting_ids = list(waiting.values_list("pk", flat=True)[: QUEUED_BY_ID + 1])
    if not waiting_ids:
        return items.filter(pk__in=indexed)
    if len(waiting_ids) <= QUEUED_BY_ID:
        return items.filter(Q(pk__in=indexed) | Q(pk__in=waiting_ids))
    return items.filter(pk__in=indexed.union(waiting, all=True))


def items_waiting_count(project_id: int, *, limit: int | None = None) -> int:
    """How many of the project's items are queued for the search index (read directly by
    the search until indexed), counted up to ``limit`` + 1 when given (a count beyond it
    reads the whole queue)."""
    queued = Item.objects.filter(
        project_id=project_id, pk__in=ItemSearchPending.objects.values("item_id")
    ).order_by()
    return (queued if limit is None else queued[: limit + 1]).count()


def _index_chunk(size: int) -> int:
    """Index up to ``size`` queued items in one transaction; return how many were taken off
    the queue (0 when it is empty). Queue rows another indexer holds are skipped
    (``SKIP LOCKED`` on PostgreSQL), so two runs share the work."""
    with transaction.atomic():
        ids = list(
            ItemSearchPending.objects.select_for_update(skip_locked=True)
            .order_by("item_id")
            .values_list("item_id", flat=True)[:size]
        )
        if not ids:
            return 0
        ItemSearchPending.objects.filter(item_id__in=ids).delete()
        # Hand-written SQL: an upsert from a SELECT (INSERT … SELECT … ON CONFLICT), which the
        # ORM cannot say; the SELECT is the ORM's, so the content is spelled exactly as the
        # queued items' ``Cast`` in ``items_containing`` spells it.
        rows = (
            Item.objects.filter(pk__in=ids)
            .annotate(content=Cast("payload", TextField()))
            .values_list("pk", "project_id", "external_id", "content")
            .order_by()
        )
        select, params = rows.query.sql_with_params()
        table = connection.ops.quote_name(ItemSearch._meta.db_table)
        columns = ("item_id", "project_id", "external_id", "content")
        quoted = [connection.ops.quote_name(column) for column in columns]
        updates = ", ".join(f"{name} = excluded.{name}" for name in quoted[1:])
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(quoted)}) {select} "
                f"ON CONFLICT ({quoted[0]}) DO UPDATE SET {updates}",
                params,
            )
        return len(ids)


def item_search_index(*, chunk: int = INDEX_CHUNK, limit: int | None = None) -> int:
    """Index queued items ``chunk`` at a time, each chunk its own transaction, until the
    queue is empty (or ``limit`` items are done); return how many were indexed. Safe to run
    twice, or in two workers at once."""
    done = 0
    while limit is None or done < limit:
        size = chunk if limit is None else min(chunk, limit - done)
        taken = _index_chunk(size)
        done += taken
        if taken < size:
            break
    return done
