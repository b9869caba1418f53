"""Silent gold: items with a known answer mixed into an annotator's queue, never counted as work.

**What is stored** (the shape other code reads; nothing else marks gold):

* a gold item is an ``Item`` with ``purpose = Item.Purpose.GOLD`` ("gold"); its item stage in
  the stage it checks holds the known answer in ``ItemStage.gold`` (the kind's vote, as
  ``TaskKind.vote`` reads it from an answer's payload, or ``{"min": …, "max": …}`` for a number)
  and every annotator's slots (``target_count = EVERYONE``: it never fills, so it never
  resolves). The answer comes in with the item — ``payload["gold"][<stage slug>]``, or a plain
  ``payload["gold"]`` for a gold item (annotation.services.item_stages_open) — or from a
  researcher's promotion of a unanimous decision (annotation.services.gold: a copy of the item,
  its source's id under the payload's hidden field ``_gold_of``);
* a **gold answer** is an ordinary ``Annotation`` (current version, ``Annotation.objects``) on
  such an item stage, leased and submitted through the same services, pages and API as any
  other: its ``assignment.created_at`` is when the item was handed out, its ``created_at`` when
  it was answered (the server's clock); ``gold_answers`` lists them with whether each matches
  (``gold_matches``);
* the stage setting ``Stage.gold_every`` (n): at most one gold item in every n items an
  annotator is handed in the stage, never their first; 0 serves none (gold items already in
  the stage wait, untouched). annotation/services/next_item.py serves them (its ``gold``
  search says how the place of each is drawn).

**Never work.** A gold item stage never resolves, so its answers never reach a decision, a
route or a phase; the candidate searches for work leave gold items out; agreement, progress
counts, stranding and releases leave ``purpose = gold`` out; only the researcher's and admin's
pages (the item browser, the data manager) show them, with the known answer.

**Never seen.** Nothing an annotator or crowd participant receives names gold: the item screen
and the API show a gold item through the same allow-list (``item_payload_for_annotator``: the
answer sits under ``gold``, which no kind shows, or ``_gold_of``, which nobody is shown),
under the same URLs and fields; external ids are the researcher's (a promoted copy takes its
source's id with a number, as a variant would). tests/annotation/test_gold_queue.py scans
every response an annotator gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from annotation.errors import ApplicationError
from annotation.kinds import get_kind
from annotation.models import Annotation, Item, ItemStage, Resolution, Stage

#: The hidden payload field of a promoted gold copy naming its source item's id (fields
#: starting with "_" are never shown to annotators: annotation.selectors.item_payload_for_annotator).
GOLD_SOURCE_FIELD = "_gold_of"


#: The largest ``Stage.gold_every`` a stage takes (one gold item in every n; 0 = none).
GOLD_EVERY_MAX = 1000


def gold_every_clean(value: object) -> int:
    """A stage's ``gold_every`` checked: 0 (no gold served) or a whole number from 2 to
    GOLD_EVERY_MAX (1 would allow a gold item after every item, so each second one)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value == 1
        or not 0 <= value <= GOLD_EVERY_MAX
    ):
        raise ApplicationError(
            f"Gold items: one in every n items, n from 2 to {GOLD_EVERY_MAX} (0 = none).",
            {"gold_every": str(value)[:20]},
        )
    return value


def gold_matches(kind: Any, payload: Mapping[str, Any], gold: Any) -> bool | None:
    """Whether an answer's vote (``kind.vote(payload)``) matches a known answer: equal, or for
    ``{"min", "max"}`` a number within the bounds (either may be missing). None when there is
    no known answer."""
    if gold is None:
        return None
    vote = kind.vote(payload)
    if isinstance(gold, Mapping) and ("min" in gold or "max" in gold):
        if not isinstance(vote, (int, float)) or isinstance(vote, bool):
            return False
        low, high = gold.get("min"), gold.get("max")
        return not (
            (low is not None and vote < float(low)) or (high is not None and vote > float(high))
        )
    return bool(vote == gold)


class GoldAnswer(NamedTuple):
    """One annotator's answer to one silent gold item (see the module's docstring)."""

    annotation_id: int
    annotator_id: int
    item_stage_id: int
    vote: Any
    gold: Any
    correct: bool | None
    handed_out_at: datetime | None
    answered_at: datetime
    seconds_spent: float | None


def gold_answers(*, stage: Stage, annotator_ids: list[int] | None = None) -> list[GoldAnswer]:
    """Every current answer to the stage's silent gold items (optionally of some annotators
    only), oldest first, each with its vote, the known answer and whether they match."""
    kind = get_kind(stage.kind)
    rows = Annotation.objects.filter(
        item_stage__stage=stage, item_stage__item__purpose=Item.Purpose.GOLD
    )
    if annotator_ids is not None:
        rows = rows.filter(annotator_id__in=annotator_ids)
    found = []
    for pk, annotator_id, item_stage_id, payload, gold, leased, answered, seconds in rows.order_by(
        "created_at", "pk"
    ).values_list(
        "pk",
        "annotator_id",
        "item_stage_id",
        "payload",
        "item_stage__gold",
        "assignment__created_at",
        "created_at",
        "seconds_spent",
    ):
        found.append(
            GoldAnswer(
                annotation_id=pk,
                annotator_id=annotator_id,
                item_stage_id=item_stage_id,
                vote=kind.vote(payload),
                gold=gold,
                correct=gold_matches(kind, payload, gold),
                handed_out_at=leased,
                answered_at=answered,
                seconds_spent=seconds,
            )
        )
    return found


def gold_items(*, stage: Stage):
    """The stage's silent gold item stages with their items, newest first."""
    return (
        ItemStage.objects.filter(stage=stage, item__purpose=Item.Purpose.GOLD)
        .select_related("item")
        .order_by("-pk")
    )


def gold_candidates(*, stage: Stage, limit: int = 50) -> list[Resolution]:
    """Decisions of the stage a researcher may promote to silent gold: unanimous (every answer
    the same), on regular items, with a value, not promoted already; newest first, at most
    `limit`. Each resolution comes with its item stage and item."""
    promoted = Item.objects.filter(
        project_id=stage.project_id,
        purpose=Item.Purpose.GOLD,
        payload__has_key=GOLD_SOURCE_FIELD,
    ).values_list(f"payload__{GOLD_SOURCE_FIELD}", flat=True)
    already = {int(value) for value in promoted if isinstance(value, int)}
    candidates = (
        Resolution.objects.filter(
            item_stage__stage=stage,
            status=Resolution.Status.UNANIMOUS,
            item_stage__item__purpose=Item.Purpose.REGULAR,
            value__isnull=False,
        )
        .exclude(item_stage__item_id__in=already)
        .select_related("item_stage__item")
        .order_by("-computed_at", "-pk")
    )
    return list(candidates[:limit])
