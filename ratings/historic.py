"""Historic ratings: ratings given in earlier studies, imported into a project's inactive
``historic`` stage through the engine's historic import (``annotation.api.historic_annotations_import``;
ratings/project_setup.py describes the stage), each file once (checked by its checksum and the
fingerprint of its ratings)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone

from annotation import api as engine
from annotation.errors import Conflict
from annotation.models import Annotation, Project
from imports.models import ImportBatch
from ratings import historic_bulk, importing
from ratings.connectives import (
    connective_set_from_json,
)
from ratings.importing import ImportRejected
from ratings.kinds import scale_bounds
from ratings.models import RatingsSetup
from ratings.project_setup import (
    _as_user,
    _historic_stage,
    _rating_stage,
    _regular_item_ids,
    _rejected,
    _setup,
    _sha256,
)

# --- Historic ratings -------------------------------------------------------------------------


#: ImportBatch.options of a historic ratings file (its checksums guard against a second import).
HISTORIC_OPTIONS = {"ratings": "historic"}


@transaction.atomic
def historic_ratings_import(
    *,
    project: Project,
    content: bytes | str | IO[bytes],
    filename: str,
    user: AbstractBaseUser | None = None,
    allow_duplicate_file: bool = False,
) -> int:
    """Import historic ratings (CSV/TSV/JSONL/JSON array, read by imports.core; see
    ratings.importing) of a project's items as external annotations. Returns the number of
    ratings stored; a bad row rejects the file.

    Imported once: a file whose ratings were already imported into the project is refused with
    a ``Conflict`` naming the earlier import (``extra["import_batch"]``) unless
    ``allow_duplicate_file``. "The same ratings" is judged twice: by the file's SHA-256 (the
    same bytes, checked before reading) and by the content fingerprint of its checked rows
    (``importing.ratings_fingerprint``: the same ratings saved with other line ends, as JSON
    Lines instead of CSV, in another row order). A named rater who already rated an item (in
    any file) is a row error; concurrent imports into one project run one after the other (a
    lock on the project's ratings setup), so counters and means stay equal to the rows. Each
    import is recorded as an ImportBatch with both checksums (``sha256``, ``content_sha256``).
    Nothing is written when it raises."""
    _setup_locked(project)
    setup = _setup(project)
    sha256 = _sha256(content)
    if not allow_duplicate_file:
        _refuse_historic_repeat(project, sha256=sha256)
    scale = scale_bounds(_rating_stage(setup).config)
    staged = (
        historic_bulk.ratings_file_stage(
            content=content,
            filename=filename,
            project_id=project.pk,
            historic_stage_id=setup.historic_stage_id,
            scale=scale,
        )  # fmt: skip
        if _bulk_path()
        else None
    )
    if staged is not None:
        count, fingerprint = staged
        if not allow_duplicate_file:
            _refuse_historic_repeat(project, content_sha256=fingerprint)
        _historic_store_staged(
            project, source=filename, key=None if allow_duplicate_file else fingerprint
        )
        _import_recorded(project, user, filename, sha256, fingerprint, count)
        return count
    connective_set = connective_set_from_json(setup.connective_set)
    known = _regular_item_ids(project)
    try:
        rows = importing.Rows(content, filename)
        ratings = importing.parse_ratings(
            rows,
            connective_set,
            scale=scale,
            known_items=set(known),
        )
        fingerprint = importing.ratings_fingerprint(ratings)
        if not allow_duplicate_file:
            _refuse_historic_repeat(project, content_sha256=fingerprint)
        _refuse_raters_seen_before(setup, ratings, known)
    except ImportRejected as error:
        raise _rejected(error) from None
    stored = historic_ratings_create(
        project=project,
        ratings=ratings,
        source=filename,
        item_ids=known,
        key=None if allow_duplicate_file else fingerprint,
    )
    _import_recorded(project, user, filename, sha256, fingerprint, stored)
    return stored


def _import_recorded(
    project: Project,
    user: AbstractBaseUser | None,
    filename: str,
    sha256: str,
    fingerprint: str,
    stored: int,
) -> None:
    """The ImportBatch of a historic import (its checksums guard against a second import)."""
    now = timezone.now()
    ImportBatch.objects.create(
        project=project, created_by=_as_user(user) if user is not None and user.is_authenticated else None,
        filename=filename[:255], format=Path(filename).suffix.lstrip(".").lower()[:16],
        sha256=sha256, content_sha256=fingerprint, options=HISTORIC_OPTIONS,
        status=ImportBatch.Status.SUCCEEDED,
        rows_total=stored, rows_done=stored, rows_written=stored,
        started_at=now, finished_at=now, message=f"{stored:,} historic ratings.",
    )  # fmt: skip


def _refuse_historic_repeat(
    project: Project, *, sha256: str = "", content_sha256: str = ""
) -> None:
    """Raise ``Conflict`` naming the earliest successful historic import of ``project`` with
    this file checksum (``sha256``) or these ratings (``content_sha256``); imports recorded
    before content fingerprints were kept have none and match by file checksum only."""
    lookup = {"sha256": sha256} if sha256 else {"content_sha256": content_sha256}
    earlier = (
        ImportBatch.objects.filter(
            project=project, options=HISTORIC_OPTIONS, status=ImportBatch.Status.SUCCEEDED,
            **lookup,
        )
        .order_by("created_at", "pk")
        .first()
    )  # fmt: skip
    if earlier is None:
        return
    when = f"{earlier.created_at:%Y-%m-%d %H:%M} UTC, {earlier.rows_total:,} ratings"
    message = (
        f"This file was already imported ({earlier.filename}, {when}): importing it again "
        "would count every rating twice. If these ratings really were collected twice, ask to "
        "import it again."
        if sha256
        else f"The ratings in this file were already imported from {earlier.filename} ({when}), "
        "in another form (line ends, encoding, CSV or JSON Lines, the order of the rows): "
        "importing them again would count every rating twice. If they really were collected "
        "twice, ask to import them again."
    )
    raise Conflict(
        message,
        {**lookup, "import_batch": earlier.pk, "filename": earlier.filename},
    )


def _setup_locked(project: Project) -> None:
    """Take the project's ratings-setup row lock until the transaction ends (PostgreSQL; SQLite
    serialises writers anyway): historic imports into one project run one at a time."""
    RatingsSetup.objects.select_for_update().filter(project=project).values_list("pk").first()


def _refuse_raters_seen_before(
    setup: RatingsSetup, ratings: Sequence[importing.RatingRow], item_ids: Mapping[str, int]
) -> None:
    """A named rater rates an item once, across files too (the file's own repeats are caught
    by ``importing.parse_ratings``); also a database constraint (annotation_external_rater_once)."""
    named = [rating for rating in ratings if rating.rater]
    if not named or setup.historic_stage_id is None:
        return
    seen = set(
        Annotation.objects.filter(
            item_stage__stage_id=setup.historic_stage_id,
            external_rater__in={rating.rater for rating in named},
            item_stage__item_id__in={item_ids[rating.item_key] for rating in named},
        ).values_list("item_stage__item_id", "external_rater")
    )
    errors = [
        importing.row_error(
            rating.line,
            "rater",
            f"{rating.rater!r} already rated {rating.item_key} in an earlier import",
        )  # fmt: skip
        for rating in named
        if (item_ids[rating.item_key], rating.rater) in seen
    ]
    if errors:
        raise ImportRejected(errors)


@transaction.atomic
def historic_ratings_create(
    *,
    project: Project,
    ratings: Sequence[importing.RatingRow],
    source: str = "",
    item_ids: Mapping[str, int] | None = None,
    key: str | None = None,
) -> int:
    """Store checked historic ratings on the historic stage (see the module docstring) through
    the engine's historic import (``annotation.api.historic_annotations_import``: counters and
    mean resolutions brought up to date), under the project's ratings-setup lock, so that
    concurrent imports add up. ``key`` (the file's content fingerprint) makes a second import
    of the same ratings a ``Conflict``."""
    _setup_locked(project)
    item_ids = item_ids if item_ids is not None else _regular_item_ids(project)
    if _bulk_path():
        historic_bulk.ratings_stage(ratings, item_ids)
        _historic_store_staged(project, source=source, key=key)
        return len(ratings)
    setup = _setup(project)
    stage = _historic_stage(setup)
    written = engine.historic_annotations_import(
        stage=stage,
        annotations=[
            engine.HistoricAnnotation(
                item_id=item_ids[rating.item_key],
                payload={"value": int(rating.rating)},
                external_rater=rating.rater,
            )
            for rating in ratings
        ],
        resolve=_historic_mean,
        client_info={"via": "import", "source": source[:200]},
        key=key,
    )
    # Items rated only historically are final; items also open for live rating stay active.
    engine.items_accept(
        project=project, item_ids=written.item_stage_ids, unless_in_stage=setup.rating_stage
    )
    from ratings.services import analyses_data_changed  # services imports this module

    analyses_data_changed(project_id=project.pk)
    return len(ratings)


def _bulk_path() -> bool:
    """Whether writes go through ``ratings.historic_bulk`` (PostgreSQL); tests compare both."""
    return connection.vendor == "postgresql"


def _historic_store_staged(project: Project, *, source: str, key: str | None) -> None:
    """``historic_ratings_create``'s writes for ratings staged by ``ratings.historic_bulk``
    (PostgreSQL): the engine's bulk historic import, whose resolution is the mean rating
    (policy "mean"), as ``_historic_mean``'s."""
    setup = _setup(project)
    written = engine.historic_values_import(
        stage=_historic_stage(setup),
        staging=historic_bulk.ENGINE_STAGING,
        field="value",
        policy="mean",
        client_info={"via": "import", "source": source[:200]},
        key=key,
    )
    # In slices: a statement holds at most 65,535 parameters (a million ratings of 100,000 items).
    item_ids = list(written.item_stage_ids)
    for start in range(0, len(item_ids), 50_000):
        engine.items_accept(
            project=project,
            item_ids=item_ids[start : start + 50_000],
            unless_in_stage=setup.rating_stage,
        )
    from ratings.services import analyses_data_changed  # services imports this module

    analyses_data_changed(project_id=project.pk)


def _historic_mean(payloads: Sequence[Mapping[str, Any]]) -> engine.HistoricResolution:
    """A historic item stage's resolution: the mean rating, accepted (policy "mean")."""
    mean = math.fsum(float(payload["value"]) for payload in payloads) / len(payloads)
    return engine.HistoricResolution(value=mean, outcome="accept", policy="mean")
