"""How a project kind declares the rows it accepts on import.

One module (about 1,020 lines): the field types, the checks, the normalisers, the examples and
the schema that combines them are read together by whoever declares a schema.

A schema is plain data: a tuple of ``FieldSpec`` and a few options, so a project can also keep a
custom one as JSON (``RowSchema.to_dict`` / ``RowSchema.from_dict``). Validation turns one raw
record (a dict from CSV, JSON Lines or a JSON array) into a clean payload dict or a list of
``RowError`` saying exactly what to fix.

Reading values
--------------
* A field is looked up by its name, then by each alias in order; the first one present wins.
  Names match case-insensitively and ignoring surrounding spaces ("Scenario " finds "scenario").
  An alias with a dot (``"trap.type"``) also reaches into nested objects (``{"trap": {"type":
  ...}}``); a flat key spelled with the dot (a CSV column ``trap.type``) is tried first.
* Absent keys, ``null`` and blank strings count as missing: an error for a required field, the
  default (when declared) otherwise, else the field is left out of the payload.
* CSV cells are text (``text_values=True``), so numbers, booleans, JSON and lists are parsed from
  it: ``bool`` takes true/false/yes/no/1/0 (any case); ``json`` takes a JSON text (a cell that is
  not JSON is kept as a plain string unless it starts with ``{`` or ``[``); ``list[str]`` takes a
  JSON array or items separated by ``;``. JSON input keeps its own types, with two allowances seen
  in real submissions: numbers given as numeric strings, and booleans given as strings.
* ``choice`` matches exactly, then case-insensitively, and stores the declared spelling.
* Every value kept (declared or extra) must be storable (``annotation.values``): no NUL or
  unpaired surrogate in any text or key, no number Python cannot hold as written, nesting of at
  most ``MAX_DEPTH`` levels; otherwise the error names the field (codes ``invalid_text``,
  ``invalid_number``, ``too_deep``).

Nesting: ``json`` fields take any JSON value and ``list[str]`` fields a list; every other type
expects one flat value, and an object or a list found there is refused with the code
``nested_value``, naming the field (a schema allows nesting where a plug-in needs it by declaring
the field ``json``).

Checks a schema declares
------------------------
* ``FieldSpec.check(value) -> str | None``: run on a value read from the record once it has its
  type; a message refuses it (code ``invalid_value``, the field named).
* ``RowSchema.record_checks``: each ``check(clean) -> None | str | [(field or None, message),
  ...]`` runs on a record that passed every field, with its clean payload; a text refuses the
  whole record, a pair names the field. ``RowSchema.with_checks`` adds checks bound to one
  import (a project's scale, its connectives) to a registered schema.
* Checks are code, not data: ``to_dict`` leaves them out.

Normalising values
------------------
``FieldSpec.normalise`` maps the spellings a source uses onto one canonical value instead of
refusing them: a mapping ``{spelling: canonical}`` (matched exactly, then as text stripped and
case-folded) or a callable ``normalise(value) -> canonical or None``. It runs on the typed value
before the field's check. What it does with each value is a ``Normalisation`` (field, spelling,
canonical) handed to the ``normalised`` list a caller passes to ``validate_row`` and counted by
``ImportReport.add_normalisation`` (imports/core/report.py). A value it cannot map (absent from
the mapping, or None from the callable) is refused (code ``unknown_choice``) when ``unmapped`` is
``"refuse"``; with ``"report"`` the field is left out of the payload and the normalisation is
reported with canonical None, so the caller can list it. A mapping is data (``to_dict`` keeps
it); a callable is code and is left out.

The id of a row
---------------
``external_id_field`` names the field holding each row's id. A file whose rows have none
declares ``derived_id`` instead: ``"row"`` (the record's 1-based number in the file) or
``"content"`` (``content_id``: 16 hex digits of the SHA-256 of the clean payload, so the same
row twice is a duplicate). ``RowSchema.row_id`` gives the id either way.

Unknown keys (``extra_fields``): ``"keep"`` copies them into the payload unchanged (data are never
lost; a nested object read through a dotted alias is also kept whole), ``"reject"`` makes each one
an error, ``"ignore"`` drops them. When a name and its alias are both present only the winner is
consumed; the other is an unknown key like any other.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from annotation.values import MAX_DEPTH, MAX_INT_DIGITS, NestingTooDeep, loads, value_problem
from imports.core.report import Normalisation, RowError, truncated_repr

FIELD_TYPES = ("str", "int", "float", "bool", "json", "list[str]", "choice")
EXTRA_FIELD_POLICIES = ("keep", "reject", "ignore")
DERIVED_IDS = ("row", "content")
#: ``check(value)``: a message refusing a field's value, or None.
FieldCheck = Callable[[Any], "str | None"]
#: ``normalise(value)``: the canonical value of a spelling, or None when it has none.
FieldNormaliser = Callable[[Any], Any]
UNMAPPED_POLICIES = ("refuse", "report")
#: ``check(clean)``: None, a message refusing the record, or ``(field or None, message)`` pairs.
RecordCheck = Callable[[Mapping[str, Any]], "str | Iterable[tuple[str | None, str]] | None"]
LIST_SEPARATOR = ";"

TRUE_WORDS = frozenset({"true", "yes", "y", "t", "1"})
FALSE_WORDS = frozenset({"false", "no", "n", "f", "0"})
_INT_TEXT = re.compile(r"[+-]?\d+")


class _Missing:
    """Marker for "no default declared" (None is a legitimate default)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


