"""A local webhook receiver for the tests: an http.server in a thread of the test process (on
loopback, which the ``receiver`` fixture allows through ``WEBHOOKS_ALLOWED_NETWORKS``; a
Celery worker on this machine reaches it too). It records every request and answers by a
script the test sets: a status, a delay (a timeout), or holding the request until released."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def document(self) -> dict[str, Any]:
        return json.loads(self.body)

    @property
    def event_ids(self) -> list[str]:
        return [event["id"] for event in self.document["events"]]


@dataclass
class Receiver:
    """The recorded requests and the script of answers (one entry used per request; when it
    runs out, 200)."""

    url: str = ""
    requests: list[Received] = field(default_factory=list)
    #: Each entry: an int status, ("sleep", seconds) or ("hold", None): wait for ``release``.
    script: list[Any] = field(default_factory=list)
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, *entries: Any) -> None:
        with self.lock:
            self.script.extend(entries)

    def next_answer(self) -> Any:
        with self.lock:
            return self.script.pop(0) if self.script else 200

    def event_ids(self) -> list[str]:
        return [event_id for request in list(self.requests) for event_id in request.event_ids]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            receiver.requests.append(Received(dict(self.headers.items()), body))
            answer = receiver.next_answer()
            if isinstance(answer, tuple) and answer[0] == "sleep":
                time.sleep(answer[1])
                answer = 200
            elif isinstance(answer, tuple) and answer[0] == "hold":
                receiver.held.set()
                receiver.release.wait(60)
                answer = 200
            self.send_response(answer)
            self.send_header("Content-Length", "2")
            self.end_headers()
            try:
                self.wfile.write(b"ok")
            except OSError:  # the sender gave up (a timeout, a killed worker)
                pass

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def receiver(settings):
    """A running receiver; loopback allowed for webhooks, short time-outs and no back-off
    wait (tests step the delivery themselves)."""
    settings.WEBHOOKS_ALLOWED_NETWORKS = ("127.0.0.0/8",)
    settings.WEBHOOKS_TIMEOUT_SECONDS = 1.0
    settings.WEBHOOKS_BACKOFF_SECONDS = 0.0
    state = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()
