"""A model rater's run through its stage: the job behind ``Run`` (purpose ``rate``).

How a run works (llm.tasks.rater_run calls :func:`rater_run`):

1. **Claim.** The run moves from queued to running, or is taken over from a worker whose
   heartbeat stopped (:data:`STALE_SECONDS`); a run another live worker holds is left to it.
2. **Calls, ahead of the leases.** The item stages the model has not answered are asked about
   by ``endpoint.concurrency`` threads, each call through the ledger (llm/ledger.py: one call
   per (endpoint, prompt version, item, sample), never twice, rate limits shared by all
   workers). The prompt is built from what the stage's annotators see (llm/prompts.py).
3. **Leases and submits, through the engine.** The rater's user asks ``assignment_next`` like
   any annotator — one lease at a time, under the stage's overlap and eligibility rules, in the
   engine's SWEEP order (item stages by id from the run's cursor: a model shows no order
   effects, and a lease then costs the same however many items the model answered; the calls
   are prefetched in the same order) — takes the ledger's answers for the leased item (calling now if they
   are not there yet) and submits the modal answer with ``annotation_submit`` (idempotent).
   A :class:`~llm.models.ModelVote` records the vote and its confidence: the share of valid
   samples that gave it. An item whose every sample failed is skipped with the error as the
   reason (``assignment_skip``): reported on the run, never a vote, its slot going to people.
4. **Control.** Between items the run reads its status: paused or cancelled stops it (the
   calls made stay in the ledger, so resuming costs nothing twice); the end marks it done.

A worker killed at any point loses nothing: a submitted item is in the engine, a made call in
the ledger, a lease held expires (or is renewed by the next attempt, which asks as the same
annotator), and the run is taken over once its heartbeat is stale (llm.tasks.runs_sweep).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, connections
from django.db.models import F, Q, Sum
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from annotation import events
from annotation.api import annotation_submit, assignment_next, assignment_skip, reached_by
from annotation.kinds.base import get_kind
from annotation.models import Assignment, Item, ItemStage
from llm import prompts
from llm.ledger import Tally, call_key, call_once
from llm.models import Call, ModelRater, ModelVote, Run

logger = logging.getLogger(__name__)

#: ``Run.options`` key: this run takes the per-call path (each call's ledger rows, lease, submit
#: and vote on their own; 32 threads with a connection each) instead of waves (llm/waves.py).
#: The path every run took before waves, kept for SQLite and for benchmarks/llm_raters.py to
#: measure against.
PER_CALL = "per_call"

#: A running run whose heartbeat is older than this is taken over by another worker
#: (settings.LLM_RUN_STALE_SECONDS).
STALE_SECONDS = int(getattr(settings, "LLM_RUN_STALE_SECONDS", 120))


def claim(run_id: int) -> Run | None:
    """Move the run to running for this worker; None when it is not to be worked on now."""
    now = timezone.now()
    taken = Run.objects.filter(
        Q(status=Run.Status.QUEUED)
        | Q(status=Run.Status.RUNNING, heartbeat_at__lt=now - timedelta(seconds=STALE_SECONDS)),
        pk=run_id,
    ).update(status=Run.Status.RUNNING, heartbeat_at=now, started_at=now)
    if not taken:
        return None
    _recount(run_id)
    return Run.objects.select_related(
        "rater__stage__project", "rater__endpoint", "rater__prompt__template", "rater__user"
    ).get(pk=run_id)


def _recount(run_id: int) -> None:
    """Set a rater run's done / failed from the rows (after a takeover, counts a dead worker
    had not written yet are found again): items its rater answered or skipped; and its calls
    and cost from the ledger's rows it made (a worker keeps those in a Tally between
    heartbeats)."""
    run = Run.objects.select_related("rater").get(pk=run_id)
    if run.rater is None:
        return
    finished = Assignment.objects.filter(annotator=run.rater.user, stage=run.rater.stage_id)
    made = Call.objects.filter(run_id=run_id).aggregate(
        calls=Coalesce(Sum("attempts"), 0), cost=Coalesce(Sum("cost"), Decimal(0))
    )
    Run.objects.filter(pk=run_id).update(
        done=finished.filter(status=Assignment.Status.SUBMITTED).count(),
        failed=finished.filter(status=Assignment.Status.SKIPPED).count(),
        calls=Greatest(F("calls"), made["calls"]),
        cost=Greatest(F("cost"), made["cost"]),
    )


class _Beat:
    """The run's heartbeat and progress, written together at most every ``every`` seconds:
    one UPDATE that also says whether the run is still running (paused or cancelled: no)."""

    def __init__(self, run: Run, every: float = 0.5) -> None:
        self.run, self.every = run, every
        self.done = self.failed = 0
        self.last = 0.0
        self.tally = Tally()  # the run's calls and cost, written with the heartbeat

    def running(self, *, force: bool = False) -> bool:
        now = time.monotonic()
        if not force and now - self.last < self.every:
            return True
        self.last = now
        calls, cost = self.tally.take()
        counts = {
            "done": F("done") + self.done,
            "failed": F("failed") + self.failed,
            "calls": F("calls") + calls,
            "cost": F("cost") + cost,
        }
        changed = Run.objects.filter(pk=self.run.pk, status=Run.Status.RUNNING).update(
            heartbeat_at=timezone.now(), **counts
        )
        if not changed:  # stopped: what was counted still lands
            Run.objects.filter(pk=self.run.pk).update(**counts)
        self.done = self.failed = 0
        return bool(changed)


def _pending(rater: ModelRater) -> list[ItemStage]:
    """The open item stages of the rater's stage it has not answered nor given up."""
    finished = Assignment.objects.filter(
        annotator=rater.user,
        stage=rater.stage,
        status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED],
    ).values("item_stage_id")
    return list(
        ItemStage.objects.filter(stage=rater.stage, state=ItemStage.State.OPEN)
        .exclude(pk__in=finished)
        .select_related("item")
        .order_by("pk")
    )


