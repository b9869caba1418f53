"""A model rater's run in waves (PostgreSQL): the path llm/runs.py takes for every run it can.

Per call, the per-call path (llm/runs.py, ``PER_CALL``) runs six statements, each its own
commit, on 32 connections: the ledger's INSERT and UPDATE, the lease, the submit's read and
write, the vote. Here the same work goes in waves, on two connections:

1. **Calls** (one thread, :func:`_calls`): the claims of a wave of keys in one INSERT … ON
   CONFLICT DO NOTHING (llm.ledger.calls_claim); the requests on ``endpoint.concurrency``
   threads that touch no database (llm.ledger.attempts_make: the endpoint's retry policy and
   the budget shared in Redis, as for one call); the outcomes stored in one UPDATE … FROM
   (VALUES …) as soon as half the wave has answered (llm.ledger.calls_store). A key that
   exists already (a re-run, a takeover, another worker) goes through llm.ledger.call_once,
   which decides it as ever: the ledger's promise — one call and one row per key — is the
   unique key's, not this module's.
2. **Leases and submits** (the run's thread, :func:`_submits`): when a wave's answers are in,
   the engine leases and submits them in one transaction with their votes
   (annotation.api.annotations_submit_wave: the engine's own next and submit, in the SWEEP
   order). An item whose answer is not in, or whose samples all failed, ends the wave held:
   llm.runs.answer_one submits or skips it alone, as the per-call path does.

A worker killed at any point loses nothing and duplicates nothing: a wave's submits and votes
commit together or not at all; a claimed key whose outcome was not stored is taken over when
its claim expires (llm/ledger.py); a committed wave's items are never offered again.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from decimal import Decimal
from functools import cache, partial
from typing import Any

from django.db import connection, connections
from django.utils import timezone

from annotation.api import (
    ReadyAnswer,
    StageForAnnotator,
    WaveAnswer,
    annotations_submit_ready,
    annotations_submit_wave,
    assignment_next,
    quoted,
    reached_by,
    ready_path_open,
)
from annotation.models import Assignment, Item, ItemStage
from llm import prompts
from llm.client import CallError
from llm.ledger import (
    Outcome,
    Tally,
    attempts_make,
    call_key,
    call_once,
    calls_claim,
    calls_store,
    fresh_call,
)
from llm.models import Call, ModelRater, ModelVote, Run
from llm.runs import _Beat, _params, answer_one, client_info, modal

logger = logging.getLogger(__name__)

#: ``Run.options`` key: this run's waves go through the engine's SWEEP order item by item
#: (annotations_submit_wave) even where one statement could lease and submit a wave
#: (annotations_submit_ready) — the path runs took before it, kept for
#: benchmarks/llm_raters.py to measure against.
SWEEP_WAVES = "sweep_waves"


def run_in_waves(
    rater: ModelRater, run: Run, pending: list[ItemStage], items: dict[int, Item], beat: _Beat
) -> None:
    """Work the run's ``pending`` item stages (module docstring) until done, paused or
    cancelled; ``items`` maps each item stage's id to its item."""
    ready: dict[int, list[Call]] = {}  # by item id: every sample settled
    stop, finished, more = threading.Event(), threading.Event(), threading.Event()
    caller = threading.Thread(
        target=_calls,
        args=(rater, run, [s.item for s in pending], ready, beat.tally, stop, finished, more),
        daemon=True,
    )
    caller.start()
    try:
        _submits(rater, run, pending, items, ready, beat, finished, more)
    finally:
        stop.set()
        caller.join()


