"""The short middleware chain (rungwise/handlers.py): the annotator loop's plain token requests
skip the middleware settings.LEAN_MIDDLEWARE_SKIPPED names and answer exactly as down the full
chain — status, body and every header — refusals and DRF's fallbacks included; every other
request takes the full chain."""

from __future__ import annotations

import pytest
from django.contrib.messages.middleware import MessageMiddleware
from django.test import RequestFactory
from rest_framework.test import APIClient, ForceAuthClientHandler

from annotation.models import Annotation
from rungwise.handlers import LeanChain, lean_request
from tests.api.test_views import client_for
from tests.factories import pipeline

pytestmark = pytest.mark.django_db


class LeanClientHandler(LeanChain, ForceAuthClientHandler):
    """DRF's test-client handler with the short chain, as rungwise.handlers.WSGIHandler has it."""


def lean_client(client: APIClient) -> APIClient:
    client.handler = LeanClientHandler(enforce_csrf_checks=False)
    return client


@pytest.fixture
def full_chain_calls(monkeypatch):
    """How many requests went through a middleware the short chain skips (MessageMiddleware)."""
    calls = []
    process_request = MessageMiddleware.process_request

    def counted(self, request):
        calls.append(request.path)
        return process_request(self, request)

    monkeypatch.setattr(MessageMiddleware, "process_request", counted)
    return calls


def both_chains(client: APIClient, send):
    """The response `send(client)` gets down the short chain, then down the full one."""
    client.handler.lean = True
    short = send(client)
    client.handler.lean = False
    try:
        full = send(client)
    finally:
        client.handler.lean = True
    return short, full


def assert_same_answer(short, full, *, moving=("expires_at",), same_status=True) -> None:
    assert short.status_code == full.status_code or not same_status
    short_headers = {name: value for name, value in short.items() if name != "Content-Length"}
    full_headers = {name: value for name, value in full.items() if name != "Content-Length"}
    assert short_headers == full_headers
    assert "X-Frame-Options" in short_headers and "Content-Security-Policy" in short_headers
    assert short.cookies.keys() == full.cookies.keys()
    if short.content:
        short_body, full_body = short.json(), full.json()
        for body in (short_body, full_body, short_body.get("next") or {}, full_body.get("next") or {}):  # fmt: skip
            for name in moving:
                body.pop(name, None)
        assert short_body == full_body
    else:
        assert not full.content


def test_next_submit_and_a_retry_answer_alike_down_both_chains(full_chain_calls):
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=2)
    api = lean_client(client_for(alice))
    next_url = f"/api/stages/{verify.pk}/next/"
    leased, renewed = both_chains(api, lambda c: c.post(next_url))
    assert leased.status_code == 200 and full_chain_calls == [next_url]  # the short one first
    assert_same_answer(leased, renewed)

    url = f"/api/assignments/{leased.json()['id']}/submit/"
    body = {"payload": {"value": "keep"}, "seconds_spent": 2, "next": True}
    stored, retried = both_chains(api, lambda c: c.post(url, body, format="json"))
    assert (stored.status_code, retried.status_code) == (201, 200)
    assert_same_answer(stored, retried, same_status=False)  # the retry: 200, the same JSON
    assert Annotation.objects.count() == 1 and full_chain_calls == [next_url, url]

    following = f"/api/assignments/{stored.json()['next']['id']}/submit/"
    done = api.post(following, {"payload": {"value": "keep"}}, format="json")
    assert done.status_code == 201
    nothing, still_nothing = both_chains(api, lambda c: c.post(next_url))
    assert nothing.status_code == 204
    assert_same_answer(nothing, still_nothing)


def test_refusals_and_drf_fallbacks_answer_alike_down_both_chains(full_chain_calls):
    _, verify, _, (alice, bob, _) = pipeline()
    api, other = lean_client(client_for(alice)), lean_client(client_for(bob))
    lease = api.post(f"/api/stages/{verify.pk}/next/").json()
    url = f"/api/assignments/{lease['id']}/submit/"
    cases = [
        # the service refuses: a value the kind does not take; someone else's lease; no stage
        (api, lambda c: c.post(url, {"payload": {"value": "perhaps"}}, format="json")),
        (other, lambda c: c.post(url, {"payload": {"value": "keep"}}, format="json")),
        (other, lambda c: c.post("/api/stages/999999/next/")),
        # handed to DRF by the view: another shape, a broken body, an unknown token
        (api, lambda c: c.post(url, {"payload": [1, 2]}, format="json")),
        (api, lambda c: c.post(url, b'{"payload": {', content_type="application/json")),
        (
            lean_client(APIClient(HTTP_AUTHORIZATION="Token nosuchkey")),
            lambda c: c.post(f"/api/stages/{verify.pk}/next/"),
        ),
    ]
    for client, send in cases:
        short, full = both_chains(client, send)
        assert short.status_code in (400, 401, 403, 404)
        assert_same_answer(short, full)
    assert len(full_chain_calls) == len(cases)  # each once, down the full chain
    assert Annotation.objects.count() == 0


def test_a_cookie_another_method_or_another_path_takes_the_full_chain(settings):
    factory = RequestFactory()
    token = {"HTTP_AUTHORIZATION": "Token abc"}
    assert lean_request(factory.post("/api/stages/12/next/", **token))
    assert lean_request(factory.post("/api/assignments/7/submit/", **token))
    assert not lean_request(factory.post("/api/stages/12/next/"))  # no token
    assert not lean_request(factory.post("/api/stages/12/next/", HTTP_AUTHORIZATION="Bearer x"))
    assert not lean_request(factory.get("/api/stages/12/next/", **token))
    assert not lean_request(factory.post("/api/stages/12/next/extra", **token))
    assert not lean_request(factory.post("/api/stages/x/next/", **token))
    assert not lean_request(factory.post("/api/auth/token/", **token))
    factory.cookies["sessionid"] = "s"
    assert not lean_request(factory.post("/api/stages/12/next/", **token))
    settings.LEAN_REQUEST_PATH = ""
    assert not lean_request(RequestFactory().post("/api/stages/12/next/", **token))


def test_a_session_request_goes_down_the_full_chain(full_chain_calls):
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=1)
    api = lean_client(APIClient())
    api.force_login(alice)
    answer = api.post(f"/api/stages/{verify.pk}/next/")
    assert answer.status_code in (200, 403)  # a session POST needs its CSRF token: DRF says so
    assert full_chain_calls == [f"/api/stages/{verify.pk}/next/"]
