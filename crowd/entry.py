"""What a platform sends with a participant to the study URL, checked before anything is
written (a bad or forged entry is a 400 and leaves the database as it was).

- Prolific: ``?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=…`` (24-character hexadecimal ids);
- MTurk ExternalQuestion: ``?workerId=…&assignmentId=…&hitId=…&turkSubmitTo=…``, or the preview
  (``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE``);
- plain link: ``?pid=…``.

A Prolific study with ``signed_links`` also needs Prolific's signed token on the URL (the
parameter ``PROLIFIC_JWT_PARAM``), verified by crowd/signing.py before anything else happens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from django.conf import settings

from crowd.errors import BadEntry
from crowd.signing import verify_prolific_token

PROLIFIC_ID = re.compile(r"^[0-9a-f]{24}$")
MTURK_ID = re.compile(r"^[A-Z0-9]{8,64}$")
LINK_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
PROLIFIC_PARAMETERS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


__all__ = ["BadEntry", "Entry", "parse_entry"]


@dataclass(frozen=True)
class Entry:
    platform_id: str
    session_id: str = ""
    platform_study_id: str = ""
    turk_submit_to: str = ""
    preview: bool = False
    #: Prolific's signed token named this participant and verified (crowd/signing.py).
    signed: bool = False


def _field(query: Mapping[str, str], name: str, pattern: re.Pattern, what: str) -> str:
    value = (query.get(name) or "").strip()
    if not value:
        raise BadEntry(
            f"This link is missing {name}: open the study again from {what}.", {name: "required"}
        )
    if not pattern.match(value):
        raise BadEntry(
            f"This link's {name} is not one {what} gives: open the study again from {what}.",
            {name: "invalid"},
        )
    return value


def parse_entry(study, query: Mapping[str, str], *, audience: Sequence[str] = ()) -> Entry:
    """The participant's ids from the study URL's query, or BadEntry (400) naming the field.
    ``audience``: the ``aud`` values a signed token may carry (crowd.signing.audiences)."""
    if study.platform == "prolific":
        entry = Entry(
            platform_id=_field(query, "PROLIFIC_PID", PROLIFIC_ID, "Prolific"),
            platform_study_id=_field(query, "STUDY_ID", PROLIFIC_ID, "Prolific"),
            session_id=_field(query, "SESSION_ID", PROLIFIC_ID, "Prolific"),
        )
        if study.signed_links:
            verify_prolific_token(
                (query.get(settings.PROLIFIC_JWT_PARAM) or "").strip(),
                ids={name: (query.get(name) or "").strip() for name in PROLIFIC_PARAMETERS},
                audience=audience,
            )
            entry = replace(entry, signed=True)
    elif study.platform == "mturk":
        assignment = (query.get("assignmentId") or "").strip()
        if assignment == MTURK_PREVIEW:
            return Entry(platform_id="", preview=True)
        submit_to = (query.get("turkSubmitTo") or "").strip().rstrip("/")
        if submit_to not in settings.CROWD_MTURK_SUBMIT_HOSTS:
            raise BadEntry(
                "This link's turkSubmitTo is not Mechanical Turk: open the HIT again from "
                "Mechanical Turk.",
                {"turkSubmitTo": "invalid" if submit_to else "required"},
            )
        entry = Entry(
            platform_id=_field(query, "workerId", MTURK_ID, "Mechanical Turk"),
            session_id=_field(query, "assignmentId", MTURK_ID, "Mechanical Turk"),
            platform_study_id=_field(query, "hitId", MTURK_ID, "Mechanical Turk"),
            turk_submit_to=submit_to,
        )
    else:
        entry = Entry(platform_id=_field(query, "pid", LINK_ID, "the study's invitation"))
    if study.platform_study_id and entry.platform_study_id != study.platform_study_id:
        name = "STUDY_ID" if study.platform == "prolific" else "hitId"
        raise BadEntry(
            f"This link's {name} belongs to another study: open the study again from where "
            "you found it.",
            {name: "another study"},
        )
    return entry
