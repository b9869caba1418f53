"""The rows of ratings' three kinds of file, as schemas of the engine's import core.

Registered by ``ratings.apps.RatingsConfig`` (``import_schemas``) under the names below, and
read by ``ratings.importing``: each row, its column names normalised there ("Pair ID" →
``pair_id``), goes through ``RowSchema.validate_row``, so every problem comes out as the one
``imports.core.report.RowError`` naming line and field. A schema here says which fields a row
has, their types (a nested object or list where a flat value belongs is refused,
``nested_value``) and the checks that need only the row. Checks that need the project (its
scale, its connectives, the items it holds) are bound to one import with
``RowSchema.with_checks`` (``bound_*`` below); checks across rows (a pair id used twice, a rater
rating an item twice) stay in ``ratings.importing``.

Every check here reports independently of the others, so a row with several problems lists
them all; a value of the wrong type stops the row's checks (its other checks would only
repeat it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from annotation.values import InvalidNumber
from imports.core.schema import FieldSpec, RecordCheck, RowSchema
from ratings.connectives import SENTENCE_ORDERS, ConnectiveSet, variant_key

PURPOSES = ("regular", "practice", "attention_check")
_FLAG_SPLIT = re.compile(r"[;|]")

#: Names under which ``ratings.apps`` registers the schemas (import_schemas).
PAIRS = "ratings.pairs"
RATINGS = "ratings.ratings"
MODEL_RATINGS = "ratings.model_ratings"
MODEL_CHOICES = "ratings.model_choices"

Problems = list[tuple[str | None, str]]


# --------------------------------------------------------------------------- cells


def text(value: Any) -> str:
    """A cell as text, runs of white space as one space."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return " ".join(str(value).split())


def identifier(value: Any) -> str:
    """A pair id as text: 7, 7.0 and "7" are the same pair."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return text(value)


def number(value: Any) -> float | None:
    """A number, or None for an empty cell; raises ValueError for anything else (a number too
    large for a float included)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool | InvalidNumber):
        raise ValueError(value)
    try:
        result = float(value)
    except OverflowError:  # an int beyond a float's range
        raise ValueError(value) from None
    if not math.isfinite(result):
        raise ValueError(value)
    return result


