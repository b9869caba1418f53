"""Reading and checking ratings import files (pure Python + pandas-free; no Django).

Three kinds of file, each CSV (comma or tab, sniffed from the header), TSV or JSONL (one JSON
object per line), UTF-8 with or without a byte-order mark:

**Pairs** — one row per sentence pair, expanded into one item per connective and order::

    pair_id, sentence_a, sentence_b, subset, origin, flags
    7, Ted had a hangover., Lucia drank a glass of water., causal, hand-written, socially challenging

``flags`` is a list in JSONL, or ``;``/``|``-separated text in CSV. Other columns are kept as the
pair's ``extra``. A row whose ``purpose`` is ``practice`` or ``attention_check`` is a single item
instead: it names its ``connective`` (and ``order``, AB by default) and the ratings expected of an
attentive rater (``expected_min``/``expected_max``); practice rows may carry ``feedback``.

**Ratings** — historic ratings of existing items: ``pair_id``, ``order`` (AB/BA), ``connective``
and either ``rating`` (one rating, optionally with ``rater``) or ``ratings`` (a list of anonymous
ratings, e.g. ExpliCa's ``accept_answers`` "['8', '9', …]").

**Model answers** — ``pair_id``, ``order``, ``connective``, ``rating`` (a model's rating per item),
or ``pair_id``, ``order``, ``choice`` (the connective a model chose per ordered pair). ``-1`` or an
empty cell means no answer.

Every problem is reported as an ``imports.core.report.RowError`` (the one row-error type of every
importer) with its line number (1 = the header of a CSV, the first line of a JSONL file; 0 = the
file as a whole) and field ("" = the whole row); a file with any error is rejected as a whole.
Values meet the limits of ``imports.core.values``: JSON nested at most 64 levels, numbers Python
holds as written, text without NUL or unpaired surrogates, each refused naming line and field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from imports.core.readers import CSV_FIELD_LIMIT
from imports.core.report import RowError
from imports.core.values import InvalidNumber, NestingTooDeep, loads, value_problem
from ratings.connectives import SENTENCE_ORDERS, ConnectiveSet, variant_key

#: Error lists stop growing here; the count of all errors is still reported.
MAX_ERRORS = 200
PURPOSES = ("regular", "practice", "attention_check")
PAIR_FIELDS = (
    "pair_id",
    "sentence_a",
    "sentence_b",
    "subset",
    "origin",
    "flags",
    "purpose",
    "connective",
    "order",
    "expected_min",
    "expected_max",
    "feedback",
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_FLAG_SPLIT = re.compile(r"[;|]")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_HEADER_ALIASES = {"pair_id": ("pairid", "pair", "id"), "sentence_a": ("a",), "sentence_b": ("b",)}


def row_error(line: int, field_name: str, message: str, code: str = "invalid_value") -> RowError:
    """A ratings problem as the shared ``RowError``: ``line`` 0 is the file, ``field_name`` ""
    the whole row."""
    return RowError(line=line, field=field_name, message=message, code=code)


def describe(error: RowError) -> str:
    """``"line 3, pair_id: missing pair id"`` (``"file: …"`` for the file as a whole)."""
    where = f"line {error.line}" if error.line else "file"
    return (
        f"{where}, {error.field}: {error.message}" if error.field else f"{where}: {error.message}"
    )


class ImportRejected(ValueError):
    """A file with problems. ``errors`` lists up to MAX_ERRORS of them; ``error_count`` all."""

    def __init__(
        self, errors: Sequence[RowError], error_count: int | None = None, what: str = "file"
    ):
        self.errors = list(errors)[:MAX_ERRORS]
        self.error_count = error_count if error_count is not None else len(errors)
        first = self.errors[0] if self.errors else None
        super().__init__(
            f"The {what} has {self.error_count} problem{'s' if self.error_count != 1 else ''}"
            + (f"; the first: {describe(first)}." if first else ".")
            + " Nothing was imported."
        )


class _Errors:
    def __init__(self) -> None:
        self.items: list[RowError] = []
        self.count = 0

    def add(self, line: int, field_name: str, message: str, code: str = "invalid_value") -> None:
        self.count += 1
        if len(self.items) < MAX_ERRORS:
            self.items.append(row_error(line, field_name, message, code))

    def raise_if_any(self, what: str) -> None:
        if self.count:
            raise ImportRejected(self.items, self.count, what)


# --------------------------------------------------------------------------- reading


def _normalise_header(name: str) -> str:
    key = re.sub(r"[^0-9a-z]+", "_", str(name).strip().lower()).strip("_")
    for canonical, aliases in _HEADER_ALIASES.items():
        if key in aliases:
            return canonical
    return key


def detect_format(filename: str, text: str) -> str:
    """ "jsonl" or "csv" from the file name, else from the first non-blank character."""
    lower = filename.lower()
    if lower.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if lower.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    return "jsonl" if text.lstrip().startswith("{") else "csv"


def decode(content: bytes | str) -> str:
    """UTF-8 text of an upload (a byte-order mark is dropped); other encodings, and text holding
    unpaired surrogates, are rejected."""
    if isinstance(content, str):
        # Text handed over by Python callers may hold what UTF-8 bytes cannot: a surrogate.
        surrogate = _SURROGATE.search(content)
        if surrogate is not None:
            line = content.count("\n", 0, surrogate.start()) + 1
            raise ImportRejected(
                [
                    row_error(
                        line,
                        "",
                        f"an unpaired surrogate (U+{ord(surrogate.group()):04X}) is not valid "
                        f"Unicode; save the file as UTF-8",
                        "encoding",
                    )
                ]
            )
        return content.removeprefix("\ufeff")
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = content[: error.start].count(b"\n") + 1
        raise ImportRejected(
            [
                row_error(
                    line,
                    "",
                    f"not UTF-8 text (byte {error.start}); save the file as UTF-8",
                    "encoding",
                )
            ]
        ) from None


def read_rows(content: bytes | str, filename: str = "") -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) pairs of a CSV/TSV or JSONL file, with normalised lower-case keys.

    Blank lines are skipped. Raises ImportRejected for malformed JSON lines, a CSV without a
    header, or rows with more cells than the header.
    """
    text = decode(content)
    if not text.strip():
        raise ImportRejected([row_error(0, "", "the file is empty", "empty_file")])
    if detect_format(filename, text) == "jsonl":
        return _read_jsonl(text)
    return _read_csv(text)


