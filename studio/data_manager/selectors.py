"""The data manager's reads: the items an ``ItemQuery`` matches, one keyset page of them, the
same items in batches (bulk actions over "all matching", exports), and their rows.

Blind where the item browser is (studio/selectors.py ``item_history``): a decision and its
agreement show once an item stage's votes are final (``annotation.api.votes_final``); the
annotator filter reads annotations through ``annotation.api.annotations_visible`` and is
refused to members who do not see annotators (reviewers), who are offered no gold field either.

Keyset pagination: rows are ordered by (sort field, id), both in one direction, and a page
starts after the last row of the one before (``ItemQuery.after``), never at an OFFSET, so a
page deep in a million items costs what the first does (benchmarks/data_manager.py)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.db.models import F, Lookup, Model, Q, QuerySet
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan

from annotation.api import (
    annotations_visible,
    item_stages_with_final_votes,
    items_containing,
    items_waiting_count,
    votes_final,
)
from annotation.errors import ApplicationError, PermissionDenied
from annotation.models import Annotation, Item, ItemStage, Project, Resolution, Stage
from rungwise.replica import read_connection
from studio.data_manager.columns import (
    PATH_SAMPLE,
    Column,
    available_columns,
    cell,
    default_columns,
    payload_paths,
)
from studio.data_manager.forms import SORTS, ItemQuery, cursor_encode
from studio.models import ItemColumns, ItemTag, Tag

PAGE_SIZE = 50
#: A filtered view counts its matches up to this many ("10,000+" beyond): counting every
#: match of a broad filter over a million items reads them all (benchmarks/data_manager.py).
#: It holds for the filters an index counts alone (stage, state in the stage, item status).
COUNT_LIMIT = 10_000
#: The count of a view whose filters test each candidate row (a search's text, a decision,
#: votes not unanimous, an annotator's answers, a batch, a tag) stops here ("1,000+"): 10,000
#: matches of a common word cost 0.3-0.6 s of PostgreSQL's time at 300,000 items, 1,000 a
#: tenth of it (benchmarks/README.md, "Pages at scale").
PROBED_COUNT_LIMIT = 1_000
#: Items read per query by exports and bulk actions over "all matching".
BATCH_SIZE = 1000
#: The annotator filter reads that person's visible answers first (one statement, through the
#: annotations' annotator index) and names their items by id when there are at most this many
#: answers; beyond, it tests each item as the page walks them (``_answered_items``).
ANSWERS_BY_ID = COUNT_LIMIT
#: How the person's answers are read: their item stages probed one by one by id (about 5,000
#: for one of 200 annotators at 1,000,000 annotations). Planned with the default page cost and
#: without parallel workers, PostgreSQL hashed all 580,000 item stages instead (1.5-2 s); in
#: parallel, three processes spent a fifth more CPU than one (benchmarks/README.md, "Pages at
#: scale").
ANSWERS_SETTINGS = (
    "SET LOCAL random_page_cost = 1.1",
    "SET LOCAL max_parallel_workers_per_gather = 0",
)

Viewer = User | AnonymousUser


def typed_value(text: str) -> Any:
    """A typed value as JSON when it reads as JSON (``3``, ``true``), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _decision_values(text: str) -> list[Any]:
    """What a typed decision may mean: the text itself and, when it reads as JSON (``3``,
    ``true``), that value too (ratings decide numbers, verify stages words)."""
    values: list[Any] = [text]
    try:
        parsed = json.loads(text)
    except ValueError:
        return values
    if parsed != text:
        values.append(parsed)
    return values


def _stage_ids(project: Project, query: ItemQuery) -> list[int]:
    """The ids of the project's stages ``query`` looks in: the one it names, else all. Read
    first: a list of a few ids lets the planner estimate the item stages it reads, where a
    join to the stage table does not."""
    stages = Stage.objects.filter(project=project).order_by()
    if query.stage:
        stages = stages.filter(slug=query.stage)
    stage_ids = list(stages.values_list("pk", flat=True))
    if query.stage and not stage_ids:
        raise ApplicationError(
            f"There is no stage {query.stage!r} in this project.", {"field": "stage"}
        )
    return stage_ids