def _params(rater: ModelRater, sample: int) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if rater.temperature is not None:
        params["temperature"] = rater.temperature
    seed = (rater.endpoint.default_params or {}).get("seed")
    if seed is not None and sample:
        params["seed"] = int(seed) + sample  # the same seed would give the same sample
    return params


def calls_for(
    rater: ModelRater,
    item: Item,
    run: Run | None,
    *,
    expect_new: bool = False,
    tally: Tally | None = None,
) -> list[Call]:
    """The rater's ``samples`` calls on ``item`` through the ledger (made now if missing);
    ``tally``: the run's counters grow there (llm.ledger.Tally)."""
    stage, endpoint, version = rater.stage, rater.endpoint, rater.prompt
    schema = prompts.answer_schema(stage, item)
    messages = prompts.render(
        version,
        prompts.item_fields(item, stage),
        schema=schema,
        json_schema_mode=endpoint.json_schema_mode,
    )
    response_format = prompts.answer_format(schema, endpoint)
    return [
        call_once(
            key=call_key("rate", endpoint, version, f"item:{item.pk}", sample),
            endpoint=endpoint,
            messages=messages,
            parse=lambda text: prompts.parse_answer(text, stage, item),
            response_format=response_format,
            params=_params(rater, sample),
            run=run,
            prompt=version,
            item_id=item.pk,
            subject=f"item:{item.pk}",
            sample=sample,
            expect_new=expect_new,
            tally=tally,
        )
        for sample in range(rater.samples)
    ]


def modal(payloads: Iterable[dict[str, Any]], kind_key: str) -> tuple[dict[str, Any], Any, float]:
    """The payload casting the most frequent vote (the first such sample on a tie), its vote
    and the share of samples that cast it."""
    kind = get_kind(kind_key)
    answers = list(payloads)
    votes = [kind.vote(payload) for payload in answers]
    keys = [json.dumps(vote, sort_keys=True, default=str) for vote in votes]
    counts = Counter(keys)
    best = max(counts.values())
    index = next(i for i, key in enumerate(keys) if counts[key] == best)
    return answers[index], votes[index], best / len(answers)


def _prefetch(
    rater: ModelRater,
    run: Run,
    items: list[Item],
    stop: threading.Event,
    made: dict[int, list[Call]],
    tally: Tally | None = None,
) -> None:
    """Make the calls for ``items`` on ``endpoint.concurrency`` threads, putting them in
    ``made`` by item id for the submit loop; each thread closes its database connection when
    done."""
    work: queue.Queue[Item] = queue.Queue()
    for item in items:
        work.put(item)

    def worker() -> None:
        try:
            while not stop.is_set():
                try:
                    item = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    made[item.pk] = calls_for(rater, item, run, expect_new=True, tally=tally)
                except Exception:  # one item's trouble must not end the others' calls
                    logger.exception("llm: calls on item %s failed", item.pk)
        finally:
            connections.close_all()

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(rater.endpoint.concurrency)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