def _read_jsonl(text: str) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    errors = _Errors()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = loads(line)
        except NestingTooDeep as error:
            errors.add(number, "", f"{error.args[0]} (column {error.pos + 1})", "too_deep")
            continue
        except json.JSONDecodeError as error:
            errors.add(
                number, "", f"not valid JSON ({error.msg} at column {error.colno})", "json_syntax"
            )
            continue
        if not isinstance(value, dict):
            errors.add(number, "", "each line must be a JSON object", "not_an_object")
            continue
        row = {_normalise_header(key): item for key, item in value.items()}
        if _storable(number, row, errors):
            rows.append((number, row))
    errors.raise_if_any("file")
    return rows


def _storable(line: int, row: Mapping[str, Any], errors: _Errors) -> bool:
    """Whether every value of a row can be stored; adds an error per value that cannot."""
    ok = True
    for name, value in row.items():
        problem = value_problem(value, depth=2)
        if problem is not None:
            code, words = problem
            errors.add(line, name, f"the value {words}", code)
            ok = False
    return ok


def _read_csv(text: str) -> list[tuple[int, dict[str, Any]]]:
    header_line = text.splitlines()[0]
    delimiter = "\t" if header_line.count("\t") > header_line.count(",") else ","
    previous_limit = csv.field_size_limit(CSV_FIELD_LIMIT)
    try:
        return _read_csv_cells(text, delimiter)
    finally:
        csv.field_size_limit(previous_limit)


def _read_csv_cells(text: str, delimiter: str) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise ImportRejected(
            [row_error(1, "", "the file has no header row", "csv_header")]
        ) from None
    except csv.Error as error:
        raise _csv_rejected(error, 1) from None
    names = [_normalise_header(name) for name in header]
    if not any(names):
        raise ImportRejected([row_error(1, "", "the header row is empty", "csv_header")])
    duplicates = sorted({name for name in names if name and names.count(name) > 1})
    if duplicates:
        raise ImportRejected(
            [row_error(1, name, "this column appears twice", "csv_header") for name in duplicates]
        )
    rows = []
    errors = _Errors()
    previous_end = reader.line_num
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            raise _csv_rejected(error, previous_end + 1) from None
        line = previous_end + 1
        previous_end = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) > len(names):
            errors.add(
                line, "", f"{len(cells)} cells but the header has {len(names)} columns", "csv_cells"
            )
            continue
        row = {name: cells[index] if index < len(cells) else "" for index, name in enumerate(names)}
        row = {name: value for name, value in row.items() if name}
        if _storable(line, row, errors):
            rows.append((line, row))
    errors.raise_if_any("file")
    return rows