def _item_stage_filters(item_stages: QuerySet[ItemStage], query: ItemQuery) -> QuerySet[ItemStage]:
    """``item_stages`` narrowed by ``query``'s state, decision and disagreement filters."""
    if query.state:
        item_stages = item_stages.filter(state=query.state)
    if query.decision or query.disagreement:
        # Decisions are read only once final: the engine's rule, as the disagreement list
        # (agreement/selectors.py, disagreement_items) reads it.
        item_stages = item_stages_with_final_votes(item_stages.filter(resolution__isnull=False))
    if query.decision:
        matches = Q()
        for value in _decision_values(query.decision):
            matches |= Q(resolution__value=value)
        item_stages = item_stages.filter(matches)
    if query.disagreement:
        # "Not unanimous", the disagreement list's default ("split") rule.
        item_stages = item_stages.exclude(resolution__status=Resolution.Status.UNANIMOUS)
    return item_stages


class _EqualsAny(Lookup):
    """``field = ANY(%s)`` with the ids as one array parameter on PostgreSQL, ``field IN (…)``
    elsewhere. A list of thousands of ids as an ``IN`` list cost 100-150 ms to parse and plan
    (one parameter each), the array 2 ms (benchmarks/README.md, "Pages at scale")."""

    lookup_name = "equals_any"
    prepare_rhs = False

    # Any: the stubs type a statement's parameters as str or int; here one is a list.
    def as_sql(self, compiler: Any, connection: Any) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        ids = list(self.rhs)
        if connection.vendor == "postgresql":
            return f"{lhs} = ANY(%s)", (*lhs_params, ids)
        if not ids:
            return "0 = 1", tuple(lhs_params)
        return f"{lhs} IN ({', '.join(['%s'] * len(ids))})", (*lhs_params, *ids)


@dataclass(frozen=True)
class _Answered:
    """What the annotator filter selects: the ids of the items (``item_ids``), when the
    person's visible answers were few enough to be named (``ANSWERS_BY_ID``), else the item
    stages to test (``item_stages``)."""

    item_ids: list[int] | None = None
    item_stages: QuerySet[ItemStage] | None = None


def _answered_items(
    stage_ids: list[int], query: ItemQuery, *, viewer: Viewer, item_stages: QuerySet[ItemStage]
) -> _Answered:
    """The items on whose item stages (``item_stages``: in ``stage_ids``, meeting ``query``'s
    other stage-level filters) ``query.annotator`` gave an answer ``viewer`` may see
    (``annotation.api.annotations_visible``). Their answers are read first, with their item
    stages and items, in one statement that starts from the person's own rows (the
    annotations' annotator index): read per item as the page walks the newest items, each
    item's answers were looked up and their authors' names compared, 165 ms at 300,000 items
    for 50 rows (benchmarks/README.md, "Pages at scale"). At most ``ANSWERS_BY_ID`` answers
    are named by id (taken when this is called: a long export sees the answers as they were
    then); beyond, the item stages are tested by a subquery, which finds a page quickly among
    so many."""
    person = get_user_model().objects.filter(username=query.annotator).values_list("pk", flat=True)
    person_id = person.first()
    if person_id is None:
        return _Answered(item_ids=[])
    answered = annotations_visible(
        Annotation.objects.filter(annotator_id=person_id, item_stage__stage_id__in=stage_ids),
        viewer,
    ).order_by()
    with _planned_with(Annotation, ANSWERS_SETTINGS):
        pairs = list(
            answered.values_list("item_stage_id", "item_stage__item_id")[: ANSWERS_BY_ID + 1]
        )
    if len(pairs) > ANSWERS_BY_ID:
        return _Answered(item_stages=item_stages.filter(pk__in=answered.values("item_stage_id")))
    if not (query.state or query.decision or query.disagreement):
        return _Answered(item_ids=sorted({item_id for _, item_id in pairs}))
    kept = item_stages.filter(_EqualsAny(F("pk"), sorted({pk for pk, _ in pairs})))
    return _Answered(item_ids=sorted(set(kept.values_list("item_id", flat=True))))


