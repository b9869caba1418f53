"""Writes of ratings projects: setup, pair imports, historic ratings, model answers.

One module for the ratings writes (about 850 lines): setup and every import share the
connective set, the item expansion and the check-everything-then-write pattern.

Every import is checked completely before anything is written, and written in one transaction:
a file with any bad row (reported with its line and field) leaves the project as it was.

Stages of a ratings project (see models.RatingsSetup):

- ``rate`` (position 1): live ratings; kind "rate", overlap 15 by default, order policy "random"
  (each rater's own seeded order, with the variants of a pair, ``Item.group`` = pair id, spread
  apart); resolved items keep their mean (policy "mean").
- ``practice`` (position 0, created with the first practice item): every rater rates every
  practice item (overlap ``EVERYONE``), so it never resolves; feedback is shown on screen.
- ``historic`` (last, inactive): imported ratings (``Annotation`` with ``assignment=None`` and
  ``external_rater``; empty for anonymous crowd ratings such as ExpliCa's). Its item stages are
  written *resolved* by the engine's historic import (``annotation.api.historic_annotations_import``),
  with ``target_count = submitted_count`` = the number of imported ratings and a "mean"
  Resolution, so the engine's counters and invariants hold and no annotator is ever
  offered them (the stage is inactive; ``access_stage_for_annotator`` refuses it). Keeping them
  apart from ``rate`` lets a project collect new ratings of the same items and compare sources.

Attention-check items live in ``rate`` among the regular items, with ``target_count`` raised to
``EVERYONE`` so that every rater meets them; all of them form one group, so each rater's checks
are spread over their session instead of bunched.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation import api as engine
from annotation.api import EVERYONE
from annotation.errors import ApplicationError, Conflict
from annotation.models import Annotation, Item, ItemStage, Project, Stage
from imports.models import ImportBatch
from ratings import importing
from ratings.apps import RATINGS_WORKFLOW
from ratings.connectives import (
    EXPLICA_CONNECTIVES,
    ConnectiveSet,
    common_words,
    connective_set_from_json,
    expand_pair,
)
from ratings.importing import ImportRejected
from ratings.kinds import DEFAULT_ANCHORS, DEFAULT_QUESTION, scale_bounds
from ratings.models import ModelRun, RatingsSetup, SentencePair
from ratings.stats import LabelRule

logger = logging.getLogger(__name__)

ATTENTION_GROUP = "attention-checks"
BULK_BATCH = 5000

#: Payload fields of ratings items. All are hidden from the generic item display (the rating
#: form renders the sentence itself, with the connective marked) and none may reach a rater:
#: subset, relation and expected ratings would bias them.
DEFAULT_GUIDELINES = """Each screen shows one sentence made of two events joined by a connective \
(highlighted). Rate how acceptable the whole sentence is, from 1 (completely unacceptable) to 10 \
(completely acceptable): does the connective fit the way the two events are related?

- Press a number key (1–9, 0 for 10) or click a rating, then press Enter or **Submit**.
- There are no right answers for most sentences; give your first impression.
- If you cannot judge a sentence (e.g. you do not understand it), tick *I can't judge this* and \
say why."""


def _rejected(error: ImportRejected) -> ApplicationError:
    return ApplicationError(
        str(error),
        {
            "errors": [row_error.to_dict() for row_error in error.errors],
            "error_count": error.error_count,
        },
    )


def _sha256(content: bytes | str | IO[bytes]) -> str:
    """SHA-256 of an upload; a file object is hashed in chunks and rewound for reading."""
    if isinstance(content, str):
        return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    if isinstance(content, bytes | bytearray):
        return hashlib.sha256(content).hexdigest()
    digest = hashlib.sha256()
    content.seek(0)
    while chunk := content.read(1 << 20):
        digest.update(chunk)
    content.seek(0)
    return digest.hexdigest()


