"""A local server that speaks the OpenAI Chat Completions API (and the legacy Completions API's
prompt log-probabilities, as vLLM serves them), for tests only: it never ships in the product.

It answers ``POST /v1/chat/completions`` like a model server would — JSON mode and JSON schema
response formats, ``usage``, ``n`` choices — with answers a test controls, and it misbehaves on
request: a 429 with ``Retry-After``, a 500, a slow answer, malformed content, a refusal. What it
answers, per model id (so tests running at once do not disturb each other):

* ``POST /_control`` ``{"model": m, "answers": {substring: answer}, "default": answer,
  "faults": [fault, …], "rpm": n, "delay": s}``: a prompt containing ``substring`` gets
  ``answer`` (an object is sent as JSON); others get ``default`` or, without one, a valid answer
  picked from the request's JSON schema (its first enum value). ``faults`` are used up one per
  request, in order: ``{"status": 429, "retry_after": 1}``, ``{"status": 500}``,
  ``{"delay": 2.5}``, ``{"content": "not json"}``, ``{"refusal": "I cannot help"}``.
  ``rpm``: more than n requests in a rolling minute get 429 with ``Retry-After``.
  ``refusals``: ``{substring: message}``: a prompt containing it is refused, every time.
* ``GET /_requests?model=m``: every request body received for that model, in order.
* ``GET /_concurrency?model=m``: ``{"active": n, "peak": n}``, the requests for that model being
  answered now and the most ever answered at once (chat and completions alike).
* ``POST /_reset``: forget everything.

Start it with :func:`serve` (a daemon thread; returns the base URL ``http://127.0.0.1:PORT/v1``)
or the ``chat_server`` fixture in tests/conftest.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

_lock = threading.Lock()
_controls: dict[str, dict[str, Any]] = defaultdict(dict)
_faults: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
_requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
_times: dict[str, deque[float]] = defaultdict(deque)
_active: dict[str, int] = defaultdict(int)
_peak: dict[str, int] = defaultdict(int)


def _first_valid(schema: dict[str, Any]) -> Any:
    if "const" in schema:
        return schema["const"]
    if schema.get("anyOf") or schema.get("oneOf"):
        return _first_valid((schema.get("anyOf") or schema["oneOf"])[0])
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        return {k: _first_valid(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [_first_valid(schema.get("items") or {"type": "string"})]
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return True
    return "fake answer"


def _prompt_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def _content(model: str, body: dict[str, Any]) -> str:
    control = _controls.get(model, {})
    text = _prompt_text(body)
    for needle, answer in (control.get("answers") or {}).items():
        if needle in text:
            return answer if isinstance(answer, str) else json.dumps(answer)
    if "default" in control:
        answer = control["default"]
        return answer if isinstance(answer, str) else json.dumps(answer)
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if schema:
        return json.dumps(_first_valid(schema))
    if response_format.get("type") == "json_object":
        return json.dumps({"answer": "fake answer"})
    return "fake answer"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/_requests":
            model = parse_qs(url.query).get("model", [""])[0]
            with _lock:
                self._send(200, list(_requests.get(model, [])))
            return
        if url.path == "/_concurrency":
            model = parse_qs(url.query).get("model", [""])[0]
            with _lock:
                self._send(200, {"active": _active[model], "peak": _peak[model]})
            return
        self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        url = urlparse(self.path)
        body = self._body()
        if url.path == "/_control":
            model = body.pop("model")
            with _lock:
                faults = body.pop("faults", None)
                if faults is not None:
                    _faults[model] = deque(faults)
                _controls[model].update(body)
            self._send(200, {"ok": True})
            return
        if url.path == "/_reset":
            with _lock:
                for store in (_controls, _faults, _requests, _times, _active, _peak):
                    store.clear()
            self._send(200, {"ok": True})
            return
        if url.path.endswith("/completions"):
            model = str(body.get("model", ""))
            with _lock:
                _active[model] += 1
                _peak[model] = max(_peak[model], _active[model])
            try:
                if url.path.endswith("/chat/completions"):
                    self._chat(body)
                else:
                    self._completions(body)
            finally:
                with _lock:
                    _active[model] -= 1
            return
        self._send(404, {"error": {"message": f"no route {url.path}"}})

    def _fault(self, model: str) -> dict[str, Any] | None:
        with _lock:
            _requests[model].append(
                {
                    "path": self.path,
                    "authorization": self.headers.get("Authorization", ""),
                    **self._last_body,
                }
            )
            control = _controls.get(model, {})
            now = time.monotonic()
            rpm = control.get("rpm")
            if rpm:
                window = _times[model]
                while window and now - window[0] > 60:
                    window.popleft()
                if len(window) >= rpm:
                    return {"status": 429, "retry_after": max(1, int(60 - (now - window[0])))}
                window.append(now)
            if _faults[model]:
                return _faults[model].popleft()
            if control.get("delay"):
                return {"delay": control["delay"]}
        return None

    def _error(self, fault: dict[str, Any]) -> bool:
        """Answer with the fault when it is an HTTP error; True when the request is done."""
        if "delay" in fault:
            time.sleep(float(fault["delay"]))
        status = fault.get("status")
        if status:
            headers = {}
            if "retry_after" in fault:
                headers["Retry-After"] = str(fault["retry_after"])
            self._send(
                status,
                {"error": {"message": f"fake error {status}", "type": "fake", "code": None}},
                headers,
            )
            return True
        return False

    def _chat(self, body: dict[str, Any]) -> None:
        model = str(body.get("model", ""))
        self._last_body = body
        fault = self._fault(model) or {}
        if self._error(fault):
            return
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        text = _prompt_text(body)
        for needle, refusal in (_controls.get(model, {}).get("refusals") or {}).items():
            if needle in text:
                fault = {**fault, "refusal": refusal}
        if "refusal" in fault:
            message["refusal"] = fault["refusal"]
        else:
            message["content"] = fault.get("content", _content(model, body))
        choices = [
            {"index": i, "message": message, "finish_reason": finish, "logprobs": None}
            for i in range(int(body.get("n") or 1))
        ]
        prompt_tokens = len(_prompt_text(body).split())
        completion_tokens = len(str(message.get("content") or "").split())
        self._send(
            200,
            {
                "id": f"chatcmpl-fake-{len(_requests[model])}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": choices,
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
        )

    def _completions(self, body: dict[str, Any]) -> None:
        """Legacy completions with ``echo`` and ``logprobs``: each whitespace token of the prompt
        gets the log-probability -len(token)/10 (deterministic, so tests can compute it)."""
        model = str(body.get("model", ""))
        self._last_body = body
        fault = self._fault(model) or {}
        if self._error(fault):
            return
        prompt = body.get("prompt", "")
        prompts = prompt if isinstance(prompt, list) else [prompt]
        choices = []
        for index, text in enumerate(prompts):
            tokens = str(text).split()
            logprobs = [None] + [-len(t) / 10 for t in tokens[1:]]  # the first has none
            offsets, at = [], 0
            for token in tokens:
                at = str(text).index(token, at)
                offsets.append(at)
                at += len(token)
            choices.append(
                {
                    "index": index,
                    "text": text if body.get("echo") else "",
                    "finish_reason": "length",
                    "logprobs": {
                        "tokens": tokens,
                        "token_logprobs": logprobs,
                        "top_logprobs": None,
                        "text_offset": offsets,
                    },
                }
            )
        count = sum(len(str(t).split()) for t in prompts)
        self._send(
            200,
            {
                "id": "cmpl-fake",
                "object": "text_completion",
                "created": int(time.time()),
                "model": model,
                "choices": choices,
                "usage": {"prompt_tokens": count, "completion_tokens": 0, "total_tokens": count},
            },
        )


def serve(port: int = 0) -> tuple[str, ThreadingHTTPServer]:
    """Start the server on loopback in a daemon thread; returns (base URL, server)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1", server
