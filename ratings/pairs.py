"""Sentence pairs into a ratings project: each pair expanded into its items (orders ×
connectives), attention checks and practice items placed in their stages (ratings/project_setup.py
describes the stages). Checked completely, then written in one transaction."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotation import api as engine
from annotation.api import EVERYONE
from annotation.models import Item, Project
from imports.models import ImportBatch
from ratings import importing
from ratings.connectives import (
    common_words,
    connective_set_from_json,
    expand_pair,
)
from ratings.importing import ImportRejected
from ratings.kinds import scale_bounds
from ratings.models import SentencePair
from ratings.project_setup import (
    ATTENTION_GROUP,
    BULK_BATCH,
    _as_user,
    _practice_stage,
    _rating_stage,
    _rejected,
    _setup,
)

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
            scale=scale_bounds(_rating_stage(setup).config),
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
        created_by=_as_user(user),
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
    texts: list[importing.PairRow | importing.SingleItemRow] = [*pairs, *singles]
    common = common_words(
        sentence for row in texts for sentence in (row.sentence_a, row.sentence_b)
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
        engine.item_stages_open(items=rated, stage=_rating_stage(setup))
    checks = [item.pk for item in rated if item.purpose == Item.Purpose.ATTENTION_CHECK]
    if checks:
        engine.item_stages_target_set(
            stage=_rating_stage(setup),
            purpose=Item.Purpose.ATTENTION_CHECK,
            target_count=EVERYONE,
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
    from ratings.services import analyses_data_changed  # services imports this module

    analyses_data_changed(project_id=project.pk)
    return PairsImportResult(
        import_batch=batch,
        pairs=len(pairs),
        items=len(items) - len(singles),
        practice_items=len(practice),
        attention_checks=len(checks),
    )
