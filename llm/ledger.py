"""The ledger of model calls: every call is made and stored once per key.

A key (:func:`call_key`) names what is asked — the purpose, the endpoint, the prompt version,
the subject (an item, a release's question) and the sample number. :func:`call_once`:

1. finds or creates the key's ``Call`` row (a unique constraint: two workers cannot both
   create it);
2. returns at once a row already answered, and a failed one this run already tried (a new run
   tries a failed key again: a model that refused yesterday may answer today);
3. otherwise claims the row (``claimed_until``, one UPDATE that only one worker wins: a claim a
   killed worker left expires and is taken over) and calls, waiting for the shared budget
   (llm/budget.py) before every attempt;
4. retries by the endpoint's policy what ``llm.client.RETRYABLE`` names — 429 after its
   ``Retry-After``, 5xx, timeouts, unreachable servers and answers that do not parse — and
   stores the outcome: ``ok`` with the parsed answer, or ``failed`` with the error's kind and
   message (never counted as a vote);
5. returns the row; a row another worker holds comes back ``pending``: ask again later.

Every attempt's prompt, raw answer, tokens, latency and cost are on the row; the run's counters
(``Run.calls``, ``Run.cost``) grow with each one — by an UPDATE per call, or, for a caller that
passes a :class:`Tally`, in memory until the caller writes them with its heartbeat (a model
rater's run: one hot-row UPDATE fewer per call; a worker killed before writing them leaves
them to the takeover's recount from the rows, llm/runs.py).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from datetime import timedelta
from decimal import Decimal
from functools import cache
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.api import quoted
from llm.budget import wait_for_budget
from llm.client import CallError, Reply, chat
from llm.models import Call, Endpoint, PromptVersion, Run

#: Backoff of the n-th retry when the server names no Retry-After (seconds), capped.
BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0


class Tally:
    """A run's call and cost counters kept in memory by the threads that make its calls; the
    caller adds them to the run's row (``take`` returns them and starts again at zero)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.cost = Decimal(0)

    def add(self, calls: int, cost: Decimal) -> None:
        with self._lock:
            self.calls += calls
            self.cost += cost

    def take(self) -> tuple[int, Decimal]:
        with self._lock:
            taken = self.calls, self.cost
            self.calls, self.cost = 0, Decimal(0)
        return taken


