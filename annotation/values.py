"""What an imported value may be: the limits every importer applies before anything is stored.

Pure Python, no Django and no import of any app (annotation/__init__.py is empty, so importing it
loads nothing else): the engine's input checks (annotation/inputs.py), the import core's readers
and schemas (imports/core/), the API's parser and the plug-ins' own readers all call it, so it
lives at the bottom of the map, in the engine, and is one of the engine's public modules.

* JSON is nested at most ``MAX_DEPTH`` levels (a record counts as one). Deeper text is refused
  before the decoder sees it: the standard decoder recurses once per level and would stop with
  a ``RecursionError`` somewhere near a thousand.
* A JSON number Python cannot hold as it is (an integer of more than ``MAX_INT_DIGITS``
  digits, Python's own limit for converting text; a float beyond ±1.8e308, such as 1e400,
  which would silently become infinity) is decoded as an ``InvalidNumber`` holding its text, so
  that the schema can report it against its field instead of the decoder raising.
* Text holding NUL (PostgreSQL refuses it in text and JSON) or an unpaired surrogate (not
  Unicode: it cannot be encoded as UTF-8) is refused, naming the character and its position.
* ``value_problem_at(value)`` finds the first such value inside a decoded document and names
  where it is (``path_text``: ``payload.notes[1]``), so every entry point (the readers, the
  API's parser in api/parsers.py, the engine's input checks in annotation/inputs.py, the
  graphs and narratives uploads) refuses the same things in the same words.
* ``shown(text)`` is text fit to echo in a message: control characters, surrogates and
  bidirectional overrides written as escapes, so a message never rings a terminal, hides its
  own end or carries a NUL into the database.

The standard decoder stays (not ijson): ijson is no dependency here, and every JSON message of
the readers is built on the positions the standard decoder reports (``explain_json_error``);
the readers already stream an array one element at a time with ``raw_decode``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 64
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300
# Integers Python can always write as text: a little under MAX_INT_DIGITS decimal digits.
_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.3)

# A JSON string (its escapes included), a bracket, or a quote that opens a string not closed
# within the text scanned so far.
_NESTING_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|"', re.DOTALL)
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPED = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class InvalidNumber:
    """A JSON number literal no Python number holds as written (see the module docstring)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def describe(self) -> str:
        digits = sum(char.isdigit() for char in self.text)
        if digits > MAX_INT_DIGITS:
            return f"a number of {digits:,} digits (at most {MAX_INT_DIGITS:,} are read)"
        return f"the number {shown(self.text, 40)}, too large for a decimal number"

    def __repr__(self) -> str:
        return shown(self.text, 40)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InvalidNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


class NestingTooDeep(ValueError):
    """JSON text nested more than ``MAX_DEPTH`` levels; ``pos`` is where the limit is passed."""

    def __init__(self, pos: int) -> None:
        super().__init__(f"nested more than {MAX_DEPTH} levels deep")
        self.pos = pos


def parse_int(text: str) -> int | InvalidNumber:
    """``parse_int`` hook of the JSON decoder: long integers become ``InvalidNumber``."""
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        return InvalidNumber(text)
    return int(text)


def parse_float(text: str) -> float | InvalidNumber:
    """``parse_float`` hook of the JSON decoder: numbers beyond a float's range become
    ``InvalidNumber`` (never infinity)."""
    number = float(text)
    if not math.isfinite(number):
        return InvalidNumber(text)
    return number


def nesting_position(text: str, start: int = 0, limit: int = MAX_DEPTH) -> int | None:
    """Where the JSON value starting at ``text[start]`` goes deeper than ``limit`` levels, or
    None (also when it ends first, or when the text ends inside a string: the decoder then
    reports that, or asks for more text).

    Scans only the value: it stops where the value's outermost bracket closes."""
    if start >= len(text) or text[start] not in "[{":
        return None
    depth = 0
    for match in _NESTING_TOKEN.finditer(text, start):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return match.start()
        elif token in "]}":
            depth -= 1
            if depth <= 0:
                return None
        elif token == '"':
            return None
    return None


def decoder(**hooks: Any) -> json.JSONDecoder:
    """A standard JSON decoder with the number hooks above (and any others given)."""
    return json.JSONDecoder(parse_int=parse_int, parse_float=parse_float, **hooks)


_LOADS = decoder()