def label_rule_from_json(data: Mapping[str, Any] | None) -> LabelRule:
    data = dict(data or {})
    if isinstance(data.get("tie_priority"), list):
        data["tie_priority"] = tuple(data["tie_priority"])
    try:
        return LabelRule(**data)
    except (TypeError, ValueError) as error:
        raise ApplicationError(
            f"The label rule is not valid: {error}", {"label_rule": data}
        ) from None


def _label_rule_json(rule: LabelRule) -> dict[str, Any]:
    data = dict(rule.__dict__)
    if data.get("tie_priority") is not None:
        data["tie_priority"] = list(data["tie_priority"])
    return data


# --- Setup ------------------------------------------------------------------------------------


@transaction.atomic
def ratings_project_create(
    *,
    slug: str,
    name: str,
    description: str = "",
    guidelines: str = DEFAULT_GUIDELINES,
    connective_set: ConnectiveSet | Mapping[str, Any] = EXPLICA_CONNECTIVES,
    label_rule: LabelRule | Mapping[str, Any] | None = None,
    scale: tuple[int, int] = (1, 10),
    anchors: Mapping[str, str] | None = None,
    allow_cannot_judge: bool = True,
    question: str = DEFAULT_QUESTION,
    overlap: int = 15,
    seed: int | None = None,
) -> Project:
    """A ratings project with its live rating stage (ExpliCa's defaults: so/because/then/after,
    1–10, 15 ratings per item, the label rule that reproduces the published labels)."""
    if not isinstance(connective_set, ConnectiveSet):
        try:
            connective_set = connective_set_from_json(connective_set)
        except ValueError as error:
            raise ApplicationError(str(error), {"connective_set": "invalid"}) from None
    rule = label_rule if isinstance(label_rule, LabelRule) else label_rule_from_json(label_rule)
    config = {
        "min": scale[0],
        "max": scale[1],
        "anchors": dict(anchors)
        if anchors is not None
        else (DEFAULT_ANCHORS if tuple(scale) == (1, 10) else {}),
        "allow_cannot_judge": allow_cannot_judge,
        "question": question,
    }
    scale_bounds(config)
    project = engine.project_create(
        slug=slug,
        name=name,
        kind=RATINGS_WORKFLOW,
        description=description,
        guidelines=guidelines,
    )
    options: dict[str, Any] = {} if seed is None else {"seed": seed}
    rating_stage = engine.stage_create(
        project=project,
        slug="rate",
        name="Rate sentences",
        kind="rate",
        overlap=overlap,
        config=config,
        position=1,
        order_policy=Stage.OrderPolicy.RANDOM,
        on_accept=Stage.OnAccept.KEEP,
        instructions="Rate each sentence; the highlighted word joins the two events.",
        **options,
    )
    RatingsSetup.objects.create(
        project=project,
        connective_set=connective_set.to_json(),
        label_rule=_label_rule_json(rule),
        rating_stage=rating_stage,
    )
    return project


def _setup(project: Project) -> RatingsSetup:
    setup = (
        RatingsSetup.objects.select_related("rating_stage", "practice_stage", "historic_stage")
        .filter(project=project)
        .first()
    )
    if setup is None:
        raise ApplicationError(
            f"{project.name} is not a ratings project.", {"project": project.slug}
        )
    setup.project = project
    return setup


def _practice_stage(setup: RatingsSetup) -> Stage:
    if setup.practice_stage is None:
        setup.practice_stage = engine.stage_create(
            project=setup.project,
            slug="practice",
            name="Practice",
            kind="rate",
            overlap=EVERYONE,
            config=dict(setup.rating_stage.config),
            position=0,
            order_policy=Stage.OrderPolicy.DEPTH_FIRST,
            on_accept=Stage.OnAccept.KEEP,
            instructions="A few sentences to practise on before the real ones; after each you "
            "see what most attentive raters answer.",
        )
        setup.save(update_fields=["practice_stage", "updated_at"])
        # Practice first: the real sentences go only to raters who did every practice item.
        rules = list(setup.rating_stage.eligibility or [])
        rules.append({"rule": "after_stage", "stage": "practice"})
        setup.rating_stage = engine.stage_update(stage=setup.rating_stage, eligibility=rules)
    return setup.practice_stage


