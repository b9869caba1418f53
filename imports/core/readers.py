"""Streaming readers for import files: CSV, JSON Lines and JSON (an array, or an object wrapping
one), from a binary file object.

One module (about 1,300 lines) for the three readers: they share the byte/line accounting
and the error positions that make every message point at a line and column.

* Lines: a line ends at LF, CRLF or a lone CR (old Mac files), in every reader and in every
  line number it reports; ``physical_lines`` gives the lines of a file that holds no records
  (a plug-in's line-aligned text, a line-per-document file).

* Memory: CSV and JSON Lines hold one line (one record) at a time. A JSON array is parsed one
  element at a time with ``json.JSONDecoder.raw_decode`` over a sliding text buffer, so the parsed
  list never exists; the buffer holds about one element plus one read chunk. Objects read from a
  wrapping object's other keys (e.g. ``"metadata"``) are kept, so they should be small.
* Encoding: UTF-8, with or without a byte-order mark. Anything else stops reading with an error
  naming the line, column and byte offset of the first invalid byte.
* ``read_json_document`` reads one whole JSON document that is no import file (an API request
  body, an uploaded edge list, one line of a narratives file) within the same rules, raising
  ``ImportFileError`` that names line and column (or the path of a value); ``decode_utf8``
  applies the encoding rule alone to a small file read whole (a CSV edge list).
* Values: the numbers and nesting limits of ``annotation.values`` (JSON nested more than 64
  levels is refused before it is decoded: per line in JSON Lines, for the whole file inside a
  JSON array, whose element's end is then unknown).
* Every byte read is hashed (SHA-256) on the way; ``RecordReader.finish()`` reads whatever is
  left after an early stop so the digest always covers the whole file.

Problems come in two sizes. A record-level problem (a JSON Lines line that is not JSON, a CSV row
with the wrong number of cells, an array element that is not an object) is attached to that record
(``RawRecord.error``) and reading goes on. A file-level problem (bad encoding, JSON syntax inside
an array, a broken CSV header or quote) raises ``ImportFileError``, because nothing after it can
be located reliably.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import IO, Any, NoReturn

import orjson

from annotation.values import (
    MAX_DEPTH,
    NestingTooDeep,
    decoder,
    loads,
    nesting_position,
    shown,
    value_problem_at,
)
from imports.core.report import RowError

FORMATS = ("csv", "jsonl", "json")
EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".jsonlines": "jsonl",
    ".json": "json",
}
# Keys of a top-level object whose array holds the records ({"metadata": ..., "cases": [...]}).
WRAPPER_KEYS = (
    "items",
    "cases",
    "questions",
    "records",
    "rows",
    "data",
    "examples",
    "instances",
    "entries",
)
CHUNK_SIZE = 1 << 16
SNIFF_SIZE = 1 << 16
CSV_FIELD_LIMIT = 1 << 22  # 4 Mi characters in one cell: far beyond any real case text
#: Bytes in one physical line (JSON Lines, CSV): a longer line is refused, never read whole.
LINE_LIMIT = 1 << 24

UTF8_BOM = codecs.BOM_UTF8
_OTHER_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
_WHITESPACE = " \t\n\r"
_KEEP_BEHIND = 4096
_NON_FINITE = re.compile(r"(-?Infinity|NaN)")
#: A line end: CRLF, LF, or a lone CR (old Mac files).
_LINE_END = re.compile(rb"\r\n?|\n")
_TEXT_LINE_END = re.compile(r"\r\n?|\n")
#: What ``str.splitlines`` breaks lines at besides LF and CR (not line ends in an import file).
_OTHER_LINE_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
#: Bytes of whole lines read and decoded at a time (``_text_lines``).
LINES_BLOCK = 1 << 15


def count_line_ends(text: str, start: int = 0, end: int | None = None) -> int:
    """Line ends (LF, CRLF, lone CR) in ``text[start:end]``; a CRLF counts once."""
    end = len(text) if end is None else end
    return (
        text.count("\n", start, end) + text.count("\r", start, end) - text.count("\r\n", start, end)
    )


def last_line_end(text: str, start: int = 0, end: int | None = None) -> int:
    """Position of the last character of the last line end in ``text[start:end]``, or -1."""
    end = len(text) if end is None else end
    return max(text.rfind("\n", start, end), text.rfind("\r", start, end))


def _byte_line_ends(data: bytes, after_cr: bool) -> int:
    count = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    # A CRLF cut between two pieces: its CR was counted with the piece before.
    return count - 1 if after_cr and data.startswith(b"\n") else count


class ImportFileError(Exception):
    """A file-level problem: reading cannot go on. ``error`` says where and why; ``errors``
    lists every problem found at that point (a CSV header can miss several columns)."""

    def __init__(self, error: RowError, *more: RowError) -> None:
        super().__init__(error.message)
        self.error = error
        self.errors = [error, *more]


@dataclass(slots=True)
class RawRecord:
    """One record as read, before schema validation.

    ``line`` is the 1-based physical line where the record starts; ``index`` the 0-based
    element position in a JSON array (None otherwise); ``column`` the 1-based column where a
    JSON element starts. ``text_values`` is True for CSV (all cells are text). ``error`` is set,
    and ``data`` is None, when the record itself could not be parsed.
    """

    data: Any
    line: int
    index: int | None = None
    column: int | None = None
    text_values: bool = False
    error: RowError | None = None


# -- bytes in: hashing, sniffing -----------------------------------------------------------


class HashingReader:
    """Wrap a binary file object; hash and count every byte read from it, exactly once.

    ``readline`` ends a line at LF, CRLF or a lone CR (old Mac files), so every reader counts
    lines the same way whatever the file's line ends; hand-written over the file object's own
    ``readline``, which knows only LF in binary mode.
    """

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._hash = hashlib.sha256()
        self._buffer = b""
        self._start = 0  # bytes of ``_buffer`` already handed out
        self._eof = False
        self.bytes_read = 0

    def _pull(self, size: int) -> bytes:
        data = self._raw.read(size)
        if isinstance(data, str):
            raise TypeError("import readers need a binary file object (open the file with 'rb')")
        self._hash.update(data)
        self.bytes_read += len(data)
        if not data:
            self._eof = True
        return data

    def _buffered(self) -> int:
        return len(self._buffer) - self._start

    def _fill(self, size: int) -> bool:
        """Append up to ``size`` more bytes to the buffer; False at end of file."""
        if self._start:
            # Drop what was handed out before growing: one copy per refill, not per line.
            self._buffer = self._buffer[self._start :]
            self._start = 0
        data = self._pull(size)
        if not data:
            return False
        self._buffer += data
        return True

    def peek(self, size: int) -> bytes:
        """Up to ``size`` bytes from the current position, without consuming them."""
        while self._buffered() < size and not self._eof:
            if not self._fill(size - self._buffered()):
                break
        return self._buffer[self._start : self._start + size]

    def read(self, size: int = CHUNK_SIZE) -> bytes:
        if self._buffered():
            data = self._buffer[self._start : self._start + size]
            self._start += len(data)
            return data
        return self._pull(size)

    def readline(self, limit: int = -1) -> bytes:
        """One line with its ending (LF, CRLF or a lone CR); at most ``limit`` bytes (when
        positive) if no line end comes first."""
        scanned = self._start
        while True:
            match = _LINE_END.search(self._buffer, scanned)
            if match is not None:
                end = match.end()
                # A CR as the last byte buffered may be the first half of a CRLF.
                if match.group() == b"\r" and end == len(self._buffer) and not self._eof:
                    offset = end - self._start
                    if self._fill(CHUNK_SIZE):
                        scanned = self._start + offset - 1
                        continue
                    end = self._start + offset
                if limit > 0 and end - self._start > limit:
                    end = self._start + limit
                line = self._buffer[self._start : end]
                self._start = end
                return line
            if limit > 0 and self._buffered() >= limit:
                line = self._buffer[self._start : self._start + limit]
                self._start += limit
                return line
            offset = self._buffered()
            # Doubling the read keeps a long line's copies linear in its length.
            if self._eof or not self._fill(max(CHUNK_SIZE, offset)):
                line = self._buffer[self._start :]
                self._start = len(self._buffer)
                return line
            scanned = self._start + offset

    def whole_lines(self, size: int = LINES_BLOCK) -> bytes:
        """The next whole lines, up to ``size`` bytes, each ended by LF, none holding a CR
        (CR line ends are ``readline``'s), without consuming them (``skip`` does); b"" when
        the next line is not such a line or is longer than ``size``."""
        if self._buffered() < size and not self._eof:
            self._fill(size)
        start = self._start
        stop = min(len(self._buffer), start + size)
        carriage_return = self._buffer.find(b"\r", start, stop)
        end = self._buffer.rfind(b"\n", start, stop if carriage_return < 0 else carriage_return)
        return self._buffer[start : end + 1] if end >= 0 else b""

    def skip(self, size: int) -> None:
        """Consume ``size`` bytes already looked at (``whole_lines``)."""
        self._start += size

    def drain(self) -> None:
        """Read (and hash) everything left."""
        self._buffer = b""
        self._start = 0
        while self._pull(1 << 20):
            pass

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


def detect_format(filename: str | None = None, head: bytes = b"") -> str:
    """``"csv"``, ``"jsonl"`` or ``"json"``, from the file name's extension, else the content.

    Content: after a BOM and whitespace, ``[`` means JSON; ``{`` means JSON Lines when the first
    line is a complete JSON value on its own, otherwise JSON; anything else is taken for CSV.
    """
    if filename:
        lowered = filename.lower()
        for extension, fmt in EXTENSIONS.items():
            if lowered.endswith(extension):
                return fmt
    text = head.removeprefix(UTF8_BOM).decode("utf-8", errors="ignore").lstrip()
    if text.startswith("["):
        return "json"
    if text.startswith("{"):
        first_line = _TEXT_LINE_END.split(text, maxsplit=1)[0]
        try:
            loads(first_line)  # within the nesting limit: a deep first line is no crash
        except ValueError:
            return "json"
        return "jsonl"
    return "csv"


# -- bytes to text: UTF-8 with a precise error ---------------------------------------------


class Utf8Decoder:
    """Incremental UTF-8 decoding that knows the line, column and byte offset of every byte.

    A leading BOM is dropped; a UTF-16/32 BOM or any invalid byte raises ``ImportFileError``.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.offset = 0  # bytes fed so far
        self.newlines = 0  # line ends (LF, CRLF, lone CR) fed so far
        self._after_cr = False  # the last byte fed was a CR
        self._chars_since_newline = 0
        self._started = False
        self.bytes_used = 0  # bytes of the block the last ``decode_lines`` decoded

    def decode(self, data: bytes, final: bool = False) -> str:
        if not self._started and (data or final):
            data = self._strip_bom(data)
        pending = len(self._decoder.getstate()[0])
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError as problem:
            raise ImportFileError(self._error(pending, data, problem, final)) from None
        self.offset += len(data)
        self.newlines += _byte_line_ends(data, self._after_cr)
        if data:
            self._after_cr = data.endswith(b"\r")
        cut = last_line_end(text)
        if cut >= 0:
            self._chars_since_newline = len(text) - cut - 1
        else:
            self._chars_since_newline += len(text)
        return text

    def decode_lines(self, block: bytes) -> str | None:
        """Decode, in one call, the longest run of whole lines at the start of ``block``
        (``HashingReader.whole_lines``: LF-ended lines, no CR) that is valid UTF-8, with the
        bookkeeping ``decode`` keeps; None when there is none, or when the start of the file
        (its byte-order mark), a line end or a character cut in two is ``decode``'s to handle.
        ``bytes_used`` then says how many bytes of ``block`` the text holds."""
        if not self._started or self._after_cr or self._decoder.getstate()[0]:
            return None
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError as problem:
            # The lines before the bad byte; the bad line goes through ``decode``, which
            # words the error with its line and column.
            cut = block.rfind(b"\n", 0, problem.start) + 1
            if not cut:
                return None
            block = block[:cut]
            text = block.decode("utf-8")
        self.bytes_used = len(block)
        self.offset += len(block)
        self.newlines += block.count(b"\n")
        self._chars_since_newline = 0
        return text

    def _strip_bom(self, data: bytes) -> bytes:
        self._started = True
        for bom, name in _OTHER_BOMS:
            if data.startswith(bom):
                raise ImportFileError(
                    RowError(
                        line=1,
                        column=1,
                        code="encoding",
                        expected="UTF-8",
                        found=name,
                        message=(
                            f"line 1: the file is encoded as {name} (it starts with a {name} "
                            f"byte-order mark), not UTF-8; save the file as UTF-8."
                        ),
                    )
                )
        if data.startswith(UTF8_BOM):
            self.offset += len(UTF8_BOM)
            return data[len(UTF8_BOM) :]
        return data

    def _error(
        self, pending: int, data: bytes, problem: UnicodeDecodeError, final: bool
    ) -> RowError:
        # problem.object is the decoder's held-back bytes followed by ``data``.
        bytes_seen = problem.object
        start = problem.start
        offset = self.offset - pending + start
        before = bytes_seen[:start]
        line = self.newlines + _byte_line_ends(before, self._after_cr) + 1
        last_newline = max(before.rfind(b"\n"), before.rfind(b"\r"))
        if last_newline >= 0:
            column = len(before[last_newline + 1 :].decode("utf-8", errors="replace")) + 1
        else:
            column = self._chars_since_newline + len(before.decode("utf-8", errors="replace")) + 1
        byte = bytes_seen[start]
        if problem.reason == "unexpected end of data" and final:
            cause = (
                f"the file ends in the middle of a character (byte 0x{byte:02X} at offset "
                f"{offset} starts a character that is never completed)"
            )
        else:
            cause = f"not UTF-8 (byte 0x{byte:02X} at offset {offset})"
        guess = ""
        if byte >= 0x80:
            legacy = bytes([byte]).decode("cp1252", errors="replace")
            if legacy.isprintable() and legacy != "\ufffd":
                guess = (
                    f" It looks like Windows-1252 or Latin-1 text, where that byte is {legacy!r}."
                )
        return RowError(
            line=line,
            column=column,
            code="encoding",
            expected="UTF-8",
            found=f"0x{byte:02X}",
            message=f"line {line}: {cause}; save the file as UTF-8.{guess}",
        )


def _text_lines(source: HashingReader) -> Iterator[str]:
    """Decoded physical lines, each with its line ending."""
    decoder = Utf8Decoder()
    number = 0
    while True:
        # Whole LF-ended lines are decoded a block at a time (a large file's lines nearly all
        # are): one decode and one split for hundreds of lines, instead of one regex search
        # and one incremental decode per line. Anything else goes line by line below.
        # Never more than LINE_LIMIT bytes a block, so no line taken here is over the limit.
        block = source.whole_lines(min(LINES_BLOCK, LINE_LIMIT))
        text = decoder.decode_lines(block) if block else None
        if text is not None:
            source.skip(decoder.bytes_used)
            if _OTHER_LINE_BREAKS.search(text) is None:
                lines = text.splitlines(keepends=True)
            else:  # characters ``splitlines`` would also break at, but a file's lines do not
                lines = [piece + "\n" for piece in text.split("\n")[:-1]]
            number += len(lines)
            yield from lines
            continue
        raw_line = source.readline(LINE_LIMIT + 1)
        number += 1
        if not raw_line:
            decoder.decode(b"", final=True)
            return
        if len(raw_line) > LINE_LIMIT:
            raise ImportFileError(
                RowError(
                    line=number,
                    code="line_too_long",
                    expected=f"at most {LINE_LIMIT // (1 << 20)} MiB per line",
                    found=f"more than {LINE_LIMIT:,} bytes without a line end",
                    message=f"line {number} is longer than {LINE_LIMIT // (1 << 20)} MiB: is "
                    f"this really one record per line (JSON Lines, CSV)? A JSON array needs "
                    f"the .json extension.",
                )
            )
        yield decoder.decode(raw_line)


# -- JSON: plain-English syntax errors -----------------------------------------------------


class _NonFiniteNumber(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFiniteNumber(name)


# The standard decoder (kept over ijson: see annotation.values), with its number hooks: numbers
# no Python number holds come out as InvalidNumber, for the schema to report against their field.
_DECODER = decoder(parse_constant=_reject_constant)
#: A run of 19 digits: a number orjson might read otherwise than the standard decoder (beyond
#: 64 bits it gives a float where the standard decoder gives an int or ``InvalidNumber``).
_LONG_DIGITS = re.compile(r"\d{19}")
#: Values of a record that may come from such a number (a float) or hold one (nesting).
_MAYBE_LONG = frozenset({float, dict, list})


def _decode_line(text: str) -> Any:
    """One JSON Lines record, as ``_DECODER.decode`` reads it. orjson (several times faster)
    reads the records it reads identically; a line it refuses, or one that may hold a number
    beyond 64 bits (a run of 19 digits, in a record with a float or nesting), goes to the
    standard decoder, whose errors and number hooks are the contract (``_read_jsonl`` reports
    them)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _DECODER.decode(text)
    # orjson reads an integer beyond 64 bits as a float: a flat record without floats holds
    # none, and needs no search of its text (the search costs more than the decoding).
    if type(value) is dict and _MAYBE_LONG.isdisjoint(map(type, value.values())):
        return value
    return value if _LONG_DIGITS.search(text) is None else _DECODER.decode(text)


_TOO_DEEP = (
    f"the record is nested more than {MAX_DEPTH} levels deep (lists or objects inside one "
    f"another); at most {MAX_DEPTH} levels are read"
)


def _previous_significant(text: str, pos: int) -> tuple[str | None, int]:
    index = pos - 1
    while index >= 0 and text[index] in _WHITESPACE:
        index -= 1
    return (text[index], index) if index >= 0 else (None, -1)


def explain_json_error(msg: str, text: str, pos: int, *, at_end: str) -> tuple[str, int]:
    """A plain-English cause for a ``json`` error ``msg`` at ``text[pos]``, and the position to
    report (moved back to the offending comma for a trailing comma).

    ``at_end`` describes what running out of text means here ("the file ends…", "the line
    ends…").
    """
    char = text[pos] if pos < len(text) else None
    previous, previous_pos = _previous_significant(text, pos)
    if msg.startswith("Expecting value"):
        if char is None:
            return f"{at_end} where a value should start", pos
        if char in "]}" and previous == ",":
            closer = "list" if char == "]" else "object"
            return (
                f"trailing comma: the ',' before the {closer}'s closing '{char}' has nothing "
                f"after it; remove that comma",
                previous_pos,
            )
        if char == ",":
            return "two commas in a row (or a comma with no value before it); remove one", pos
        if char == "'":
            return "text must be in double quotes (\"), not single quotes (')", pos
        word = re.match(r"[A-Za-z_]+", text[pos : pos + 20])
        if word:
            found = word.group(0)
            lower = {"True": "true", "False": "false", "None": "null", "Null": "null"}
            if found in lower:
                return (
                    f"{found!r} is not JSON; write {lower[found]} (JSON's true, false and null "
                    f"are lower case)",
                    pos,
                )
            return (
                f"unexpected word {found!r} where a value should start; text values must be in "
                f'double quotes ("{found}…")',
                pos,
            )
        return f"unexpected character {char!r} where a value should start", pos
    if msg.startswith("Expecting property name"):
        if char is None:
            return f"{at_end} inside an object (a closing '}}' is missing)", pos
        if char == "}" and previous == ",":
            return (
                "trailing comma: the ',' before the object's closing '}' has nothing after "
                "it; remove that comma",
                previous_pos,
            )
        if char == "'":
            return "field names must be in double quotes (\"), not single quotes (')", pos
        word = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[pos : pos + 40])
        if word:
            return (
                f'the field name {word.group(0)} is not in double quotes; write "{word.group(0)}"',
                pos,
            )
        return f"expected a field name in double quotes, found {char!r}", pos
    if msg.startswith("Expecting ',' delimiter"):
        if char is None:
            return f"{at_end} before the enclosing object or list is closed", pos
        if char == '"' and previous == '"':
            return (
                "a comma is missing between two values (look at the end of the previous line), "
                'or a double quote inside a text is not escaped (write \\" inside text)',
                pos,
            )
        if char == '"':
            return "a comma is missing before this field or value", pos
        if char in "{[":
            return (
                "a comma is missing between two objects or lists; put ',' between '}' and '{'",
                pos,
            )
        if previous == '"':
            return (
                f"unexpected character {char!r} right after a text value; if it belongs to the "
                f'text, the double quote before it must be escaped as \\"',
                pos,
            )
        return (
            f"unexpected character {char!r} after a value; expected ',' or a closing bracket",
            pos,
        )
    if msg.startswith("Expecting ':' delimiter"):
        if char is None:
            return f"{at_end} after a field name", pos
        return f"a ':' is missing after the field name (found {char!r})", pos
    if msg.startswith("Invalid control character"):
        if char == "\n" or char == "\r":
            return (
                "a text value contains a raw line break; inside JSON text write it as \\n "
                "(or the text's closing double quote is missing)",
                pos,
            )
        if char == "\t":
            return "a text value contains a raw tab character; write it as \\t", pos
        code = ord(char) if char else 0
        return (
            f"a text value contains the unescaped control character U+{code:04X}; write it as "
            f"\\u{code:04X} or remove it",
            pos,
        )
    if msg.startswith("Invalid \\escape"):
        escape = text[pos : pos + 2]
        plain = escape[1:] if len(escape) > 1 else ""
        return (
            f'invalid escape "{escape}" inside a text value; after a backslash JSON allows only '
            f'\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX, so write "{plain}" without the '
            f'backslash (or "\\\\" for a literal backslash)',
            pos,
        )
    if msg.startswith("Invalid \\uXXXX escape"):
        if pos > 0 and text[pos - 1] == "\\":
            pos -= 1  # point at the backslash, not the "u"
        return (
            f'invalid escape "{text[pos : pos + 6]}": a \\u escape must be followed by exactly '
            f"four hexadecimal digits",
            pos,
        )
    if msg.startswith("Unterminated string"):
        return (
            f"a text value starts here but never ends: {at_end} before its closing double "
            f"quote (the file may be cut off, or a closing quote is missing)",
            pos,
        )
    return f"JSON syntax error ({msg})", pos


def _snippet(text: str, pos: int, width: int = 30) -> str:
    """The text around ``pos`` on its line, with a marker ``⟨here⟩`` before ``pos``."""
    line_start = last_line_end(text, 0, pos) + 1
    found = _TEXT_LINE_END.search(text, pos)
    line_end = found.start() if found else len(text)
    start = max(line_start, pos - width)
    end = min(line_end, pos + width)
    before = ("…" if start > line_start else "") + text[start:pos]
    after = text[pos:end] + ("…" if end < line_end else "")
    return shown(f"{before}⟨here⟩{after}")


def _non_finite_position(text: str, start: int) -> int:
    """Where the first NaN/Infinity token after ``start`` is (outside strings, roughly)."""
    for match in _NON_FINITE.finditer(text, start):
        previous, _ = _previous_significant(text, match.start())
        if previous in (":", ",", "[", None):
            return match.start()
    return start


# -- one whole JSON document ----------------------------------------------------------------


def decode_utf8(data: bytes, *, first_line: int = 1) -> str:
    """Bytes of a whole small file or body as text, by the imports' encoding rule: UTF-8 with or
    without a byte-order mark. Anything else raises ``ImportFileError`` whose message starts
    ``line L, column C:`` and names the byte and its offset (``first_line`` is the number of
    the first line of ``data``)."""
    try:
        return Utf8Decoder().decode(data, final=True)
    except ImportFileError as refused:
        raise _with_column(refused.error, first_line) from None


def _with_column(error: RowError, first_line: int = 1) -> ImportFileError:
    """An encoding error whose message leads with ``line L, column C:``."""
    line = (error.line or 1) + first_line - 1
    cause = error.message.split(": ", 1)[-1]
    return ImportFileError(
        replace(error, line=line, message=f"line {line}, column {error.column}: {cause}")
    )


def physical_lines(fileobj: IO[bytes]) -> Iterator[tuple[int, str]]:
    """``(number, text)`` of each line of a binary file, 1-based, without its line end (LF,
    CRLF or a lone CR), read one line at a time by the imports' rules: UTF-8 with or without a
    byte-order mark, at most ``LINE_LIMIT`` bytes a line. The first byte that is not UTF-8
    raises ``ImportFileError`` whose message starts ``line L, column C:``; for a reader whose
    lines are not records of one schema (narratives' lines, each one JSON document)."""
    try:
        for number, line in enumerate(_text_lines(HashingReader(fileobj)), start=1):
            yield number, line.rstrip("\r\n")
    except ImportFileError as refused:
        if refused.error.code != "encoding" or refused.error.column is None:
            raise
        raise _with_column(refused.error) from None


def read_json_document(
    data: bytes | str, *, at_end: str = "the text ends", first_line: int = 1
) -> Any:
    """One whole JSON document, read by the rules every import follows; the one JSON reader for
    text people send that is not an import file (the API's request bodies, edge lists,
    narrative lines).

    Bytes must be UTF-8 (a byte-order mark is dropped); the text is nested at most
    ``MAX_DEPTH`` levels (checked before decoding, so any depth is safe to send); NaN and
    Infinity are refused; and every value in it must be one the database can store
    (``annotation.values.value_problem_at``: no NUL, no unpaired surrogate, no number Python
    cannot hold). Anything else raises ``ImportFileError`` whose ``RowError`` has a message
    starting with where: ``line L, column C: …`` (``first_line`` is the number of the text's
    first line), or, for a value, its path (``RowError.field``, e.g. ``payload.notes[1]``).
    ``at_end`` says what running out of text means ("the body ends")."""
    text = decode_utf8(data, first_line=first_line) if isinstance(data, bytes) else data

    def located(pos: int, code: str, expected: str, cause: str) -> ImportFileError:
        line = count_line_ends(text, 0, pos) + first_line
        column = pos - last_line_end(text, 0, pos)
        return ImportFileError(
            RowError(
                line=line,
                column=column,
                code=code,
                expected=expected,
                found=_snippet(text, pos),
                message=f"line {line}, column {column}: {cause}",
            )
        )

    try:
        value = loads(text, parse_constant=_reject_constant)
    except NestingTooDeep as error:
        raise located(
            error.pos,
            "too_deep",
            f"at most {MAX_DEPTH} levels of nesting",
            f"nested more than {MAX_DEPTH} levels deep (lists or objects inside one "
            f"another); at most {MAX_DEPTH} levels are read",
        ) from None
    except _NonFiniteNumber as error:
        pos = _non_finite_position(text, 0)
        raise located(
            pos,
            "json_syntax",
            "a finite number or null",
            f"{error.args[0]} is not valid JSON; write null (or a number) instead",
        ) from None
    except json.JSONDecodeError as error:
        cause, pos = explain_json_error(error.msg, text, error.pos, at_end=at_end)
        if error.msg.startswith("Extra data"):
            cause = "a second JSON value starts here, but the text holds exactly one value"
        raise located(pos, "json_syntax", "valid JSON", cause) from None
    problem = value_problem_at(value)
    if problem is not None:
        where = problem.where()
        raise ImportFileError(
            RowError(
                line=None,
                field=where,
                code=problem.code,
                expected="text without NUL or unpaired surrogates, numbers JSON can store",
                found="",
                message=f"{where} {problem.words}",
            )
        )
    return value


# -- the readers ---------------------------------------------------------------------------


class RecordReader:
    """Iterate ``RawRecord`` from one file; see the module docstring for the guarantees.

    After iteration (complete or not) call ``finish()``: it hashes any unread bytes so that
    ``sha256`` and ``bytes_read`` describe the whole file. ``columns`` is the CSV header;
    ``wrapper_key`` the key of a wrapping object whose array was read (``metadata`` its other
    keys). ``fmt`` None detects the format from ``filename`` and the first 64 KiB.
    ``array_key`` names the key of a top-level object whose array holds the records (default:
    the first of ``WRAPPER_KEYS`` whose value is an array). ``header_check(columns)`` may
    return errors that stop reading a CSV right after its header.

    Two CSV leniencies, off by default (the engine's imports want every cell accounted for):
    ``unnamed_columns="ignore"`` drops columns whose header cell is blank (pandas writes its
    index column that way) instead of refusing the header; ``pad_short_rows`` reads a row with
    fewer cells than the header as if the missing trailing cells were empty (a row with more
    cells is still an error).
    """

    def __init__(
        self,
        fileobj: IO[bytes],
        *,
        fmt: str | None = None,
        filename: str | None = None,
        array_key: str | None = None,
        header_check: Callable[[list[str]], list[RowError]] | None = None,
        chunk_size: int = CHUNK_SIZE,
        unnamed_columns: str = "reject",
        pad_short_rows: bool = False,
    ) -> None:
        if unnamed_columns not in ("reject", "ignore"):
            raise ValueError(
                f"unnamed_columns must be 'reject' or 'ignore', not {unnamed_columns!r}"
            )
        self._source = HashingReader(fileobj)
        self.fmt = fmt or detect_format(filename, self._source.peek(SNIFF_SIZE))
        if self.fmt not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, not {self.fmt!r}")
        self.array_key = array_key
        self.header_check = header_check
        self.chunk_size = chunk_size
        self.unnamed_columns = unnamed_columns
        self.pad_short_rows = pad_short_rows
        self.columns: list[str] = []
        self.wrapper_key: str | None = None
        self.metadata: dict[str, Any] = {}

    @property
    def sha256(self) -> str:
        return self._source.sha256

    @property
    def bytes_read(self) -> int:
        return self._source.bytes_read

    def finish(self) -> None:
        self._source.drain()

    def __iter__(self) -> Iterator[RawRecord]:
        if self.fmt == "csv":
            return self._read_csv()
        if self.fmt == "jsonl":
            return self._read_jsonl()
        return _JsonArrayReader(self).records()

    # JSON Lines ----------------------------------------------------------------------------

    def _read_jsonl(self) -> Iterator[RawRecord]:
        seen_content = False
        for line_number, line in enumerate(_text_lines(self._source), start=1):
            stripped = line.strip()
            if not stripped:
                continue
            # Deeper than MAX_DEPTH needs more opening brackets than that (counted in C,
            # strings included): only then is the line scanned token by token.
            deep = (
                nesting_position(stripped)
                if stripped.count("[") + stripped.count("{") > MAX_DEPTH
                else None
            )
            if deep is not None:
                column = line.index(stripped) + deep + 1
                yield RawRecord(
                    None,
                    line_number,
                    error=RowError(
                        line=line_number,
                        column=column,
                        code="too_deep",
                        expected=f"at most {MAX_DEPTH} levels of nesting",
                        found=_snippet(stripped, deep),
                        message=f"line {line_number}, column {column}: {_TOO_DEEP}.",
                    ),
                )
                seen_content = True
                continue
            try:
                value = _decode_line(stripped)
            except _NonFiniteNumber as problem:
                yield RawRecord(
                    None, line_number, error=_jsonl_non_finite(line, line_number, problem)
                )
            except json.JSONDecodeError as problem:
                if not seen_content and stripped in ("[", "{"):
                    raise ImportFileError(
                        RowError(
                            line=line_number,
                            column=line.index(stripped) + 1,
                            code="json_syntax",
                            expected="one JSON object per line",
                            found=repr(stripped),
                            message=(
                                f"line {line_number}: this file looks like one JSON document "
                                f"spread over many lines, not JSON Lines (one complete object "
                                f"per line); import it as JSON (.json) instead."
                            ),
                        )
                    ) from None
                yield RawRecord(None, line_number, error=_jsonl_syntax(line, line_number, problem))
            else:
                yield RawRecord(value, line_number)
            seen_content = True

    # CSV -----------------------------------------------------------------------------------

    def _read_csv(self) -> Iterator[RawRecord]:
        lines = _text_lines(self._source)
        first = next(lines, None)
        if first is None or not first.strip():
            raise ImportFileError(
                RowError(
                    line=1,
                    code="empty_file",
                    message="line 1: the file is empty or its first line is blank; the first "
                    "line of a CSV file must name the columns.",
                )
            )
        delimiter = guess_delimiter(first)
        chained = _chain_first(first, lines)
        previous_limit = csv.field_size_limit(CSV_FIELD_LIMIT)
        try:
            reader = csv.reader(chained, delimiter=delimiter, strict=True)
            header = self._read_csv_header(reader)
            self.columns = header
            problems = self.header_check(header) if self.header_check else []
            if problems:
                raise ImportFileError(*problems)
            width = len(header)
            unnamed = "" in header
            while True:
                start_line = reader.line_num + 1
                try:
                    cells = next(reader)
                except StopIteration:
                    return
                except csv.Error as problem:
                    raise ImportFileError(
                        _csv_error(problem, start_line, reader.line_num)
                    ) from None
                if not cells or (len(cells) == 1 and not cells[0].strip() and width > 1):
                    continue
                if len(cells) < width and self.pad_short_rows:
                    cells += [""] * (width - len(cells))
                if len(cells) != width:
                    yield RawRecord(
                        None,
                        start_line,
                        text_values=True,
                        error=_csv_width_error(cells, width, start_line, delimiter),
                    )
                    continue
                data = dict(zip(header, cells, strict=True))
                if unnamed:
                    del data[""]
                yield RawRecord(data, start_line, text_values=True)
        finally:
            csv.field_size_limit(previous_limit)

    def _read_csv_header(self, reader: Any) -> list[str]:
        try:
            header = next(reader)
        except csv.Error as problem:
            raise ImportFileError(_csv_error(problem, 1, reader.line_num)) from None
        names = [name.strip() for name in header]
        seen: dict[str, int] = {}
        for position, name in enumerate(names, start=1):
            if not name and self.unnamed_columns == "ignore":
                continue
            if not name:
                raise ImportFileError(
                    RowError(
                        line=1,
                        code="csv_header",
                        expected="a name for every column",
                        found=repr(header),
                        message=(
                            f"line 1: column {position} of the header has no name; every "
                            f"column needs a name (or delete the empty column)."
                        ),
                    )
                )
            key = name.casefold()
            if key in seen:
                raise ImportFileError(
                    RowError(
                        line=1,
                        field=name,
                        code="csv_header",
                        expected="distinct column names",
                        found=repr(name),
                        message=(
                            f'line 1: the column name "{name}" appears twice (columns '
                            f"{seen[key]} and {position}); rename or remove one of them."
                        ),
                    )
                )
            seen[key] = position
        return names


def _chain_first(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


def guess_delimiter(header_line: str) -> str:
    """Comma unless the header has more semicolons or tabs than commas (outside quotes). The
    one delimiter rule of the project: ``ratings.explica`` uses it for ExpliCa's files too."""
    unquoted = re.sub(r'"[^"]*"', "", header_line)
    counts = {delimiter: unquoted.count(delimiter) for delimiter in (",", ";", "\t")}
    best = max(counts, key=lambda delimiter: counts[delimiter])
    return best if counts[best] > counts[","] else ","


def _csv_error(problem: csv.Error, start_line: int, current_line: int) -> RowError:
    reason = str(problem)
    if "unexpected end of data" in reason or "field larger than field limit" in reason:
        message = (
            f"line {start_line}: a quoted cell in the row starting here is never closed "
            f"(reading reached line {current_line} without finding its closing double quote); "
            f"add the missing quote."
        )
    elif "expected after" in reason:
        message = (
            f"line {current_line}: a double quote inside a quoted cell is not doubled; inside "
            f'quotes write "" for a literal quote (CSV: {reason}).'
        )
    elif "new-line character" in reason:
        message = (
            f"line {current_line}: a carriage return (\\r) the CSV reader cannot place: a cell "
            f"holds a line break without being quoted, or the file uses old Mac line endings "
            f"(\\r alone); quote the cell, or save the file with Windows or Unix line endings."
        )
    else:
        message = f"line {current_line}: the CSV cannot be read ({reason})."
    return RowError(
        line=start_line if "never closed" in message else current_line,
        code="csv_syntax",
        found=reason,
        message=message,
    )


def _csv_width_error(cells: list[str], width: int, line: int, delimiter: str) -> RowError:
    shown = {",": "comma", ";": "semicolon", "\t": "tab"}[delimiter]
    if len(cells) > width:
        advice = f"a cell probably contains an unquoted {shown}; put that cell in double quotes"
    else:
        advice = "fill in the missing cells (empty ones are fine) or check for a stray quote"
    return RowError(
        line=line,
        code="csv_cells",
        expected=f"{width} cells",
        found=f"{len(cells)} cells",
        message=f"This row has {len(cells)} cells but the header has {width} columns; {advice}.",
    )


def _jsonl_syntax(line: str, line_number: int, problem: json.JSONDecodeError) -> RowError:
    # The decoder saw the stripped line; map its position back onto the physical line.
    text = line.rstrip("\r\n")
    offset = len(text) - len(text.lstrip())
    cause, pos = explain_json_error(
        problem.msg,
        text,
        problem.pos + offset,
        at_end="the line ends (each line must hold one whole JSON object)",
    )
    if problem.msg.startswith("Extra data"):
        cause = (
            "more than one JSON value on this line (or text after the object); put each object "
            "on its own line"
        )
    column = pos + 1
    return RowError(
        line=line_number,
        column=column,
        code="json_syntax",
        expected="one JSON object",
        found=_snippet(text, pos),
        message=f"line {line_number}, column {column}: {cause}.",
    )


def _jsonl_non_finite(line: str, line_number: int, problem: _NonFiniteNumber) -> RowError:
    pos = _non_finite_position(line, 0)
    return RowError(
        line=line_number,
        column=pos + 1,
        code="json_syntax",
        expected="a finite number or null",
        found=_snippet(line.rstrip("\r\n"), pos),
        message=(
            f"line {line_number}, column {pos + 1}: {problem.args[0]} is not valid JSON; write "
            f"null (or a number) instead."
        ),
    )


class _JsonArrayReader:
    """Stream the elements of a top-level JSON array (or of the array a wrapping object holds).

    The text buffer ``self.text`` starts at absolute character ``self.base``; ``self.pos`` is
    the absolute read position. Line numbers are counted incrementally: ``_locate`` only moves
    forward, which holds because positions are requested in file order.
    """

    def __init__(self, owner: RecordReader) -> None:
        self.owner = owner
        self.source = owner._source
        self.decoder = Utf8Decoder()
        self.chunk_size = owner.chunk_size
        self.text = ""
        self.base = 0
        self.pos = 0
        self.eof = False
        self._line_cursor = 0  # absolute position up to which newlines are counted
        self._line = 1
        self._last_newline = -1  # absolute position of the last newline before the cursor
        self._base_last_newline = -1  # the same for the buffer's start

    # buffer --------------------------------------------------------------------------------

    def _fill(self, at_least: int = 0) -> bool:
        """Append at least one chunk (or ``at_least`` bytes) of text; False at end of file."""
        if self.eof:
            return False
        self._compact()
        wanted = max(self.chunk_size, at_least)
        data = self.source.read(wanted)
        if not data:
            self.text += self.decoder.decode(b"", final=True)
            self.eof = True
            return False
        self.text += self.decoder.decode(data)
        return True

    def _compact(self) -> None:
        # Keep a little text before the read position: error snippets and the position of a
        # comma just passed are still needed after a refill.
        drop = self.pos - self.base - _KEEP_BEHIND
        if drop > self.chunk_size and drop * 2 > len(self.text):
            new_base = self.base + drop
            self._locate(new_base)
            self._base_last_newline = self._last_newline
            self.text = self.text[drop:]
            self.base = new_base

    def _peek(self) -> str | None:
        """The next non-whitespace character (not consumed), or None at end of file."""
        while True:
            relative = self.pos - self.base
            text = self.text
            while relative < len(text) and text[relative] in _WHITESPACE:
                relative += 1
            self.pos = self.base + relative
            if relative < len(text):
                return text[relative]
            if not self._fill():
                return None

    def _locate(self, absolute: int) -> tuple[int, int]:
        """(line, column), both 1-based, of absolute character position ``absolute``.

        Counting is incremental from the last position asked for; going back is allowed within
        the buffer (it holds at least ``_KEEP_BEHIND`` characters before the read position).
        """
        absolute = max(absolute, self.base)
        cursor = self._line_cursor
        if absolute > cursor:
            segment = self.text[cursor - self.base : absolute - self.base]
            newlines = count_line_ends(segment)
            if newlines:
                self._line += newlines
                self._last_newline = cursor + last_line_end(segment)
        elif absolute < cursor:
            relative = absolute - self.base
            self._line -= count_line_ends(self.text, relative, cursor - self.base)
            newline = last_line_end(self.text, 0, relative)
            self._last_newline = self.base + newline if newline >= 0 else self._base_last_newline
        self._line_cursor = absolute
        return self._line, absolute - self._last_newline

    def _decode_value(self) -> Any:
        """Decode one JSON value starting at ``self.pos`` (after ``_peek``) and move past it."""
        start = self.pos
        while True:
            relative = start - self.base
            deep = nesting_position(self.text, relative)
            if deep is not None:
                self._raise(
                    self.base + deep,
                    _TOO_DEEP,
                    f"at most {MAX_DEPTH} levels of nesting",
                    "too_deep",
                )
            try:
                value, end = _DECODER.raw_decode(self.text, relative)
            except _NonFiniteNumber as problem:
                at = self.base + _non_finite_position(self.text, relative)
                self._raise(
                    at,
                    f"{problem.args[0]} is not valid JSON; write null (or a number) instead",
                    "a finite number or null",
                )
            except json.JSONDecodeError as problem:
                near_end = problem.pos >= len(self.text) - 32
                if not self.eof and (near_end or problem.msg.startswith("Unterminated string")):
                    # Possibly just the end of the buffer: read more (doubling) and retry.
                    self._fill(len(self.text) - relative)
                    continue
                cause, at = explain_json_error(
                    problem.msg, self.text, problem.pos, at_end="the file ends"
                )
                self._raise(self.base + at, cause, "valid JSON")
            else:
                if end == len(self.text) and not self.eof and self._fill():
                    continue  # a number at the very end of the buffer may go on
                self.pos = self.base + end
                return value

    def _raise(
        self, absolute: int, cause: str, expected: str, code: str = "json_syntax"
    ) -> NoReturn:
        line, column = self._locate(absolute)
        raise ImportFileError(
            RowError(
                line=line,
                column=column,
                code=code,
                expected=expected,
                found=_snippet(self.text, absolute - self.base),
                message=f"line {line}, column {column}: {cause}.",
            )
        )

    def _expect(self, char: str) -> None:
        if self._peek() != char:
            raise AssertionError(f"expected {char!r}")  # callers peek first
        self.pos += 1

    # grammar -------------------------------------------------------------------------------

    def records(self) -> Iterator[RawRecord]:
        first = self._peek()
        if first is None:
            raise ImportFileError(
                RowError(
                    line=1,
                    code="empty_file",
                    message="line 1: the file is empty; a JSON import needs a list of objects "
                    "([{...}, {...}]).",
                )
            )
        if first == "[":
            yield from self._array_elements()
        elif first == "{":
            yield from self._object()
        else:
            start = self.pos
            self._decode_value()
            line, column = self._locate(start)
            raise ImportFileError(
                RowError(
                    line=line,
                    column=column,
                    code="not_an_object",
                    expected="a list of objects ([{...}, {...}])",
                    found=_snippet(self.text, start - self.base),
                    message=(
                        f"line {line}, column {column}: the file holds a single plain value; "
                        f"a JSON import needs a list of objects ([{{...}}, {{...}}])."
                    ),
                )
            )
        self._expect_end()

    def _array_elements(self) -> Iterator[RawRecord]:
        open_at = self.pos
        self._expect("[")
        if self._peek() == "]":
            self.pos += 1
            return
        index = 0
        while True:
            start = self.pos
            line, column = self._locate(start)
            try:
                value = self._decode_value()
            except ImportFileError as problem:
                raise ImportFileError(
                    replace(
                        problem.error,
                        index=index,
                        message=problem.error.message.removesuffix(".")
                        + f" (in element {index}, which starts on line {line}).",
                    )
                ) from None
            yield RawRecord(value, line, index=index, column=column)
            index += 1
            end_line, _ = self._locate(self.pos)
            char = self._peek()
            if char == ",":
                comma = self.pos
                self.pos += 1
                following = self._peek()
                if following == "]":
                    self._raise(
                        comma,
                        f"trailing comma: the ',' after element {index - 1} has nothing after "
                        f"it before the list's closing ']'; remove that comma",
                        "another element or ']'",
                    )
                if following is None:
                    self._truncated(open_at, index)
                continue
            if char == "]":
                self.pos += 1
                return
            if char is None:
                self._truncated(open_at, index)
            if char in '{["' or char.isdigit() or char == "-":
                self._raise(
                    self.pos,
                    f"a comma is missing between element {index - 1} (ending on line "
                    f"{end_line}) and element {index}; add ',' after the previous element",
                    "',' or ']'",
                )
            self._raise(
                self.pos,
                f"unexpected character {char!r} after element {index - 1}; expected ',' "
                f"before the next element or ']' to close the list",
                "',' or ']'",
            )

    def _truncated(self, open_at: int, complete: int) -> NoReturn:
        open_line, _ = self._locate(open_at)
        self._raise(
            self.base + len(self.text),
            f"the file ends before the list opened on line {open_line} is closed with ']' "
            f"({complete} complete elements were read); the file looks cut off (truncated)",
            "']'",
        )

    def _object(self) -> Iterator[RawRecord]:
        """A top-level object: stream its wrapped array, or yield it as the only record."""
        start = self.pos
        start_line, start_column = self._locate(start)
        self._expect("{")
        members: dict[str, Any] = {}
        wrapper: str | None = None
        char = self._peek()
        if char == "}":
            self.pos += 1
        while char != "}":
            if char != '"':
                self._explain_here("Expecting property name enclosed in double quotes")
            key = self._decode_value()
            if self._peek() != ":":
                self._explain_here("Expecting ':' delimiter")
            self.pos += 1
            char = self._peek()
            if wrapper is None and char == "[" and self._is_wrapper_key(key):
                wrapper = key
                self.owner.wrapper_key = key
                yield from self._array_elements()
            else:
                if char is None:
                    self._explain_here("Expecting value")
                members[key] = self._decode_value()
            char = self._peek()
            if char == ",":
                self.pos += 1
                char = self._peek()
                if char == "}":
                    self._explain_here("Expecting property name enclosed in double quotes")
                continue
            if char == "}":
                self.pos += 1
                break
            self._explain_here("Expecting ',' delimiter")
        if wrapper is not None:
            self.owner.metadata = members
            return
        if self.owner.array_key is not None:
            raise ImportFileError(
                RowError(
                    line=start_line,
                    column=start_column,
                    code="json_syntax",
                    expected=f'a key "{self.owner.array_key}" holding a list',
                    found=repr(sorted(members)[:10]),
                    message=(
                        f'line {start_line}: the top-level object has no key "'
                        f'{self.owner.array_key}" holding a list of records.'
                    ),
                )
            )
        yield RawRecord(members, start_line, index=0, column=start_column)

    def _is_wrapper_key(self, key: str) -> bool:
        if self.owner.array_key is not None:
            return key == self.owner.array_key
        return key.strip().casefold() in WRAPPER_KEYS

    def _explain_here(self, msg: str) -> None:
        """Raise the error the standard decoder would give at the current position."""
        relative = self.pos - self.base
        cause, at = explain_json_error(msg, self.text, relative, at_end="the file ends")
        self._raise(self.base + at, cause, "valid JSON")

    def _expect_end(self) -> None:
        value_end_line, _ = self._locate(self.pos)
        char = self._peek()
        if char is None:
            return
        line, column = self._locate(self.pos)
        hint = (
            "the file looks like JSON Lines (one object per line): give it the .jsonl extension "
            "or import it as JSON Lines"
            if column == 1 and line == value_end_line + 1 and value_end_line == 1
            else "it looks like several JSON values written one after another: put them inside "
            "[ ] with a comma between them, or save one object per line as JSON Lines (.jsonl)"
        )
        self._raise(
            self.pos,
            f"a second JSON value starts here, after the first one ended on line "
            f"{value_end_line}, but a JSON file holds exactly one value; {hint}",
            "end of file",
        )