def loads(text: str, **hooks: Any) -> Any:
    """``json.loads`` within the limits, the one JSON parser for text from outside: raises
    ``NestingTooDeep`` (a ``ValueError``) for deep text and ``json.JSONDecodeError`` for bad
    syntax (its ``pos`` counted in ``text``); long numbers become ``InvalidNumber``. ``hooks``
    are further decoder hooks (``parse_constant``, ``object_pairs_hook``).

    It does not check the values: ``value_problem_at`` does (``imports.core.readers.
    read_json_document`` does both, with messages naming where)."""
    stripped = text.lstrip()
    offset = len(text) - len(stripped)
    deep = nesting_position(stripped)
    if deep is not None:
        raise NestingTooDeep(deep + offset)
    try:
        return (decoder(**hooks) if hooks else _LOADS).decode(stripped)
    except json.JSONDecodeError as error:
        raise json.JSONDecodeError(error.msg, text, error.pos + offset) from None
    except RecursionError:  # cannot happen below MAX_DEPTH; kept so it never becomes a 500
        raise NestingTooDeep(offset) from None


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored (NUL, an unpaired surrogate), in words, or None."""
    bad = _BAD_TEXT.search(text)
    if bad is None:
        return None
    char, at = bad.group(), bad.start() + 1
    if char == "\x00":
        return f"a NUL character (U+0000) at character {at}"
    return (
        f"an unpaired surrogate (U+{ord(char):04X}) at character {at}, which is not valid "
        f"Unicode (a \\u escape of half a character?)"
    )


@dataclass(frozen=True)
class ValueProblem:
    """Why a decoded value cannot be stored: ``code`` (``invalid_text``, ``invalid_number``,
    ``too_deep``), ``words`` (starting with a verb: "holds a NUL character …") and ``path``, the
    keys and indexes leading to the value from the document's top."""

    code: str
    words: str
    path: tuple[str | int, ...] = ()

    def where(self, root: str = "") -> str:
        """The path as text under ``root`` (see ``path_text``)."""
        return path_text(self.path, root)


def path_text(path: Sequence[str | int], root: str = "") -> str:
    """``("notes", 1)`` under ``"payload"`` as ``payload.notes[1]``; a key that is not a plain
    name is quoted (``payload["a b"]``), with control characters escaped (``shown``)."""
    text = root
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += "[" + shown(json.dumps(part, ensure_ascii=False), 60) + "]"
    return text or "the top level"


def value_problem_at(value: Any, depth: int = 1) -> ValueProblem | None:
    """The first value inside ``value`` that cannot be stored, with where it is, or None.

    Checks every nested string, key and number: NUL and unpaired surrogates (code
    ``invalid_text``), ``InvalidNumber`` and non-finite floats (``invalid_number``), nesting
    beyond ``MAX_DEPTH`` (``too_deep``; ``depth`` is the value's own level). Iterative, so that
    any depth is safe to check; values are visited in document order. A bad key is reported at
    the object that holds it."""
    # Each entry links to its parent's (parent link, key), so a path is built only when needed.
    stack: list[tuple[Any, int, _Link]] = [(value, depth, None)]
    while stack:
        current, level, link = stack.pop()
        found: tuple[str, str] | None = None
        if isinstance(current, str):
            problem = text_problem(current)
            if problem:
                found = ("invalid_text", f"holds {problem}")
        elif isinstance(current, InvalidNumber):
            found = ("invalid_number", f"holds {current.describe()}")
        elif isinstance(current, float) and not math.isfinite(current):
            found = ("invalid_number", f"holds {current!r}, which is not a number JSON can store")
        elif isinstance(current, int) and not isinstance(current, bool):
            if current.bit_length() > _MAX_INT_BITS:
                found = (
                    "invalid_number",
                    f"holds a number of about {MAX_INT_DIGITS:,} digits or more",
                )
        elif isinstance(current, Mapping | list | tuple):
            if level > MAX_DEPTH:
                found = ("too_deep", f"is nested more than {MAX_DEPTH} levels deep")
            elif isinstance(current, Mapping):
                children = []
                for key, item in current.items():
                    problem = text_problem(key) if isinstance(key, str) else None
                    if problem:
                        found = ("invalid_text", f"has a field name holding {problem}")
                        break
                    children.append((item, level + 1, (link, str(key))))
                stack.extend(reversed(children))
            else:
                stack.extend(
                    (current[index], level + 1, (link, index))
                    for index in range(len(current) - 1, -1, -1)
                )
        if found is not None:
            return ValueProblem(found[0], found[1], _path(link))
    return None


_Link = tuple[Any, str | int] | None


def _path(link: _Link) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    while link is not None:
        link, key = link
        parts.append(key)
    return tuple(reversed(parts))


def value_problem(value: Any, depth: int = 1) -> tuple[str, str] | None:
    """``value_problem_at`` without the path: ``(code, words)``, or None."""
    problem = value_problem_at(value, depth)
    return None if problem is None else (problem.code, problem.words)


def shown(text: str, limit: int | None = None) -> str:
    """``text`` safe to echo in a message: control characters, surrogates and bidirectional
    controls escaped (``\\x1b``, ``\\ud800``, ``\\u202e``); cut to ``limit`` characters with an
    ellipsis when given."""
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return _ESCAPED.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
