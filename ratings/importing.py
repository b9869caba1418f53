"""Checking ratings import files (pure Python + pandas-free; no Django).

The three kinds of file below share one column normalisation and one error report and are read
by one reader; what a row holds is declared by the registered schemas of
``ratings.import_schemas``.

Files are read by the engine's import core, ``imports.core.readers.RecordReader``, one record at
a time (``Rows``): CSV (comma, semicolon or tab, sniffed from the header), TSV, JSON Lines (one
JSON object per line) or a JSON array, UTF-8 with or without a byte-order mark. A ``.json`` file
may hold either JSON form; other names are read by their extension, else by their content. What
this module adds is the ratings rules: column names normalised (``"Pair ID"`` → ``pair_id``,
aliases ``id``/``pair``, ``a``/``b``), each row checked by its kind's schema
(``ratings.import_schemas``: fields, types, checks of one row, bound to the project's scale,
connectives and items) and the checks across rows (a pair id or a rater's rating twice):

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
importer, the schemas' included: a value of the wrong type or nested where a flat one belongs
carries the core's message, 'Field "rating" must be a number; found …') with its line number (1 = the header of a CSV, the first line of a JSONL file; 0 = the
file as a whole) and field ("" = the whole row); a file with any error is rejected as a whole.
Reading problems (encoding, JSON syntax, CSV quoting and cell counts) carry the core reader's
messages, which lead with their place ("line 4, column 12: …"); a file that cannot be read is
reported with those alone, before the rules below are applied.
Values meet the limits of ``annotation.values``: JSON nested at most 64 levels, numbers Python
holds as written, text without NUL or unpaired surrogates, each refused naming line and field.
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, Any

from annotation.values import value_problem
from imports.core.readers import UTF8_BOM, ImportFileError, RecordReader
from imports.core.report import RowError
from imports.core.schema import RowSchema
from ratings import import_schemas as schemas
from ratings.connectives import ConnectiveSet
from ratings.import_schemas import PAIR_FIELDS, PURPOSES

#: Error lists stop growing here; the count of all errors is still reported.
MAX_ERRORS = 200
__all__ = ["PAIR_FIELDS", "PURPOSES"]  # the names of a pair row, kept importable from here
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_HEADER_ALIASES = {"pair_id": ("pairid", "pair", "id"), "sentence_a": ("a",), "sentence_b": ("b",)}


def row_error(line: int, field_name: str, message: str, code: str = "invalid_value") -> RowError:
    """A ratings problem as the shared ``RowError``: ``line`` 0 is the file, ``field_name`` ""
    the whole row."""
    return RowError(line=line, field=field_name, message=message, code=code)


def describe(error: RowError) -> str:
    """``"line 3, pair_id: missing pair id"`` (``"file: …"`` for the file as a whole). The
    core readers' messages already lead with their place ("line 3, column 7: …") and are kept
    as they are."""
    if error.message.startswith("line "):
        return error.message.rstrip(".")
    where = f"line {error.line}" if error.line else "file"
    message = error.message.rstrip(".")
    return f"{where}, {error.field}: {message}" if error.field else f"{where}: {message}"


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

    def add_error(self, error: RowError) -> None:
        self.count += 1
        if len(self.items) < MAX_ERRORS:
            self.items.append(error)

    def raise_if_any(self, what: str) -> None:
        if self.count:
            raise ImportRejected(self.items, self.count, what)


# --------------------------------------------------------------------------- reading


@functools.lru_cache(maxsize=1024)
def _normalise_header(name: str) -> str:
    """A column name or JSON key as ratings reads it: lower case, runs of anything but letters
    and digits as one ``_``, and the aliases of ``_HEADER_ALIASES`` ("Pair ID" → ``pair_id``)."""
    key = re.sub(r"[^0-9a-z]+", "_", str(name).strip().lower()).strip("_")
    for canonical, aliases in _HEADER_ALIASES.items():
        if key in aliases:
            return canonical
    return key


def _header_problems(columns: list[str]) -> list[RowError]:
    """The CSV header check handed to the core reader: two columns that normalise to the same
    name ("pair_id" and "Pair ID") are refused, one error per name."""
    names = [_normalise_header(name) for name in columns if name]
    if not any(names):
        return [row_error(1, "", "the header row is empty", "csv_header")]
    duplicates = sorted({name for name in names if name and names.count(name) > 1})
    return [row_error(1, name, "this column appears twice", "csv_header") for name in duplicates]


def _core_error(error: RowError) -> RowError:
    """A core reader's error in ratings' shape: ``field`` "" (not None) for the whole row."""
    return error if error.field is not None else replace(error, field="")


def _binary(content: bytes | str | IO[bytes]) -> IO[bytes]:
    """A binary file object over an upload. Text handed over by Python callers is encoded as
    UTF-8; text holding what UTF-8 cannot encode (an unpaired surrogate) is refused naming its
    line."""
    if isinstance(content, bytes | bytearray):
        return io.BytesIO(content)
    if not isinstance(content, str):
        return content
    try:
        return io.BytesIO(content.encode("utf-8"))
    except UnicodeEncodeError as error:
        line = content.count("\n", 0, error.start) + 1
        raise ImportRejected(
            [
                row_error(
                    line,
                    "",
                    f"an unpaired surrogate (U+{ord(content[error.start]):04X}) is not valid "
                    f"Unicode; save the file as UTF-8",
                    "encoding",
                )
            ]
        ) from None


_NOT_BLANK = re.compile(rb"[^ \t\r\n\f\v]")


class Rows:
    """The rows of one ratings file, read by the import core as they are consumed.

    ``Rows(content, filename)`` accepts bytes, text or a binary file object. Iterating yields
    ``(line, row)`` pairs — ``line`` where the record starts (``RawRecord.line``), ``row`` a
    dict with keys normalised by ``_normalise_header`` — one record at a time: the file is never
    decoded or split whole (``imports.core.readers``). Blank lines and CSV rows whose cells are
    all blank are skipped; a CSV row shorter than the header is read with empty trailing cells.

    Reading problems (not UTF-8, bad JSON on a line, a line that is not an object, a CSV row
    with more cells than the header, a broken quote, a value that cannot be stored) are raised
    as one ``ImportRejected`` when iteration ends — or at once for a problem after which
    nothing can be read (the core's ``ImportFileError``); the parsers' own findings are then
    not reported, as a file that cannot be read is fixed first. ``fmt`` is the format read
    ("csv", "jsonl" or "json", a JSON array); ``sha256`` covers the whole file once iterated.
    """

    def __init__(self, content: bytes | str | IO[bytes], filename: str = "") -> None:
        fileobj = _binary(content)
        if isinstance(content, bytes | bytearray | str) and _is_blank(content):
            raise ImportRejected([row_error(0, "", "the file is empty", "empty_file")])
        try:
            self._reader = RecordReader(
                fileobj,
                # ".json" files have always been JSON Lines here: let the content say which.
                filename=None if filename.lower().endswith(".json") else filename or None,
                header_check=_header_problems,
                unnamed_columns="ignore",
                pad_short_rows=True,
            )
        except ImportFileError as error:
            raise ImportRejected([_core_error(problem) for problem in error.errors]) from None
        self.fmt = self._reader.fmt

    @property
    def sha256(self) -> str:
        return self._reader.sha256

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        errors = _Errors()
        records = 0
        try:
            for record in self._reader:
                records += 1
                if record.error is not None:
                    errors.add_error(_core_error(record.error))
                    continue
                data = record.data
                if not isinstance(data, dict):
                    where = "line" if record.index is None else "element of the array"
                    errors.add(
                        record.line, "", f"each {where} must be a JSON object", "not_an_object"
                    )
                    continue
                if record.text_values and not any(cell.strip() for cell in data.values()):
                    continue
                row = {_normalise_header(key): value for key, value in data.items()}
                row.pop("", None)
                if _storable(record.line, row, errors):
                    yield record.line, row
        except ImportFileError as error:
            for problem in error.errors:
                errors.add_error(_core_error(problem))
        finally:
            self._reader.finish()
        if not records and not errors.count:
            errors.add(0, "", "the file is empty", "empty_file")
        errors.raise_if_any("file")


def _is_blank(content: bytes | bytearray | str) -> bool:
    """Whether a whole upload holds nothing but whitespace (after a byte-order mark); scanned,
    not copied."""
    if isinstance(content, str):
        return not content.removeprefix("\ufeff").strip()
    start = len(UTF8_BOM) if content.startswith(UTF8_BOM) else 0
    return _NOT_BLANK.search(content, start) is None


def read_rows(
    content: bytes | str | IO[bytes], filename: str = ""
) -> list[tuple[int, dict[str, Any]]]:
    """Every ``(line, row)`` of a file as a list (``Rows`` read to the end); raises
    ImportRejected for any reading problem. The services iterate ``Rows`` instead, so that a
    file is never held as rows."""
    return list(Rows(content, filename))


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


# --------------------------------------------------------------------------- checking rows


def _checked(
    schema: RowSchema, line: int, row: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, list[RowError]]:
    """``row`` through ``schema`` (ratings.import_schemas): the fields that passed, and the
    row's errors in ratings' shape (``field`` "" for the whole row)."""
    clean, problems = schema.validate_row(row, line, partial=True)
    return clean, [_core_error(problem) for problem in problems]


def _report(schema: RowSchema, problems: list[RowError], errors: _Errors) -> None:
    """Add one row's problems to ``errors`` in the order of the schema's fields."""
    order = {name: position for position, name in enumerate(schema.field_names)}
    for problem in sorted(problems, key=lambda error: order.get(error.field or "", len(order))):
        errors.add_error(problem)


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

    Each row goes through the registered pairs schema (``ratings.import_schemas.PAIRS_SCHEMA``
    bound to ``connective_set`` and ``scale``): a missing pair id or sentence, an unknown
    purpose, connective or order, expected ratings that are not numbers within ``scale`` or out
    of order, an attention check with no expected range. Across rows: a pair id repeated in
    the file or already in the project (``existing_ids``).
    """
    schema = schemas.bound_pairs_schema(connective_set, scale)
    errors = _Errors()
    pairs: list[PairRow] = []
    singles: list[SingleItemRow] = []
    seen: dict[str, int] = {}
    existing = set(existing_ids)
    total = 0
    for line, row in rows:
        total += 1
        clean, problems = _checked(schema, line, row)
        pair_id = schemas.identifier(row.get("pair_id")) if clean and "pair_id" in clean else ""
        if pair_id in seen:
            problems.append(
                row_error(
                    line, "pair_id", f"pair id {pair_id!r} already used on line {seen[pair_id]}"
                )
            )
        elif pair_id in existing:
            problems.append(
                row_error(line, "pair_id", f"pair id {pair_id!r} already exists in this project")
            )
        elif pair_id:
            seen[pair_id] = line
        _report(schema, problems, errors)
        if problems or clean is None:
            continue
        purpose = schemas.purpose(clean.get("purpose"))
        sentence_a, sentence_b = (
            schemas.text(clean["sentence_a"]),
            schemas.text(clean["sentence_b"]),
        )
        if purpose == "regular":
            extra = {
                key: value
                for key, value in clean.items()
                if key not in PAIR_FIELDS and value not in (None, "")
            }
            pairs.append(
                PairRow(
                    line=line,
                    pair_id=pair_id,
                    sentence_a=sentence_a,
                    sentence_b=sentence_b,
                    subset=schemas.text(clean.get("subset")).lower(),
                    origin=schemas.text(clean.get("origin")),
                    flags=tuple(schemas.flags(clean.get("flags"))),
                    extra=extra,
                )
            )
            continue
        singles.append(
            SingleItemRow(
                line=line,
                item_id=pair_id,
                purpose=purpose,
                sentence_a=sentence_a,
                sentence_b=sentence_b,
                connective=schemas.text(clean.get("connective")).lower(),
                order=schemas.order(clean.get("order") or "AB") or "AB",
                expected_min=clean.get("expected_min"),
                expected_max=clean.get("expected_max"),
                feedback=schemas.text(clean.get("feedback")),
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


def parse_ratings(
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    connective_set: ConnectiveSet,
    *,
    scale: tuple[int, int],
    known_items: set[str] | None = None,
) -> list[RatingRow]:
    """Check historic rating rows; raise ImportRejected listing every problem.

    Each row goes through the registered ratings schema (``ratings.import_schemas``, bound to
    the project): each rating a whole number within ``scale``, items that exist
    (``known_items``). Across rows: a rater may rate an item once, so a repeated (item, rater)
    is an error.
    """
    schema = schemas.bound_ratings_schema(connective_set, scale, known_items)
    errors = _Errors()
    ratings: list[RatingRow] = []
    seen: dict[tuple[str, str], int] = {}
    total = 0
    for line, row in rows:
        total += 1
        clean, problems = _checked(schema, line, row)
        _report(schema, problems, errors)
        if problems or clean is None:
            continue
        key = schemas.item_key(clean)
        column, values = schemas.rating_values(clean)
        rater = schemas.text(clean.get("rater")) if column == "rating" else ""
        for value in values:
            rating = schemas.number(value)
            assert rating is not None  # checked by the bound schema
            if rater:
                if (key, rater) in seen:
                    errors.add(
                        line, "rater", f"{rater!r} already rated {key!r} on line {seen[key, rater]}"
                    )
                    continue
                seen[key, rater] = line
            ratings.append(RatingRow(line=line, item_key=key, rating=rating, rater=rater))
    if total == 0:
        errors.add(0, "", "the file has no rows")
    errors.raise_if_any("ratings file")
    return ratings


def ratings_fingerprint(ratings: Iterable[RatingRow]) -> str:
    """SHA-256 of checked ratings as data, not as bytes: the sorted (item key, rater, rating)
    triples, each written as one JSON array per line. Line ends, a byte-order mark, the
    delimiter, the column or row order, CSV against JSON Lines and the order of an anonymous
    list leave it unchanged; a different rating, item or rater changes it. Historic imports
    compare it with earlier ones (ratings.services.historic_ratings_import)."""
    digest = hashlib.sha256()
    for item_key, rater, rating in sorted(
        (rating.item_key, rating.rater, int(rating.rating)) for rating in ratings
    ):
        digest.update(json.dumps([item_key, rater, rating], ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


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
    ordered pair (``choice`` column). ``-1`` or empty = no answer. Raise ImportRejected.

    Rows are consumed as they come: the first row that has a ``rating`` key (or else a
    ``choice`` key) decides the kind — every row of a CSV has the header's columns — and only
    the rows before it are held. Each row goes through the registered schema of its kind
    (``ratings.import_schemas``, bound to the project); an item or pair answered twice is an
    error."""
    errors = _Errors()
    remaining = iter(rows)
    held: list[tuple[int, Mapping[str, Any]]] = []
    answer_kind = ""
    for line, row in remaining:
        held.append((line, row))
        if "rating" in row:
            answer_kind = "ratings"
            break
        if "choice" in row:
            answer_kind = "choices"
            break
    if not held:
        errors.add(0, "", "the file has no rows")
        errors.raise_if_any("model file")
    if not answer_kind:
        errors.add(
            1, "rating", "the file needs a 'rating' column (per item) or 'choice' (per pair)"
        )
        errors.raise_if_any("model file")
    unrelated = {value.lower() for value in unrelated_values}
    schema = schemas.bound_model_schema(
        answer_kind,
        connective_set,
        scale=scale,
        known_items=known_items,
        known_pairs=known_pairs,
        unrelated=unrelated,
    )
    answers: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for line, row in itertools.chain(held, remaining):
        clean, problems = _checked(schema, line, row)
        _report(schema, problems, errors)
        if problems or clean is None:
            continue
        value: Any
        if answer_kind == "ratings":
            key = schemas.item_key(clean)
            value = clean.get("rating")
            if value == -1:
                value = None
        else:
            key = f"{schemas.identifier(clean.get('pair_id'))}|{schemas.order(clean.get('order'))}"
            value = schemas.choice_value(clean.get("choice"), connective_set, unrelated)
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
