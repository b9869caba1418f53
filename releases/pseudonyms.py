"""Rater pseudonyms of a release: ``R0001``, ``R0002``… for people and ``E0001``… for imported
(external) raters, each numbered in the order of their first exported annotation (the smallest
annotation id among the exported rows). Pseudonyms are stable within one release; identities
never leave the database.

One rule, spelled once in Python and once in SQL: ``RaterPseudonyms`` numbers raters as the
Python writer meets them (rows in id order) and ``pseudonym`` spells a number; the COPY export
(``releases.copy_export``) numbers them with ``row_number()`` over each rater's smallest id and
spells them with ``pseudonym_sql``. tests/releases/test_copy_export.py checks that both give the
same numbering.
"""

from __future__ import annotations

PERSON_PREFIX = "R"
EXTERNAL_PREFIX = "E"


def pseudonym(*, person: bool, number: int) -> str:
    """The pseudonym of the ``number``-th (from 1) person or external rater: a prefix and at
    least four digits (``R0001``, ``E12345``)."""
    return f"{PERSON_PREFIX if person else EXTERNAL_PREFIX}{number:04d}"


def pseudonym_sql(*, person: str, number: str) -> str:
    """SQL text of ``pseudonym``: ``person`` is an SQL boolean expression, ``number`` an SQL
    integer expression."""
    return (
        f"(CASE WHEN {person} THEN '{PERSON_PREFIX}' ELSE '{EXTERNAL_PREFIX}' END"
        f" || lpad(({number})::text, greatest(4, length(({number})::text)), '0'))"
    )


class RaterPseudonyms:
    """Numbers raters in the order they are first met: call it with each exported annotation's
    (annotator id, external rater name), in annotation id order."""

    def __init__(self) -> None:
        self._people: dict[int, str] = {}
        self._external: dict[str, str] = {}

    def __call__(self, annotator_id: int | None, external_rater: str) -> str:
        if annotator_id is not None:
            code = self._people.get(annotator_id)
            if code is None:
                code = pseudonym(person=True, number=len(self._people) + 1)
                self._people[annotator_id] = code
            return code
        code = self._external.get(external_rater)
        if code is None:
            code = pseudonym(person=False, number=len(self._external) + 1)
            self._external[external_rater] = code
        return code
