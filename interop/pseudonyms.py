"""The one rule naming a person of another tool inside Rungwise: their tool's user id (a number,
a user name, an e-mail) never stored, only a keyed hash of it.

``rater_pseudonym`` is the project's identity pseudonym (``releases.identities``: SHA-256 over a
per-project secret salt and the name) of ``<tool>:<user id>``, prefixed with the tool: the same
person gets the same rater in every import into the project (so agreement sees one rater
across files), and the id cannot be looked up without the site's secret.
"""

from __future__ import annotations

from annotation.models import Project
from releases.identities import name_pseudonym, salt_for

PREFIXES = {"label_studio": "ls-", "potato": "potato-"}


def rater_pseudonym(project: Project, *, tool: str, user_id: str) -> str:
    """The external rater stored for ``user_id`` of ``tool`` in ``project`` ("" stays "": an
    answer without a person)."""
    if not user_id:
        return ""
    return PREFIXES.get(tool, f"{tool}-") + name_pseudonym(f"{tool}:{user_id}", salt_for(project))