def _csv_rejected(error: csv.Error, line: int) -> ImportRejected:
    reason = str(error)
    if "field larger than field limit" in reason:
        message = (
            f"a cell of the row starting here is longer than {CSV_FIELD_LIMIT:,} characters: a "
            f"quoted cell is probably never closed; add the missing double quote"
        )
    else:
        message = f"the CSV cannot be read ({reason})"
    return ImportRejected([row_error(line, "", message, "csv_syntax")])


# --------------------------------------------------------------------------- cells


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return " ".join(str(value).split())


def _identifier(value: Any) -> str:
    """A pair id as text: 7, 7.0 and "7" are the same pair."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _text(value)


def _number(value: Any) -> float | None:
    """A number, or None for an empty cell; raises ValueError for anything else (a number too
    large for a float included)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool | InvalidNumber):
        raise ValueError(value)
    try:
        number = float(value)
    except OverflowError:  # an int beyond a float's range
        raise ValueError(value) from None
    if not math.isfinite(number):
        raise ValueError(value)
    return number


def _flags(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [_text(flag) for flag in value if _text(flag)]
    if isinstance(value, bool):
        return []
    return [_text(flag) for flag in _FLAG_SPLIT.split(str(value)) if _text(flag)]


def _order(value: Any) -> str | None:
    text = _text(value).upper().replace("-", "").replace(",", "")
    return text if text in SENTENCE_ORDERS else None


# --------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class PairRow:
    line: int
    pair_id: str
    sentence_a: str
    sentence_b: str
    subset: str = ""
    origin: str = ""
    flags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SingleItemRow:
    """A practice or attention-check item: one rendering of a pair with a known good range."""

    line: int
    item_id: str
    purpose: str
    sentence_a: str
    sentence_b: str
    connective: str
    order: str
    expected_min: float | None
    expected_max: float | None
    feedback: str = ""


@dataclass(frozen=True)
class ParsedPairs:
    pairs: list[PairRow]
    singles: list[SingleItemRow]
    rows_total: int


def parse_pairs(
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    connective_set: ConnectiveSet,
    *,
    scale: tuple[int, int] = (1, 10),
    existing_ids: Iterable[str] = (),
) -> ParsedPairs:
    """Check pair rows; raise ImportRejected listing every problem, or return the rows.

    Problems: a missing pair id or sentence, a pair id repeated in the file or already in the
    project (``existing_ids``), an unknown purpose, connective or order, expected ratings that are
    not numbers within ``scale`` or out of order, and an attention check with no expected range.
    """
    errors = _Errors()
    pairs: list[PairRow] = []
    singles: list[SingleItemRow] = []
    seen: dict[str, int] = {}
    existing = set(existing_ids)
    low, high = scale
    total = 0
    for line, row in rows:
        total += 1
        pair_id = _identifier(row.get("pair_id"))
        sentence_a = _text(row.get("sentence_a"))
        sentence_b = _text(row.get("sentence_b"))
        purpose = _text(row.get("purpose")).lower().replace(" ", "_").replace("-", "_") or "regular"
        if not pair_id:
            errors.add(line, "pair_id", "missing pair id")
        elif pair_id in seen:
            errors.add(line, "pair_id", f"pair id {pair_id!r} already used on line {seen[pair_id]}")
        elif pair_id in existing:
            errors.add(line, "pair_id", f"pair id {pair_id!r} already exists in this project")
        else:
            seen[pair_id] = line
        if not sentence_a:
            errors.add(line, "sentence_a", "missing sentence A")
        if not sentence_b:
            errors.add(line, "sentence_b", "missing sentence B")
        if purpose not in PURPOSES:
            errors.add(line, "purpose", f"unknown purpose {purpose!r}; use {', '.join(PURPOSES)}")
            continue
        connective = _text(row.get("connective")).lower()
        if purpose == "regular":
            if connective:
                errors.add(
                    line,
                    "connective",
                    "a pair is rated with every connective; give a connective only on practice "
                    "and attention-check rows",
                )
            extra = {
                key: value
                for key, value in row.items()
                if key not in PAIR_FIELDS and value not in (None, "")
            }
            pairs.append(
                PairRow(
                    line=line,
                    pair_id=pair_id,
                    sentence_a=sentence_a,
                    sentence_b=sentence_b,
                    subset=_text(row.get("subset")).lower(),
                    origin=_text(row.get("origin")),
                    flags=tuple(_flags(row.get("flags"))),
                    extra=extra,
                )
            )
            continue
        if not connective:
            errors.add(line, "connective", f"a {purpose.replace('_', ' ')} row needs a connective")
        elif connective not in connective_set.words:
            errors.add(
                line,
                "connective",
                f"unknown connective {connective!r}; this project uses "
                f"{', '.join(connective_set.words)}",
            )
        order = _order(row.get("order") or "AB")
        if order is None:
            errors.add(line, "order", f"order must be AB or BA, not {row.get('order')!r}")
        bounds = {}
        for name in ("expected_min", "expected_max"):
            try:
                bounds[name] = _number(row.get(name))
            except (TypeError, ValueError):
                errors.add(line, name, f"not a number: {row.get(name)!r}")
                bounds[name] = None
                continue
            if bounds[name] is not None and not low <= bounds[name] <= high:
                errors.add(line, name, f"{bounds[name]:g} is outside the scale {low}–{high}")
        if bounds["expected_min"] is None and bounds["expected_max"] is None:
            errors.add(
                line,
                "expected_max",
                "give expected_min and/or expected_max: the ratings an attentive rater gives",
            )
        elif (
            bounds["expected_min"] is not None
            and bounds["expected_max"] is not None
            and bounds["expected_min"] > bounds["expected_max"]
        ):
            errors.add(line, "expected_min", "expected_min is above expected_max")
        singles.append(
            SingleItemRow(
                line=line,
                item_id=pair_id,
                purpose=purpose,
                sentence_a=sentence_a,
                sentence_b=sentence_b,
                connective=connective,
                order=order or "AB",
                expected_min=bounds["expected_min"],
                expected_max=bounds["expected_max"],
                feedback=_text(row.get("feedback")),
            )
        )
    if total == 0:
        errors.add(0, "", "the file has no rows")
    errors.raise_if_any("pair file")
    return ParsedPairs(pairs=pairs, singles=singles, rows_total=total)


# --------------------------------------------------------------------------- ratings


@dataclass(frozen=True)
class RatingRow:
    line: int
    item_key: str
    rating: float
    rater: str = ""


def _item_key(
    line: int,
    row: Mapping[str, Any],
    connective_set: ConnectiveSet,
    errors: _Errors,
    known_items: set[str] | None,
) -> str | None:
    pair_id = _identifier(row.get("pair_id"))
    order = _order(row.get("order"))
    connective = _text(row.get("connective")).lower()
    ok = True
    if not pair_id:
        errors.add(line, "pair_id", "missing pair id")
        ok = False
    if order is None:
        errors.add(line, "order", f"order must be AB or BA, not {row.get('order')!r}")
        ok = False
    if not connective:
        errors.add(line, "connective", "missing connective")
        ok = False
    elif connective not in connective_set.words:
        errors.add(
            line,
            "connective",
            f"unknown connective {connective!r}; this project uses {', '.join(connective_set.words)}",
        )
        ok = False
    if not ok:
        return None
    key = variant_key(pair_id, order, connective)
    if known_items is not None and key not in known_items:
        errors.add(line, "pair_id", f"no item {key!r} in this project (import its pair first)")
        return None
    return key


def _rating_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value]
    if value is None:
        return []
    text = str(value).strip()
    if not text:
        return []
    return [part.strip(" '\"") for part in text.strip("[]").split(",") if part.strip(" '\"")]