def call_key(
    purpose: str, endpoint: Endpoint, prompt: PromptVersion | None, subject: str, sample: int
) -> str:
    text = "\x1f".join(
        [purpose, str(endpoint.pk), str(prompt.pk if prompt else ""), subject, str(sample)]
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _estimate_tokens(messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> int:
    characters = sum(len(str(m.get("content", ""))) for m in messages)
    return characters // 4 + int(
        params.get("max_tokens") or params.get("max_completion_tokens") or 0
    )


def _hold(endpoint: Endpoint) -> timedelta:
    """How long a claim lasts: every attempt timing out, with backoff, and a margin."""
    seconds = endpoint.timeout_seconds * (endpoint.max_retries + 1)
    return timedelta(seconds=seconds + BACKOFF_CAP * endpoint.max_retries + 30)


def claim_call(call: Call, endpoint: Endpoint, run: Run | None) -> bool:
    """Take the row for this worker; False when another holds an unexpired claim (or it is
    answered). Callers that store a row themselves (llm/evaluation/perplexity.py) claim by it
    and clear ``claimed_until`` when they store."""
    now = timezone.now()
    claimed = (
        Call.objects.filter(pk=call.pk)
        .exclude(status=Call.Status.OK)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(status=Call.Status.PENDING, claimed_until=now + _hold(endpoint), run=run)
    )
    return claimed == 1


# The ledger's two statements per call, written once per process: an INSERT and an UPDATE
# through the ORM cost more of a model rater's CPU than the rest of its call (its compiler runs
# every time); the values are prepared by each field, so both backends store what the ORM would.
_INSERTED = [
    field
    for field in Call._meta.concrete_fields
    if not field.primary_key and field.name != "created_at"
]
_STORED = [
    "status",
    "parsed",
    "raw",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "error",
    "error_kind",
    "claimed_until",
    "finished_at",
]


@cache
def _insert_sql(vendor: str) -> str:
    c = quoted(Call)
    names = [getattr(c, field.attname) for field in _INSERTED] + [c.created_at]
    return (
        f"INSERT INTO {connection.ops.quote_name(Call._meta.db_table)} ({', '.join(names)})"
        f" VALUES ({', '.join(['%s'] * len(names))}) RETURNING {c.id}"
    )


@cache
def _store_sql(vendor: str) -> str:
    c = quoted(Call)
    assigned = ", ".join(f"{getattr(c, name)} = %s" for name in _STORED)
    return (
        f"UPDATE {connection.ops.quote_name(Call._meta.db_table)} SET {assigned},"
        f" {c.attempts} = {c.attempts} + %s, {c.cost} = {c.cost} + %s WHERE {c.id} = %s"
    )


_FIELDS = {field.name: field for field in Call._meta.concrete_fields}


def _prepared(name: str, value: Any) -> Any:
    return _FIELDS[name].get_db_prep_save(value, connection)


def _insert_claimed(call: Call) -> bool:
    """Insert the row already claimed by this worker; False when the key exists. A savepoint
    only inside a caller's transaction (outside one, a failed INSERT leaves nothing to undo)."""
    call.created_at = timezone.now()
    values = [
        field.get_db_prep_save(getattr(call, field.attname), connection) for field in _INSERTED
    ]
    values.append(_prepared("created_at", call.created_at))
    savepoint = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with savepoint, connection.cursor() as cursor:
            cursor.execute(_insert_sql(connection.vendor), values)
            call.pk = cursor.fetchone()[0]
    except IntegrityError:
        return False
    call._state.adding = False
    return True


def call_once(
    *,
    key: str,
    endpoint: Endpoint,
    messages: Sequence[Mapping[str, Any]],
    parse: Callable[[str], Any],
    response_format: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    run: Run | None = None,
    prompt: PromptVersion | None = None,
    item_id: int | None = None,
    subject: str = "",
    sample: int = 0,
    expect_new: bool = False,
    tally: Tally | None = None,
) -> Call:
    """The call stored under ``key``, made now if it has not been (module docstring).
    ``parse(text)`` turns the model's text into the stored answer or raises CallError.
    ``expect_new``: the caller believes the key was never asked (a run's first pass): the row
    is inserted at once, already claimed, saving a read; otherwise it is read first.
    ``tally``: the run's counters grow there instead of on the run's row (module docstring)."""
    params = dict(params or {})
    fresh = Call(
        key=key,
        run=run,
        endpoint=endpoint,
        prompt=prompt,
        item_id=item_id,
        subject=subject[:200],
        sample=sample,
        messages=list(messages),
        params={**(endpoint.default_params or {}), **params},
        status=Call.Status.PENDING,
        claimed_until=timezone.now() + _hold(endpoint),
    )
    call = None if expect_new else Call.objects.filter(key=key).first()
    if call is None:
        if _insert_claimed(fresh):
            return _attempt(fresh, endpoint, messages, parse, response_format, params, run, tally)
        call = Call.objects.get(key=key)
    if call.status == Call.Status.OK:
        return call
    if call.status == Call.Status.FAILED and run is not None and call.run_id == run.pk:
        return call
    if not claim_call(call, endpoint, run):
        call.refresh_from_db()
        return call
    return _attempt(call, endpoint, messages, parse, response_format, params, run, tally)


class Outcome:
    """What the attempts on one call came to (:func:`attempts_make`), not yet stored."""

    __slots__ = ("attempts", "cost", "error", "parsed", "reply", "status")

    def __init__(
        self,
        *,
        status: str,
        attempts: int,
        cost: Decimal,
        reply: Reply | None,
        parsed: Any = None,
        error: CallError | None = None,
    ) -> None:
        self.status, self.attempts, self.cost = status, attempts, cost
        self.reply, self.parsed, self.error = reply, parsed, error


def attempts_make(
    endpoint: Endpoint,
    messages: Sequence[Mapping[str, Any]],
    parse: Callable[[str], Any],
    response_format: Mapping[str, Any] | None,
    params: Mapping[str, Any],
) -> Outcome:
    """The attempts on one claimed call by the endpoint's policy (module docstring, 3–4),
    waiting for the shared budget before each; touches no database (a wave's threads call it,
    llm/waves.py, and the wave stores the outcomes in one statement)."""
    tokens = _estimate_tokens(messages, {**(endpoint.default_params or {}), **params})
    if endpoint.tokens_per_minute:
        tokens = min(tokens, endpoint.tokens_per_minute)
    error: CallError | None = None
    reply: Reply | None = None
    cost = Decimal(0)
    attempts = 0
    for attempt in range(endpoint.max_retries + 1):
        wait_for_budget(
            endpoint.name,
            rpm=endpoint.requests_per_minute,
            tpm=endpoint.tokens_per_minute,
            tokens=tokens,
        )
        attempts += 1
        reply = None
        try:
            reply = chat(endpoint, messages, response_format=response_format, params=params)
            cost += endpoint.cost(reply.prompt_tokens, reply.completion_tokens)
            parsed = parse(reply.text)
        except CallError as failure:
            error = failure
            if not failure.retryable or attempt == endpoint.max_retries:
                break
            pause = failure.retry_after
            if pause is None:
                pause = min(BACKOFF_BASE * 2**attempt, BACKOFF_CAP)
            time.sleep(min(pause, BACKOFF_CAP))
            continue
        return Outcome(
            status=Call.Status.OK, attempts=attempts, cost=cost, reply=reply, parsed=parsed
        )
    return Outcome(
        status=Call.Status.FAILED, attempts=attempts, cost=cost, reply=reply, error=error
    )


def _attempt(
    call: Call,
    endpoint: Endpoint,
    messages: Sequence[Mapping[str, Any]],
    parse: Callable[[str], Any],
    response_format: Mapping[str, Any] | None,
    params: Mapping[str, Any],
    run: Run | None,
    tally: Tally | None = None,
) -> Call:
    outcome = attempts_make(endpoint, messages, parse, response_format, params)
    _store(
        call,
        run,
        outcome.attempts,
        outcome.cost,
        outcome.reply,
        tally,
        status=outcome.status,
        parsed=outcome.parsed,
        error=outcome.error,
    )
    return call


def _store(
    call: Call,
    run: Run | None,
    attempts: int,
    cost: Decimal,
    reply: Reply | None,
    tally: Tally | None,
    *,
    status: str,
    parsed: Any = None,
    error: CallError | None = None,
) -> None:
    """One UPDATE of the row (and one of the run's counters, or the tally's); the instance
    follows."""
    outcome = Outcome(
        status=status, attempts=attempts, cost=cost, reply=reply, parsed=parsed, error=error
    )
    fields = _stored_fields(outcome, timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            _store_sql(connection.vendor),
            [_prepared(name, fields[name]) for name in _STORED]
            + [attempts, _prepared("cost", cost), call.pk],
        )
    for name, value in fields.items():
        setattr(call, name, value)
    call.attempts += attempts
    call.cost += cost
    if tally is not None:
        tally.add(attempts, cost)
    elif run is not None:
        Run.objects.filter(pk=run.pk).update(calls=F("calls") + attempts, cost=F("cost") + cost)


# The ledger for a wave of calls (llm/waves.py): the claims of a wave in one INSERT and its
# outcomes in one UPDATE, instead of two statements (and two commits) per call. Hand-written
# because the ORM's bulk_create with ignore_conflicts returns no ids, and it has no UPDATE … FROM;
# on PostgreSQL one text each (arrays, below), elsewhere one per number of rows.


def fresh_call(
    *,
    key: str,
    endpoint: Endpoint,
    messages: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    run: Run | None,
    prompt: PromptVersion | None,
    item_id: int | None,
    subject: str,
    sample: int,
) -> Call:
    """The row a first ask of ``key`` inserts: already claimed by this worker."""
    return Call(
        key=key,
        run=run,
        endpoint=endpoint,
        prompt=prompt,
        item_id=item_id,
        subject=subject[:200],
        sample=sample,
        messages=list(messages),
        params={**(endpoint.default_params or {}), **params},
        status=Call.Status.PENDING,
        claimed_until=timezone.now() + _hold(endpoint),
    )


# On PostgreSQL a wave's statements take one array per column (``unnest``) instead of a VALUES
# row per call: one short text whatever the wave's size, so psycopg converts it once per
# process and prepares it on the connection (a VALUES list of 32 rows is 500 parameters, which
# psycopg parses afresh on every execute), and each value goes as it is — no field's
# get_db_prep_save per value. JSON columns travel as text (``json.dumps``, as JSONField
# encodes them) and are cast to jsonb in the statement.


def _array_type(field: Any) -> str:
    """The PostgreSQL type of an array of the field's values (JSON as text, cast later)."""
    kind = field.db_type(connection)
    return "text" if kind == "jsonb" else kind


@cache
def _inserted_arrays() -> list[tuple[str, str, bool]]:
    """The columns of a wave's claim on PostgreSQL, each (attname, array type, is JSON)."""
    return [
        (field.attname, _array_type(field), field.db_type(connection) == "jsonb")
        for field in _INSERTED
    ]


def _columns(
    calls: Sequence[Any], columns: Sequence[tuple[str, str, bool]], **extra: Any
) -> dict[str, Any]:
    """The named parameters of an array statement: one list per column, JSON ones encoded."""
    params: dict[str, Any] = dict(extra)
    for name, _, is_json in columns:
        values = [getattr(call, name) for call in calls]
        if is_json:
            values = [None if value is None else json.dumps(value) for value in values]
        params[name] = values
    return params


@cache
def _claim_arrays_sql() -> str:
    c, columns = quoted(Call), _inserted_arrays()
    names = [getattr(c, name) for name, _, _ in columns]
    arrays = ", ".join(f"%({name})s::{kind}[]" for name, kind, _ in columns)
    selected = ", ".join(
        f"v.{connection.ops.quote_name(name)}" + ("::jsonb" if is_json else "")
        for name, _, is_json in columns
    )
    aliases = ", ".join(connection.ops.quote_name(name) for name, _, _ in columns)
    return (
        f"INSERT INTO {connection.ops.quote_name(Call._meta.db_table)}"
        f" ({', '.join(names)}, {c.created_at})"
        f" SELECT {selected}, %(now)s FROM unnest({arrays}) AS v({aliases})"
        f" ON CONFLICT ({c.key}) DO NOTHING RETURNING {c.id}, {c.key}"
    )


@cache
def _claim_many_sql(vendor: str, rows: int) -> str:
    c = quoted(Call)
    names = [getattr(c, field.attname) for field in _INSERTED] + [c.created_at]
    row = f"({', '.join(['%s'] * len(names))})"
    return (
        f"INSERT INTO {connection.ops.quote_name(Call._meta.db_table)} ({', '.join(names)})"
        f" VALUES {', '.join([row] * rows)} ON CONFLICT ({c.key}) DO NOTHING"
        f" RETURNING {c.id}, {c.key}"
    )


def calls_claim(calls: Sequence[Call]) -> list[Call]:
    """Insert the rows of keys never asked, already claimed (:func:`fresh_call`), in one
    statement; returns those inserted (their ``pk`` set). A key that exists — asked before, or
    by another worker at the same moment — is left as it is and not returned: its caller asks
    :func:`call_once`, which decides it as for any call. Outside a transaction the statement
    is its own (it cannot fail on a key: ON CONFLICT DO NOTHING)."""
    if not calls:
        return []
    now = timezone.now()
    for call in calls:
        call.created_at = now
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_claim_arrays_sql(), _columns(calls, _inserted_arrays(), now=now))
        else:
            values: list[Any] = []
            for call in calls:
                values += [
                    field.get_db_prep_save(getattr(call, field.attname), connection)
                    for field in _INSERTED
                ]
                values.append(_prepared("created_at", now))
            cursor.execute(_claim_many_sql(connection.vendor, len(calls)), values)
        inserted = dict((key, pk) for pk, key in cursor.fetchall())
    claimed = []
    for call in calls:
        if call.key in inserted:
            call.pk = inserted[call.key]
            call._state.adding = False
            claimed.append(call)
    return claimed


