"""Prompts and answers: what a model is shown and how its answer becomes a payload.

* :func:`render` turns a prompt version into Chat Completions messages from a mapping of fields.
  For a stage's item that mapping is :func:`item_fields` — ``annotation.api.
  item_payload_for_annotator``, the allow-list annotators see, and nothing else — so no gold
  field, answer or other annotator's work reaches a prompt unless the stage shows it to people.
* :func:`answer_format` is the structured answer a task kind asks for (its ``answer_schema``,
  annotation/kinds/base.py) as a ``response_format``: a JSON schema where the endpoint supports
  one, JSON mode with the schema written into the system message where it does not.
* :func:`parse_answer` reads a model's text into a payload and passes it through the kind's own
  ``validate`` — the same check a person's submit passes. A failure raises
  ``CallError("unparseable", …)``: retried by policy, then reported, never counted as a vote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from django.template import Context, Engine, Template, TemplateSyntaxError

from annotation.api import item_payload_for_annotator
from annotation.errors import ApplicationError
from annotation.kinds.base import KindContext, get_kind
from annotation.models import Item, Stage
from llm.client import CallError
from llm.models import Endpoint, PromptVersion

#: Templates render as text (no HTML escaping), with no loaders and no custom tags.
_ENGINE = Engine(autoescape=False, libraries={}, builtins=[])
_VARIABLE = re.compile(r"{{\s*([A-Za-z_][A-Za-z0-9_]*)")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def item_fields(item: Item, stage: Stage) -> dict[str, Any]:
    """The fields a prompt about ``item`` in ``stage`` may use: exactly what its annotators see."""
    return item_payload_for_annotator(item, stage)


def template_check(text: str) -> None:
    """Raise ApplicationError naming the problem when ``text`` is not a valid template."""
    try:
        _ENGINE.from_string(text)
    except TemplateSyntaxError as error:
        raise ApplicationError(
            f"The prompt is not a valid template: {error}", {"user": str(error)}
        ) from error


def fields_used(version: PromptVersion) -> list[str]:
    """The variables a version names (``{{ name }}``), in order of first use."""
    seen: dict[str, None] = {}
    for text in (version.system, version.user):
        for name in _VARIABLE.findall(text):
            seen.setdefault(name, None)
    return list(seen)


@lru_cache(maxsize=256)
def _compiled(checksum: str, system: str, user: str) -> tuple[Template, Template]:
    """A version's two templates, compiled once per process (versions never change)."""
    return _ENGINE.from_string(system), _ENGINE.from_string(user)


def render(
    version: PromptVersion,
    fields: Mapping[str, Any],
    *,
    schema: Mapping[str, Any] | None = None,
    json_schema_mode: bool = True,
) -> list[dict[str, str]]:
    """The messages for one request. A variable the fields lack renders empty (the Setup tab's
    preview names such variables: llm.services.prompt_preview)."""
    context = Context(dict(fields), autoescape=False)
    system_template, user_template = _compiled(version.checksum, version.system, version.user)
    system = system_template.render(context).strip()
    if schema is not None and not json_schema_mode:
        system = (
            f"{system}\n\nAnswer with one JSON object that follows this JSON schema:\n"
            f"{json.dumps(schema, ensure_ascii=False)}"
        ).strip()
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": user_template.render(context)})
    return messages


def answer_schema(stage: Stage, item: Item | None = None) -> dict[str, Any] | None:
    kind = get_kind(stage.kind)
    return kind.answer_schema(KindContext(stage=stage, item=item))


def answer_format(schema: Mapping[str, Any] | None, endpoint: Endpoint) -> dict[str, Any] | None:
    """The ``response_format`` of a request (None: free text)."""
    if schema is None:
        return None
    if endpoint.json_schema_mode:
        return {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": dict(schema), "strict": False},
        }
    return {"type": "json_object"}


def parse_json(text: str) -> dict[str, Any]:
    """A model's text as a JSON object (a fenced code block is unwrapped)."""
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        value = json.loads(text)
    except ValueError as error:
        raise CallError(
            "unparseable", f"the answer is not JSON ({error}): {text[:200]!r}"
        ) from error
    if not isinstance(value, dict):
        raise CallError("unparseable", f"the answer is not a JSON object: {text[:200]!r}")
    return value


def parse_answer(text: str, stage: Stage, item: Item | None = None) -> dict[str, Any]:
    """A model's text as the payload the stage's kind accepts (its ``validate``)."""
    payload = parse_json(text)
    kind = get_kind(stage.kind)
    try:
        return kind.validate(payload, KindContext(stage=stage, item=item))
    except ApplicationError as error:
        raise CallError(
            "unparseable", f"the answer does not pass the task's check: {error}"
        ) from error
