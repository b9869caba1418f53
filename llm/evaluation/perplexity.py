"""The perplexity reading of a choice question: each option's sentence (the scorer's
``choices(ask)``, e.g. ExpliCa's connective sentences) is sent to the endpoint's legacy
Completions API with ``echo`` and ``logprobs`` and no new token — the prompt's log-probabilities,
as vLLM serves them — and the option whose sentence has the lowest perplexity is the model's
answer. Chat-only servers (most hosted APIs) do not return prompt log-probabilities; the
evaluation then fails with that message.

One ledger row per question (``llm.models.Call``, keyed like every call: asked once, stored
once; ``raw`` keeps each option's perplexity). The ledger's ``call_once`` speaks Chat
Completions only, so this module stores its row itself, by the same key, with the same retry
policy and the same claim (``llm.ledger.claim_call``): an evaluation asks its questions on
several threads and a taken-over run may have two workers, and a row another holds comes back
``pending``, never asked twice."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from llm.budget import wait_for_budget
from llm.client import CallError, post
from llm.ledger import claim_call
from llm.models import Call, Endpoint, Evaluation, Run


def perplexity(logprobs: Sequence[float | None]) -> float:
    """exp of the mean negative log-probability of the tokens that have one (the first token
    of a prompt has none)."""
    present = [value for value in logprobs if value is not None]
    if not present:
        raise CallError("unparseable", "the server returned no prompt log-probabilities")
    return math.exp(-sum(present) / len(present))


def prompt_perplexity(endpoint: Endpoint, text: str) -> tuple[float, int]:
    """(perplexity, prompt tokens) of ``text`` under the endpoint's model: one Completions
    request with ``echo``, ``logprobs=1`` and ``max_tokens=0`` (llm.client.post: errors by
    kind, as for chat)."""
    answer, _latency = post(
        endpoint,
        "completions",
        {"model": endpoint.model, "prompt": text, "echo": True, "logprobs": 1, "max_tokens": 0},
    )
    choices = answer.get("choices") or []
    logprobs = (choices[0].get("logprobs") or {}) if choices else {}
    if not logprobs.get("token_logprobs"):
        raise CallError("unparseable", "the server returned no prompt log-probabilities")
    tokens = int((answer.get("usage") or {}).get("prompt_tokens") or 0)
    return perplexity(logprobs["token_logprobs"]), tokens


def choose_by_perplexity(*, key: str, evaluation: Evaluation, scorer: Any, question: Any) -> Call:
    """The question's ledger row: the option of lowest perplexity, asked once."""
    endpoint = evaluation.endpoint
    options: dict[str, str] = scorer.choices(dict(question.ask))
    try:
        with transaction.atomic():
            call, _ = Call.objects.get_or_create(
                key=key,
                defaults={
                    "run": evaluation.run,
                    "endpoint": endpoint,
                    "subject": question.id[:200],
                    "messages": [{"role": "prompt", "content": text} for text in options.values()],
                    "params": {"echo": True, "logprobs": 1, "max_tokens": 0},
                },
            )
    except IntegrityError:
        call = Call.objects.get(key=key)
    if call.status == Call.Status.OK or (
        call.status == Call.Status.FAILED and call.run_id == evaluation.run_id
    ):
        return call
    if not claim_call(call, endpoint, evaluation.run):
        call.refresh_from_db()
        return call
    error: CallError | None = None
    started = time.perf_counter()
    attempts = 0
    for attempt in range(endpoint.max_retries + 1):
        attempts += 1
        try:
            scores, tokens = {}, 0
            for value, text in options.items():
                wait_for_budget(
                    endpoint.name, rpm=endpoint.requests_per_minute, tpm=0, tokens=len(text) // 4
                )
                scores[value], used = prompt_perplexity(endpoint, text)
                tokens += used
        except CallError as failure:
            error = failure
            if not failure.retryable or attempt == endpoint.max_retries:
                break
            time.sleep(min(failure.retry_after or 0.5 * 2**attempt, 30.0))
            continue
        chosen = min(scores, key=lambda value: scores[value])
        _store(call, evaluation.run, attempts, started, tokens, json.dumps(scores), chosen, None)
        return call
    _store(call, evaluation.run, attempts, started, 0, "", None, error)
    return call


def _store(
    call: Call,
    run: Run,
    attempts: int,
    started: float,
    tokens: int,
    raw: str,
    parsed: Any,
    error: CallError | None,
) -> None:
    call.status = Call.Status.OK if error is None else Call.Status.FAILED
    call.run = run
    call.parsed = parsed
    call.raw = raw
    call.attempts = attempts
    call.prompt_tokens = tokens
    call.latency_ms = round((time.perf_counter() - started) * 1000)
    call.cost = call.endpoint.cost(tokens, 0)
    call.error = error.message[:2000] if error else ""
    call.error_kind = error.kind if error else ""
    call.claimed_until = None
    call.finished_at = timezone.now()
    call.save()
    Run.objects.filter(pk=run.pk).update(calls=F("calls") + attempts, cost=F("cost") + call.cost)
