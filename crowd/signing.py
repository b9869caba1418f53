"""Signed Prolific study links: Prolific's token (a JWT) on the study URL, verified before
anything is written.

Prolific signs the tokens it adds to a secured study URL with RS256 and publishes the public keys
as a JSON Web Key Set (``GET https://api.prolific.com/.well-known/study/jwks.json``). Its
documentation lists what a tool must check, and ``verify_prolific_token`` checks each:

- the signature, with the key of the set whose ``kid`` the token's header names (RS256 only: a
  token naming another algorithm, ``none`` included, is refused);
- ``exp``: the token has not expired (required);
- ``aud``: this site (``PROLIFIC_JWT_AUDIENCE``, or this request's host);
- the ``prolific`` claim: a mapping that always names the ``workspace_id`` (checked against
  ``PROLIFIC_WORKSPACE_ID`` when set) and carries the payload of the study URL. Here it must name
  the participant (``PROLIFIC_PID``, or ``participant_id``) and that id, and the study and
  session ids when it names them, must be the ones on the URL: a token signed for one
  participant never lets in another.

The key set comes from the environment (``PROLIFIC_JWKS``: the JSON document, or the path of a
file holding it), read once per process and value; the machine never fetches it itself.
PyJWT does the cryptography.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jwt
from django.conf import settings

from annotation.errors import ApplicationError
from crowd.errors import BadEntry

logger = logging.getLogger(__name__)

ALGORITHMS = ["RS256"]
#: Where the ``prolific`` claim may name each id (Prolific's URL parameter, or the API's name).
CLAIM_NAMES = {
    "PROLIFIC_PID": ("PROLIFIC_PID", "participant_id", "prolific_pid"),
    "STUDY_ID": ("STUDY_ID", "study_id"),
    "SESSION_ID": ("SESSION_ID", "session_id", "submission_id"),
}


class KeySetMissing(ApplicationError):
    """The site has no usable key set: a study that requires signed links cannot be entered."""

    status = 503
    title = "This study cannot be entered right now"


@lru_cache(maxsize=4)
def _key_set(source: str) -> jwt.PyJWKSet:
    text = source.strip()
    if not text.startswith("{"):
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as error:
            raise KeySetMissing(
                f"PROLIFIC_JWKS names a file that cannot be read ({error.strerror})."
            ) from None
    try:
        return jwt.PyJWKSet.from_dict(json.loads(text))
    except (ValueError, jwt.PyJWKError, jwt.PyJWKSetError) as error:
        raise KeySetMissing(f"PROLIFIC_JWKS is not a usable JSON Web Key Set ({error}).") from None


def key_set() -> jwt.PyJWKSet:
    """The configured key set (PROLIFIC_JWKS), or KeySetMissing."""
    try:
        if not settings.PROLIFIC_JWKS.strip():
            raise KeySetMissing(
                "Signed study links cannot be checked: set PROLIFIC_JWKS to Prolific's key set."
            )
        return _key_set(settings.PROLIFIC_JWKS)
    except KeySetMissing as error:
        logger.error("Prolific key set unusable: %s", error.message)
        raise


class BadSignature(BadEntry):
    """A study link whose signed token is missing or does not verify (400)."""

    title = "This link's signature could not be confirmed"


def _refuse(why: str, field: str = "") -> BadEntry:
    return BadSignature(
        f"This study link's signature could not be confirmed ({why}). Open the study again "
        "from Prolific; if this happens again, return the study and message the researcher.",
        {field or settings.PROLIFIC_JWT_PARAM: why},
    )


def verify_prolific_token(
    token: str, *, ids: Mapping[str, str], audience: Sequence[str]
) -> dict[str, Any]:
    """The token's claims when Prolific signed it for this participant (see the module's
    docstring), or BadEntry (400) saying what failed; KeySetMissing (503) without a key set."""
    if not token:
        raise _refuse("the link carries no signed token")
    keys = key_set()
    try:
        header = jwt.get_unverified_header(token)
    except jwt.DecodeError:
        raise _refuse("the token is malformed") from None
    if header.get("alg") not in ALGORITHMS:
        raise _refuse(f"the token is not signed with {', '.join(ALGORITHMS)}")
    kid = header.get("kid")
    key = next((key for key in keys.keys if key.key_id == kid), None) if kid else None
    if key is None:
        raise _refuse("the token was signed with a key Prolific does not publish")
    try:
        claims = jwt.decode(
            token,
            key.key,
            algorithms=ALGORITHMS,
            audience=list(audience),
            options={"require": ["exp", "aud"]},
        )
    except jwt.ExpiredSignatureError:
        raise _refuse("the token has expired") from None
    except jwt.InvalidAudienceError:
        raise _refuse("the token was made for another site") from None
    except jwt.MissingRequiredClaimError as error:
        raise _refuse(f"the token has no {error.claim} claim") from None
    except jwt.InvalidSignatureError:
        raise _refuse("the signature does not match") from None
    except jwt.InvalidTokenError as error:
        raise _refuse(f"the token is not valid: {error}") from None
    prolific = claims.get("prolific")
    if not isinstance(prolific, Mapping):
        raise _refuse("the token has no prolific claim")
    workspace = settings.PROLIFIC_WORKSPACE_ID
    if workspace and str(prolific.get("workspace_id", "")) != workspace:
        raise _refuse("the token belongs to another Prolific workspace")
    for parameter, names in CLAIM_NAMES.items():
        signed = next((str(prolific[name]) for name in names if name in prolific), None)
        if signed is None:
            if parameter == "PROLIFIC_PID":
                raise _refuse("the token does not name the participant", parameter)
            continue
        if signed != ids.get(parameter, ""):
            raise _refuse(f"the link's {parameter} is not the one Prolific signed", parameter)
    return claims


def audiences(request) -> tuple[str, ...]:
    """The ``aud`` values a token may carry: PROLIFIC_JWT_AUDIENCE, or this site's host (bare
    and as an https origin)."""
    if settings.PROLIFIC_JWT_AUDIENCE:
        return settings.PROLIFIC_JWT_AUDIENCE
    host = request.get_host()
    return (host, f"https://{host}", f"http://{host}")