def _submits(
    rater: ModelRater,
    run: Run,
    pending: list[ItemStage],
    items: dict[int, Item],
    ready: dict[int, list[Call]],
    beat: _Beat,
    finished: threading.Event,
    more: threading.Event,
) -> None:
    user, wave_size = rater.user, max(rater.endpoint.concurrency, 1)
    stage = reached_by(rater.stage, user.pk)  # the gates asked once for the whole run
    held = (
        Assignment.objects.filter(
            annotator=user, stage=rater.stage, status=Assignment.Status.ACTIVE
        )
        .values_list("pk", flat=True)
        .first()
    )
    if held is not None:  # a lease an earlier worker left: answered first, renewed, as it was
        assignment = assignment_next(
            annotator=user, stage=stage._replace(current_assignment_id=held), after=0
        )
        if assignment is not None and not answer_one(rater, run, assignment, items, ready, beat):
            return
    if ready_path_open(stage) and not (run.options or {}).get(SWEEP_WAVES):
        if not _submit_ready(rater, pending, ready, beat, finished, more, stage):
            return  # paused or cancelled
    # The SWEEP order: the whole run where the ready path is closed, otherwise what it left
    # (items whose samples all failed, items another annotator held when their wave came).
    cursor = 0
    votes: dict[int, tuple[Any, float, int]] = {}

    def answer(item_stage: ItemStage) -> Mapping[str, Any] | None:
        calls = ready.get(item_stage.item_id)
        answers = [c.parsed for c in calls or () if c.status == Call.Status.OK]
        if not answers:
            return None  # not in yet, or every sample failed: answer_one decides it
        payload, vote, confidence = modal([a for a in answers if a is not None], rater.stage.kind)
        votes[item_stage.pk] = (vote, confidence, len(answers))
        return payload

    def record(submitted: Sequence[WaveAnswer]) -> None:
        # one INSERT … ON CONFLICT DO NOTHING for the wave, in its transaction
        ModelVote.objects.bulk_create(
            [
                ModelVote(
                    rater=rater,
                    item_stage_id=done.assignment.item_stage_id,
                    annotation=done.annotation,
                    value=votes[done.assignment.item_stage_id][0],
                    confidence=votes[done.assignment.item_stage_id][1],
                    samples=votes[done.assignment.item_stage_id][2],
                )
                for done in submitted
            ],
            ignore_conflicts=True,
        )

    while beat.running():
        while len(ready) < wave_size and not finished.is_set():
            more.wait(0.5)
            more.clear()
        votes.clear()
        wave = annotations_submit_wave(
            annotator=user,
            stage=stage,
            after=cursor,
            answer=answer,
            limit=wave_size,
            client_info=client_info(rater),
            on_submitted=record,
        )
        cursor = wave.cursor
        beat.done += len(wave.submitted)
        for done in wave.submitted:
            ready.pop(done.assignment.item_stage.item_id, None)
        if wave.held is not None:
            if not answer_one(rater, run, wave.held, items, ready, beat):
                return
        elif wave.exhausted:
            return


def _submit_ready(
    rater: ModelRater,
    pending: list[ItemStage],
    ready: dict[int, list[Call]],
    beat: _Beat,
    finished: threading.Event,
    more: threading.Event,
    stage: StageForAnnotator,
) -> bool:
    """Submit the answered items as their calls settle, a wave at a time, each wave one engine
    statement (annotation.api.annotations_submit_ready) and one of votes, in one transaction.
    Items it does not store stay in ``ready`` for the SWEEP loop. False when the run stopped."""
    by_item = {item_stage.item_id: item_stage for item_stage in pending}
    item_of = {item_stage.pk: item_stage.item_id for item_stage in pending}
    wave_size = max(rater.endpoint.concurrency, 1)
    info = client_info(rater)
    tried: set[int] = set()
    while beat.running():
        while len(ready) - len(tried) < wave_size and not finished.is_set():
            more.wait(0.5)
            more.clear()
        answers: list[tuple[ItemStage, Mapping[str, Any]]] = []
        votes: dict[int, tuple[Any, float, int]] = {}
        for item_id, calls in list(ready.items()):
            if item_id in tried:
                continue
            tried.add(item_id)
            if item_id not in by_item:
                continue  # not an item of the run: the SWEEP loop decides it
            parsed = [c.parsed for c in calls if c.status == Call.Status.OK]
            if not parsed:
                continue  # every sample failed: the SWEEP loop skips it with the reason
            payload, vote, confidence = modal(
                [a for a in parsed if a is not None], rater.stage.kind
            )
            item_stage = by_item[item_id]
            votes[item_stage.pk] = (vote, confidence, len(parsed))
            answers.append((item_stage, payload))
            if len(answers) == wave_size:
                break
        if not answers:
            if finished.is_set() and len(ready) <= len(tried):
                return True
            continue
        stored = annotations_submit_ready(
            annotator=rater.user,
            stage=stage,
            answers=answers,
            client_info=info,
            on_submitted=partial(votes_record, rater, votes=votes),
        )
        beat.done += len(stored)
        for done in stored:
            item_id = item_of[done.item_stage_id]
            ready.pop(item_id, None)
            tried.discard(item_id)
    return False


