"""Row-level errors and the summary of one import check.

Pure Python, no Django: the ImportBatch model stores ``ImportReport.to_dict()`` as JSON and the
API returns it as is.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from annotation.values import shown

FOUND_MAX_CHARS = 80

# Machine-readable error kinds (``RowError.code``); the message is for people, the code for code.
ERROR_CODES = (
    "encoding",  # the file is not UTF-8
    "empty_file",  # no bytes, or only whitespace
    "json_syntax",  # the JSON / JSON Lines text cannot be parsed
    "csv_syntax",  # a CSV quoting problem
    "csv_header",  # missing, blank or repeated column names
    "csv_cells",  # a row with more or fewer cells than the header
    "not_an_object",  # a record that is not a JSON object ({...})
    "missing_column",  # a required column is absent from the CSV header
    "unknown_field",  # a field the schema does not declare, when the schema rejects those
    "required",  # a required field is absent or empty
    "wrong_type",  # a value that cannot be read as the declared type
    "out_of_range",  # a number below min or above max
    "too_long",  # text longer than max_length
    "unknown_choice",  # a value outside the declared choices
    "ambiguous_field",  # two columns feed the same field (name and alias both present)
    "duplicate_in_file",  # the same external id twice in the file
    "duplicate_existing",  # the external id is already in the project (policy "reject")
    "invalid_text",  # text holding NUL or an unpaired surrogate (the database refuses both)
    "invalid_number",  # a number no Python number holds as written (4,301+ digits, 1e400)
    "too_deep",  # JSON nested more than annotation.values.MAX_DEPTH levels
    "nested_value",  # an object or a list where the schema expects one flat value
    "invalid_value",  # a value a kind's own rules refuse (ratings: an unknown connective, …)
)


def truncated_repr(value: Any, limit: int = FOUND_MAX_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, with an ellipsis when cut (a long string is
    cut before its repr is taken, so a 4 MiB cell costs no 4 MiB copy)."""
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]
    text = repr(value)
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class RowError:
    """One problem found in an import file, located precisely enough to fix by hand.

    ``line`` is the 1-based physical line where the record starts (CSV, JSON Lines) or where the
    element starts (JSON); for a file-level problem it is where the problem is (the invalid byte,
    the syntax error). ``index`` is the 0-based position of the element in a JSON array (None for
    CSV and JSON Lines); ``column`` the 1-based character column on ``line``. ``field`` names the
    schema field, or is None when the problem concerns the whole row or file. ``expected`` and
    ``found`` are short descriptions (``found`` is a truncated repr of the offending value);
    ``message`` is a full sentence a person can act on.

    Every text attribute is kept as ``annotation.values.shown`` writes it: control
    characters, surrogates and bidirectional controls from the file appear escaped, so an
    error is safe to print and to store (PostgreSQL refuses NUL in JSON).
    """

    line: int | None
    message: str
    code: str
    field: str | None = None
    expected: str | None = None
    found: str | None = None
    index: int | None = None
    column: int | None = None

    def __post_init__(self) -> None:
        for name in ("message", "code", "field", "expected", "found"):
            text = getattr(self, name)
            if text is not None:
                object.__setattr__(self, name, shown(str(text)))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RowError:
        return cls(**data)

    def where(self) -> str:
        """``"line 3"``, ``"line 3, column 7"`` or ``"element 4 (line 12, column 3)"``."""
        if self.line is None:
            return "file"
        place = f"line {self.line}"
        if self.column is not None:
            place += f", column {self.column}"
        if self.index is not None:
            return f"element {self.index} ({place})"
        return place

    def __str__(self) -> str:
        # File-level messages already lead with their place ("line 3: not UTF-8 ...").
        if self.message.startswith("line "):
            return self.message
        return f"{self.where()}: {self.message}"


@dataclass(frozen=True, slots=True)
class Normalisation:
    """One value a field's ``normalise`` (imports/core/schema.py) mapped: the ``spelling`` read
    from the record (typed, not yet mapped) and the ``canonical`` value it became, None when it
    has none (the field was then left out). ``line``/``index`` locate the record as in
    ``RowError``."""

    field: str
    spelling: Any
    canonical: Any
    line: int | None = None
    index: int | None = None

    def key(self, limit: int = 200) -> tuple[str, str, str]:
        """(field, spelling, canonical) as texts of at most ``limit`` characters (canonical ""
        when None): what counts of normalisations are keyed by."""
        canonical = "" if self.canonical is None else shown(str(self.canonical))[:limit]
        return self.field, shown(str(self.spelling))[:limit], canonical


