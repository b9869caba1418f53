"""The "rate" task kind: one acceptability rating on a whole-number scale (1–10 by default).

Stage config (all optional)::

    {"min": 1, "max": 10,
     "anchors": {"1": "Completely unacceptable", "10": "Completely acceptable"},
     "allow_cannot_judge": true,
     "question": "How acceptable is this sentence?",
     "stopping": {"floor": 5, "confidence": 0.95, "mean_ci_width": null}}

``stopping`` turns live stopping on (ratings/stopping.py; absent or null: off): an ordered pair
collects no more ratings once its label is settled, from ``floor`` ratings per item on, at
most the stage's overlap.

Payloads: ``{"value": 7}``, or ``{"value": null, "cannot_judge": true, "reason": "…"}`` when the
stage allows "I can't judge this" (the reason is required). Resolution policy: the mean rating;
a "can't judge" annotation casts no vote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from annotation.errors import ApplicationError
from annotation.forms import parse_bool
from annotation.kinds import AgreementSpec, KindContext, TaskKind

DEFAULT_MIN = 1
DEFAULT_MAX = 10
DEFAULT_ANCHORS = {"1": "Completely unacceptable", "10": "Completely acceptable"}
DEFAULT_QUESTION = "How acceptable is this sentence?"
MAX_REASON = 300
#: Scales longer than this cannot be typed with one key per point.
MAX_KEYED_POINTS = 10


def scale_bounds(config: Mapping[str, Any]) -> tuple[int, int]:
    """(min, max) of a stage's rating scale; raises ApplicationError for a broken config."""
    low = config.get("min", DEFAULT_MIN)
    high = config.get("max", DEFAULT_MAX)
    for name, bound in (("min", low), ("max", high)):
        if isinstance(bound, bool) or not isinstance(bound, int):
            raise ApplicationError(
                f"The rating scale's {name} must be a whole number (got {bound!r}).", {name: bound}
            )
    if high <= low:
        raise ApplicationError(
            f"The rating scale must go up: min {low} is not below max {high}.",
            {"min": low, "max": high},
        )
    if high - low + 1 > 101:
        raise ApplicationError("A rating scale has at most 101 points.", {"max": high})
    return low, high


#: Live stopping's settings (ratings/stopping.py) when a stage turns it on without naming them:
#: the rule measured on ExpliCa's ratings (ratings/README.md, "Adaptive overlap").
STOPPING_DEFAULTS: dict[str, Any] = {"floor": 5, "confidence": 0.95, "mean_ci_width": None}


def stopping_clean(value: Any) -> dict[str, Any]:
    """The stage option ``stopping`` (live stopping, ratings/stopping.py) cleaned: ``floor``
    (ratings every item of an ordered pair has before it may stop; a whole number, at least 2),
    ``confidence`` (of the intervals, above 0 and below 1) and ``mean_ci_width`` (stop as well
    when every item's interval is narrower; positive, or None: off), missing ones from
    ``STOPPING_DEFAULTS``. ApplicationError naming the setting otherwise. The cap is the stage's
    overlap."""
    if not isinstance(value, Mapping):
        raise ApplicationError(
            'stopping must be an object such as {"floor": 5, "confidence": 0.95}.',
            {"stopping": "expected an object"},
        )
    unknown = sorted(set(value) - set(STOPPING_DEFAULTS))
    if unknown:
        raise ApplicationError(
            f"stopping does not know {', '.join(map(str, unknown))}: it takes "
            f"{', '.join(STOPPING_DEFAULTS)}.",
            {"stopping": unknown},
        )
    clean = {**STOPPING_DEFAULTS, **value}
    floor, confidence, width = clean["floor"], clean["confidence"], clean["mean_ci_width"]
    if isinstance(floor, bool) or not isinstance(floor, int) or floor < 2:
        raise ApplicationError(
            "stopping.floor must be a whole number of ratings, at least 2.",
            {"stopping.floor": floor},
        )
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        confidence = None
    if confidence is None or not 0 < confidence < 1:
        raise ApplicationError(
            "stopping.confidence must be a number between 0 and 1, such as 0.95.",
            {"stopping.confidence": clean["confidence"]},
        )
    if width is not None and (
        isinstance(width, bool) or not isinstance(width, int | float) or not width > 0
    ):
        raise ApplicationError(
            "stopping.mean_ci_width must be a positive number of rating points, or null (off).",
            {"stopping.mean_ci_width": width},
        )
    return {"floor": floor, "confidence": float(confidence), "mean_ci_width": width}


def key_for(value: int, low: int, high: int) -> str | None:
    """The keyboard key of a scale point: its digit for 1–9 (0 too on a scale starting at 0),
    and "0" for 10 on scales that do not use 0. Longer scales have no keys."""
    if high - low + 1 > MAX_KEYED_POINTS:
        return None
    if 0 <= value <= 9:
        return str(value)
    if value == 10 and low > 0:
        return "0"
    return None


