"""Live stopping: a running ratings study collects no more ratings of an ordered pair once its
label is settled, by the rule measured on ExpliCa's ratings (ratings/adaptive.py,
``settled_pairs``; ratings/README.md, "Adaptive overlap").

**The setting.** The rating stage's config option ``stopping`` (``{"floor": 5, "confidence":
0.95, "mean_ci_width": null}``, checked by ``ratings.kinds.stopping_clean``; absent: off, the
default). The cap is the stage's overlap: an item that reaches it resolves as it always did.
Set with :func:`stopping_set` (or the option on the Setup tab, or
``ratings_project_create(stopping=…)``).

**The flow.**

1. After every committed submit the engine calls :func:`answers_stored`
   (``annotation.events.on_answers_stored``). For a rating stage with the option — decided from
   the stage the event carries, so other stages pay no query — it asks for a run with the
   debounce (rungwise/debounce.py on the stage's ``LiveStopping`` row): the first answer of a
   burst sends ``ratings.tasks.stop_settled`` ``RATINGS_STOPPING_DELAY`` seconds later (2 by
   default), the rest of the burst sends nothing; a mark older than five minutes (a lost
   message) is taken over by the next answer.
2. The task (:func:`stopping_run`) clears the mark, reads the ordered pairs with a rating
   stored since its previous run began (less a minute, for a submit that committed late; every
   pair on the first run), all their live ratings (the rating stage's; imported ones are another
   source), and asks ``settled_pairs``. A pair is stopped only when each of its items has at
   least ``floor`` ratings.
3. Every open item stage of a settled pair is stopped by the engine
   (``annotation.api.item_stage_stop``, under its row lock): its target becomes the ratings
   stored plus the leases held, and it resolves (its mean) as soon as those leases submit or
   end. A lease held at the stop still counts when it submits; one that expires or is skipped
   takes its slot with it (annotation/services/stages.py).

Safe to run twice: a second run finds the pairs' item stages stopped or resolved and changes
nothing. A failure leaves ``read_from`` where it was, so the next run reads those pairs again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pandas as pd
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation import api as engine
from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, ItemStage, Project, Stage
from ratings.adaptive import StoppingRule, settled_pairs
from ratings.kinds import stopping_clean
from ratings.models import LiveStopping, RatingsSetup
from ratings.stats import PAIR_KEYS

logger = logging.getLogger(__name__)

#: The task kind of rating stages (ratings/kinds.py).
RATE_KIND = "rate"
#: A run also reads ratings stored this long before its previous run began: a submit stamps its
#: answer before it commits.
MARGIN = timedelta(minutes=1)
#: A debounce mark older than this (seconds) is taken over by the next answer (a lost message).
STALE_QUEUE_SECONDS = 300


def stopping_rule(stage: Stage) -> StoppingRule | None:
    """The stopping rule a rating stage's config asks for (the cap: its overlap), or None when
    live stopping is off or the floor is above the overlap (nothing could stop early)."""
    option = (stage.config or {}).get("stopping")
    if stage.kind != RATE_KIND or not option:
        return None
    settings_ = stopping_clean(option)
    if settings_["floor"] > stage.overlap:
        return None
    return StoppingRule(
        floor=settings_["floor"],
        cap=stage.overlap,
        confidence=settings_["confidence"],
        mean_ci_width=settings_["mean_ci_width"],
    )


# --- The engine's event -------------------------------------------------------------------------


def answers_stored(stage: Any, item_stage_ids: list[int]) -> None:
    """Listener of ``annotation.events.on_answers_stored``: ask for a run on a rating stage with
    live stopping on. It runs in the submitting request: every other stage is told apart by
    the stage it is given, without a query; a stage with the option costs two short
    statements (the debounce)."""
    if getattr(stage, "kind", None) != RATE_KIND or not (stage.config or {}).get("stopping"):
        return
    stopping_run_request(stage_id=stage.pk)


def stopping_run_request(*, stage_id: int) -> bool:
    """Ask for a run of live stopping on the stage soon (debounced; see the module docstring).
    Returns True when this call sent the message."""
    from rungwise.debounce import debounce_request

    row, _ = LiveStopping.objects.get_or_create(stage_id=stage_id)
    return debounce_request(
        LiveStopping.objects.filter(pk=row.pk),
        task_name="ratings.tasks.stop_settled",
        args=(stage_id,),
        countdown=float(getattr(settings, "RATINGS_STOPPING_DELAY", 2)),
        overdue_after=STALE_QUEUE_SECONDS,
        what=f"live stopping of stage {stage_id}",
    )


# --- The run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoppingRun:
    """What one run did: ordered pairs read and found settled, item stages stopped."""

    pairs_read: int = 0
    pairs_settled: int = 0
    stopped: int = 0


def _ratings(stage: Stage, item_ids: list[int], items: pd.DataFrame) -> pd.DataFrame:
    """The live ratings of these items on ``stage`` in ``ratings.stats``' long layout."""
    rows = Annotation.objects.filter(
        item_stage__stage=stage, item_stage__item_id__in=item_ids
    ).values_list("item_stage__item_id", "payload__value")
    frame = pd.DataFrame.from_records(list(rows), columns=["item_id", "rating"])
    frame["rating"] = pd.to_numeric(frame["rating"], errors="coerce")
    meta = items.set_index("item_id")[["item_key", "pair_id", "order", "connective"]]
    return frame.join(meta, on="item_id")