def parse_ratings(
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    connective_set: ConnectiveSet,
    *,
    scale: tuple[int, int],
    known_items: set[str] | None = None,
) -> list[RatingRow]:
    """Check historic rating rows; raise ImportRejected listing every problem.

    Each rating must be a whole number within ``scale``; items must exist (``known_items``).
    A rater may rate an item once: a repeated (item, rater) is an error.
    """
    errors = _Errors()
    ratings: list[RatingRow] = []
    low, high = scale
    seen: dict[tuple[str, str], int] = {}
    total = 0
    for line, row in rows:
        total += 1
        key = _item_key(line, row, connective_set, errors, known_items)
        if "ratings" in row and row.get("ratings") not in (None, ""):
            values, rater, column = _rating_list(row["ratings"]), "", "ratings"
            if not values:
                errors.add(line, "ratings", "no ratings in the list")
        else:
            values, rater, column = [row.get("rating")], _text(row.get("rater")), "rating"
        for value in values:
            try:
                number = _number(value)
            except (TypeError, ValueError):
                errors.add(line, column, f"not a number: {value!r}")
                continue
            if number is None:
                errors.add(line, column, "missing rating")
                continue
            if not low <= number <= high:
                errors.add(line, column, f"{number:g} is outside the scale {low}–{high}")
                continue
            if not number.is_integer():
                errors.add(line, column, f"{number:g} is not a whole number")
                continue
            if key is None:
                continue
            if rater:
                if (key, rater) in seen:
                    errors.add(
                        line, "rater", f"{rater!r} already rated {key!r} on line {seen[key, rater]}"
                    )
                    continue
                seen[key, rater] = line
            ratings.append(RatingRow(line=line, item_key=key, rating=number, rater=rater))
    if total == 0:
        errors.add(0, "", "the file has no rows")
    errors.raise_if_any("ratings file")
    return ratings


