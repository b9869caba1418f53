"""The crowd app's refusals of an entry, apart from the modules that raise them: the study
URL's parser (crowd/entry.py) and the signed-link check (crowd/signing.py) both raise
``BadEntry``, and the parser calls the check, so the error lives below both of them (no
import cycle between the two)."""

from __future__ import annotations

from annotation.errors import ApplicationError


class BadEntry(ApplicationError):
    """A study URL whose parameters (or signed token) cannot be accepted: 400, nothing
    written."""

    status = 400