#: The columns of a wave's UPDATE … FROM unnest(…), with their PostgreSQL types (the arrays'
#: types: server-side binding sends them as the statement casts them).
_WAVE_COLUMNS = [
    ("status", "varchar"),
    ("parsed", "jsonb"),
    ("raw", "text"),
    ("prompt_tokens", "integer"),
    ("completion_tokens", "integer"),
    ("latency_ms", "integer"),
    ("error", "text"),
    ("error_kind", "varchar"),
    ("finished_at", "timestamptz"),
]


#: A wave's stored outcomes as arrays (the columns above, the row's id, its attempts and cost).
_STORED_ARRAYS = [("id", "bigint"), *_WAVE_COLUMNS, ("attempts", "integer"), ("cost", "numeric")]


@cache
def _store_arrays_sql() -> str:
    c = quoted(Call)
    table = connection.ops.quote_name(Call._meta.db_table)
    quote = connection.ops.quote_name
    arrays = ", ".join(
        f"%({name})s::{'text' if kind == 'jsonb' else kind}[]" for name, kind in _STORED_ARRAYS
    )
    assigned = ", ".join(
        f"{getattr(c, name)} = v.{quote(name)}" + ("::jsonb" if kind == "jsonb" else "")
        for name, kind in _WAVE_COLUMNS
    )
    # ``claimed_until`` is cleared and nothing indexed changes: the UPDATE is a HOT one (the
    # table keeps room on its pages for it, migration 0004).
    return (
        f"UPDATE {table} SET {assigned}, {c.claimed_until} = NULL,"
        f" {c.attempts} = {table}.{c.attempts} + v.{quote('attempts')},"
        f" {c.cost} = {table}.{c.cost} + v.{quote('cost')}"
        f" FROM unnest({arrays})"
        f" AS v({', '.join(quote(name) for name, _ in _STORED_ARRAYS)})"
        f" WHERE {table}.{c.id} = v.{quote('id')}"
    )


