"""The task-kind protocol and registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from annotation.errors import ApplicationError


class TaskKind:
    """Base class of a task kind. Subclass, set the class attributes and register an instance.

    Contract:
    - `validate(payload, stage_config)` returns the cleaned payload or raises ApplicationError
      whose `extra` maps field names to messages. It must accept exactly what `template` posts.
    - `vote_value(payload)` returns the hashable/numeric value that resolution and agreement use,
      or None when the annotation casts no vote (e.g. "I can't judge this").
    - `template` is "<app>/kinds/<name>.html#form": a partial rendered with `item`, `stage`,
      `config`, `assignment` in context. Its inputs are named after payload fields.
    - `shortcuts` lists (key, label) pairs shown on screen; the partial wires them with
      `data-key` attributes read by static/js/annotate.js.
    """

    key: ClassVar[str] = ""
    label: ClassVar[str] = ""
    template: ClassVar[str] = ""
    policies: ClassVar[tuple[str, ...]] = ("majority",)
    default_policy: ClassVar[str] = "majority"
    reject_values: ClassVar[tuple[Any, ...]] = ()
    #: Value categories for agreement (None = derived from the data).
    categorical: ClassVar[bool] = True

    def validate(self, payload: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def vote_value(self, payload: Mapping[str, Any]) -> Any:
        return payload.get("value")

    def categories(self, config: Mapping[str, Any]) -> list[Any] | None:
        return None

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return []

    def context(self, *, item: Any, stage: Any, config: Mapping[str, Any]) -> dict[str, Any]:
        """Extra template context for the kind's partial."""
        return {}

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Turn posted form fields (strings) into a payload; validate() checks it afterwards."""
        return {key: data.get(key) for key in data if key not in {"csrfmiddlewaretoken"}}


KINDS: dict[str, TaskKind] = {}


def register_kind(kind: TaskKind) -> TaskKind:
    if not kind.key:
        raise ValueError("a task kind needs a key")
    KINDS[kind.key] = kind
    return kind


def get_kind(key: str) -> TaskKind:
    try:
        return KINDS[key]
    except KeyError:
        raise ApplicationError(
            f"Unknown task kind {key!r}; registered kinds: {', '.join(sorted(KINDS)) or 'none'}.",
            {"kind": key},
        ) from None