def _item_stages(
    project: Project, query: ItemQuery, *, viewer: Viewer, named: bool
) -> QuerySet[ItemStage] | _Answered | None:
    """The item stages the stage-level filters select (with an annotator: ``_answered_items``),
    or None when none is set."""
    if not (query.stage or query.state or query.decision or query.disagreement or query.annotator):
        return None
    stage_ids = _stage_ids(project, query)
    item_stages = _item_stage_filters(ItemStage.objects.filter(stage_id__in=stage_ids), query)
    if query.annotator:
        if not named:
            raise PermissionDenied("Your role in this project does not see who answered what.")
        return _answered_items(stage_ids, query, viewer=viewer, item_stages=item_stages)
    return item_stages


def items_matching(
    project: Project, query: ItemQuery, *, viewer: Viewer, named: bool
) -> QuerySet[Item]:
    """The project's items that ``query``'s filters select (unordered; every filter optional):
    a text in the id or anywhere in the content, the item status, import batch and tag, and
    an item stage (in ``stage`` when given) meeting every stage-level filter at once: its
    state, its final decision, its votes not unanimous, an answer by ``annotator``. Viewers who
    do not see names (``named`` false: reviewers) do not see silent gold items either."""
    return _matching(project, query, viewer=viewer, named=named)[0]


def _item_level_filters(query: ItemQuery) -> bool:
    """Whether ``query`` tests the items themselves (not only their item stages)."""
    return any((query.q, query.status, query.batch, query.tag))


def _matching(
    project: Project, query: ItemQuery, *, viewer: Viewer, named: bool
) -> tuple[QuerySet[Item], int | None]:
    """``items_matching``'s items, and how many they are when that is known without counting
    (an annotator's items named by id, no filter on the items themselves), else None."""
    items = Item.objects.filter(project=project)
    if not named:  # silent gold items (annotation/gold.py) only for the roles that see gold
        items = items.exclude(purpose=Item.Purpose.GOLD)
    if query.q:
        # Through the search table, queued items read directly: complete right after an
        # import commits, fast once indexed (annotation/search.py).
        items = items_containing(items, query.q, project_id=project.pk)
    if query.status:
        items = items.filter(status=query.status)
    if query.batch:
        items = items.filter(import_batch_id=query.batch)
    if query.tag:
        items = items.filter(
            pk__in=ItemTag.objects.filter(tag__project=project, tag__name=query.tag).values(
                "item_id"
            )
        )
    item_stages = _item_stages(project, query, viewer=viewer, named=named)
    if isinstance(item_stages, _Answered):
        if item_stages.item_ids is None:
            assert item_stages.item_stages is not None
            return items.filter(pk__in=item_stages.item_stages.values("item_id")), None
        items = items.filter(_EqualsAny(F("pk"), item_stages.item_ids))
        # Every answered item is the project's (its stage is) and named sees gold.
        known = None if _item_level_filters(query) else len(item_stages.item_ids)
        return items, known
    if item_stages is not None:
        items = items.filter(pk__in=item_stages.values("item_id"))
    return items, None


def _count_limit(query: ItemQuery) -> int:
    """Where ``query``'s count stops: ``COUNT_LIMIT`` when an index counts its filters alone,
    else ``PROBED_COUNT_LIMIT``."""
    probed = (query.q, query.decision, query.disagreement, query.annotator, query.batch, query.tag)
    return PROBED_COUNT_LIMIT if any(probed) else COUNT_LIMIT


def _stage_level_count(project: Project, query: ItemQuery, limit: int) -> tuple[int, bool]:
    """``items_count`` of a view filtered by stage, state, decision and votes not unanimous
    alone, from the item stages (the ``(stage, state)`` index; a decision or the votes through
    each one's resolution) without reading an item: an item has one item stage per stage
    (``item_stage_unique``), so a stage's item stages count its items. Each stage's are
    counted up to ``limit`` + 1 (a few thousand index entries, however large the stage; read
    from the items, the count of a decision hashed every resolution of the project: 1.2 s);
    over several stages, an item counted in two is counted once (a distinct count, read only
    when no stage alone passes the limit: then at most a few times ``limit`` rows)."""
    item_stages = _item_stage_filters(ItemStage.objects.order_by(), query)
    stage_ids = _stage_ids(project, query)
    largest = 0
    for stage_id in stage_ids:
        largest = max(largest, item_stages.filter(stage_id=stage_id)[: limit + 1].count())
        if largest > limit:
            return limit, True
    if len(stage_ids) > 1:
        items = item_stages.filter(stage_id__in=stage_ids).values("item_id").distinct()
        largest = items.count()
    return min(largest, limit), largest > limit