def calls_store(outcomes: Sequence[tuple[Call, Outcome]], *, tally: Tally) -> None:
    """Store a wave's outcomes (:func:`attempts_make`) on their claimed rows — one UPDATE on
    PostgreSQL, one per row elsewhere — and add their attempts and cost to ``tally``; the
    instances follow, as :func:`_store` leaves them."""
    if not outcomes:
        return
    if connection.vendor != "postgresql":
        for call, outcome in outcomes:
            _store(
                call, None, outcome.attempts, outcome.cost, outcome.reply, tally,
                status=outcome.status, parsed=outcome.parsed, error=outcome.error,
            )  # fmt: skip
        return
    now = timezone.now()
    rows: list[dict[str, Any]] = []
    for call, outcome in outcomes:
        fields = _stored_fields(outcome, now)
        rows.append({**fields, "id": call.pk, "attempts": outcome.attempts, "cost": outcome.cost})
        for name, value in fields.items():
            setattr(call, name, value)
        call.attempts += outcome.attempts
        call.cost += outcome.cost
        tally.add(outcome.attempts, outcome.cost)
    params: dict[str, Any] = {}
    for name, kind in _STORED_ARRAYS:
        values = [row[name] for row in rows]
        if kind == "jsonb":
            values = [None if value is None else json.dumps(value) for value in values]
        params[name] = values
    with connection.cursor() as cursor:
        cursor.execute(_store_arrays_sql(), params)


def _stored_fields(outcome: Outcome, now: Any) -> dict[str, Any]:
    """The columns an outcome sets (one rule for :func:`_store` and :func:`calls_store`)."""
    reply, error = outcome.reply, outcome.error
    failed = error is not None and outcome.status != Call.Status.OK
    return {
        "status": outcome.status,
        "parsed": outcome.parsed,
        "raw": reply.text if reply else "",
        "prompt_tokens": reply.prompt_tokens if reply else 0,
        "completion_tokens": reply.completion_tokens if reply else 0,
        "latency_ms": reply.latency_ms if reply else 0,
        "error": error.message[:2000] if failed and error else "",
        "error_kind": error.kind if failed and error else "",
        "claimed_until": None,
        "finished_at": now,
    }
