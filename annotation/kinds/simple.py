"""The two simple kinds the engine ships: binary verify and single-choice label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.errors import ApplicationError
from annotation.kinds.base import TaskKind

MAX_COMMENT = 2000


def _comment(payload: Mapping[str, Any]) -> str:
    comment = payload.get("comment") or ""
    if not isinstance(comment, str):
        raise ApplicationError("The comment must be text.", {"comment": "expected a string"})
    if len(comment) > MAX_COMMENT:
        raise ApplicationError(
            f"The comment is {len(comment)} characters; at most {MAX_COMMENT} are allowed.",
            {"comment": f"at most {MAX_COMMENT} characters"},
        )
    return comment.strip()


class VerifyKind(TaskKind):
    """Keep or reject an item (METER's raw verification)."""

    key = "verify"
    label = "Verify (keep / reject)"
    template = "annotation/kinds/verify.html#form"
    policies = ("majority", "unanimity_keep")
    reject_values = ("reject",)
    CHOICES = ("keep", "reject")

    def validate(self, payload: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        value = payload.get("value")
        if value not in self.CHOICES:
            raise ApplicationError(
                f"Choose keep or reject (got {value!r}).",
                {"value": "expected one of: keep, reject"},
            )
        return {"value": value, "comment": _comment(payload)}

    def categories(self, config: Mapping[str, Any]) -> list[Any]:
        return list(self.CHOICES)

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("k", "keep"), ("r", "reject")]


class LabelKind(TaskKind):
    """Pick exactly one label from the stage's `choices` (config: {"choices": [...]})."""

    key = "label"
    label = "Single-choice label"
    template = "annotation/kinds/label.html#form"
    policies = ("majority",)

    def choices(self, config: Mapping[str, Any]) -> list[str]:
        choices = config.get("choices") or []
        return [str(choice) for choice in choices]

    def validate(self, payload: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        choices = self.choices(config)
        value = payload.get("value")
        if value not in choices:
            raise ApplicationError(
                f"Choose one of the labels (got {value!r}).",
                {"value": f"expected one of: {', '.join(choices)}"},
            )
        return {"value": value, "comment": _comment(payload)}

    def categories(self, config: Mapping[str, Any]) -> list[Any]:
        return self.choices(config)

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [(str(index + 1), choice) for index, choice in enumerate(self.choices(config)[:9])]