# What ``annotation.values`` refuses in text (NUL, unpaired surrogates), and the integers it
# refuses (about MAX_INT_DIGITS digits), for the fast path of ``_stored_value_problem``.
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.3)


def _stored_value_problem(value: Any) -> tuple[str, str] | None:
    """``value_problem(value, depth=2)``, answered without it for the flat values most cells
    hold (text, whole numbers, finite floats, booleans, null): this runs for every field of
    every row, and the general walk costs several times more than these checks."""
    kind = type(value)
    if kind is str:
        # ``isascii`` reads a flag of the string (no scan): ASCII text can only hold a NUL.
        if (value.isascii() and "\x00" not in value) or _BAD_TEXT.search(value) is None:
            return None
    elif kind is int:
        if value.bit_length() <= _MAX_INT_BITS:
            return None
    elif kind is float:
        if math.isfinite(value):
            return None
    elif kind is bool or value is None:
        return None
    return value_problem(value, depth=2)


@functools.lru_cache(maxsize=4096)
def _normalise_key(key: str) -> str:
    # Cached: the same few column names come back on every row.
    return key.strip().casefold()


class FieldValueError(ValueError):
    """A value that does not fit its field; carries what ``RowError`` needs."""

    def __init__(self, code: str, expected: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.expected = expected
        self.message = message


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One declared field.

    ``type`` is one of ``FIELD_TYPES``. ``min``/``max`` bound ``int`` and ``float`` values
    (inclusive); ``max_length`` bounds ``str`` values (characters) and each ``list[str]`` item.
    ``choices`` is required for (and only allowed with) ``type="choice"``.
    """

    name: str
    type: str = "str"
    required: bool = False
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    max_length: int | None = None
    default: Any = MISSING
    help: str = ""
    #: Refuses a typed value with a message (see "Checks a schema declares"); not data.
    check: FieldCheck | None = field(default=None, compare=False, repr=False)
    #: The message when a required field is missing, instead of the generic one.
    required_message: str = ""
    #: Spellings mapped onto canonical values (module docstring, "Normalising values").
    normalise: Mapping[str, Any] | FieldNormaliser | None = field(default=None, compare=False)
    #: What a value ``normalise`` cannot map does: "refuse" it, or "report" it and leave it out.
    unmapped: Literal["refuse", "report"] = "refuse"
    #: A value the import page's column table and sample file show (``example_value``); a
    #: tuple gives one value per sample row, in turn; None leaves the field out of the sample
    #: (an optional field whose mere presence changes what the row is, e.g. a narrative's
    #: ``edges`` making it a graph).
    example: Any = MISSING
    #: The values a ``check`` or ``normalise`` accepts, for the column table (a choice's
    #: ``choices`` need not be repeated here: ``allowed_values``).
    allowed: tuple[str, ...] = ()
    _folded_spellings: dict[str, Any] = field(
        init=False, default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise ValueError(f"field {self.name!r}: type must be one of {FIELD_TYPES}")
        object.__setattr__(self, "choices", tuple(self.choices))
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, "allowed", tuple(self.allowed))
        if self.type == "choice" and not self.choices:
            raise ValueError(f"field {self.name!r}: a choice field needs choices")
        if self.choices and self.type != "choice":
            raise ValueError(f"field {self.name!r}: choices are only for type 'choice'")
        if (self.min is not None or self.max is not None) and self.type not in ("int", "float"):
            raise ValueError(f"field {self.name!r}: min/max are only for int and float")
        if self.unmapped not in UNMAPPED_POLICIES:
            raise ValueError(f"field {self.name!r}: unmapped must be one of {UNMAPPED_POLICIES}")
        if isinstance(self.normalise, Mapping):
            folded: dict[str, Any] = {}
            for spelling in self.normalise:
                folded.setdefault(_normalise_key(str(spelling)), self.normalise[spelling])
            object.__setattr__(self, "_folded_spellings", folded)

    def normalised(self, value: Any) -> Any:
        """The canonical value of ``value`` under ``normalise`` (None when it has none)."""
        normalise = self.normalise
        if normalise is None:
            return value
        if not isinstance(normalise, Mapping):
            return normalise(value)
        if isinstance(value, str) and value in normalise:
            return normalise[value]
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return self._folded_spellings.get(_normalise_key(str(value)))
        return None

    @property
    def allowed_values(self) -> tuple[str, ...]:
        """The values this field takes, in words for the column table: a choice's choices, or
        what its check accepts (``allowed``); empty when any value of its type goes."""
        return self.choices or self.allowed

    def example_value(self, number: int = 1) -> Any:
        """A value of this field for sample row ``number`` (from 1) that passes its checks: the
        declared ``example`` (a tuple: its values in turn), else the first allowed value, else
        one made from the type and bounds. The column table and the sample file both take it
        from here (``RowSchema.example_row``), so they cannot disagree."""
        if isinstance(self.example, tuple):
            return self.example[(number - 1) % len(self.example)]
        if self.example is not MISSING:
            return self.example
        if self.allowed_values:
            return self.allowed_values[0]
        if self.type in ("int", "float"):
            low = self.min if self.min is not None else 1
            value = low if self.max is None or low <= self.max else self.max
            return int(value) if self.type == "int" else float(value)
        return {
            "bool": True,
            "json": {},
            "list[str]": ["first", "second"],
        }.get(self.type, f"Example {self.name.replace('_', ' ')} {number}.")

    @property
    def sources(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def describe_type(self) -> str:
        """The expected value in words, for messages and datasheets."""
        if self.type == "choice":
            return "one of " + ", ".join(self.choices)
        words = {
            "str": "text",
            "int": "a whole number",
            "float": "a number",
            "bool": "true or false",
            "json": "any JSON value",
            "list[str]": "a list of texts",
        }[self.type]
        if self.type in ("int", "float"):
            if self.min is not None and self.max is not None:
                words += f" from {_number_text(self.min)} to {_number_text(self.max)}"
            elif self.min is not None:
                words += f" of at least {_number_text(self.min)}"
            elif self.max is not None:
                words += f" of at most {_number_text(self.max)}"
        if self.max_length is not None and self.type in ("str", "list[str]"):
            words += f" of at most {self.max_length} characters"
        return words

    def coerce(self, value: Any, *, text_values: bool = False) -> Any:
        """Return ``value`` as this field's type or raise ``FieldValueError``.

        ``value`` must not be missing (callers check ``is_missing`` first).
        """
        kind = self.type
        result: Any
        if kind == "str":
            result = self._coerce_str(value)
        elif kind == "int":
            result = self._check_range(self._coerce_int(value))
        elif kind == "float":
            result = self._check_range(self._coerce_float(value))
        elif kind == "bool":
            result = self._coerce_bool(value)
        elif kind == "json":
            result = self._coerce_json(value, text_values)
        elif kind == "list[str]":
            result = self._coerce_list(value, text_values)
        else:
            result = self._coerce_choice(value)
        return result

    # -- one method per type ---------------------------------------------------------------

    def _wrong(self, value: Any, code: str = "wrong_type") -> FieldValueError:
        expected = self.describe_type()
        if isinstance(value, Mapping | list):
            what = "an object" if isinstance(value, Mapping) else "a list"
            return FieldValueError(
                "nested_value",
                expected,
                f'Field "{self.name}" holds {what} ({truncated_repr(value, 40)}) where '
                f"{expected} is expected; give one flat value.",
            )
        return FieldValueError(
            code,
            expected,
            f'Field "{self.name}" must be {expected}; found {truncated_repr(value)}.',
        )

    def _too_deep(self, error: NestingTooDeep) -> FieldValueError:
        return FieldValueError(
            "too_deep",
            f"JSON nested at most {MAX_DEPTH} levels deep",
            f'Field "{self.name}" holds JSON {error.args[0]} (at character {error.pos + 1}); '
            f"flatten it.",
        )

    def _check_length(self, text: str) -> str:
        if self.max_length is not None and len(text) > self.max_length:
            raise FieldValueError(
                "too_long",
                f"at most {self.max_length} characters",
                f'Field "{self.name}" is {len(text)} characters long; the limit is '
                f"{self.max_length}. Shorten it or split the item.",
            )
        return text

    def _coerce_str(self, value: Any) -> str:
        if isinstance(value, str):
            return self._check_length(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return self._check_length(str(value))
        raise self._wrong(value)

    def _coerce_int(self, value: Any) -> int:
        if isinstance(value, bool):
            raise self._wrong(value)
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INT_TEXT.fullmatch(value.strip()):
            if len(value.strip().lstrip("+-")) > MAX_INT_DIGITS:
                raise FieldValueError(
                    "invalid_number",
                    self.describe_type(),
                    f'Field "{self.name}" holds a number of {len(value.strip()):,} digits; at '
                    f"most {MAX_INT_DIGITS:,} are read.",
                )
            return int(value.strip())
        raise self._wrong(value)

    def _coerce_float(self, value: Any) -> float:
        if isinstance(value, bool):
            raise self._wrong(value)
        if isinstance(value, int | float):
            try:
                number = float(value)
            except OverflowError:  # an int beyond a float's range
                raise self._wrong(value) from None
        elif isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                raise self._wrong(value) from None
        else:
            raise self._wrong(value)
        if not math.isfinite(number):
            raise self._wrong(value)
        return number

    def _check_range(self, number: int | float) -> int | float:
        too_low = self.min is not None and number < self.min
        too_high = self.max is not None and number > self.max
        if too_low or too_high:
            expected = self.describe_type()
            raise FieldValueError(
                "out_of_range",
                expected,
                f'Field "{self.name}" must be {expected}; found {_number_text(number)}.',
            )
        return number

    def _coerce_bool(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            word = value.strip().casefold()
            if word in TRUE_WORDS:
                return True
            if word in FALSE_WORDS:
                return False
        raise self._wrong(value)

    def _coerce_json(self, value: Any, text_values: bool) -> Any:
        if not text_values or not isinstance(value, str):
            return value
        stripped = value.strip()
        try:
            return loads(stripped)
        except NestingTooDeep as error:
            raise self._too_deep(error) from None
        except ValueError as error:
            if stripped[:1] in ("{", "["):
                raise FieldValueError(
                    "wrong_type",
                    "valid JSON",
                    f'Field "{self.name}" looks like JSON but cannot be read: {error.args[0]}.',
                ) from None
            return value

    def _coerce_list(self, value: Any, text_values: bool) -> list[str]:
        items: Any = value
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("["):
                try:
                    items = loads(stripped)
                except NestingTooDeep as error:
                    raise self._too_deep(error) from None
                except ValueError:
                    raise self._wrong(value) from None
            elif text_values:
                items = [part.strip() for part in stripped.split(LIST_SEPARATOR) if part.strip()]
            else:
                raise self._wrong(value)
        if not isinstance(items, list):
            raise self._wrong(value)
        result = []
        for item in items:
            if isinstance(item, Mapping | list):
                raise FieldValueError(
                    "nested_value",
                    self.describe_type(),
                    f'Field "{self.name}" holds a list with {_json_kind(item)} inside '
                    f"({truncated_repr(item, 40)}); each item must be one text.",
                )
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise self._wrong(value)
            result.append(self._check_length(str(item)))
        return result

    def _coerce_choice(self, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self._wrong(value, "unknown_choice")
        text = str(value)
        if text in self.choices:
            return text
        folded = text.strip().casefold()
        for choice in self.choices:
            if choice.casefold() == folded:
                return choice
        raise self._wrong(value, "unknown_choice")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.required:
            data["required"] = True
        for key in ("choices", "aliases"):
            if getattr(self, key):
                data[key] = list(getattr(self, key))
        for key in ("min", "max", "max_length"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        if self.default is not MISSING:
            data["default"] = self.default
        if self.help:
            data["help"] = self.help
        if self.required_message:
            data["required_message"] = self.required_message
        if isinstance(self.normalise, Mapping):
            data["normalise"] = dict(self.normalise)
        if self.unmapped != "refuse":
            data["unmapped"] = self.unmapped
        if isinstance(self.example, tuple):
            data["examples"] = list(self.example)
        elif self.example is not MISSING:
            data["example"] = self.example
        if self.allowed:
            data["allowed"] = list(self.allowed)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FieldSpec:
        data = dict(data)
        if "examples" in data:
            data["example"] = tuple(data.pop("examples"))
        return cls(
            **{
                **data,
                "choices": tuple(data.get("choices", ())),
                "aliases": tuple(data.get("aliases", ())),
                "allowed": tuple(data.get("allowed", ())),
            }
        )


def _number_text(number: float) -> str:
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return str(number)


def is_missing(value: Any) -> bool:
    """Absent, ``null`` and blank text all count as missing."""
    return value is None or value is MISSING or (isinstance(value, str) and not value.strip())


@dataclass(frozen=True)
class RowSchema:
    """The rows a project kind (or a plug-in's file) accepts: declared fields, the row id,
    unknown-key policy, checks.

    Exactly one of ``external_id_field`` and ``derived_id`` is given. ``external_id_field``
    must name a declared field; it is made required and its value is stored as stripped text
    (``clean[external_id_field]`` is always a non-empty ``str``). ``derived_id`` ("row" or
    "content") derives the id of rows that have none (module docstring, "The id of a row").
    ``record_checks`` run on each record that passed its fields (module docstring).
    """

    name: str
    fields: tuple[FieldSpec, ...]
    external_id_field: str | None = None
    extra_fields: Literal["keep", "reject", "ignore"] = "keep"
    description: str = ""
    derived_id: Literal["row", "content"] | None = None
    record_checks: tuple[RecordCheck, ...] = field(default=(), compare=False, repr=False)
    _by_name: dict[str, FieldSpec] = field(init=False, repr=False, compare=False)
    _source_owner: dict[str, str] = field(init=False, repr=False, compare=False)
    _plan: dict[str, tuple[tuple[str, list[str] | None], ...]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.extra_fields not in EXTRA_FIELD_POLICIES:
            raise ValueError(f"extra_fields must be one of {EXTRA_FIELD_POLICIES}")
        fields = tuple(self.fields)
        by_name = {spec.name: spec for spec in fields}
        if len(by_name) != len(fields):
            raise ValueError(f"schema {self.name!r}: field names repeat")
        if (self.external_id_field is None) == (self.derived_id is None):
            raise ValueError(
                f"schema {self.name!r}: give either external_id_field or derived_id (one)"
            )
        if self.derived_id is not None and self.derived_id not in DERIVED_IDS:
            raise ValueError(f"schema {self.name!r}: derived_id must be one of {DERIVED_IDS}")
        object.__setattr__(self, "record_checks", tuple(self.record_checks))
        if self.external_id_field is not None:
            if self.external_id_field not in by_name:
                raise ValueError(f"schema {self.name!r}: no field named {self.external_id_field!r}")
            id_spec = by_name[self.external_id_field]
            if id_spec.type != "str" or not id_spec.required:
                id_spec = replace(
                    id_spec, type="str", required=True, choices=(), min=None, max=None
                )
                fields = tuple(id_spec if spec.name == id_spec.name else spec for spec in fields)
                by_name[id_spec.name] = id_spec
        owner: dict[str, str] = {}
        for spec in fields:
            for source in spec.sources:
                key = _normalise_key(source)
                if key in owner:
                    raise ValueError(
                        f"schema {self.name!r}: {source!r} names both {owner[key]!r} and {spec.name!r}"
                    )
                owner[key] = spec.name
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_source_owner", owner)
        # Per field: (normalised flat name, dotted path or None) for each source, in order.
        plan = {
            spec.name: tuple(
                (_normalise_key(source), source.split(".") if "." in source else None)
                for source in spec.sources
            )
            for spec in fields
        }
        object.__setattr__(self, "_plan", plan)

    def field(self, name: str) -> FieldSpec:
        return self._by_name[name]

    def with_checks(
        self,
        *record_checks: RecordCheck,
        field_checks: Mapping[str, FieldCheck] | None = None,
    ) -> RowSchema:
        """This schema with more checks: ``record_checks`` after its own, and ``field_checks``
        (field name -> check) replacing the named fields' checks. For checks bound to one
        import (a project's scale); the registered schema is left as it is."""
        fields = self.fields
        if field_checks:
            unknown = set(field_checks) - set(self._by_name)
            if unknown:
                raise ValueError(f"schema {self.name!r}: no fields named {sorted(unknown)}")
            fields = tuple(
                replace(spec, check=field_checks[spec.name]) if spec.name in field_checks else spec
                for spec in fields
            )
        return replace(self, fields=fields, record_checks=(*self.record_checks, *record_checks))

    def row_id(self, clean: Mapping[str, Any], number: int) -> str:
        """The id of a clean row that is record ``number`` (1-based) of its file: its external
        id field, or the id ``derived_id`` says."""
        if self.external_id_field is not None:
            return str(clean[self.external_id_field])
        if self.derived_id == "row":
            return str(number)
        return content_id(clean)

    @property
    def field_names(self) -> list[str]:
        return [spec.name for spec in self.fields]

    def check_columns(self, columns: Iterable[str], *, line: int = 1) -> list[RowError]:
        """Problems with a CSV header that would fail every row: report them once.

        A required field none of whose names (or flat dotted aliases) is a column, and, when
        the schema rejects unknown fields, every unknown column.
        """
        present = {_normalise_key(column) for column in columns}
        errors = []
        for spec in self.fields:
            if spec.required and spec.default is MISSING:
                if not any(_normalise_key(source) in present for source in spec.sources):
                    names = " or ".join(f'"{source}"' for source in spec.sources)
                    errors.append(
                        RowError(
                            line=line,
                            field=spec.name,
                            code="missing_column",
                            expected=names,
                            found=truncated_repr(", ".join(columns)),
                            message=(
                                f'The header has no column {names}, which the "{self.name}" '
                                f"schema requires; add the column (or rename the one that "
                                f"holds {spec.name})."
                            ),
                        )
                    )
        if self.extra_fields == "reject":
            for column in columns:
                if _normalise_key(column) not in self._source_owner:
                    errors.append(self._unknown_field_error(column, line, None, None, header=True))
        return errors

    def _unknown_field_error(
        self, key: str, line: int | None, index: int | None, column: int | None, *, header: bool
    ) -> RowError:
        what = "column" if header else "field"
        known = ", ".join(self.field_names)
        return RowError(
            line=line,
            index=index,
            column=column,
            field=key,
            code="unknown_field",
            expected=f"one of {known}",
            found=truncated_repr(key),
            message=(
                f'The {what} "{key}" is not part of the "{self.name}" schema (known: {known}); '
                f"remove it or rename it to a known field."
            ),
        )

    def _lookup(
        self, spec: FieldSpec, raw: Mapping[str, Any], keys: dict[str, str]
    ) -> tuple[Any, str | None]:
        """(value, consumed top-level key) of the first source present, else (MISSING, None)."""
        for normalised, path in self._plan[spec.name]:
            key = keys.get(normalised)
            if key is not None:
                value = raw[key]
                if not is_missing(value):
                    return value, key
            if path is not None:
                value = _dig(raw, keys, path)
                if not is_missing(value):
                    return value, None
        return MISSING, None

    def validate_row(
        self,
        raw: Any,
        line: int | None,
        *,
        index: int | None = None,
        column: int | None = None,
        text_values: bool = False,
        partial: bool = False,
        normalised: list[Normalisation] | None = None,
    ) -> tuple[dict[str, Any] | None, list[RowError]]:
        """Check one record; return ``(clean, [])`` or ``(None, errors)``.

        ``line``/``index``/``column`` locate the record for the errors. ``text_values`` is True
        for CSV, whose cells are all text. ``partial=True`` returns ``(clean, errors)`` with the
        fields that passed even when others did not, for a plug-in's checks across rows (a
        repeated id is reported on a row whose other fields are wrong too); record checks run
        only on a record whose fields all passed. ``normalised``, when given, receives one
        ``Normalisation`` per value a field's ``normalise`` mapped or could not map, in field
        order (module docstring, "Normalising values").
        """
        where: dict[str, Any] = {"line": line, "index": index, "column": column}
        if not isinstance(raw, Mapping):
            return None, [
                RowError(
                    **where,
                    code="not_an_object",
                    expected="an object ({...}) with named fields",
                    found=truncated_repr(raw),
                    message=(
                        f"Each record must be a JSON object with named fields; this one is "
                        f"{_json_kind(raw)}."
                    ),
                )
            ]
        keys: dict[str, str] = {}
        for key in raw:
            keys.setdefault(_normalise_key(str(key)), key)
        clean: dict[str, Any] = {}
        consumed: set[str] = set()
        errors: list[RowError] = []
        for spec in self.fields:
            value, key = self._lookup(spec, raw, keys)
            if key is not None:
                consumed.add(key)
            if value is MISSING:
                if spec.default is not MISSING:
                    clean[spec.name] = _copy_default(spec.default)
                elif spec.required:
                    also = ""
                    if spec.aliases:
                        also = (
                            " (also accepted as "
                            + " or ".join(f'"{alias}"' for alias in spec.aliases)
                            + ")"
                        )
                    errors.append(
                        RowError(
                            **where,
                            field=spec.name,
                            code="required",
                            expected=spec.describe_type(),
                            found="missing",
                            message=spec.required_message
                            or (
                                f'The required field "{spec.name}"{also} is missing or '
                                f"empty; fill it in."
                            ),
                        )
                    )
                continue
            problem = _stored_value_problem(value)
            try:
                if problem is not None:
                    raise _unstorable(spec.name, problem)
                coerced = spec.coerce(value, text_values=text_values)
                problem = _stored_value_problem(coerced) if coerced is not value else None
                if problem is not None:
                    raise _unstorable(spec.name, problem)
            except FieldValueError as refused:
                errors.append(
                    RowError(
                        **where,
                        field=spec.name,
                        code=refused.code,
                        expected=refused.expected,
                        found=truncated_repr(value),
                        message=refused.message,
                    )
                )
                continue
            if spec.name == self.external_id_field:
                coerced = coerced.strip()
            if spec.normalise is not None:
                canonical = spec.normalised(coerced)
                if canonical is None and spec.unmapped == "refuse":
                    errors.append(
                        RowError(
                            **where,
                            field=spec.name,
                            code="unknown_choice",
                            expected=f"a spelling the {spec.name} field maps",
                            found=truncated_repr(value),
                            message=(
                                f'Field "{spec.name}" holds {truncated_repr(value)}, which is '
                                f"none of the spellings it accepts; correct it."
                            ),
                        )
                    )
                    continue
                if normalised is not None:
                    normalised.append(
                        Normalisation(spec.name, coerced, canonical, line=line, index=index)
                    )
                if canonical is None:
                    continue
                coerced = canonical
            if spec.check is not None:
                refusal = spec.check(coerced)
                if refusal:
                    errors.append(
                        RowError(
                            **where,
                            field=spec.name,
                            code="invalid_value",
                            expected=spec.describe_type(),
                            found=truncated_repr(value),
                            message=refusal,
                        )
                    )
                    continue
            clean[spec.name] = coerced
        if self.extra_fields != "ignore":
            for key, value in raw.items():
                if key in consumed:
                    continue
                problem = (
                    value_problem({key: value})
                    if type(key) is not str
                    or ((not key.isascii() or "\x00" in key) and _BAD_TEXT.search(key))
                    else _stored_value_problem(value)
                )
                if problem is not None:
                    errors.append(
                        RowError(
                            **where,
                            field=str(key),
                            code=problem[0],
                            expected="storable JSON",
                            found=truncated_repr(value),
                            message=_unstorable(str(key), problem).message,
                        )
                    )
                    continue
                if _normalise_key(str(key)) in self._source_owner:
                    # A declared name left unused: empty, or an alias that lost to the name.
                    if self.extra_fields == "keep" and not is_missing(value):
                        clean.setdefault(str(key), value)
                elif self.extra_fields == "reject":
                    errors.append(
                        self._unknown_field_error(str(key), line, index, column, header=False)
                    )
                else:
                    clean.setdefault(str(key), value)
        if not errors:
            errors = self._record_errors(clean, where)
        if errors:
            return (clean if partial else None), errors
        return clean, []

    def _record_errors(self, clean: dict[str, Any], where: dict[str, Any]) -> list[RowError]:
        errors = []
        for check in self.record_checks:
            found = check(clean)
            if not found:
                continue
            pairs = [(None, found)] if isinstance(found, str) else found
            for name, message in pairs:
                errors.append(
                    RowError(
                        **where,
                        field=name,
                        code="invalid_value",
                        found=truncated_repr(clean.get(name)) if name else None,
                        message=message,
                    )
                )
        return errors

    def describe(self) -> list[dict[str, Any]]:
        """Field descriptions for a datasheet and the import page's column table: name, type in
        words, required, help, the allowed values (``FieldSpec.allowed_values``) and an example
        as a file spells it (``FieldSpec.example_value``, ``cell_text``)."""
        return [
            {
                "name": spec.name,
                "type": spec.describe_type(),
                "required": spec.required or spec.name == self.external_id_field,
                "description": spec.help,
                "allowed": list(spec.allowed_values),
                "example": field_cell_text(spec, example[spec.name])
                if spec.name in example
                else "",
            }
            for example in [self.example_row(1)]
            for spec in self.fields
        ]

    def example_row(self, number: int) -> dict[str, Any]:
        """Sample row ``number`` (from 1): each field's ``example_value``; the id field's
        example (else ``item``) gets ``-<number>`` so that rows differ (``NNN``, 3 digits). A
        field whose example is None is left out."""
        row = {}
        for spec in self.fields:
            if spec.example is None:
                continue
            value = spec.example_value(number)
            if spec.name == self.external_id_field:
                stem = spec.example if isinstance(spec.example, str) else "item"
                value = f"{stem}-{number:03d}"
            row[spec.name] = value
        return row

    def sample_rows(self, count: int = 2) -> list[dict[str, Any]]:
        """``count`` rows of every declared field that pass this schema (``example_row``): the
        import page's sample file (tests/imports/test_samples.py imports each workflow's)."""
        return [self.example_row(number) for number in range(1, count + 1)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "external_id_field": self.external_id_field,
            "derived_id": self.derived_id,
            "extra_fields": self.extra_fields,
            "fields": [spec.to_dict() for spec in self.fields],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RowSchema:
        return cls(
            name=data["name"],
            description=data.get("description", ""),
            external_id_field=data.get("external_id_field"),
            derived_id=data.get("derived_id"),
            extra_fields=data.get("extra_fields", "keep"),
            fields=tuple(FieldSpec.from_dict(spec) for spec in data["fields"]),
        )


def cell_text(value: Any) -> str:
    """``value`` as a CSV cell the readers take back (module docstring, "Reading values"):
    JSON text for objects and numbers' own spelling, lists joined by ``;``, booleans as
    true / false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return LIST_SEPARATOR.join(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return _number_text(value)
    return str(value)


def field_cell_text(spec: FieldSpec, value: Any) -> str:
    """``value`` as a CSV cell of ``spec``: ``cell_text``, except that a list in a ``json``
    field is written as JSON (its cell is read as JSON, not split at ``;``)."""
    if spec.type == "json" and isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return cell_text(value)


def content_id(clean: Mapping[str, Any]) -> str:
    """16 hex digits of the SHA-256 of ``clean`` as canonical JSON (keys sorted): the id of a
    row by its content (``derived_id="content"``)."""
    text = json.dumps(clean, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _unstorable(name: str, problem: tuple[str, str]) -> FieldValueError:
    code, words = problem
    advice = {
        "invalid_text": "remove that character (or save the file from its source again)",
        "invalid_number": "write it as text in quotes, or round it",
        "too_deep": "flatten it",
    }[code]
    return FieldValueError(code, "storable JSON", f'Field "{name}" {words}; {advice}.')


def _dig(raw: Mapping[str, Any], keys: dict[str, str], path: list[str]) -> Any:
    top = keys.get(_normalise_key(path[0]))
    if top is None:
        return MISSING
    value: Any = raw[top]
    for part in path[1:]:
        if not isinstance(value, Mapping):
            return MISSING
        value = value.get(part, MISSING)
    return value


def _copy_default(value: Any) -> Any:
    if isinstance(value, list | dict):
        return json.loads(json.dumps(value))
    return value


def _json_kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    return type(value).__name__


# -- the schemas project kinds use ---------------------------------------------------------


def generic_schema(
    *,
    external_id_field: str = "external_id",
    aliases: tuple[str, ...] = ("id", "item_id", "case_id"),
    extra_fields: Literal["keep", "reject", "ignore"] = "keep",
) -> RowSchema:
    """Any rows with an external id; every other field goes into the payload as it is."""
    return RowSchema(
        name="generic",
        description="Rows with an external id; all other fields are kept as the item payload.",
        external_id_field=external_id_field,
        extra_fields=extra_fields,
        fields=(
            FieldSpec(
                external_id_field,
                "str",
                required=True,
                aliases=aliases,
                max_length=255,
                help="Identifier of the item in the source data; unique within a project.",
            ),
        ),
    )


#: The schema of each project kind: the generic one, and those plug-ins declare in their
#: ``AppConfig.ready()`` (``register_schema``). The engine declares none of a workflow's own.
SCHEMAS: dict[str, RowSchema] = {
    "generic": generic_schema(),
}


def register_schema(kind: str, schema: RowSchema) -> None:
    """Declare the import schema of a project kind (call at import time of the kind's app)."""
    SCHEMAS[kind] = schema


def schema_for_kind(kind: str) -> RowSchema:
    """The schema a project kind declared, or the generic one."""
    return SCHEMAS.get(kind, SCHEMAS["generic"])
