"""The one client of model servers: the OpenAI-compatible Chat Completions API over ``httpx2``
(the HTTP client the official ``openai`` package runs on). Not the ``openai`` client itself: its
request-shaping layer cost about 5 ms of CPU per call, the whole budget a call may take on the
platform (benchmarks/llm_raters.py); the protocol is a JSON POST and a JSON answer. It never
retries: llm/ledger.py retries by the endpoint's policy and the shared budget, and records every
attempt.

Contract of :func:`chat`: one request, no retry; returns a :class:`Reply` or raises
:class:`CallError` whose ``kind`` says what went wrong — ``rate_limited`` (429, with the
server's ``Retry-After`` in ``retry_after``), ``server`` (5xx), ``timeout``, ``connection``,
``refused`` (the model declined: a refusal field or a content filter), ``client`` (another 4xx:
retrying will not help) or ``key_missing`` (the endpoint names an environment variable that is
not set). The key is read from the environment when a client is built (the one read of the
environment outside rungwise/settings.py: which variable is an endpoint's own setting) and is
never stored or logged.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

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


def api_key(endpoint: Endpoint) -> str:
    """The endpoint's key from the variable it names (CallError key_missing when unset)."""
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


_clients: dict[tuple[Any, ...], httpx2.Client] = {}
_clients_lock = threading.Lock()


def http_client_for(endpoint: Endpoint) -> httpx2.Client:
    """The HTTP client of an endpoint, kept per process for its settings and key (a client
    holds a connection pool and is thread-safe). The demo endpoint's requests are answered
    in-process by llm/demo_responder.py, through the same code path."""
    key = api_key(endpoint)
    cache_key = (endpoint.pk, endpoint.base_url, endpoint.timeout_seconds, key)
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            transport = None
            if endpoint.is_demo:
                from llm.demo_responder import demo_transport

                transport = demo_transport()
            client = httpx2.Client(
                base_url=endpoint.base_url.replace("demo://", "http://", 1).rstrip("/") + "/",
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                timeout=endpoint.timeout_seconds,
                transport=transport,
                limits=httpx2.Limits(max_connections=max(endpoint.concurrency, 1) * 2),
            )
            if endpoint.pk is not None:
                _clients[cache_key] = client
        return client


def _retry_after(response: httpx2.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _error_message(response: httpx2.Response) -> str:
    try:
        error = response.json().get("error") or {}
        message = error.get("message") if isinstance(error, dict) else str(error)
    except ValueError:
        message = response.text
    return f"HTTP {response.status_code}: {str(message)[:300]}"


def post(endpoint: Endpoint, path: str, body: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """One POST of the OpenAI-compatible API (``chat/completions``, ``completions``): the
    decoded answer and its latency in ms, or CallError (module docstring)."""
    started = time.perf_counter()
    try:
        response = http_client_for(endpoint).post(path, content=json.dumps(body))
    except httpx2.TimeoutException as error:
        raise CallError("timeout", f"no answer within {endpoint.timeout_seconds:g} s") from error
    except httpx2.TransportError as error:
        raise CallError("connection", f"cannot reach {endpoint.base_url}: {error}") from error
    latency_ms = round((time.perf_counter() - started) * 1000)
    if response.status_code == 429:
        raise CallError("rate_limited", _error_message(response), _retry_after(response))
    if response.status_code >= 500:
        raise CallError("server", _error_message(response), _retry_after(response))
    if response.status_code >= 400:
        raise CallError("client", _error_message(response))
    try:
        answer = response.json()
    except ValueError as error:
        raise CallError("unparseable", f"the server's answer is not JSON: {error}") from error
    if not isinstance(answer, dict):
        raise CallError("unparseable", "the server's answer is not a JSON object")
    return answer, latency_ms


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
    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": list(messages),
        **(endpoint.default_params or {}),
        **(params or {}),
    }
    if response_format is not None:
        body["response_format"] = dict(response_format)
    answer, latency_ms = post(endpoint, "chat/completions", body)
    choices = answer.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        raise CallError("unparseable", "the server answered with no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    refusal = message.get("refusal")
    if refusal or choice.get("finish_reason") == "content_filter":
        raise CallError("refused", f"the model refused: {refusal or 'content filter'}")
    usage = answer.get("usage") or {}
    return Reply(
        text=message.get("content") or "",
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        latency_ms=latency_ms,
        model=str(answer.get("model") or endpoint.model),
        finish_reason=choice.get("finish_reason"),
    )
