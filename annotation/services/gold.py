"""Silent gold promoted from decisions (annotation/gold.py says what gold is and how it is kept).

A researcher confirms unanimous decisions of a stage (``gold_candidates``) as gold: each becomes
a new item — a copy of the decided item's content, ``purpose = gold``, the decided value as its
known answer in that stage, its source's id under the hidden payload field ``_gold_of`` (the
next-item search keeps the copy from everyone who answered the source) — opened in the stage
with every annotator's slots. The source item and its decision are not touched.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db import transaction

from annotation.errors import ApplicationError
from annotation.gold import GOLD_SOURCE_FIELD, gold_candidates
from annotation.models import Item, Stage
from annotation.selectors import GOLD_FIELD
from annotation.services.setup import item_stages_open


def _free_external_id(project_id: int, source: str, taken: set[str]) -> str:
    """``<source>-2``, ``-3``, … the first id free in the project: what a variant of the item
    would be called, so the copy's id says nothing of gold."""
    number = 2
    while True:
        candidate = f"{source}-{number}"[:200]
        if (
            candidate not in taken
            and not Item.objects.filter(project_id=project_id, external_id=candidate).exists()
        ):
            taken.add(candidate)
            return candidate
        number += 1


@transaction.atomic
def gold_promote(*, stage: Stage, resolution_ids: Iterable[int], by: User) -> list[Item]:
    """Make the given unanimous decisions of `stage` silent gold items of it (module doc).
    Every id must be one of ``gold_candidates(stage)`` (unanimous, a regular item, not promoted
    yet): otherwise nothing is written and the error names the ids refused. Returns the new
    items. `by`: the researcher confirming (their view checked the role)."""
    wanted = {int(pk) for pk in resolution_ids}
    if not wanted:
        raise ApplicationError("Tick at least one decision to make it a gold item.", {})
    # The candidates read again under the stage's row lock: two confirmations at once promote
    # each decision once.
    Stage.objects.select_for_update().filter(pk=stage.pk).first()
    candidates = {
        resolution.pk: resolution for resolution in gold_candidates(stage=stage, limit=10_000)
    }
    refused = sorted(wanted - candidates.keys())
    if refused:
        raise ApplicationError(
            f"{len(refused)} of these decisions cannot become gold (not unanimous, already "
            "promoted, or not of this stage): nothing was changed.",
            {"resolution": refused[:50]},
        )
    taken: set[str] = set()
    copies = []
    for pk in sorted(wanted):
        source = candidates[pk].item_stage.item
        payload = dict(source.payload or {})
        known = (
            dict(payload.get(GOLD_FIELD) or {}) if isinstance(payload.get(GOLD_FIELD), dict) else {}
        )
        known[stage.slug] = candidates[pk].value
        payload[GOLD_FIELD] = known
        payload[GOLD_SOURCE_FIELD] = source.pk
        payload["_gold_confirmed_by"] = by.get_username()
        copies.append(
            Item(
                project_id=stage.project_id,
                external_id=_free_external_id(stage.project_id, source.external_id, taken),
                payload=payload,
                source=source.source,
                purpose=Item.Purpose.GOLD,
                version=1,
            )
        )
    created = Item.objects.bulk_create(copies)
    item_stages_open(items=[item.pk for item in created], stage=stage)
    return created
