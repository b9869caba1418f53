"""Shape and size checks for what people send: annotation payloads, client info, free text.

Every write service that stores text or JSON from a request calls these first, so bad input is a
400 that names the field, never a 500 from the database and never a row of unbounded size.

What the database cannot store at all (NUL, which PostgreSQL refuses in text and JSON; an
unpaired surrogate, which is not Unicode and cannot be encoded; a number JSON cannot hold) is
one rule for every path into the database, ``annotation.values`` (a Django-free module with
no imports of its own, shared with the importers and the API's parser); these checks apply it
first and name the value's path (``payload.notes[1]``). The rest is this module's own: no
control characters in text people type, payloads nested at most ``MAX_DEPTH`` levels and of
bounded size.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from annotation.errors import ApplicationError
from annotation.values import NestingTooDeep, loads, text_problem, value_problem_at

MAX_PAYLOAD_BYTES = 64 * 1024
MAX_CLIENT_INFO_BYTES = 4 * 1024
MAX_DEPTH = 8
#: Control characters that have no place in text people type (tab, newline and CR do).
_FORBIDDEN = {chr(code) for code in range(32)} - {"\t", "\n", "\r"}


def clean_text(value: Any, *, field: str, max_length: int) -> str:
    """A piece of free text (a reason, a comment), stripped; ApplicationError naming `field`
    when it is not text, too long or holds control characters."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApplicationError(f"The {field} must be text.", {field: "expected text"})
    if any(character in _FORBIDDEN for character in value):
        raise ApplicationError(
            f"The {field} contains an invisible control character; remove it and try again.",
            {field: "control character"},
        )
    problem = text_problem(value)
    if problem:
        raise ApplicationError(
            f"The {field} holds {problem}; remove it and try again.", {field: "invalid text"}
        )
    value = value.strip()
    if len(value) > max_length:
        raise ApplicationError(
            f"The {field} is {len(value)} characters; at most {max_length} are allowed.",
            {field: f"at most {max_length} characters"},
        )
    return value


def check_payload(payload: Any) -> Mapping[str, Any]:
    """An annotation payload: a JSON object of at most MAX_PAYLOAD_BYTES, nested at most
    MAX_DEPTH deep, with no control characters in its keys or strings."""
    if not isinstance(payload, Mapping):
        raise ApplicationError("The payload must be a JSON object.", {"payload": "expected {}"})
    _check_json(payload, field="payload", max_bytes=MAX_PAYLOAD_BYTES)
    return payload


def clean_client_info(value: Any) -> dict[str, Any]:
    """What a client says about itself: an object of at most MAX_CLIENT_INFO_BYTES."""
    if value in (None, ""):
        return {}
    if not isinstance(value, Mapping):
        raise ApplicationError(
            'client_info must be a JSON object (e.g. {"app": "my-script 1.2"}).',
            {"client_info": "expected {}"},
        )
    _check_json(value, field="client_info", max_bytes=MAX_CLIENT_INFO_BYTES)
    return dict(value)


def check_storable(value: Any, *, field: str, root: str = "") -> None:
    """ApplicationError unless every string, key and number in ``value`` is one the database
    can store (``annotation.values.value_problem_at``); the message names the value's path
    under ``root`` (``payload.notes[1]``), ``extra`` the top-level field a person filled in."""
    problem = value_problem_at(value)
    if problem is not None:
        named = str(problem.path[0]) if problem.path else field
        raise ApplicationError(
            f"The {field} cannot be stored: {problem.where(root)} {problem.words}.",
            {named: problem.code},
        )


def _check_json(value: Any, *, field: str, max_bytes: int) -> None:
    # What cannot be stored comes first: sizing the value encodes it, which an unpaired
    # surrogate would stop with an exception.
    check_storable(value, field=field, root=field)
    _walk(value, field=field, top=True, depth=0)
    size = len(json.dumps(value, ensure_ascii=False, default=str).encode())
    if size > max_bytes:
        raise ApplicationError(
            f"The {field} is {size:,} bytes; at most {max_bytes:,} are allowed.",
            {field: f"at most {max_bytes} bytes"},
        )


def _walk(value: Any, *, field: str, top: bool, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ApplicationError(
            f"The {field} is nested more than {MAX_DEPTH} levels deep.", {field: "too deep"}
        )
    if isinstance(value, str):
        if any(character in _FORBIDDEN for character in value):
            raise ApplicationError(
                f"The {field} contains an invisible control character; remove it and try again.",
                {field: "control character"},
            )
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if any(character in _FORBIDDEN for character in str(key)):
                raise ApplicationError(
                    f"A field name in the {field} contains an invisible control character.",
                    {field: "control character in a field name"},
                )
            # Name the top-level field a person filled in (the comment, say) when it is at fault.
            _walk(item, field=str(key) if top else field, top=False, depth=depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _walk(item, field=field, top=False, depth=depth + 1)


def choices_keeping(options: Sequence[tuple[str, str]], *values: str) -> list[tuple[str, str]]:
    """The (value, text) options of an edit form's choice, plus every one of ``values`` (the
    stored value, what was posted) that they lack, marked "(not in the list)" — "— (none)" for
    an empty one. An edit form never drops or blanks a value it cannot show: a browser submits
    a select's first option when none is selected, so a value missing from the options would
    be replaced silently on the next save. The services that take the edit keep such a value
    when it comes back unchanged (review.causalt5k.kinds.clean_edits,
    review.meter.entries.clean_questions)."""
    choices = list(options)
    known = {value for value, _ in choices}
    for value in values:
        if value not in known:
            choices.append((value, f"{value} (not in the list)" if value else "— (none)"))
            known.add(value)
    return choices


class StorableJSONDecoder(json.JSONDecoder):
    """The decoder of JSON typed into a form (the Django admin's JSON fields): the one parser's
    nesting limit and the one rule for values the database can store
    (``annotation.values``), reported as ``json.JSONDecodeError`` so that a form shows
    "Enter a valid JSON." with the reason instead of a 500 (``RecursionError`` on deep text, an
    encoding or database error on NUL or an unpaired surrogate)."""

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        try:
            value = loads(s)
        except NestingTooDeep as error:
            raise json.JSONDecodeError(str(error), s, error.pos) from None
        problem = value_problem_at(value)
        if problem is not None:
            raise json.JSONDecodeError(f"{problem.where('value')} {problem.words}", s, 0)
        return value