def items_count(
    project: Project, query: ItemQuery, *, viewer: Viewer, named: bool
) -> tuple[int, bool]:
    """How many items ``query`` matches, and whether there are more: the exact number of an
    unfiltered view (an index count), at most ``_count_limit`` (True beyond) of a filtered one.
    A view filtered by stage, state, decision and votes not unanimous alone is counted from
    the item stages (``_stage_level_count``), for the roles that see every item (gold
    included); one by an annotator, from the answers read first (``_answered_items``)."""
    return _count(project, query, viewer=viewer, named=named, matching=None)


def _count(
    project: Project,
    query: ItemQuery,
    *,
    viewer: Viewer,
    named: bool,
    matching: tuple[QuerySet[Item], int | None] | None,
) -> tuple[int, bool]:
    """``items_count``, with ``_matching``'s result when the caller has it already."""
    limit = _count_limit(query)
    stage_level_only = (
        query.stage or query.state or query.decision or query.disagreement
    ) and not any((query.q, query.status, query.batch, query.tag, query.annotator))
    if named and stage_level_only:
        return _stage_level_count(project, query, limit)
    items, known = matching or _matching(project, query, viewer=viewer, named=named)
    if known is not None:
        # Named by id: at most ANSWERS_BY_ID, so exact up to COUNT_LIMIT.
        return min(known, COUNT_LIMIT), known > COUNT_LIMIT
    items = items.order_by()
    if not query.filtered:
        return items.count(), False
    found = items[: limit + 1].count()
    return min(found, limit), found > limit


def search_waiting(project: Project, query: ItemQuery) -> tuple[int, bool]:
    """For a search: how many of the project's items are not in the search index yet (read
    one by one by the search, annotation/search.py), up to ``COUNT_LIMIT`` (True beyond);
    (0, False) without a search."""
    if not query.q:
        return 0, False
    waiting = items_waiting_count(project.pk, limit=COUNT_LIMIT)
    return min(waiting, COUNT_LIMIT), waiting > COUNT_LIMIT


def _ordered_after(items: QuerySet[Item], sort: str, after: tuple[Any, int] | None):
    """``items`` in the order ``sort`` names (ties broken by id), from after ``after``."""
    field, descending = SORTS[sort]
    if after is not None:
        value, pk = after
        if (field == "pk") != isinstance(value, int):
            raise ApplicationError("This page link is broken; start again from the first page.")
        if field == "pk":
            items = items.filter(**{f"pk__{'lt' if descending else 'gt'}": pk})
        else:
            # A row-value comparison, (field, id) > (value, pk): PostgreSQL reads it as one
            # range of the (project, field, id) index; the same condition spelled with OR
            # filters every row before the cursor (benchmarks/data_manager.py). Django's
            # tuple lookups (those of composite primary keys) write it on every backend.
            beyond = TupleLessThan if descending else TupleGreaterThan
            items = items.filter(beyond(Tuple(F(field), F("pk")), (value, pk)))
    sign = "-" if descending else ""
    order = [f"{sign}pk"] if field == "pk" else [f"{sign}{field}", f"{sign}pk"]
    return items.order_by(*order)


@contextmanager
def _planned_with(
    model: type[Model], settings: Sequence[str], active: bool = True
) -> Iterator[None]:
    """Statements inside (reading ``model``) plan with ``settings`` (``SET LOCAL`` statements;
    PostgreSQL, ``active`` only; one transaction on the connection ``model`` is read from)."""
    connection = read_connection(model)
    if not active or connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        for setting in settings:
            cursor.execute(setting)
        yield