def rater_run(run_id: int) -> Run | None:
    """Work the run (module docstring); returns it as it ended, or None when not claimed."""
    run = claim(run_id)
    if run is None or run.rater is None:
        return run
    rater = run.rater
    pending = _pending(rater)
    items = {item_stage.pk: item_stage.item for item_stage in pending}
    Run.objects.filter(pk=run.pk).update(total=F("done") + F("failed") + len(pending))
    beat = _Beat(run)
    # Threads have connections of their own: not on SQLite (its writers queue anyway), nor
    # inside a caller's transaction (they would not see its rows): there, calls as items come.
    threaded = connection.vendor != "sqlite" and not connection.in_atomic_block
    if threaded and connection.vendor == "postgresql" and not (run.options or {}).get(PER_CALL):
        from llm.waves import run_in_waves

        try:
            run_in_waves(rater, run, pending, items, beat)
        finally:
            beat.running(force=True)
        return _finish(run)
    stop = threading.Event()
    made: dict[int, list[Call]] = {}
    prefetch = threading.Thread(
        target=_prefetch,
        args=(rater, run, [s.item for s in pending], stop, made, beat.tally),
        daemon=True,
    )
    if threaded:
        prefetch.start()
    try:
        _submit_loop(rater, run, items, made, beat)
    finally:
        stop.set()
        if prefetch.is_alive():
            prefetch.join()
        beat.running(force=True)
    return _finish(run)


def _finish(run: Run) -> Run:
    """Mark a run that is still running done; the run as it ended."""
    finished = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(
        status=Run.Status.DONE, finished_at=timezone.now()
    )
    run.refresh_from_db()
    if finished:
        run_finished_announce(run)
    return run


def run_finished_announce(run: Run) -> None:
    """The project event ``model_run.finished`` for a run just done (annotation/events.py,
    "Project events"): its purpose and counts, never its calls or answers."""
    events.project_event(
        "model_run.finished",
        project_id=run.project_id,
        data={
            "run": {
                "id": run.pk,
                "purpose": run.purpose,
                "status": run.status,
                "done": run.done,
                "failed": run.failed,
                "total": run.total,
            }
        },
    )


def _submit_loop(
    rater: ModelRater,
    run: Run,
    items: dict[int, Item],
    made: dict[int, list[Call]],
    beat: _Beat,
) -> None:
    user = rater.user
    stage = reached_by(rater.stage, user.pk)  # the gates asked once for the whole run
    cursor = 0  # the sweep's cursor: the last item stage leased (a new worker starts over once)
    while beat.running():
        assignment = assignment_next(annotator=user, stage=stage, after=cursor)
        if assignment is None:
            return
        cursor = assignment.item_stage_id
        if not answer_one(rater, run, assignment, items, made, beat):
            return


def answer_one(
    rater: ModelRater,
    run: Run,
    assignment: Assignment,
    items: dict[int, Item],
    made: dict[int, list[Call]],
    beat: _Beat,
) -> bool:
    """Submit (or skip, when every sample failed) the rater's answer on one leased item, with
    its vote, waiting for calls another thread or worker holds; False when the run stopped
    meanwhile (the lease then stays, for the next attempt to renew)."""
    user = rater.user
    item = items.get(assignment.item_stage_id) or Item.objects.get(pk=assignment.item_stage.item_id)
    calls = made.pop(item.pk, []) or calls_for(rater, item, run, tally=beat.tally)
    while any(call.status == Call.Status.PENDING for call in calls):
        # another thread or worker holds a call of this item: it finishes or its claim
        # expires
        close_old_connections()
        threading.Event().wait(0.2)
        if not beat.running(force=True):
            return False
        calls = made.pop(item.pk, []) or calls_for(rater, item, run, tally=beat.tally)
    answers = [call.parsed for call in calls if call.status == Call.Status.OK]
    if not answers:
        errors = "; ".join(sorted({f"{c.error_kind}: {c.error}" for c in calls}))
        assignment_skip(
            assignment_id=assignment.pk,
            annotator=user,
            reason=f"model call failed: {errors}"[:300],
        )
        beat.failed += 1
        return True
    payload, vote, confidence = modal([a for a in answers if a is not None], rater.stage.kind)
    annotation, _ = annotation_submit(
        assignment_id=assignment.pk,
        annotator=user,
        payload=payload,
        client_info=client_info(rater),
    )
    # one INSERT … ON CONFLICT DO NOTHING: a retried item keeps its first vote
    ModelVote.objects.bulk_create(
        [
            ModelVote(
                rater=rater,
                item_stage_id=assignment.item_stage_id,
                annotation=annotation,
                value=vote,
                confidence=confidence,
                samples=len(answers),
            )
        ],
        ignore_conflicts=True,
    )
    beat.done += 1
    return True


def client_info(rater: ModelRater) -> dict[str, Any]:
    """What a model rater's annotation records about where it came from."""
    return {"model": rater.endpoint.model, "prompt_version": rater.prompt_id}
