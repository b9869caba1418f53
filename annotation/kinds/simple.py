"""The two simple kinds the engine ships: binary verify and single-choice label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.errors import ApplicationError
from annotation.kinds.base import KindContext, TaskKind

MAX_COMMENT = 2000

#: What annotators of the engine's generic kinds see of an item unless a stage lists its own
#: fields: the texts to judge, never answers, labels, rationales or anything an import added.
GENERIC_VISIBLE_FIELDS = (
    "text",
    "sentence",
    "question",
    "sentence_a",
    "sentence_b",
    "event_a",
    "event_b",
    "cause",
    "effect",
    "premise",
    "hypothesis",
    "context",
    "passage",
    "scenario",
    "claim",
    "options",
    "title",
)


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

    default_visible_fields = GENERIC_VISIBLE_FIELDS

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
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

    def labels(self, config: Mapping[str, Any]) -> list[str]:
        choices = config.get("choices") or []
        return [str(choice) for choice in choices]

    default_visible_fields = GENERIC_VISIBLE_FIELDS

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        choices = self.labels(context.config)
        value = payload.get("value")
        if value not in choices:
            raise ApplicationError(
                f"Choose one of the labels (got {value!r}).",
                {"value": f"expected one of: {', '.join(choices)}"},
            )
        return {"value": value, "comment": _comment(payload)}

    def categories(self, config: Mapping[str, Any]) -> list[Any]:
        return self.labels(config)

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [(str(index + 1), choice) for index, choice in enumerate(self.labels(config)[:9])]

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        clean = super().validate_config(config)
        labels = clean.get("choices")
        if (
            not isinstance(labels, list)
            or len(labels) < 2
            or not all(isinstance(label, str) and label.strip() for label in labels)
            or len(set(labels)) != len(labels)
        ):
            raise ApplicationError(
                "A label stage needs at least two distinct labels in config choices.",
                {"choices": "expected a list of at least two distinct names"},
            )
        return clean