def flags(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [text(flag) for flag in value if text(flag)]
    if isinstance(value, bool):
        return []
    return [text(flag) for flag in _FLAG_SPLIT.split(str(value)) if text(flag)]


def order(value: Any) -> str | None:
    result = text(value).upper().replace("-", "").replace(",", "")
    return result if result in SENTENCE_ORDERS else None


def purpose(value: Any) -> str:
    return text(value).lower().replace(" ", "_").replace("-", "_") or "regular"


def rating_list(value: Any) -> list[str]:
    """The ratings of a list cell: a JSON list, or ExpliCa's text "['8', '9', …]"."""
    if isinstance(value, list):
        return [str(item) for item in value]
    if value is None:
        return []
    stripped = str(value).strip()
    if not stripped:
        return []
    return [part.strip(" '\"") for part in stripped.strip("[]").split(",") if part.strip(" '\"")]


# --------------------------------------------------------------------------- field checks


def _flat_flags(value: Any) -> str | None:
    if isinstance(value, list) and any(isinstance(flag, list | dict) for flag in value):
        return "flags must be texts, not lists or objects"
    if isinstance(value, dict):
        return "flags must be a text or a list of texts, not an object"
    return None


def _known_purpose(value: Any) -> str | None:
    found = purpose(value)
    return None if found in PURPOSES else f"unknown purpose {found!r}; use {', '.join(PURPOSES)}"


def _ratings_list(value: Any) -> str | None:
    if isinstance(value, dict) or (
        isinstance(value, list) and any(isinstance(item, list | dict) for item in value)
    ):
        return "ratings must be a list of numbers"
    return None


def _id(name: str, message: str, **options: Any) -> FieldSpec:
    return FieldSpec(name, "str", required=True, required_message=message, **options)


PAIR_ID = _id("pair_id", "missing pair id", help="The pair's id, unique in the project.")

# --------------------------------------------------------------------------- pairs


def _pair_rules(clean: Mapping[str, Any]) -> Problems:
    """A regular pair names no connective; a practice or attention-check row names one, an
    order and the ratings an attentive rater gives, in order."""
    kind = purpose(clean.get("purpose"))
    connective = text(clean.get("connective")).lower()
    if kind == "regular":
        if connective:
            return [
                (
                    "connective",
                    "a pair is rated with every connective; give a connective only on practice "
                    "and attention-check rows",
                )
            ]
        return []
    problems: Problems = []
    if not connective:
        problems.append(("connective", f"a {kind.replace('_', ' ')} row needs a connective"))
    if order(clean.get("order") or "AB") is None:
        problems.append(("order", f"order must be AB or BA, not {clean.get('order')!r}"))
    low, high = clean.get("expected_min"), clean.get("expected_max")
    if low is None and high is None:
        problems.append(
            (
                "expected_max",
                "give expected_min and/or expected_max: the ratings an attentive rater gives",
            )
        )
    elif low is not None and high is not None and low > high:
        problems.append(("expected_min", "expected_min is above expected_max"))
    return problems


PAIRS_SCHEMA = RowSchema(
    name=PAIRS,
    description="ExpliCa-style sentence pairs; practice and attention-check rows are one item.",
    external_id_field="pair_id",
    extra_fields="keep",
    # Examples: two regular pairs (the column table and the sample file, imports.views); the
    # fields of practice and attention-check rows are left out of the sample (example=None).
    fields=(
        replace(PAIR_ID, example="pair"),
        FieldSpec(
            "sentence_a",
            required=True,
            required_message="missing sentence A",
            example=("The road was icy.", "The shop closed early."),
        ),
        FieldSpec(
            "sentence_b",
            required=True,
            required_message="missing sentence B",
            example=("Several cars slid off it.", "Its owner was ill."),
        ),
        FieldSpec("subset", help="The relation the pair is expected to show.", example="causal"),
        FieldSpec("origin", help="Where the pair comes from.", example="written for the study"),
        FieldSpec(
            "flags",
            "json",
            check=_flat_flags,
            help="A list, or texts separated by ; or |.",
            example=("", "socially challenging"),
        ),
        FieldSpec(
            "purpose",
            check=_known_purpose,
            help="Empty means regular.",
            allowed=PURPOSES,
            example="regular",
        ),
        FieldSpec(
            "connective",
            help="Practice and attention-check rows: one of the project's connectives.",
            example=None,
        ),
        FieldSpec(
            "order",
            help="Practice and attention-check rows (AB when empty).",
            allowed=SENTENCE_ORDERS,
            example=None,
        ),
        FieldSpec("expected_min", "float", help="On the project's scale.", example=None),
        FieldSpec("expected_max", "float", help="On the project's scale.", example=None),
        FieldSpec("feedback", help="Shown after a practice item.", example=None),
    ),
    record_checks=(_pair_rules,),
)
#: The declared names of a pair row: any other column is kept as the pair's ``extra``.
PAIR_FIELDS = tuple(PAIRS_SCHEMA.field_names)


def bound_pairs_schema(connective_set: ConnectiveSet, scale: tuple[int, int]) -> RowSchema:
    """``PAIRS_SCHEMA`` with the project's connectives and scale."""
    low, high = scale

    def known_connective(clean: Mapping[str, Any]) -> Problems:
        connective = text(clean.get("connective")).lower()
        if purpose(clean.get("purpose")) == "regular" or not connective:
            return []
        if connective in connective_set.words:
            return []
        return [
            (
                "connective",
                f"unknown connective {connective!r}; this project uses "
                f"{', '.join(connective_set.words)}",
            )
        ]

    def on_scale(clean: Mapping[str, Any]) -> Problems:
        return [
            (name, f"{clean[name]:g} is outside the scale {low}–{high}")
            for name in ("expected_min", "expected_max")
            if clean.get(name) is not None and not low <= clean[name] <= high
        ]

    return PAIRS_SCHEMA.with_checks(known_connective, on_scale)


# --------------------------------------------------------------------------- ratings


def _item_rules(connective_set: ConnectiveSet, known_items: set[str] | None) -> RecordCheck:
    """A row names an item: a pair id, an order and one of the project's connectives, and,
    when ``known_items`` is given, an item the project holds."""

    def check(clean: Mapping[str, Any]) -> Problems:
        pair_id = identifier(clean.get("pair_id"))
        found = order(clean.get("order"))
        connective = text(clean.get("connective")).lower()
        problems: Problems = []
        if found is None:
            problems.append(("order", f"order must be AB or BA, not {clean.get('order')!r}"))
        if not connective:
            problems.append(("connective", "missing connective"))
        elif connective not in connective_set.words:
            problems.append(
                (
                    "connective",
                    f"unknown connective {connective!r}; this project uses "
                    f"{', '.join(connective_set.words)}",
                )
            )
        if problems or found is None or known_items is None:
            return problems
        key = variant_key(pair_id, found, connective)
        if key not in known_items:
            return [("pair_id", f"no item {key!r} in this project (import its pair first)")]
        return []

    return check


def item_key(clean: Mapping[str, Any]) -> str:
    """The item a checked rating or model-answer row names."""
    found = order(clean.get("order"))
    assert found is not None  # checked by _item_rules
    return variant_key(
        identifier(clean.get("pair_id")), found, text(clean.get("connective")).lower()
    )


def rating_values(clean: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """(column, values) of a rating row: the ``ratings`` list when given, else ``rating``."""
    if clean.get("ratings") not in (None, ""):
        return "ratings", rating_list(clean["ratings"])
    return "rating", [clean.get("rating")]


def rating_problem(value: Any, scale: tuple[int, int]) -> str | None:
    """Why one rating cannot be stored, or None."""
    low, high = scale
    try:
        found = number(value)
    except (TypeError, ValueError):
        return f"not a number: {value!r}"
    if found is None:
        return "missing rating"
    if not low <= found <= high:
        return f"{found:g} is outside the scale {low}–{high}"
    if not found.is_integer():
        return f"{found:g} is not a whole number"
    return None


RATINGS_SCHEMA = RowSchema(
    name=RATINGS,
    description="Historic ratings: one rating (with its rater) or a list of anonymous ratings.",
    derived_id="row",
    extra_fields="ignore",
    # Examples: ratings of the pairs sample's first two items (``PAIRS_SCHEMA``'s examples).
    fields=(
        replace(PAIR_ID, help="A pair already imported.", example=("pair-001", "pair-002")),
        FieldSpec("order", allowed=SENTENCE_ORDERS, example="AB"),
        FieldSpec("connective", help="One of the project's connectives.", example="so"),
        FieldSpec("rating", "float", help="On the project's scale.", example=(8, 3)),
        FieldSpec(
            "ratings",
            "json",
            check=_ratings_list,
            help="Instead of rating: a list of anonymous ratings, or \"['8', '9']\".",
            example=None,
        ),
        FieldSpec("rater", help="Who rated; never rates an item twice.", example=("r1", "r2")),
    ),
)


def bound_ratings_schema(
    connective_set: ConnectiveSet, scale: tuple[int, int], known_items: set[str] | None
) -> RowSchema:
    """``RATINGS_SCHEMA`` with the project's connectives, scale and items."""

    def on_scale(clean: Mapping[str, Any]) -> Problems:
        column, values = rating_values(clean)
        if column == "ratings" and not values:
            return [("ratings", "no ratings in the list")]
        return [
            (column, problem)
            for problem in (rating_problem(value, scale) for value in values)
            if problem is not None
        ]

    return RATINGS_SCHEMA.with_checks(_item_rules(connective_set, known_items), on_scale)


# --------------------------------------------------------------------------- model answers

MODEL_RATINGS_SCHEMA = RowSchema(
    name=MODEL_RATINGS,
    description="A model's rating per item; -1 or empty means no answer.",
    derived_id="row",
    extra_fields="ignore",
    fields=(
        PAIR_ID,
        FieldSpec("order", help="AB or BA."),
        FieldSpec("connective"),
        FieldSpec("rating", "float", help="-1 or empty: no answer."),
    ),
)
MODEL_CHOICES_SCHEMA = RowSchema(
    name=MODEL_CHOICES,
    description="The connective a model chose per ordered pair; -1 or empty means no answer.",
    derived_id="row",
    extra_fields="ignore",
    fields=(
        PAIR_ID,
        FieldSpec("order", help="AB or BA."),
        FieldSpec("choice", "str", help="A connective, its index from 0, or 'unrelated'."),
    ),
)


def bound_model_schema(
    answer_kind: str,
    connective_set: ConnectiveSet,
    *,
    scale: tuple[int, int],
    known_items: set[str],
    known_pairs: set[str],
    unrelated: Iterable[str],
) -> RowSchema:
    """The model-answer schema of ``answer_kind`` ("ratings" or "choices") with the project's
    connectives, scale, items and pairs."""
    low, high = scale
    if answer_kind == "ratings":

        def on_scale(clean: Mapping[str, Any]) -> Problems:
            found = clean.get("rating")
            if found is None or found == -1 or low <= found <= high:
                return []
            return [("rating", f"{found:g} is outside the scale {low}–{high}")]

        return MODEL_RATINGS_SCHEMA.with_checks(_item_rules(connective_set, known_items), on_scale)
    words = set(unrelated)

    def pair_and_choice(clean: Mapping[str, Any]) -> Problems:
        problems: Problems = []
        pair_id = identifier(clean.get("pair_id"))
        if order(clean.get("order")) is None:
            problems.append(("order", f"order must be AB or BA, not {clean.get('order')!r}"))
        elif pair_id not in known_pairs:
            problems.append(("pair_id", f"no pair {pair_id!r} in this project"))
        if choice_value(clean.get("choice"), connective_set, words) is _UNKNOWN:
            problems.append(
                (
                    "choice",
                    f"unknown connective {clean.get('choice')!r}; use one of "
                    f"{', '.join(connective_set.words)}, 'unrelated', an index from 0, or "
                    f"-1/empty for no answer",
                )
            )
        return problems

    return MODEL_CHOICES_SCHEMA.with_checks(pair_and_choice)


_UNKNOWN: Any = object()


def choice_value(value: Any, connective_set: ConnectiveSet, unrelated: set[str]) -> Any:
    """A model's choice as stored: a connective, an unrelated word, or None for no answer;
    ``_UNKNOWN`` when it is none of these."""
    found = text(value).lower()
    if found in ("", "-1"):
        return None
    if found in connective_set.words or found in unrelated:
        return found
    if found.isdigit() and int(found) < len(connective_set.words):
        return connective_set.words[int(found)]
    return _UNKNOWN


#: What ``ratings.apps`` registers (import_schemas).
SCHEMAS = {
    PAIRS: PAIRS_SCHEMA,
    RATINGS: RATINGS_SCHEMA,
    MODEL_RATINGS: MODEL_RATINGS_SCHEMA,
    MODEL_CHOICES: MODEL_CHOICES_SCHEMA,
}