def _historic_stage(setup: RatingsSetup) -> Stage:
    if setup.historic_stage is None:
        last = setup.project.stages.order_by("-position").values_list("position", flat=True).first()
        setup.historic_stage = engine.stage_create(
            project=setup.project,
            slug="historic",
            name="Imported ratings",
            kind="rate",
            overlap=setup.rating_stage.overlap,
            config=dict(setup.rating_stage.config),
            position=(last or 0) + 1,
            on_accept=Stage.OnAccept.KEEP,
            is_active=False,
            instructions="Ratings imported from earlier studies (not annotated here).",
        )
        setup.save(update_fields=["historic_stage", "updated_at"])
    return setup.historic_stage


# --- Pairs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairsImportResult:
    import_batch: ImportBatch
    pairs: int
    items: int
    practice_items: int
    attention_checks: int


def pairs_import(
    *,
    project: Project,
    content: bytes | str | IO[bytes],
    filename: str,
    user: AbstractBaseUser | None = None,
    open_for_rating: bool = True,
) -> PairsImportResult:
    """Import a pairs file (CSV/TSV/JSONL/JSON array, read by imports.core; see
    ratings.importing) into a ratings project. ``content`` may be bytes, text or a binary file
    object (an upload), which is read one row at a time.

    Raises ApplicationError with ``extra["errors"]`` = [{"line", "field", "message"}, …] when
    any row is bad; nothing is written then."""
    setup = _setup(project)
    connective_set = connective_set_from_json(setup.connective_set)
    try:
        rows = importing.Rows(content, filename)
        parsed = importing.parse_pairs(
            rows,
            connective_set,
            scale=scale_bounds(setup.rating_stage.config),
            existing_ids=_existing_ids(project),
        )
    except ImportRejected as error:
        raise _rejected(error) from None
    return pairs_create(
        project=project,
        pairs=parsed.pairs,
        singles=parsed.singles,
        filename=filename,
        sha256=rows.sha256,
        file_format=rows.fmt,
        user=user,
        open_for_rating=open_for_rating,
    )


def _existing_ids(project: Project) -> set[str]:
    pair_ids = set(SentencePair.objects.filter(project=project).values_list("pair_id", flat=True))
    singles = Item.objects.filter(project=project).exclude(purpose=Item.Purpose.REGULAR)
    return pair_ids | {str(value) for value in singles.values_list("payload__pair_id", flat=True)}


def _disguised_id(project: Project, item_id: str, order: str, connective: str) -> str:
    """An attention check's external id, shaped like a regular item's ("<pair>:<order>:<word>")
    and not derived visibly from the researcher's id ("check-1"), which the item screen
    would otherwise show. The researcher's id stays in the payload (``pair_id``)."""
    token = hashlib.sha256(f"{project.pk}:{item_id}".encode()).hexdigest()[:6]
    return f"{token}:{order}:{connective}"