def stopping_run(*, stage_id: int) -> StoppingRun:
    """Stop the open item stages of the ordered pairs whose label is settled, among those with a
    rating stored since the previous run (see the module docstring). A stage that is gone or
    has live stopping off is a no-op."""
    from rungwise.debounce import debounce_consume

    started = timezone.now()
    state = LiveStopping.objects.filter(stage_id=stage_id)
    debounce_consume(state)  # answers from now on send the next run
    stage = Stage.objects.filter(pk=stage_id).first()
    rule = stopping_rule(stage) if stage is not None else None
    setup = RatingsSetup.objects.filter(rating_stage_id=stage_id).first()
    if stage is None or rule is None or setup is None:
        return StoppingRun()
    row = state.first()
    read_from = row.read_from if row is not None else None
    from ratings.project_setup import label_rule_from_json
    from ratings.selectors import items_frame

    rule = StoppingRule(
        floor=rule.floor,
        cap=rule.cap,
        confidence=rule.confidence,
        mean_ci_width=rule.mean_ci_width,
        label_rule=label_rule_from_json(setup.label_rule),
    )
    touched = Annotation.objects.filter(
        item_stage__stage=stage, item_stage__item__purpose=Item.Purpose.REGULAR
    )
    if read_from is not None:
        touched = touched.filter(created_at__gte=read_from - MARGIN)
    touched_items = set(touched.values_list("item_stage__item_id", flat=True).distinct())
    result = StoppingRun()
    if touched_items:
        items = items_frame(stage.project)
        pairs = items.loc[items["item_id"].isin(touched_items), PAIR_KEYS].drop_duplicates()
        chosen = items.merge(pairs, on=PAIR_KEYS)
        result = _stop_settled(stage, rule, chosen, setup)
    LiveStopping.objects.get_or_create(stage_id=stage_id)
    state.update(
        read_from=started,
        last_run_at=timezone.now(),
        last_stopped=result.stopped,
        runs=F("runs") + 1,
    )
    return result


def _stop_settled(
    stage: Stage, rule: StoppingRule, items: pd.DataFrame, setup: RatingsSetup
) -> StoppingRun:
    """Ask the rule about the ordered pairs of ``items`` (every item of each) and stop the open
    item stages of those settled whose items all have ``floor`` ratings."""
    from ratings.connectives import connective_set_from_json

    ratings = _ratings(stage, items["item_id"].tolist(), items)
    if ratings.empty:
        return StoppingRun(pairs_read=len(items[PAIR_KEYS].drop_duplicates()))
    verdict = settled_pairs(ratings, rule, connective_set_from_json(setup.connective_set))
    # Every item of the pair rated at least ``floor`` times (an item without a rating is not in
    # the verdict's n_min).
    counts = ratings.dropna(subset=["rating"]).groupby("item_id").size()
    per_item = items.assign(n=items["item_id"].map(counts).fillna(0))
    enough = per_item.groupby(PAIR_KEYS)["n"].min().ge(rule.floor).rename("enough").reset_index()
    verdict = verdict.merge(enough, on=PAIR_KEYS, how="left")
    settled = verdict[verdict["settled"] & verdict["enough"].fillna(False).astype(bool)]
    stop_items = items.merge(settled[PAIR_KEYS], on=PAIR_KEYS)["item_id"].tolist()
    open_ids = ItemStage.objects.filter(
        stage=stage,
        item_id__in=stop_items,
        state=ItemStage.State.OPEN,
        stopped_at__isnull=True,
    ).values_list("pk", flat=True)
    stopped = 0
    for item_stage_id in list(open_ids):
        try:
            stopped += engine.item_stage_stop(item_stage_id=item_stage_id).stopped
        except ApplicationError:
            logger.exception("live stopping: could not stop item stage %s", item_stage_id)
    return StoppingRun(pairs_read=len(verdict), pairs_settled=len(settled), stopped=stopped)


# --- The setting --------------------------------------------------------------------------------


@transaction.atomic
def stopping_set(
    *,
    project: Project,
    floor: int | None = None,
    confidence: float | None = None,
    mean_ci_width: float | None = None,
    on: bool = True,
) -> Stage:
    """Turn live stopping on (with these settings, the others from
    ``ratings.kinds.STOPPING_DEFAULTS``) or off on the project's rating stage, through the
    engine's stage update (the kind checks the option). A floor above the stage's overlap is
    refused. Turned on, a run is asked for at once, so the ratings collected so far count.
    Turned off, items already stopped stay stopped."""
    setup = RatingsSetup.objects.select_related("rating_stage").filter(project=project).first()
    if setup is None or setup.rating_stage is None:
        raise ApplicationError("This project has no rating stage.", {"project": project.slug})
    stage = setup.rating_stage
    config = dict(stage.config or {})
    if on:
        wanted = {"floor": floor, "confidence": confidence, "mean_ci_width": mean_ci_width}
        option = stopping_clean({key: value for key, value in wanted.items() if value is not None})
        if option["floor"] > stage.overlap:
            raise ApplicationError(
                f"The floor ({option['floor']}) is above the stage's {stage.overlap} ratings "
                "per item: nothing could stop early. Lower it, or raise the overlap.",
                {"stopping.floor": option["floor"]},
            )
        config["stopping"] = option
    else:
        config.pop("stopping", None)
    stage = engine.stage_update(stage=stage, config=config)
    if on:
        LiveStopping.objects.update_or_create(stage=stage, defaults={"read_from": None})
        stopping_run_request(stage_id=stage.pk)
    return stage
