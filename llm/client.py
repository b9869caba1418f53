"""The one client of model servers: the OpenAI-compatible Chat Completions API, through the
official ``openai`` package (its retries are off: llm/ledger.py retries by the endpoint's
policy and the shared budget, and records every attempt).

Contract of :func:`chat`: one request, no retry; returns a :class:`Reply` or raises
:class:`CallError` whose ``kind`` says what went wrong — ``rate_limited`` (429, with the
server's ``Retry-After`` in ``retry_after``), ``server`` (5xx), ``timeout``, ``connection``,
``refused`` (the model declined: a refusal field or a content filter), ``client`` (another 4xx:
retrying will not help) or ``key_missing`` (the endpoint names an environment variable that is
not set). The key is read from the environment at each call and never stored or logged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from llm.models import Endpoint

#: Kinds of error worth another attempt (llm.ledger retries them by the endpoint's policy).
RETRYABLE = frozenset({"rate_limited", "server", "timeout", "connection", "unparseable"})


@dataclass(frozen=True)
class Reply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    model: str
    finish_reason: str | None


class CallError(Exception):
    def __init__(self, kind: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


def _key(endpoint: Endpoint) -> str:
    if not endpoint.api_key_env:
        return "not-needed"  # local servers (vLLM, Ollama, llama.cpp) take any key
    key = os.environ.get(endpoint.api_key_env)
    if not key:
        raise CallError(
            "key_missing",
            f"Endpoint {endpoint.name}: the environment variable {endpoint.api_key_env} "
            "(its key) is not set on this server.",
        )
    return key


def client_for(endpoint: Endpoint) -> openai.OpenAI:
    """An ``openai`` client for the endpoint (no retries of its own). The demo endpoint's
    requests are answered in-process by llm/demo_responder.py, through the same client."""
    options: dict[str, Any] = {}
    if endpoint.is_demo:
        from llm.demo_responder import demo_http_client

        options["http_client"] = demo_http_client()
    return openai.OpenAI(
        base_url=endpoint.base_url.replace("demo://", "http://", 1),
        api_key=_key(endpoint),
        timeout=endpoint.timeout_seconds,
        max_retries=0,
        **options,
    )


def _retry_after(error: openai.APIStatusError) -> float | None:
    value = error.response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def chat(
    endpoint: Endpoint,
    messages: Sequence[Mapping[str, Any]],
    *,
    response_format: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
) -> Reply:
    """One Chat Completions request: the endpoint's default parameters overlaid by ``params``
    (temperature, max_tokens, seed, top_p, n …), ``response_format`` as given (llm/prompts.py
    builds it from the task kind). See the module docstring for the errors."""
    arguments: dict[str, Any] = {**(endpoint.default_params or {}), **(params or {})}
    if response_format is not None:
        arguments["response_format"] = dict(response_format)
    started = time.perf_counter()
    try:
        response = client_for(endpoint).chat.completions.create(
            model=endpoint.model, messages=list(messages), **arguments
        )
    except openai.RateLimitError as error:
        raise CallError("rate_limited", _message(error), _retry_after(error)) from error
    except openai.APITimeoutError as error:
        raise CallError("timeout", f"no answer within {endpoint.timeout_seconds:g} s") from error
    except openai.APIConnectionError as error:
        raise CallError("connection", f"cannot reach {endpoint.base_url}: {error}") from error
    except openai.APIStatusError as error:
        kind = "server" if error.status_code >= 500 else "client"
        raise CallError(kind, _message(error), _retry_after(error)) from error
    latency_ms = round((time.perf_counter() - started) * 1000)
    if not response.choices:
        raise CallError("unparseable", "the server answered with no choices")
    choice = response.choices[0]
    refusal = getattr(choice.message, "refusal", None)
    if refusal or choice.finish_reason == "content_filter":
        raise CallError("refused", f"the model refused: {refusal or 'content filter'}")
    usage = response.usage
    return Reply(
        text=choice.message.content or "",
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        latency_ms=latency_ms,
        model=response.model or endpoint.model,
        finish_reason=choice.finish_reason,
    )


def _message(error: openai.APIStatusError) -> str:
    return f"HTTP {error.status_code}: {str(error.message)[:300]}"
