"""Signed Prolific study links (crowd/signing.py): tokens signed in the test with RSA keys made
in the test, their key set given as PROLIFIC_JWKS (inline and as a file). A study that requires
signing lets in a correctly signed participant and refuses, with a clear 400 page and nothing
written, every other token: none, another key, tampered, expired, another audience, another
participant, no prolific claim, another workspace, an unsigned (alg none) one."""

from __future__ import annotations

import json
import time
from urllib.parse import urlencode

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.errors import ApplicationError
from crowd import services
from crowd.models import Participant
from tests.factories import make_crowd_study, prolific_ids

pytestmark = pytest.mark.django_db

HOST = "testserver"


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def keys():
    return {"prolific": new_key(), "other": new_key()}


def jwks(*pairs) -> dict:
    out = []
    for kid, key in pairs:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        out.append({**jwk, "kid": kid, "alg": "RS256", "use": "sig", "key_ops": ["verify"]})
    return {"keys": out}


def token(key, *, kid="k1", number=1, exp=None, aud=HOST, prolific=None, **extra) -> str:
    ids = prolific_ids(number)
    claims = {
        "exp": int(time.time()) + 600 if exp is None else exp,
        "aud": aud,
        "prolific": {"workspace_id": "w" * 24, **ids} if prolific is None else prolific,
        **extra,
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def signed_study(settings, keys):
    settings.PROLIFIC_JWKS = json.dumps(jwks(("k1", keys["prolific"])))
    settings.PROLIFIC_JWT_AUDIENCE = ()
    settings.PROLIFIC_WORKSPACE_ID = ""
    return make_crowd_study(platform_study_id="5" * 24, signed_links="1")


def url(study, number=1, **query) -> str:
    return (
        reverse("crowd:enter", args=[study.token])
        + "?"
        + urlencode({**prolific_ids(number), **query})
    )


def test_a_correctly_signed_link_lets_the_participant_in(client, signed_study, keys):
    response = client.get(url(signed_study, PROLIFIC_JWT=token(keys["prolific"])))
    assert response.status_code == 302 and response["Location"].endswith("/consent/")
    assert Participant.objects.get().platform_id == prolific_ids(1)["PROLIFIC_PID"]


def test_the_key_set_may_be_a_file_and_the_parameter_and_audience_configured(
    client, settings, keys, tmp_path
):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks(("k0", keys["other"]), ("k1", keys["prolific"]))))
    settings.PROLIFIC_JWKS = str(path)
    settings.PROLIFIC_JWT_PARAM = "sig"
    settings.PROLIFIC_JWT_AUDIENCE = ("https://rungwise.example",)
    study = make_crowd_study(signed_links="1")
    signed = token(keys["prolific"], aud="https://rungwise.example")
    assert client.get(url(study, sig=signed)).status_code == 302
    # the host alone is not accepted once audiences are configured
    assert client.get(url(study, 2, sig=token(keys["prolific"], number=2))).status_code == 400