def _without_merge_joins(active: bool) -> AbstractContextManager[None]:
    """Statements inside plan without merge joins (``_planned_with``, on the items'
    connection). For a page of a search: the planner walked the search table's primary key in
    step with the project's items, and the newest rows of that key belonged to another project
    (100,000 rows passed over, 80-110 ms at 300,000 items: benchmarks/README.md, "Pages at
    scale"); without merge joins it checks each of the page's candidates by its id (a common
    word, 0.5 ms) or hashes the few matches of a rare one, as before."""
    return _planned_with(Item, ["SET LOCAL enable_mergejoin = off"], active)


def _first_rows(ordered: QuerySet[Item], size: int, *, searched: bool = False) -> list[Item]:
    """The first ``size`` rows of ``ordered`` (``_ordered_after``), read in two steps: their
    ids, which an index on (project, sort field, id) serves without reading a row, then those
    rows, in the same order, with their import batches (prefetched: a join to them made the
    planner leave the sort index on deep pages, benchmarks/data_manager.py). Read in one
    step, the planner walked the primary key backwards past every newer item of the other
    projects, filtering each (benchmarks/README.md, "Pages at scale"). ``searched``: the
    rows of a text search, read without merge joins (``_without_merge_joins``)."""
    ids = ordered.values("pk")[:size]
    rows = Item.objects.filter(pk__in=ids).order_by(*ordered.query.order_by)
    with _without_merge_joins(searched):
        return list(rows.prefetch_related("import_batch"))


def _sort_value(item: Item, sort: str) -> Any:
    field, _ = SORTS[sort]
    return item.pk if field == "pk" else getattr(item, field)


def items_page(
    project: Project, query: ItemQuery, *, viewer: Viewer, named: bool, size: int = PAGE_SIZE
) -> tuple[list[Item], str | None]:
    """One page of the matching items from ``query.after``, with the cursor of the next page
    (None on the last). One query (``size`` + 1 rows tell whether there is a next page;
    ``_first_rows``), and one for the page's import batches."""
    return _page(items_matching(project, query, viewer=viewer, named=named), query, size)


def _page(matching: QuerySet[Item], query: ItemQuery, size: int) -> tuple[list[Item], str | None]:
    items = _ordered_after(matching, query.sort, query.after)
    found = _first_rows(items, size + 1, searched=bool(query.q))
    if len(found) <= size:
        return found, None
    last = found[size - 1]
    return found[:size], cursor_encode(_sort_value(last, query.sort), last.pk)


@dataclass(frozen=True)
class ItemsShown:
    """One page of the Items tab and the count above it."""

    items: list[Item]
    #: The ``after`` cursor of the next page; None on the last.
    next_cursor: str | None
    #: How many items match (``items_count``), and whether that is a lower bound ("10,000+").
    matching: int
    more: bool
    #: For a search: the project's items not in the search index yet (``search_waiting``).
    search_waiting: int
    search_waiting_more: bool


def items_shown(
    project: Project, query: ItemQuery, *, viewer: Viewer, named: bool, size: int = PAGE_SIZE
) -> ItemsShown:
    """The page ``query`` asks for (``items_page``) and how many items match. A first page
    that holds every match is its own count: no counting query runs (a search by id, a filter
    matching a few items), where the count would repeat the page's whole search. The filters'
    reads (an annotator's answers) are done once for both."""
    selected = _matching(project, query, viewer=viewer, named=named)
    found, next_cursor = _page(selected[0], query, size)
    if query.after is None and next_cursor is None:
        matching, more = len(found), False
    else:
        matching, more = _count(project, query, viewer=viewer, named=named, matching=selected)
    waiting, waiting_more = search_waiting(project, query)
    return ItemsShown(found, next_cursor, matching, more, waiting, waiting_more)