# --------------------------------------------------------------------------- model answers


@dataclass(frozen=True)
class ParsedModelAnswers:
    answer_kind: str  # "ratings" | "choices"
    answers: dict[str, Any]  # item key or "pair_id|order" -> number/choice or None

    @property
    def n_no_answer(self) -> int:
        return sum(value is None for value in self.answers.values())


def parse_model_answers(
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    connective_set: ConnectiveSet,
    *,
    scale: tuple[int, int],
    known_items: set[str],
    known_pairs: set[str],
    unrelated_values: Sequence[str] = ("unrelated", "none", "other"),
) -> ParsedModelAnswers:
    """Check a model's answers: ratings per item (``rating`` column) or a chosen connective per
    ordered pair (``choice`` column). ``-1`` or empty = no answer. Raise ImportRejected."""
    rows = list(rows)
    errors = _Errors()
    if not rows:
        errors.add(0, "", "the file has no rows")
        errors.raise_if_any("model file")
    columns = set().union(*(row.keys() for _, row in rows))
    if "rating" in columns:
        answer_kind = "ratings"
    elif "choice" in columns:
        answer_kind = "choices"
    else:
        errors.add(
            1, "rating", "the file needs a 'rating' column (per item) or 'choice' (per pair)"
        )
        errors.raise_if_any("model file")
    answers: dict[str, Any] = {}
    lines: dict[str, int] = {}
    low, high = scale
    unrelated = {value.lower() for value in unrelated_values}
    for line, row in rows:
        if answer_kind == "ratings":
            key = _item_key(line, row, connective_set, errors, known_items)
            raw = row.get("rating")
            try:
                number = _number(raw)
            except (TypeError, ValueError):
                errors.add(
                    line, "rating", f"not a number: {raw!r} (use -1 or leave empty for none)"
                )
                continue
            if number == -1:
                number = None
            if number is not None and not low <= number <= high:
                errors.add(line, "rating", f"{number:g} is outside the scale {low}–{high}")
                continue
            value: Any = number
        else:
            pair_id = _identifier(row.get("pair_id"))
            order = _order(row.get("order"))
            key = None
            if not pair_id:
                errors.add(line, "pair_id", "missing pair id")
            elif order is None:
                errors.add(line, "order", f"order must be AB or BA, not {row.get('order')!r}")
            elif pair_id not in known_pairs:
                errors.add(line, "pair_id", f"no pair {pair_id!r} in this project")
            else:
                key = f"{pair_id}|{order}"
            raw = row.get("choice")
            text = _text(raw).lower()
            if text in ("", "-1"):
                value = None
            elif text in connective_set.words or text in unrelated:
                value = text
            elif text.isdigit() and int(text) < len(connective_set.words):
                value = connective_set.words[int(text)]
            else:
                errors.add(
                    line,
                    "choice",
                    f"unknown connective {raw!r}; use one of {', '.join(connective_set.words)}, "
                    f"'unrelated', an index from 0, or -1/empty for no answer",
                )
                continue
        if key is None:
            continue
        if key in lines:
            errors.add(line, "pair_id", f"{key!r} already answered on line {lines[key]}")
            continue
        lines[key] = line
        answers[key] = value
    errors.raise_if_any("model file")
    return ParsedModelAnswers(answer_kind=answer_kind, answers=answers)


def parse_number_list(text: Any) -> list[float]:
    """Numbers in a list-like cell ("['8', '9']" → [8.0, 9.0])."""
    return [float(value) for value in _NUMBER.findall(str(text or ""))]