@transaction.atomic
def pairs_create(
    *,
    project: Project,
    pairs: Sequence[importing.PairRow],
    singles: Sequence[importing.SingleItemRow] = (),
    filename: str = "",
    sha256: str = "",
    file_format: str = "",
    user: AbstractBaseUser | None = None,
    open_for_rating: bool = True,
) -> PairsImportResult:
    """Write checked pair rows: the pairs, their items (every connective × both orders), and the
    practice / attention-check items; open them in their stages (regular items only when
    ``open_for_rating``: an analysis of historic ratings needs no live rating)."""
    setup = _setup(project)
    connective_set = connective_set_from_json(setup.connective_set)
    now = timezone.now()
    batch = ImportBatch.objects.create(
        project=project,
        created_by=user,
        filename=filename[:255],
        format=file_format or "rows",
        sha256=sha256,
        options={"ratings": "pairs"},
        status=ImportBatch.Status.WRITING,
        rows_total=len(pairs) + len(singles),
        started_at=now,
    )
    SentencePair.objects.bulk_create(
        [
            SentencePair(
                project=project,
                pair_id=pair.pair_id,
                sentence_a=pair.sentence_a,
                sentence_b=pair.sentence_b,
                subset=pair.subset,
                origin=pair.origin,
                flags=list(pair.flags),
                extra=dict(pair.extra),
                import_batch=batch,
            )
            for pair in pairs
        ],
        batch_size=BULK_BATCH,
    )
    rows: list[dict[str, Any]] = []
    # The file's own sentences tell common words from names (connectives.common_words).
    common = common_words(
        sentence for row in (*pairs, *singles) for sentence in (row.sentence_a, row.sentence_b)
    )
    for pair in pairs:
        for variant in expand_pair(
            {
                "pair_id": pair.pair_id,
                "sentence_a": pair.sentence_a,
                "sentence_b": pair.sentence_b,
                "subset": pair.subset,
                "origin": pair.origin,
                "flags": list(pair.flags),
            },
            connective_set,
            common=common,
        ):
            key = variant.pop("item_key")
            variant.pop("sentence_a", None)
            variant.pop("sentence_b", None)
            rows.append(
                {
                    "external_id": key,
                    "payload": variant,
                    "source": pair.origin,
                    "group": pair.pair_id,
                }
            )
    for single in singles:
        first, second = (
            (single.sentence_a, single.sentence_b)
            if single.order == "AB"
            else (single.sentence_b, single.sentence_a)
        )
        connective = connective_set.get(single.connective)
        text, mark = connective_set.render_marked(first, second, connective.word, common=common)
        rows.append(
            {
                "external_id": single.item_id
                if single.purpose == "practice"
                else _disguised_id(project, single.item_id, single.order, connective.word),
                "payload": {
                    "pair_id": single.item_id,
                    "order": single.order,
                    "connective": connective.word,
                    "relation": connective.relation,
                    "connective_order": connective.order,
                    "first": first,
                    "second": second,
                    "text": text,
                    "mark": list(mark) if mark else None,
                    "expected_min": single.expected_min,
                    "expected_max": single.expected_max,
                    "feedback": single.feedback,
                },
                "group": ATTENTION_GROUP if single.purpose == "attention_check" else "",
                "purpose": single.purpose,
                "source": "practice" if single.purpose == "practice" else "attention check",
            }
        )
    items = engine.items_create(
        project=project, rows=rows, import_batch=batch, open_first_stage=False
    )
    practice = [item for item in items if item.purpose == Item.Purpose.PRACTICE]
    rated = [
        item
        for item in items
        if item.purpose == Item.Purpose.ATTENTION_CHECK
        or (item.purpose == Item.Purpose.REGULAR and open_for_rating)
    ]
    if rated:
        engine.item_stages_open(items=rated, stage=setup.rating_stage)
    checks = [item.pk for item in rated if item.purpose == Item.Purpose.ATTENTION_CHECK]
    if checks:
        ItemStage.objects.filter(stage=setup.rating_stage, item_id__in=checks).update(
            target_count=EVERYONE
        )
    if practice:
        engine.item_stages_open(items=practice, stage=_practice_stage(setup))
    batch.status = ImportBatch.Status.SUCCEEDED
    batch.rows_done = batch.rows_total
    batch.items_created = len(items)
    batch.finished_at = timezone.now()
    batch.message = (
        f"{len(pairs)} pairs → {len(items) - len(singles)} items; "
        f"{len(practice)} practice items; {len(checks)} attention checks."
    )
    batch.save(update_fields=["status", "rows_done", "items_created", "finished_at", "message"])
    analyses_data_changed(project_id=project.pk)
    return PairsImportResult(
        import_batch=batch,
        pairs=len(pairs),
        items=len(items) - len(singles),
        practice_items=len(practice),
        attention_checks=len(checks),
    )