def forged(keys) -> dict[str, dict]:
    good = {"workspace_id": "w" * 24, **prolific_ids(1)}
    header, payload, signature = token(keys["prolific"]).split(".")
    other_payload = token(keys["prolific"], number=2).split(".")[1]
    return {
        "no token": {},
        "empty token": {"PROLIFIC_JWT": ""},
        "garbage": {"PROLIFIC_JWT": "not-a-token"},
        "another key, same kid": {"PROLIFIC_JWT": token(keys["other"])},
        "unknown kid": {"PROLIFIC_JWT": token(keys["prolific"], kid="k9")},
        "payload swapped": {"PROLIFIC_JWT": f"{header}.{other_payload}.{signature}"},
        "expired": {"PROLIFIC_JWT": token(keys["prolific"], exp=int(time.time()) - 60)},
        "another site": {"PROLIFIC_JWT": token(keys["prolific"], aud="https://evil.example")},
        "no prolific claim": {"PROLIFIC_JWT": token(keys["prolific"], prolific="x")},
        "no participant": {"PROLIFIC_JWT": token(keys["prolific"], prolific={"workspace_id": "w"})},
        "another participant": {"PROLIFIC_JWT": token(keys["prolific"], number=2)},
        "another session": {
            "PROLIFIC_JWT": token(
                keys["prolific"], prolific={**good, "SESSION_ID": prolific_ids(3)["SESSION_ID"]}
            )
        },
        "unsigned": {
            "PROLIFIC_JWT": jwt.encode(
                {"exp": int(time.time()) + 600, "aud": HOST, "prolific": good},
                None,
                algorithm="none",
                headers={"kid": "k1"},
            )
        },
        "hmac with the public key": {
            "PROLIFIC_JWT": ".".join(
                [
                    jwt.utils.base64url_encode(
                        json.dumps({"alg": "HS256", "kid": "k1"}).encode()
                    ).decode(),
                    payload,
                    signature,
                ]
            )
        },
    }


CASES = [
    "no token", "empty token", "garbage", "another key, same kid", "unknown kid",
    "payload swapped", "expired", "another site", "no prolific claim", "no participant",
    "another participant", "another session", "unsigned", "hmac with the public key",
]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_unsigned_or_badly_signed_entries_are_refused_and_nothing_is_written(
    client, signed_study, keys, case
):
    users = get_user_model().objects.count()
    response = client.get(url(signed_study, **forged(keys)[case]))
    page = response.content.decode()
    assert response.status_code == 400, case
    assert "signature could not be confirmed" in page and "Nothing was recorded" in page
    assert not Participant.objects.exists() and get_user_model().objects.count() == users
    assert "_auth_user_id" not in client.session


def test_a_token_for_another_workspace_is_refused(client, signed_study, keys, settings):
    settings.PROLIFIC_WORKSPACE_ID = "a" * 24
    assert client.get(url(signed_study, PROLIFIC_JWT=token(keys["prolific"]))).status_code == 400
    settings.PROLIFIC_WORKSPACE_ID = "w" * 24
    assert client.get(url(signed_study, PROLIFIC_JWT=token(keys["prolific"]))).status_code == 302


def test_studies_without_signing_ignore_tokens(client, keys, settings):
    settings.PROLIFIC_JWKS = ""
    study = make_crowd_study()
    assert client.get(url(study)).status_code == 302


def test_without_a_key_set_a_signed_study_cannot_be_entered_or_turned_on(client, settings, keys):
    settings.PROLIFIC_JWKS = json.dumps(jwks(("k1", keys["prolific"])))
    study = make_crowd_study(signed_links="1")
    settings.PROLIFIC_JWKS = ""
    response = client.get(url(study, PROLIFIC_JWT=token(keys["prolific"])))
    assert response.status_code == 503 and "PROLIFIC_JWKS" in response.content.decode()
    assert not Participant.objects.exists()
    with pytest.raises(ApplicationError, match="PROLIFIC_JWKS"):
        make_crowd_study(signed_links="1")
    settings.PROLIFIC_JWKS = '{"keys": "nope"}'
    with pytest.raises(ApplicationError, match="not a usable"):
        make_crowd_study(signed_links="1")


def test_signed_links_are_prolifics_option(settings, keys):
    settings.PROLIFIC_JWKS = json.dumps(jwks(("k1", keys["prolific"])))
    study = make_crowd_study(signed_links="1")
    with pytest.raises(ApplicationError, match="Prolific's option"):
        services.study_update(study=study, platform="link")


def test_a_signed_participant_resumes_from_their_session(client, signed_study, keys):
    client.get(url(signed_study, PROLIFIC_JWT=token(keys["prolific"])))
    response = client.get(reverse("crowd:enter", args=[signed_study.token]))
    assert response.status_code == 302 and response["Location"].endswith("/consent/")