def marked_text(text: str, mark: Any) -> SafeString:
    """The item text, escaped, with the connective span wrapped in <mark class="connective">."""
    text = str(text or "")
    if (
        isinstance(mark, list | tuple)
        and len(mark) == 2
        and all(isinstance(bound, int) and not isinstance(bound, bool) for bound in mark)
        and 0 <= mark[0] < mark[1] <= len(text)
    ):
        start, end = mark
        return mark_safe(  # noqa: S308 — each part is escaped
            f'{escape(text[:start])}<mark class="connective">{escape(text[start:end])}</mark>'
            f"{escape(text[end:])}"
        )
    return escape(text)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _truthy(value: Any) -> bool:
    return parse_bool(value)  # the one yes / no rule


class RateKind(TaskKind):
    """Rate one sentence on the stage's scale."""

    key = "rate"
    label = "Acceptability rating"
    template = "ratings/kinds/rate.html#form"
    policies = ("mean",)
    default_policy = "mean"
    # A "can't judge" payload stores value None, so the vote is the value field as it is.
    vote_field = "value"
    agreement = AgreementSpec("interval")
    default_visible_fields = ("text", "mark")
    # The rating form shows the sentence itself, with its connective marked.
    display_template = ""

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        config = context.config
        low, high = scale_bounds(config)
        if _truthy(payload.get("cannot_judge")):
            if payload.get("value") not in (None, ""):
                raise ApplicationError(
                    f'You chose {payload.get("value")!r} and also "I can\'t judge this": '
                    'clear the rating, or untick "I can\'t judge this".',
                    {"value": "a rating or I can't judge this, not both"},
                )
            if not config.get("allow_cannot_judge", True):
                raise ApplicationError(
                    "This stage asks for a rating on every item; choose a number.",
                    {"cannot_judge": "not allowed in this stage"},
                )
            reason = payload.get("reason") or ""
            if not isinstance(reason, str) or not reason.strip():
                raise ApplicationError(
                    "Say briefly why you can't judge this sentence.", {"reason": "required"}
                )
            if len(reason) > MAX_REASON:
                raise ApplicationError(
                    f"The reason is {len(reason)} characters; at most {MAX_REASON} are allowed.",
                    {"reason": f"at most {MAX_REASON} characters"},
                )
            return {"value": None, "cannot_judge": True, "reason": reason.strip()}
        raw = payload.get("value")
        if raw is None or raw == "":
            raise ApplicationError(f"Choose a rating from {low} to {high}.", {"value": "required"})
        value = _as_int(raw)
        if value is None or not low <= value <= high:
            raise ApplicationError(
                f"The rating must be a whole number from {low} to {high} (got {raw!r}).",
                {"value": f"a whole number from {low} to {high}"},
            )
        return {"value": value}

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        clean = super().validate_config(config)
        scale_bounds(clean)
        if clean.get("stopping") is not None:
            clean["stopping"] = stopping_clean(clean["stopping"])
        return clean

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        low, high = scale_bounds(config)
        keyed = [(value, key_for(value, low, high)) for value in range(low, high + 1)]
        keyed = [(value, key) for value, key in keyed if key is not None]
        # One line for the run of points typed with their own digit, one for each other key.
        same = [value for value, key in keyed if key == str(value)]
        shortcuts = []
        if len(same) > 1:
            shortcuts.append((f"{same[0]}–{same[-1]}", f"rate {same[0]} to {same[-1]}"))
        elif same:
            shortcuts.append((str(same[0]), f"rate {same[0]}"))
        shortcuts += [(key, f"rate {value}") for value, key in keyed if key != str(value)]
        if config.get("allow_cannot_judge", True):
            shortcuts.append(("c", "I can't judge this"))
        shortcuts.append(("Enter", "submit the rating"))
        return shortcuts

    def context(self, *, item: Any, stage: Any, config: Mapping[str, Any]) -> dict[str, Any]:
        low, high = scale_bounds(config)
        anchors = config.get("anchors", DEFAULT_ANCHORS if (low, high) == (1, 10) else {}) or {}
        payload = item.payload or {}
        points = [
            {
                "value": value,
                "key": key_for(value, low, high),
                "anchor": str(anchors.get(str(value), "")),
            }
            for value in range(low, high + 1)
        ]
        return {
            "rate_text": marked_text(payload.get("text", ""), payload.get("mark")),
            "rate_points": points,
            "rate_low": low,
            "rate_high": high,
            "rate_question": config.get("question") or DEFAULT_QUESTION,
            "rate_allow_cannot_judge": bool(config.get("allow_cannot_judge", True)),
        }

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Form fields to a payload. The rating arrives as `value`, possibly twice without
        JavaScript (the hidden field, empty, and the pressed button): the last non-empty wins."""
        if hasattr(data, "getlist"):
            values = [value for value in data.getlist("value") if value not in (None, "")]
        else:
            values = [data.get("value")] if data.get("value") not in (None, "") else []
        raw = values[-1] if values else None
        value = _as_int(raw)
        payload: dict[str, Any] = {"value": value if value is not None else raw}
        if _truthy(data.get("cannot_judge", "")):
            payload["cannot_judge"] = True
            payload["reason"] = data.get("reason", "")
        return payload