# --- Historic ratings -------------------------------------------------------------------------


def _regular_item_ids(project: Project) -> dict[str, int]:
    return dict(
        Item.objects.filter(project=project, purpose=Item.Purpose.REGULAR).values_list(
            "external_id", "pk"
        )
    )


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
    connective_set = connective_set_from_json(setup.connective_set)
    known = _regular_item_ids(project)
    try:
        rows = importing.Rows(content, filename)
        ratings = importing.parse_ratings(
            rows,
            connective_set,
            scale=scale_bounds(setup.rating_stage.config),
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
    now = timezone.now()
    ImportBatch.objects.create(
        project=project, created_by=user if user is not None and user.is_authenticated else None,
        filename=filename[:255], format=Path(filename).suffix.lstrip(".").lower()[:16],
        sha256=sha256, content_sha256=fingerprint, options=HISTORIC_OPTIONS,
        status=ImportBatch.Status.SUCCEEDED,
        rows_total=len(ratings), rows_done=len(ratings), rows_written=len(ratings),
        started_at=now, finished_at=now, message=f"{stored:,} historic ratings.",
    )  # fmt: skip
    return stored


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
    setup = _setup(project)
    stage = _historic_stage(setup)
    item_ids = item_ids if item_ids is not None else _regular_item_ids(project)
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
    live = ItemStage.objects.filter(stage=setup.rating_stage).values("item_id")
    Item.objects.filter(pk__in=list(written.item_stage_ids), status=Item.Status.ACTIVE).exclude(
        pk__in=live
    ).update(status=Item.Status.ACCEPTED)
    analyses_data_changed(project_id=project.pk)
    return len(ratings)


def _historic_mean(payloads: Sequence[Mapping[str, Any]]) -> engine.HistoricResolution:
    """A historic item stage's resolution: the mean rating, accepted (policy "mean")."""
    mean = math.fsum(float(payload["value"]) for payload in payloads) / len(payloads)
    return engine.HistoricResolution(value=mean, outcome="accept", policy="mean")


# --- Model answers ----------------------------------------------------------------------------


def model_run_import(
    *,
    project: Project,
    name: str,
    content: bytes | str | IO[bytes],
    filename: str,
    user: AbstractBaseUser | None = None,
    replace: bool = False,
) -> ModelRun:
    """Store a model's answers (CSV/TSV/JSONL/JSON array: ratings per item, or a chosen
    connective per ordered pair; -1 or empty = no answer) for comparison with the human labels.
    ``content`` may be bytes, text or a binary file object (hashed, rewound, then streamed)."""
    setup = _setup(project)
    sha256 = _sha256(content)  # before reading: hashing a file object rewinds it
    try:
        rows = importing.Rows(content, filename)
    except ImportRejected as error:
        raise _rejected(error) from None
    return model_run_create(
        project=project,
        name=name,
        rows=rows,
        filename=filename,
        sha256=sha256,
        user=user,
        replace=replace,
        setup=setup,
    )


@transaction.atomic
def model_run_create(
    *,
    project: Project,
    name: str,
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    filename: str = "",
    sha256: str = "",
    user: AbstractBaseUser | None = None,
    replace: bool = False,
    setup: RatingsSetup | None = None,
) -> ModelRun:
    setup = setup or _setup(project)
    name = " ".join((name or "").split())
    if not name:
        raise ApplicationError("Give the model run a name.", {"name": "required"})
    if len(name) > 200:
        raise ApplicationError("The name is too long (200 characters at most).", {"name": name})
    existing = ModelRun.objects.filter(project=project, name=name)
    if existing.exists():
        if not replace:
            raise ApplicationError(
                f"There is already a model run named {name!r}; choose another name.",
                {"name": name},
            )
        existing.delete()
    connective_set = connective_set_from_json(setup.connective_set)
    try:
        parsed = importing.parse_model_answers(
            rows,
            connective_set,
            scale=scale_bounds(setup.rating_stage.config),
            known_items=set(_regular_item_ids(project)),
            known_pairs=set(
                SentencePair.objects.filter(project=project).values_list("pair_id", flat=True)
            ),
        )
    except ImportRejected as error:
        raise _rejected(error) from None
    return ModelRun.objects.create(
        project=project,
        name=name,
        answer_kind=parsed.answer_kind,
        answers=parsed.answers,
        n_answers=len(parsed.answers),
        n_no_answer=parsed.n_no_answer,
        filename=filename[:255],
        sha256=sha256,
        uploaded_by=user,
    )


@transaction.atomic
def model_run_delete(*, project: Project, run_id: int) -> None:
    deleted, _ = ModelRun.objects.filter(project=project, pk=run_id).delete()
    if not deleted:
        raise ApplicationError("There is no such model run.", {"run": run_id}, status=404)


# --- ExpliCa's released files -----------------------------------------------------------------


@dataclass(frozen=True)
class ExplicaImportResult:
    pairs: PairsImportResult
    ratings: int
    model_runs: list[ModelRun]


@transaction.atomic
def explica_import(
    *,
    project: Project,
    pair_file: Path,
    ratings_file: Path | None = None,
    model_files: Sequence[Path] = (),
    user: AbstractBaseUser | None = None,
    open_for_rating: bool = False,
) -> ExplicaImportResult:
    """Import ExpliCa's released files through the same checks and writes as any upload.

    ``pair_file``: ``explica_freq_4800.tsv`` (pairs with subset, origin, socially challenging
    flag and the published labels, kept in each pair's ``extra``) or ``explica.csv``.
    ``ratings_file``: any ``accept_res_outlines_*.tsv``; its ``accept_answers`` become 15
    anonymous historic ratings per item. ``model_files``: acceptability files whose model answers
    (``answer_greedy_cleaned``; -1 = no answer) become model runs named after the file.
    ``open_for_rating`` also opens the items in the live rating stage (a replication).
    """
    from ratings import explica  # pandas readers; imported here to keep startup light

    setup = _setup(project)
    connective_set = connective_set_from_json(setup.connective_set)
    try:
        ordered = explica.read_ordered_pairs(pair_file)
    except (OSError, ValueError) as error:
        raise ApplicationError(f"Cannot read {Path(pair_file).name}: {error}") from None
    published: dict[str, dict[str, str]] = defaultdict(dict)
    if "published_label" in ordered:
        for pair_id, order, label in ordered[["pair_id", "order", "published_label"]].itertuples(
            index=False
        ):
            published[str(pair_id)][order] = label
    pair_rows = []
    for line, row in enumerate(explica.pairs_from_ordered(ordered).to_dict("records"), start=2):
        flags = ["socially challenging"] if row.get("socially_challenging") else []
        record = {
            "pair_id": row["pair_id"],
            "sentence_a": row["sentence_a"],
            "sentence_b": row["sentence_b"],
            "subset": row.get("subset") or "",
            "origin": row.get("origin") or "",
            "flags": flags,
        }
        if published.get(str(row["pair_id"])):
            record["published_label"] = published[str(row["pair_id"])]
        pair_rows.append((line, record))
    try:
        parsed = importing.parse_pairs(
            pair_rows,
            connective_set,
            scale=scale_bounds(setup.rating_stage.config),
            existing_ids=_existing_ids(project),
        )
    except ImportRejected as error:
        raise _rejected(error) from None
    pairs = pairs_create(
        project=project,
        pairs=parsed.pairs,
        filename=Path(pair_file).name,
        sha256=_file_sha256(pair_file),
        file_format="explica",
        user=user,
        open_for_rating=open_for_rating,
    )
    known = _regular_item_ids(project)
    n_ratings = 0
    if ratings_file is not None:
        accept = _read_acceptability(explica, ratings_file, ordered, connective_set)
        grouped = accept.ratings.groupby("item_key", sort=False)["rating"].agg(list)
        meta = {
            key: (pair_id, order, connective)
            for key, pair_id, order, connective in accept.items[
                ["item_key", "pair_id", "order", "connective"]
            ].itertuples(index=False)
        }
        rating_rows = [
            (
                line,
                {
                    "pair_id": meta[key][0],
                    "order": meta[key][1],
                    "connective": meta[key][2],
                    "ratings": values,
                },
            )
            for line, (key, values) in enumerate(grouped.items(), start=2)
        ]
        try:
            ratings = importing.parse_ratings(
                rating_rows,
                connective_set,
                scale=scale_bounds(setup.rating_stage.config),
                known_items=set(known),
            )
        except ImportRejected as error:
            raise _rejected(error) from None
        n_ratings = historic_ratings_create(
            project=project, ratings=ratings, source=Path(ratings_file).name, item_ids=known
        )
    runs = []
    for model_file in model_files:
        accept = _read_acceptability(explica, model_file, ordered, connective_set)
        if "model_rating" not in accept.items:
            raise ApplicationError(f"{Path(model_file).name} has no model answers.")
        model_rows = [
            (
                line,
                {
                    "pair_id": row["pair_id"],
                    "order": row["order"],
                    "connective": row["connective"],
                    "rating": -1 if math.isnan(row["model_rating"]) else row["model_rating"],
                },
            )
            for line, row in enumerate(accept.items.to_dict("records"), start=2)
        ]
        runs.append(
            model_run_create(
                project=project,
                name=accept.model,
                rows=model_rows,
                filename=Path(model_file).name,
                sha256=_file_sha256(model_file),
                user=user,
                replace=True,
                setup=setup,
            )
        )
    return ExplicaImportResult(pairs=pairs, ratings=n_ratings, model_runs=runs)


def _read_acceptability(explica_module, path: Path, ordered, connective_set: ConnectiveSet):
    try:
        return explica_module.read_acceptability_file(path, ordered, connective_set)
    except (OSError, ValueError) as error:
        raise ApplicationError(f"Cannot read {Path(path).name}: {error}") from None


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- The stored analysis ------------------------------------------------------------------------
#
# The researcher page never computes its analysis (about 1–2 s for ExpliCa's 72,000 ratings): a
# Celery task does, when the data change, and the page serves the stored result
# (models.StoredAnalysis). Changes reach here three ways: the engine's resolution event
# (annotation.events.on_item_stages_resolved, registered in apps.py), this module's imports, and
# the page itself, which finds its stored result stale after submissions that resolved nothing
# (the engine has no per-submission event) and asks for a refresh. Debounce: whoever sets
# queued_at from NULL sends the one message, RATINGS_ANALYSIS_DELAY seconds later, so a burst of
# submissions or resolutions is computed once; the task clears queued_at before it reads, so a
# change during the computation queues the next one. A mark older than STALE_QUEUE_SECONDS
# (message lost with the broker or a killed worker) is taken over by the next request.

STALE_QUEUE_SECONDS = 300


def analysis_refresh_request(
    *, project_id: int, source: str = "all", run_id: int | None = None
) -> bool:
    """Ask for the analysis of (source, run) to be recomputed soon; returns True when this call
    sent the message (False when one is already on its way). Sent after commit; a broker
    failure is logged and the mark cleared, so the next page load asks again."""
    from django.conf import settings
    from django.db.models import Q

    from ratings.models import StoredAnalysis
    from ratings.tasks import refresh_analysis

    row, _ = StoredAnalysis.objects.get_or_create(
        project_id=project_id,
        source=source,
        run_key=run_id or 0,
        defaults={"run_id": run_id},
    )
    now = timezone.now()
    overdue = now - timezone.timedelta(seconds=STALE_QUEUE_SECONDS)
    claimed = (
        StoredAnalysis.objects.filter(pk=row.pk)
        .filter(Q(queued_at__isnull=True) | Q(queued_at__lt=overdue))
        .update(queued_at=now)
    )
    if not claimed:
        return False
    delay = float(getattr(settings, "RATINGS_ANALYSIS_DELAY", 2))

    def send() -> None:
        try:
            refresh_analysis.apply_async((project_id, source, run_id), countdown=delay)
        except Exception:
            logger.exception("could not enqueue the ratings analysis of project %s", project_id)
            StoredAnalysis.objects.filter(pk=row.pk, queued_at=now).update(queued_at=None)

    transaction.on_commit(send)
    return True


def analyses_data_changed(*, project_id: int) -> int:
    """The project's ratings changed: refresh every analysis the page has shown (each source and
    model run once viewed) and the three sources without a model run (the page's default and
    the two the Agreement page shows). Returns how many messages were sent."""
    from ratings.models import StoredAnalysis
    from ratings.selectors import SOURCES

    selections = {(source, None) for source in SOURCES} | {
        (source, run_id)
        for source, run_id in StoredAnalysis.objects.filter(project_id=project_id).values_list(
            "source", "run_id"
        )
    }
    return sum(
        analysis_refresh_request(project_id=project_id, source=source, run_id=run_id)
        for source, run_id in sorted(selections, key=lambda pair: (pair[0], pair[1] or 0))
    )


def analyses_item_stages_resolved(item_stage_ids: Iterable[int]) -> None:
    """Listener of annotation.events.on_item_stages_resolved: refresh the analyses of the
    ratings projects whose rating stage these item stages belong to."""
    project_ids = set(
        RatingsSetup.objects.filter(
            rating_stage__item_stages__pk__in=list(item_stage_ids)
        ).values_list("project_id", flat=True)
    )
    for project_id in sorted(project_ids):
        analyses_data_changed(project_id=project_id)


def analysis_refresh(*, project_id: int, source: str, run_id: int | None) -> bool:
    """Compute and store the analysis of (source, run) unless the stored one is already fresh.
    Returns True when it computed. Safe to run twice: the second run finds the version current
    and stores nothing; a project, run or setup that is gone is a no-op."""
    import time

    from ratings import selectors
    from ratings.models import StoredAnalysis

    # Whatever happens next, the message that brought us here is consumed: changes from now
    # on queue the next refresh.
    StoredAnalysis.objects.filter(project_id=project_id, source=source, run_key=run_id or 0).update(
        queued_at=None
    )
    project = Project.objects.filter(pk=project_id).first()
    context = selectors.ratings_context(project) if project is not None else None
    if context is None or source not in selectors.SOURCES:
        return False
    run = None
    if run_id:
        run = ModelRun.objects.filter(project=project, pk=run_id).first()
        if run is None:
            return False
    version = selectors.data_version(context, run)
    current = StoredAnalysis.objects.filter(
        project=project, source=source, run_key=run_id or 0, version=version
    ).exclude(content=None)
    if current.exists():
        return False
    started = time.perf_counter()
    result = selectors.compute_analysis(context, source=source, run=run)
    content = selectors.analysis_for_storage(result)
    row, _ = StoredAnalysis.objects.get_or_create(
        project=project, source=source, run_key=run_id or 0, defaults={"run": run}
    )
    StoredAnalysis.objects.filter(pk=row.pk).update(
        run=run,
        version=version,
        content=content,
        computed_at=timezone.now(),
        compute_seconds=round(time.perf_counter() - started, 3),
        computations=F("computations") + 1,
    )
    return True
