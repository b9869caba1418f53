"""The demo's model steps (``manage.py seed_demo``): the built-in demo endpoint — a responder
that is not a language model (llm/demo_responder.py) — so a newcomer can click through model
raters, runs and evaluations without a model server. llm/README.md says how to point a project
at a real server (vLLM or Ollama on the same machine, a hosted API)."""

from __future__ import annotations

from typing import Any

from llm.models import DEMO_BASE_URL, Endpoint

DEMO_ENDPOINT = "demo-responder"


def demo_endpoint() -> Endpoint:
    """The demo responder's endpoint, created once."""
    endpoint, _ = Endpoint.objects.get_or_create(
        name=DEMO_ENDPOINT,
        defaults={
            "base_url": DEMO_BASE_URL,
            "model": "demo-responder (not a language model)",
            "concurrency": 4,
            "requests_per_minute": 0,
            "default_params": {"temperature": 0, "max_tokens": 256, "seed": 1},
        },
    )
    return endpoint


def seed(*, users: dict[str, Any]) -> None:
    demo_endpoint()
