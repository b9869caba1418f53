"""The counts of a ratings project that only its imports change: sentence pairs, items by
purpose, and the historic stage's item stages, ratings and named raters. The ratings page reads
them for its progress cards and for the analysis' data version (ratings/selectors.py,
``progress`` and ``data_version``) on every load and every 15-s poll.

Counting them reads every item and every historic item stage of the project (about 100 ms
each at 100,000 items and 1,000,000 historic ratings under load, benchmarks/pages_scale.py),
so a *large* project — one whose stored count found at least ``settings.RATINGS_STORED_FROM``
items and historic ratings together — is shown from counts a Celery task stores
(``ratings.tasks.store_counts``), with the moment they were counted; a stored count older than
``settings.RATINGS_STORED_MAX_AGE`` seconds asks for a new one (``rungwise/debounce.py``: one
message however many pages ask; a message lost with the broker is taken over after
``OVERDUE_SECONDS``), and every import asks for one as it asks for a new analysis
(``ratings.services.analyses_data_changed``). A smaller project is counted on each request
(exact, and quick); one that has grown large without a stored count is counted once more and a
stored count is asked for. The same pattern as the project home's pipeline counts
(annotation/pipeline_counts.py) and a large stage's pages (agreement/stored.py).

The live rating stage's counts change with every answer and are always read live
(``ratings.selectors.progress``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Q, QuerySet, Sum
from django.utils import timezone

from annotation.models import Annotation, Item, ItemStage, Project
from ratings.models import RatingsSetup, SentencePair, StoredRatingsCounts
from rungwise.debounce import debounce_consume, debounce_request_stored

STORE_TASK = "ratings.tasks.store_counts"
#: A request whose message never ran is sent again after this many seconds (the pages and the
#: imports are the only askers: there is no beat sweep).
OVERDUE_SECONDS = 300.0
#: How long a live count of the historic stage's named raters is kept (under the stage's
#: counts, which every import changes).
RATERS_CACHE_SECONDS = 3600


@dataclass(frozen=True)
class ProjectCounts:
    """What a ratings project's imports determine. ``items_last`` / ``historic_last``: the
    newest item's / historic item stage's id (0: none), so that the data version changes when
    one is replaced by another."""

    pairs: int
    items: int
    items_last: int
    regular_items: int
    check_items: int
    historic_items: int
    historic_last: int
    historic_ratings: int
    historic_raters: int

    @property
    def total(self) -> int:
        """The rows the count reads (whether the project is large)."""
        return self.items + self.historic_ratings


@dataclass(frozen=True)
class ShownCounts:
    """A project's counts as the page shows them: counted now (``stored_at`` None) or stored."""

    counts: ProjectCounts
    stored_at: datetime | None


def _row(project_id: int) -> QuerySet[StoredRatingsCounts]:
    return StoredRatingsCounts.objects.filter(pk=project_id)


def project_counts(project_id: int, historic_stage_id: int | None) -> ProjectCounts:
    """Counted now: one aggregate over the project's items, one over its historic item stages
    (whose counters the engine's historic import keeps equal to their ratings), the pairs, and
    the named raters (read again only when the historic counts change)."""
    items = Item.objects.filter(project_id=project_id).aggregate(
        n=Count("pk"),
        last=Max("pk"),
        regular=Count("pk", filter=Q(purpose=Item.Purpose.REGULAR)),
        checks=Count("pk", filter=Q(purpose=Item.Purpose.ATTENTION_CHECK)),
    )
    historic = {"n": 0, "last": None, "ratings": None}
    if historic_stage_id:
        historic = ItemStage.objects.filter(stage_id=historic_stage_id).aggregate(
            n=Count("pk"), last=Max("pk"), ratings=Sum("submitted_count")
        )
    ratings = int(historic["ratings"] or 0)
    return ProjectCounts(
        pairs=SentencePair.objects.filter(project_id=project_id).count(),
        items=int(items["n"] or 0),
        items_last=int(items["last"] or 0),
        regular_items=int(items["regular"] or 0),
        check_items=int(items["checks"] or 0),
        historic_items=int(historic["n"] or 0),
        historic_last=int(historic["last"] or 0),
        historic_ratings=ratings,
        historic_raters=_historic_raters(historic_stage_id, items=historic["n"], ratings=ratings)
        if historic_stage_id
        else 0,
    )


def _historic_raters(stage_id: int, *, items: int, ratings: int) -> int:
    """Distinct named raters of the historic stage. Imported ratings only ever grow by an import
    (which changes the stage's item and rating counts), so the count is cached under those
    counts: a poll does not re-read a million ratings to count their raters."""
    key = f"ratings:historic-raters:{stage_id}:{items}:{ratings}"
    raters = cache.get(key)
    if raters is None:
        raters = (
            Annotation.objects.filter(item_stage__stage_id=stage_id)
            .exclude(external_rater="")
            .values("external_rater")
            .distinct()
            .count()
        )
        cache.set(key, raters, RATERS_CACHE_SECONDS)
    return int(raters)


def project_counts_shown(project: Project, historic_stage_id: int | None) -> ShownCounts:
    """The counts the ratings page shows and its data version reads, and when they were
    counted (None: just now)."""
    row = _row(project.pk).only("counts", "total", "stored_at").first()
    large = int(settings.RATINGS_STORED_FROM)
    if row is not None and row.stored_at is not None and row.total >= large:
        stored = _from_json(row.counts)
        if stored is not None:
            age = timezone.now() - row.stored_at
            if age > timedelta(seconds=float(settings.RATINGS_STORED_MAX_AGE)):
                project_counts_store_request(project_id=project.pk)
            return ShownCounts(counts=stored, stored_at=row.stored_at)
    counted = project_counts(project.pk, historic_stage_id)
    if counted.total >= large:
        project_counts_store_request(project_id=project.pk)
    return ShownCounts(counts=counted, stored_at=None)


def _from_json(counts: object) -> ProjectCounts | None:
    """The stored counts, or None when they were stored with other fields (an older version
    of this class: as good as missing)."""
    names = {field.name for field in dataclasses.fields(ProjectCounts)}
    if not isinstance(counts, dict) or set(counts) != names:
        return None
    return ProjectCounts(**{name: int(counts[name]) for name in names})


def project_counts_store_request(*, project_id: int) -> bool:
    """Ask the worker to store the project's counts soon (one message per burst of askers).
    Returns True when this call sent it."""
    return debounce_request_stored(
        StoredRatingsCounts,
        {"project_id": project_id},
        task_name=STORE_TASK,
        args=(project_id,),
        overdue_after=OVERDUE_SECONDS,
        what=f"the ratings counts of project {project_id}",
    )


def project_counts_store(*, project_id: int) -> bool:
    """Count the project's pairs, items and historic ratings and store them with the moment.
    Returns False when the project (or its ratings setup) is gone. Safe to run twice or
    concurrently: each run stores a complete count; the last one to commit stays."""
    debounce_consume(_row(project_id))
    setup = RatingsSetup.objects.filter(project_id=project_id).only("historic_stage_id").first()
    if setup is None:
        return False
    counted = project_counts(project_id, setup.historic_stage_id)
    StoredRatingsCounts.objects.bulk_create(
        [
            StoredRatingsCounts(
                project_id=project_id,
                counts=dataclasses.asdict(counted),
                total=counted.total,
                stored_at=timezone.now(),
            )
        ],
        update_conflicts=True,
        unique_fields=["project"],
        update_fields=["counts", "total", "stored_at"],
    )
    return True
