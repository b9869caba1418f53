"""Template filters of the models' pages (llm/templates/llm/)."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def as_json(value: Any) -> str:
    """A parsed answer as JSON text (what the model was asked for), not Python's repr."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
