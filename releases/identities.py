"""People's names inside payloads, and what a release does with them: one rule per project kind,
applied to every file a release writes.

Items and answers may carry names: a case's ``author``, its reviewers in
``reviews[].reviewer`` (CausalT5k's release format), usernames of members when the author is
one. Raters are already pseudonyms (``releases.pseudonyms``); this rule covers the names found
*in payloads*. A workflow declares, under its project kind, which payload paths hold names and
the treatment (:func:`register_identities`, in its ``AppConfig.ready()``); a kind that declares
nothing gets :data:`DEFAULT`. Paths are dotted keys, ``[]`` marking a list whose elements the
rest of the path applies to: ``author``, ``reviews[].reviewer``.

Treatments:

* ``remove`` — the field is left out (a list of names is left out whole);
* ``pseudonym`` — each name becomes ``N`` and ten hex digits of SHA-256 over a per-project
  secret salt (from ``SECRET_KEY``) and the name: the same name gets the same pseudonym in every
  file and every version of a project's releases, and cannot be looked up without the secret.
  A value there that is not a string (it may hold a name in any shape) becomes null.

Spelled once in Python (:meth:`IdentityRule.apply`: ``releases.services.release_item_rows``
— items.jsonl, items.csv and every layout's ``context.items()`` — and
``release_annotation_rows``) and once in SQL (:meth:`IdentityRule.sql`: the COPY export of
annotations, ``releases.copy_export``). tests/releases/test_identities.py releases every demo
project and searches every file for every member's names, and compares the two spellings.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Treatment = Literal["remove", "pseudonym"]
NAME_PREFIX = "N"


@functools.cache
def _segments(path: str) -> list[tuple[str, bool]]:
    """("reviews", True), ("reviewer", False) for ``reviews[].reviewer``; ValueError unless
    every key is an identifier. Cached: a release applies a rule to every row (the list is
    only read)."""
    segments = []
    for part in path.split("."):
        is_list = part.endswith("[]")
        key = part[:-2] if is_list else part
        if not key.isidentifier():
            raise ValueError(f"identity path {path!r}: {part!r} is not a key (or key[])")
        segments.append((key, is_list))
    return segments


def salt_for(project: Any) -> str:
    """The project's pseudonym salt: secret (derived from ``SECRET_KEY``), stable across its
    releases."""
    from django.conf import settings

    return hashlib.sha256(f"{settings.SECRET_KEY}:identities:{project.pk}".encode()).hexdigest()


def name_pseudonym(name: str, salt: str) -> str:
    return NAME_PREFIX + hashlib.sha256((salt + name).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class IdentityRule:
    """The payload paths that hold names and what a release does with them."""

    paths: tuple[str, ...]
    treatment: Treatment = "remove"

    def __post_init__(self) -> None:
        if self.treatment not in ("remove", "pseudonym"):
            raise ValueError(f"identity treatment {self.treatment!r}: remove or pseudonym")
        for path in self.paths:
            _segments(path)

    @property
    def removed_keys(self) -> set[str]:
        """Top-level payload keys a release never has (removed whole)."""
        if self.treatment != "remove":
            return set()
        return {segments[0][0] for segments in map(_segments, self.paths) if len(segments) == 1}

    # --- Python ---

    def apply(self, payload: Any, salt: str) -> Any:
        """``payload`` with the rule applied (a new value; the argument is left unchanged)."""
        for path in self.paths:
            payload = self._apply(payload, _segments(path), salt)
        return payload

    def _name(self, value: Any, salt: str) -> Any:
        # A value that is not a string may hold a name in any shape: it becomes null.
        return name_pseudonym(value, salt) if isinstance(value, str) else None

    def _apply(self, value: Any, segments: list[tuple[str, bool]], salt: str) -> Any:
        (key, is_list), rest = segments[0], segments[1:]
        # type() first: the abstract Mapping check costs more than the rest for most rows.
        if (type(value) is not dict and not isinstance(value, Mapping)) or key not in value:
            return value
        inner = value[key]
        if rest:
            if is_list:
                if not isinstance(inner, list):
                    return value
                changed = [self._apply(element, rest, salt) for element in inner]
            else:
                changed = self._apply(inner, rest, salt)
            return {**value, key: changed}
        if self.treatment == "remove":
            return {k: v for k, v in value.items() if k != key}
        if is_list:
            if not isinstance(inner, list):
                return value
            return {**value, key: [self._name(element, salt) for element in inner]}
        return {**value, key: self._name(inner, salt)}

    # --- SQL (PostgreSQL, jsonb) ---

    def sql(self, expression: str, *, salt_param: str) -> str:
        """SQL text (jsonb) of :meth:`apply` on the jsonb expression ``expression``;
        ``salt_param`` names the bound parameter holding :func:`salt_for` (pseudonyms)."""
        for path in self.paths:
            expression = self._sql(expression, _segments(path), salt_param, depth=0)
        return expression

    def _name_sql(self, value: str, salt_param: str) -> str:
        """jsonb: a string ``value`` (jsonb) as its pseudonym, anything else as null."""
        text = f"({value} #>> '{{}}')"
        digest = f"encode(sha256(convert_to(%({salt_param})s || {text}, 'UTF8')), 'hex')"
        return (
            f"(CASE WHEN jsonb_typeof({value}) = 'string'"
            f" THEN to_jsonb('{NAME_PREFIX}' || left({digest}, 10)) ELSE 'null'::jsonb END)"
        )

    def _sql(self, value: str, segments, salt_param: str, *, depth: int) -> str:
        (key, is_list), rest = segments[0], segments[1:]
        inner = f"({value} -> '{key}')"
        is_object = f"jsonb_typeof({value}) = 'object' AND {value} ? '{key}'"
        element, number = f"e{depth}", f"n{depth}"

        def each(expression: str) -> str:
            return (
                f"coalesce((SELECT jsonb_agg({expression} ORDER BY {number})"
                f" FROM jsonb_array_elements({inner}) WITH ORDINALITY AS"
                f" t{depth}({element}, {number})), '[]'::jsonb)"
            )

        if rest:
            if is_list:
                changed = each(self._sql(element, rest, salt_param, depth=depth + 1))
                test = f"{is_object} AND jsonb_typeof({inner}) = 'array'"
            else:
                changed = self._sql(inner, rest, salt_param, depth=depth + 1)
                test = is_object
            return f"(CASE WHEN {test} THEN jsonb_set({value}, '{{{key}}}', {changed}) ELSE {value} END)"
        if self.treatment == "remove":
            return f"(CASE WHEN {is_object} THEN {value} - '{key}' ELSE {value} END)"
        if is_list:
            changed = each(self._name_sql(element, salt_param))
            test = f"{is_object} AND jsonb_typeof({inner}) = 'array'"
        else:
            changed, test = self._name_sql(inner, salt_param), is_object
        return (
            f"(CASE WHEN {test} THEN jsonb_set({value}, '{{{key}}}', {changed}) ELSE {value} END)"
        )


#: What a release does when a kind declares nothing: the names of CausalT5k-style payloads
#: (an author, reviewers) are left out.
DEFAULT = IdentityRule(paths=("author", "reviews[].reviewer"), treatment="remove")
RULES: dict[str, IdentityRule] = {}


def register_identities(kind: str, rule: IdentityRule) -> None:
    """Declare the payload paths holding names of a project kind and their treatment (replaces
    an earlier declaration and the default)."""
    RULES[kind] = rule


def identity_rule(kind: str) -> IdentityRule:
    """The rule every file of a release of a project of ``kind`` applies."""
    return RULES.get(kind, DEFAULT)