def votes_record(
    rater: ModelRater,
    stored: Sequence[ReadyAnswer],
    *,
    votes: Mapping[int, tuple[Any, float, int]],
) -> None:
    """The wave's votes in one INSERT … ON CONFLICT DO NOTHING (a retried item keeps its first
    vote), its text written once per process: arrays, so psycopg prepares it on the
    connection; the values as ModelVote's fields store them."""
    with connection.cursor() as cursor:
        cursor.execute(
            _votes_sql(connection.vendor),
            {
                "rater": rater.pk,
                "item_stages": [done.item_stage_id for done in stored],
                "annotations": [done.annotation_id for done in stored],
                "values": [
                    None if (value := votes[d.item_stage_id][0]) is None else json.dumps(value)
                    for d in stored
                ],
                "confidences": [votes[done.item_stage_id][1] for done in stored],
                "samples": [votes[done.item_stage_id][2] for done in stored],
                "now": timezone.now(),
            },
        )


@cache
def _votes_sql(vendor: str) -> str:
    v = quoted(ModelVote)
    return (
        f"INSERT INTO {connection.ops.quote_name(ModelVote._meta.db_table)}"
        f" ({v.rater_id}, {v.item_stage_id}, {v.annotation_id}, {v.value}, {v.confidence},"
        f" {v.samples}, {v.created_at})"
        " SELECT %(rater)s, vote.item_stage, vote.annotation, vote.value::jsonb,"
        " vote.confidence, vote.samples, %(now)s"
        " FROM unnest(%(item_stages)s::bigint[], %(annotations)s::bigint[], %(values)s::text[],"
        " %(confidences)s::float8[], %(samples)s::integer[])"
        " AS vote(item_stage, annotation, value, confidence, samples)"
        " ON CONFLICT DO NOTHING"
    )


def _calls(
    rater: ModelRater,
    run: Run,
    items: list[Item],
    ready: dict[int, list[Call]],
    tally: Tally,
    stop: threading.Event,
    finished: threading.Event,
    more: threading.Event,
) -> None:
    """Make the rater's calls on ``items`` in waves (module docstring, 1), putting each item's
    settled calls in ``ready``; sets ``finished`` at the end (``more`` after each store). Its
    own database connection, closed at the end; the request threads have none."""
    endpoint = rater.endpoint
    size = max(endpoint.concurrency, 1)
    pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="llm-call")
    flying: dict[Future[Outcome], Call] = {}
    left: dict[int, list[Call]] = {}
    queue = iter(items)
    exhausted = False
    try:
        while True:
            if not stop.is_set() and not exhausted and len(flying) < size:
                batch: list[tuple[Item, list[Call], Any]] = []
                while len(flying) + sum(len(c) for _, c, _ in batch) < size:
                    item = next(queue, None)
                    if item is None:
                        exhausted = True
                        break
                    batch.append(_fresh(rater, run, item))
                claimed = {call.key for call in calls_claim([c for _, cs, _ in batch for c in cs])}
                for item, calls, request in batch:
                    left[item.pk] = calls
                    for call in calls:
                        if call.key in claimed:
                            params = _params(rater, call.sample)
                            future = pool.submit(_attempt, endpoint, call, request, params)
                            flying[future] = call
                        else:  # asked before: the ledger decides it (answered, failed, held)
                            index = calls.index(call)
                            calls[index] = _existing(rater, run, item, call, tally)
                    _settle(item.pk, left, ready, flying, more)
            if not flying:
                if exhausted or stop.is_set():
                    return
                continue
            done, _ = wait(flying, timeout=0.5, return_when=FIRST_COMPLETED)
            while done and len(done) * 2 < len(flying):
                # half the wave answered, or a moment passed: one UPDATE for them all
                later, _ = wait(set(flying) - done, timeout=0.02, return_when=FIRST_COMPLETED)
                if not later:
                    break
                done |= later
            outcomes = [(flying.pop(future), future.result()) for future in done]
            calls_store(outcomes, tally=tally)
            for call, _ in outcomes:
                _settle(call.item_id, left, ready, flying, more)
    except Exception:  # the submit loop goes on item by item (answer_one) with what is here
        logger.exception("llm: calls of run %s failed", run.pk)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        finished.set()
        more.set()
        connections.close_all()