@dataclass(slots=True)
class ImportReport:
    """What one pass over an import file found.

    ``errors`` keeps the first ``error_cap`` errors in file order; ``error_count`` is the true
    total. ``rows_total`` counts records read (a record that could not be parsed counts too);
    ``rows_ok`` those that passed every check. ``rows_create`` + ``rows_update`` == ``rows_ok``
    (``rows_update`` is non-zero only with the duplicate policy "update"). ``fatal`` is True when
    a file-level problem (encoding, JSON syntax, CSV header) stopped reading; the counts then
    cover the part read before it. ``sha256`` and ``bytes_read`` always cover the whole file.
    """

    fmt: str = ""
    error_cap: int = 100
    rows_total: int = 0
    rows_ok: int = 0
    rows_create: int = 0
    rows_update: int = 0
    error_count: int = 0
    errors: list[RowError] = field(default_factory=list)
    fatal: bool = False
    sha256: str = ""
    bytes_read: int = 0
    columns: list[str] = field(default_factory=list)
    wrapper_key: str | None = None
    #: How often each (field, spelling, canonical) normalisation happened (``add_normalisation``).
    normalised: dict[tuple[str, str, str], int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the file can be imported as it is."""
        return self.error_count == 0 and not self.fatal

    @property
    def rows_failed(self) -> int:
        return self.rows_total - self.rows_ok

    @property
    def errors_truncated(self) -> bool:
        return self.error_count > len(self.errors)

    def add_error(self, error: RowError) -> None:
        self.error_count += 1
        if len(self.errors) < self.error_cap:
            self.errors.append(error)

    def add_normalisation(self, normalisation: Normalisation) -> None:
        """Count one normalisation by (field, spelling, canonical)."""
        key = normalisation.key()
        self.normalised[key] = self.normalised.get(key, 0) + 1

    def summary(self) -> str:
        """One sentence for a status line or a log."""
        if self.ok:
            return (
                f"{self.rows_ok} rows ready to import "
                f"({self.rows_create} new, {self.rows_update} updates)."
            )
        shown = "" if not self.errors_truncated else f" (first {len(self.errors)} listed)"
        stop = " Reading stopped at the first file-level problem." if self.fatal else ""
        return (
            f"{self.error_count:,} problem{'s' if self.error_count != 1 else ''} in "
            f"{self.rows_failed:,} of {self.rows_total:,} row{'s' if self.rows_total != 1 else ''}"
            f"{shown}; nothing was imported.{stop}"
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImportReport:
        """Rebuild a report stored with ``to_dict`` (derived keys are ignored)."""
        names = {
            "fmt", "error_cap", "rows_total", "rows_ok", "rows_create", "rows_update",
            "error_count", "fatal", "sha256", "bytes_read", "columns", "wrapper_key",
        }  # fmt: skip
        report = cls(**{key: value for key, value in data.items() if key in names})
        report.errors = [RowError.from_dict(error) for error in data.get("errors", [])]
        report.normalised = {
            (entry["field"], entry["spelling"], entry["canonical"]): entry["count"]
            for entry in data.get("normalised", [])
        }
        return report

    def to_dict(self) -> dict[str, Any]:
        return {
            "fmt": self.fmt,
            "ok": self.ok,
            "fatal": self.fatal,
            "rows_total": self.rows_total,
            "rows_ok": self.rows_ok,
            "rows_failed": self.rows_failed,
            "rows_create": self.rows_create,
            "rows_update": self.rows_update,
            "error_count": self.error_count,
            "error_cap": self.error_cap,
            "errors": [error.to_dict() for error in self.errors],
            "sha256": self.sha256,
            "bytes_read": self.bytes_read,
            "columns": list(self.columns),
            "wrapper_key": self.wrapper_key,
            "normalised": [
                {"field": name, "spelling": spelling, "canonical": canonical, "count": count}
                for (name, spelling, canonical), count in sorted(self.normalised.items())
            ],
            "summary": self.summary(),
        }
