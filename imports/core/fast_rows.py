"""The check of the simplest records, compiled once per schema (the import's hot path).

``RowSchema.validate_row`` (imports/core/schema.py) is general: key spellings and aliases,
defaults, every field type, normalising, checks, nested values. Most records of a large file
need none of that: flat values under the same keys on every line. ``fast_row_check(schema)``
returns a function that answers for those records in a few dictionary operations, or None when
the schema has nothing it can compile (a kind's own field types, checks, record checks, a
subclass with its own ``validate_row``).

The contract, which tests/imports/test_core_fast_rows.py checks against ``validate_row`` on
many kinds of records: ``check(raw)`` returns either None ("not among the simplest: ask
``validate_row``") or exactly the ``clean`` dict ``validate_row(raw, …)`` returns for it, with
its keys in the same order. It never accepts a record that ``validate_row`` refuses, and never
reports an error itself: records it declines go to ``validate_row``, which words their errors.

Simplest means: a dict; every declared field (all of type "str", without ``normalise``,
``check`` or a dotted source) found under exactly one of its spellings, its value non-blank
text within ``max_length``; every other key text that no declared spelling claims, with a flat
storable value (text without NUL or lone surrogates, a whole number of at most
``MAX_INT_DIGITS`` digits, a finite float, a boolean or null). What the keys of a record mean
is worked out once per distinct key sequence (a file's records nearly always share one) and
kept in a small cache. ``shown`` adds a rule of the row as a whole: at least one of these clean
fields holds a value other than None and "" (``_ShownFieldsSchema`` in
imports/services/mapping.py); the plan keeps only those of them a record's keys give, so that a
record is not asked for each of them in turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from imports.core.schema import _BAD_TEXT, _MAX_INT_BITS, RowSchema, _normalise_key

#: Distinct key sequences remembered per compiled check; past that, records are still
#: checked, their plan worked out again each time (a file whose records all differ in keys).
PLAN_CACHE_SIZE = 256

FastRowCheck = Callable[[Any], dict[str, Any] | None]

#: Plan of one key sequence: (declared name, raw key, max length, strip) per declared field, in
#: field order, the raw keys kept as they are (extra fields), in record order, and the clean
#: names among ``shown`` these keys give (empty when nothing is required to be shown); None
#: when records with these keys are not among the simplest.
_Plan = (
    tuple[tuple[tuple[str, str, int | None, bool], ...], tuple[str, ...], tuple[str, ...]] | None
)


def _flat_storable(value: Any) -> bool:
    """``_stored_value_problem(value) is None`` for flat values, False for anything else (the
    general check then runs in ``validate_row``)."""
    kind = type(value)
    if kind is str:
        return (value.isascii() and "\x00" not in value) or _BAD_TEXT.search(value) is None
    if kind is int:
        return value.bit_length() <= _MAX_INT_BITS
    if kind is float:
        return math.isfinite(value)
    return kind is bool or value is None


def _compilable(schema: RowSchema) -> bool:
    if schema.external_id_field is None or schema.record_checks:
        return False
    for spec in schema.fields:
        if spec.type != "str" or spec.normalise is not None or spec.check is not None:
            return False
        if any("." in source for source in spec.sources):
            return False
    return True


def fast_row_check(schema: RowSchema, shown: tuple[str, ...] = ()) -> FastRowCheck | None:
    """The compiled check of ``schema``'s simplest records (module docstring), or None. With
    ``shown``, a record none of whose clean fields named there holds a value (other than None
    and "") is declined too: its error is ``validate_row``'s to word."""
    if type(schema).validate_row is not RowSchema.validate_row or not _compilable(schema):
        return None
    specs = schema.fields
    id_field = schema.external_id_field
    policy = schema.extra_fields
    owned = {_normalise_key(source) for spec in specs for source in spec.sources}
    plans: dict[tuple[Any, ...], _Plan] = {}

    def plan_of(keys: tuple[Any, ...]) -> _Plan:
        if not all(type(key) is str for key in keys):
            return None
        normalised = [_normalise_key(key) for key in keys]
        declared: list[tuple[str, str, int | None, bool]] = []
        used: set[str] = set()
        for spec in specs:
            spellings = {_normalise_key(source) for source in spec.sources}
            found = [key for key, norm in zip(keys, normalised, strict=True) if norm in spellings]
            if len(found) != 1:
                return None  # missing (default / required), or given twice: the general path
            declared.append((spec.name, found[0], spec.max_length, spec.name == id_field))
            used.add(found[0])
        kept: list[str] = []
        for key, norm in zip(keys, normalised, strict=True):
            if key in used:
                continue
            if norm in owned or policy == "reject":
                return None
            if not key.isascii() or "\x00" in key:
                if _BAD_TEXT.search(key) is not None:
                    return None
            if policy == "keep":
                kept.append(key)
        names = [name for name, _, _, _ in declared] + kept
        shown_here = tuple(name for name in names if name in shown)
        if shown and not shown_here:
            return None  # shows nothing whatever the values: the general path words it
        return tuple(declared), tuple(kept), shown_here

    def check(raw: Any) -> dict[str, Any] | None:
        if type(raw) is not dict:
            return None
        keys = tuple(raw)
        try:
            plan = plans[keys]
        except KeyError:
            plan = plan_of(keys)
            if len(plans) < PLAN_CACHE_SIZE:
                plans[keys] = plan
        if plan is None:
            return None
        declared, kept, shown_here = plan
        clean: dict[str, Any] = {}
        for name, key, max_length, strip in declared:
            value = raw[key]
            if type(value) is not str or (max_length is not None and len(value) > max_length):
                return None
            stripped = value.strip()
            if not stripped or not _flat_storable(value):
                return None
            clean[name] = stripped if strip else value
        for key in kept:
            value = raw[key]
            # _flat_storable's two commonest cases inline (a call a value costs more than them).
            kind = type(value)
            if kind is str:
                if not (value.isascii() and "\x00" not in value) and _BAD_TEXT.search(value):
                    return None
            elif kind is int:
                if value.bit_length() > _MAX_INT_BITS:
                    return None
            elif not _flat_storable(value):
                return None
            clean[key] = value
        if shown_here:
            for name in shown_here:
                if clean[name] not in (None, ""):
                    break
            else:
                return None
        return clean

    return check