def _fresh(rater: ModelRater, run: Run, item: Item) -> tuple[Item, list[Call], Any]:
    """The rows of the item's samples as a first ask inserts them, and what a request needs."""
    stage, endpoint, version = rater.stage, rater.endpoint, rater.prompt
    schema = prompts.answer_schema(stage, item)
    messages = prompts.render(
        version,
        prompts.item_fields(item, stage),
        schema=schema,
        json_schema_mode=endpoint.json_schema_mode,
    )
    request = (messages, prompts.answer_format(schema, endpoint), stage, item)
    calls = [
        fresh_call(
            key=call_key("rate", endpoint, version, f"item:{item.pk}", sample),
            endpoint=endpoint,
            messages=messages,
            params=_params(rater, sample),
            run=run,
            prompt=version,
            item_id=item.pk,
            subject=f"item:{item.pk}",
            sample=sample,
        )
        for sample in range(rater.samples)
    ]
    return item, calls, request


def _attempt(endpoint: Any, call: Call, request: Any, params: Mapping[str, Any]) -> Outcome:
    """A request thread's work: the attempts on one claimed call; any error a failed outcome
    (stored, reported on the item, never a vote). No database: a connection opened by a
    kind's check is closed here."""
    messages, response_format, stage, item = request
    try:
        return attempts_make(
            endpoint,
            messages,
            lambda text: prompts.parse_answer(text, stage, item),
            response_format,
            params,
        )
    except Exception as error:  # a bug must not leave the key claimed until it expires
        logger.exception("llm: call %s failed", call.pk)
        return Outcome(
            status=Call.Status.FAILED,
            attempts=1,
            cost=Decimal(0),
            reply=None,
            error=CallError("internal", f"{type(error).__name__}: {error}"[:300]),
        )
    finally:
        if connection.connection is not None:
            connection.close()


def _existing(rater: ModelRater, run: Run, item: Item, call: Call, tally: Tally) -> Call:
    """A key asked before: through llm.ledger.call_once, as the per-call path asks it."""
    stage, endpoint = rater.stage, rater.endpoint
    messages = call.messages
    schema = prompts.answer_schema(stage, item)
    return call_once(
        key=call.key,
        endpoint=endpoint,
        messages=messages,
        parse=lambda text: prompts.parse_answer(text, stage, item),
        response_format=prompts.answer_format(schema, endpoint),
        params=_params(rater, call.sample),
        run=run,
        prompt=rater.prompt,
        item_id=item.pk,
        subject=call.subject,
        sample=call.sample,
        tally=tally,
    )


def _settle(
    item_id: int | None,
    left: dict[int, list[Call]],
    ready: dict[int, list[Call]],
    flying: Mapping[Future[Outcome], Call],
    more: threading.Event,
) -> None:
    """Move the item's calls to ``ready`` once none of them is in flight."""
    if item_id is None or item_id not in left:
        return
    keys = {call.key for call in left[item_id]}
    if any(call.key in keys for call in flying.values()):
        return
    ready[item_id] = left.pop(item_id)
    more.set()