def items_in_batches(
    project: Project, query: ItemQuery, *, viewer: Viewer, named: bool, size: int = BATCH_SIZE
) -> Iterator[list[Item]]:
    """Every matching item in ``query``'s order, ``size`` at a time, each batch read by keyset
    after the last (exports and bulk actions over "all matching": memory stays bounded). The
    filters are checked here, before the first batch is read (a refused filter is an error
    before a streamed response starts, not in its middle)."""
    matching = items_matching(project, query, viewer=viewer, named=named)

    def batches() -> Iterator[list[Item]]:
        after = None
        while True:
            batch = _first_rows(
                _ordered_after(matching, query.sort, after), size, searched=bool(query.q)
            )
            if not batch:
                return
            yield batch
            if len(batch) < size:
                return
            after = (_sort_value(batch[-1], query.sort), batch[-1].pk)

    return batches()


def display(value: Any) -> Any:
    """A cell as a page or CSV shows it: JSON values (lists, objects) as JSON text."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


def stage_cells(items: Sequence[Item]) -> dict[int, dict[str, dict[str, Any]]]:
    """{item id: {stage slug: {"state", "answers", "decision", "agreement"}}} for ``items``,
    in one query; decision and agreement are None until the item stage's votes are final."""
    cells: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for item_stage in ItemStage.objects.filter(item__in=[item.pk for item in items]).select_related(
        "stage", "resolution"
    ):
        resolution = getattr(item_stage, "resolution", None)
        final = resolution is not None and votes_final(item_stage)
        cells[item_stage.item_id][item_stage.stage.slug] = {
            "state": item_stage.get_state_display(),
            "answers": item_stage.submitted_count,
            "decision": resolution.value if final and resolution else None,
            "agreement": resolution.get_status_display() if final and resolution else None,
        }
    return cells


def item_tags(items: Sequence[Item]) -> dict[int, list[str]]:
    """{item id: its tag names, sorted} for ``items``, in one query."""
    tags: dict[int, list[str]] = defaultdict(list)
    for item_id, name in (
        ItemTag.objects.filter(item__in=[item.pk for item in items])
        .order_by("tag__name")
        .values_list("item_id", "tag__name")
    ):
        tags[item_id].append(name)
    return tags


def item_rows(items: Sequence[Item], columns: Sequence[str]) -> list[tuple[Item, list[Any]]]:
    """Each item with its raw cell per column key (``columns.cell``); two queries for a batch."""
    by_stage = stage_cells(items)
    tags = item_tags(items)
    return [
        (
            item,
            [cell(item, key, by_stage.get(item.pk, {}), tags.get(item.pk, [])) for key in columns],
        )
        for item in items
    ]


def project_columns(project: Project, *, named: bool) -> tuple[list[Stage], list[Column]]:
    """The project's stages in pipeline order and every column it offers (payload paths from
    the newest ``PATH_SAMPLE`` items)."""
    stages = list(Stage.objects.filter(project=project).order_by("position"))
    # The newest ids first, from the (project, id) index alone (as ``_first_rows``).
    newest = Item.objects.filter(project=project).order_by("-pk").values("pk")[:PATH_SAMPLE]
    sample = Item.objects.filter(pk__in=newest).values_list("payload", flat=True)
    return stages, available_columns(stages, payload_paths(sample, named=named))


def chosen_columns(
    project: Project, user: Viewer, stages: Sequence[Stage], offered: Sequence[Column]
) -> list[Column]:
    """The columns ``user`` chose for ``project`` (``ItemColumns``) that are still offered, in
    their order; the defaults (``columns.default_columns``) until they choose."""
    by_key = {column.key: column for column in offered}
    saved = None
    if user.is_authenticated:
        saved = ItemColumns.objects.filter(project=project, user=user).first()
    keys = saved.columns if saved is not None else default_columns(stages)
    return [by_key[key] for key in keys if key in by_key]


def project_tags(project: Project) -> list[str]:
    """The project's tag names, A to Z."""
    return list(Tag.objects.filter(project=project).values_list("name", flat=True))


def project_batches(project: Project, *, limit: int = 200) -> list[tuple[int, str]]:
    """The project's newest import batches as (id, "filename (date)") for the batch filter."""
    return [
        (batch.pk, f"{batch.filename} ({batch.created_at:%Y-%m-%d})")
        for batch in project.import_batches.order_by("-pk")[:limit]
    ]
