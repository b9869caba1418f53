"""The demo responder: NOT a language model. It answers Chat Completions requests for the demo
endpoint (``DEMO_BASE_URL``) in-process, so ``make run`` can show model raters, generation and
evaluations with no model server. Its answers are valid but arbitrary: it fills the requested
JSON schema deterministically from a hash of the prompt (an enum's choice, a number in range,
a string naming itself), so the same prompt always gets the same answer and the figures it
yields mean nothing about any model. llm/README.md says how to point a project at a real server.

It speaks through llm/client.py like any endpoint (the endpoint's HTTP client gets the transport
:func:`demo_transport`), so the code path is the production one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx2

NAME = "demo-responder"


def _pick(seed: bytes, schema: dict[str, Any], path: str) -> Any:
    digest = int.from_bytes(hashlib.sha256(seed + path.encode()).digest()[:8], "big")
    if "const" in schema:
        return schema["const"]
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return _pick(seed, branches[digest % len(branches)], path + "|")
    if "enum" in schema:
        options = list(schema["enum"])
        return options[digest % len(options)] if options else None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        return {
            name: _pick(seed, sub, f"{path}.{name}")
            for name, sub in (schema.get("properties") or {}).items()
        }
    if kind == "array":
        items = schema.get("items") or {"type": "string"}
        count = max(int(schema.get("minItems", 1)), 1)
        return [_pick(seed, items, f"{path}[{i}]") for i in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low + 10)
        value = low + digest % (int(high - low) + 1)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return bool(digest % 2)
    return f"(demo responder, not a language model) draft {digest % 1000}"


def answer(body: dict[str, Any]) -> str:
    """The content the responder gives for a request body."""
    seed = json.dumps(body.get("messages", []), sort_keys=True).encode()
    seed += str(body.get("seed", "")).encode() + str(body.get("temperature", "")).encode()
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if schema:
        return json.dumps(_pick(seed, schema, "$"))
    if response_format.get("type") == "json_object":
        return json.dumps({"answer": _pick(seed, {"type": "string"}, "$")})
    return _pick(seed, {"type": "string"}, "$")


def respond(request: httpx2.Request) -> httpx2.Response:
    if not request.url.path.endswith("/chat/completions"):
        return httpx2.Response(404, json={"error": {"message": "the demo responder only chats"}})
    body = json.loads(request.content or b"{}")
    content = answer(body)
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    return httpx2.Response(
        200,
        json={
            "id": "demo-" + hashlib.sha256(request.content).hexdigest()[:12],
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", NAME),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(content.split()),
                "total_tokens": prompt_tokens + len(content.split()),
            },
        },
    )


def demo_transport() -> httpx2.BaseTransport:
    """The transport llm/client.py gives the demo endpoint's HTTP client."""
    return httpx2.MockTransport(respond)
