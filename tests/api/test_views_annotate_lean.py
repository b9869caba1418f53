"""The lean request path of next and submit (api/views/annotate_lean.py) answers as the DRF
views do — the same JSON, statuses, errors and headers, a retried submit idempotent — and hands
every request it does not serve (a session, another Accept, a body of another shape, a refused
token) to them."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient
from rest_framework.views import APIView

from annotation.models import Annotation
from api.views import annotate_lean
from tests.api.test_views import client_for
from tests.factories import make_member, pipeline

pytestmark = pytest.mark.django_db


@pytest.fixture
def drf_calls(monkeypatch):
    """How many requests went through DRF's request machinery (APIView.initial)."""
    calls = []
    initial = APIView.initial

    def counted(self, request, *args, **kwargs):
        calls.append(type(self).__name__)
        return initial(self, request, *args, **kwargs)

    monkeypatch.setattr(APIView, "initial", counted)
    return calls


def lean(on: bool) -> None:
    annotate_lean.NextItemView.lean = annotate_lean.SubmitView.lean = on


@pytest.fixture
def both_paths():
    yield
    lean(True)


HEADERS = ("Content-Type", "Allow", "Vary")


def headers(response) -> dict:
    return {name: response.headers.get(name) for name in HEADERS}


def test_next_and_submit_answer_as_the_drf_views_do(drf_calls, both_paths):
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=2)
    api = client_for(alice)
    next_url = f"/api/stages/{verify.pk}/next/"
    leased = api.post(next_url)
    assert drf_calls == []  # served by the lean path
    lean(False)
    again = api.post(next_url)  # the same lease, renewed, through DRF
    assert len(drf_calls) == 1
    assert leased.status_code == again.status_code == 200
    assert headers(leased) == headers(again)
    assert headers(leased)["Allow"] == "POST, OPTIONS" and "Accept" in headers(leased)["Vary"]
    first, second = leased.json(), again.json()
    assert first.pop("expires_at") <= second.pop("expires_at") and first == second

    url = f"/api/assignments/{first['id']}/submit/"
    body = {"payload": {"value": "keep"}, "seconds_spent": 3, "client_info": {"screen": "x"}}
    lean(True)
    stored = api.post(url, {**body, "next": True}, format="json")
    assert stored.status_code == 201 and len(drf_calls) == 1
    lean(False)
    retried = api.post(url, {**body, "next": True}, format="json")
    assert retried.status_code == 200 and len(drf_calls) == 2
    assert headers(stored) == headers(retried)
    assert stored.json()["id"] == retried.json()["id"]
    assert stored.json()["seconds_spent"] == 3.0 and stored.json()["next"]["id"]
    annotation = Annotation.objects.get()
    assert annotation.client_info == {"screen": "x"} and annotation.seconds_spent == 3.0

    lean(True)
    following = stored.json()["next"]
    done = api.post(f"/api/assignments/{following['id']}/submit/", body, format="json")
    assert done.status_code == 201 and "next" not in done.json()
    nothing = api.post(next_url)
    assert nothing.status_code == 204 and not nothing.content
    assert "Content-Type" not in nothing.headers and len(drf_calls) == 2


def test_a_retried_submit_on_the_lean_path_stores_one_annotation(drf_calls):
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=1)
    api = client_for(alice)
    lease = api.post(f"/api/stages/{verify.pk}/next/").json()
    url = f"/api/assignments/{lease['id']}/submit/"
    first = api.post(url, {"payload": {"value": "keep"}}, format="json")
    again = api.post(url, {"payload": {"value": "reject"}}, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json() and first.json()["payload"]["value"] == "keep"
    assert Annotation.objects.count() == 1 and drf_calls == []


def answers_both_ways(make_request):
    """The (status, JSON) a request gets on the lean path and on DRF's."""
    try:
        lean(True)
        served = make_request()
        lean(False)
        handed = make_request()
    finally:
        lean(True)
    return (served.status_code, served.json()), (handed.status_code, handed.json())


def test_errors_are_the_drf_views_errors():
    _, verify, _, (alice, bob, _) = pipeline()
    lease = client_for(alice).post(f"/api/stages/{verify.pk}/next/").json()
    url = f"/api/assignments/{lease['id']}/submit/"
    cases = [
        # the service refuses (the kind's validation), someone else's lease, no such stage
        lambda: client_for(alice).post(url, {"payload": {"value": "perhaps"}}, format="json"),
        lambda: client_for(bob).post(url, {"payload": {"value": "keep"}}, format="json"),
        lambda: client_for(bob).post("/api/stages/999999/next/"),
        # handed to DRF: a body of another shape, an unknown token, no credentials
        lambda: client_for(alice).post(url, {"payload": [1, 2]}, format="json"),
        lambda: client_for(alice).post(url, {"payload": {}, "seconds_spent": "3"}, format="json"),
        lambda: client_for(alice).post(url, {"payload": {}, "next": "yes"}, format="json"),
        lambda: client_for(alice).post(
            url, b'{"payload": {"value": "keep"', content_type="application/json"
        ),
        lambda: APIClient(HTTP_AUTHORIZATION="Token nosuchkey").post(url, {}, format="json"),
        lambda: APIClient().post(f"/api/stages/{verify.pk}/next/"),
    ]
    for make_request in cases:
        served, handed = answers_both_ways(make_request)
        assert served == handed
        assert served[0] >= 400 and set(served[1]) == {"message", "extra"}
    assert Annotation.objects.count() == 0


def test_the_token_read_with_the_stage_or_the_assignment_refuses_as_drf_does():
    """The lean path reads the token in one statement with the stage (next) or the assignment
    (submit): every refusal of either is still DRF's, and an unknown key reads nothing else."""
    from datetime import timedelta

    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from annotation.models import Membership, Stage

    project, verify, label, (alice, bob, carol) = pipeline()
    other, *_ = pipeline()
    lease = client_for(alice).post(f"/api/stages/{verify.pk}/next/").json()
    url = f"/api/assignments/{lease['id']}/submit/"
    keep = {"payload": {"value": "keep"}}
    Membership.objects.filter(project=project, user=bob).update(is_paused=True)
    Stage.objects.filter(pk=label.pk).update(is_active=False)
    carol_api = client_for(carol)
    Token.objects.filter(user=carol).update(created=timezone.now() - timedelta(days=3650))
    dora = make_member(project)
    dora_api = client_for(dora)
    dora.is_active = False
    dora.save(update_fields=["is_active"])
    cases = [
        lambda: client_for(alice).post(f"/api/stages/{other.pk}/next/"),  # not a member
        lambda: client_for(bob).post(f"/api/stages/{verify.pk}/next/"),  # paused
        lambda: client_for(alice).post(f"/api/stages/{label.pk}/next/"),  # closed
        lambda: client_for(alice).post(f"/api/stages/{2**40}/next/"),  # beyond the column
        lambda: carol_api.post(f"/api/stages/{verify.pk}/next/"),  # token expired
        lambda: dora_api.post(f"/api/stages/{verify.pk}/next/"),  # user inactive
        lambda: client_for(bob).post(url, keep, format="json"),  # paused, and not his
        lambda: client_for(alice).post("/api/assignments/987654/submit/", keep, format="json"),
        lambda: client_for(alice).post(f"/api/assignments/{2**40}/submit/", keep, format="json"),
        lambda: carol_api.post(url, keep, format="json"),
        lambda: dora_api.post(url, keep, format="json"),
    ]
    for make_request in cases:
        served, handed = answers_both_ways(make_request)
        assert served == handed
        assert served[0] >= 400 and set(served[1]) == {"message", "extra"}
    Membership.objects.filter(project=project, user=alice).update(is_paused=True)
    served, handed = answers_both_ways(lambda: client_for(alice).post(url, keep, format="json"))
    assert served == handed and served[0] == 409  # her own lease, but paused since
    assert Annotation.objects.count() == 0


def test_a_throttled_submit_says_when_to_retry_as_drf_does(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"auth": "off", "submit": "1/min"},
    }
    _, verify, _, (alice, bob, _) = pipeline()
    from django.core.cache import cache

    cache.clear()
    for person in (alice, bob):
        lean(person == alice)
        try:
            api = client_for(person)
            lease = api.post(f"/api/stages/{verify.pk}/next/").json()
            url = f"/api/assignments/{lease['id']}/submit/"
            assert api.post(url, {"payload": {"value": "keep"}}, format="json").status_code == 201
            refused = api.post(url, {"payload": {"value": "keep"}}, format="json")
        finally:
            lean(True)
        assert refused.status_code == 429 and refused.headers["Retry-After"]
        assert refused.json()["extra"]["retry_after"] is not None
        assert "throttled" in refused.json()["message"].lower()


def test_a_session_or_another_accept_is_served_by_drf(drf_calls):
    _, verify, _, (alice, *_) = pipeline()
    session = APIClient()
    session.force_login(alice)
    assert session.post(f"/api/stages/{verify.pk}/next/").status_code == 200
    html = client_for(alice).post(f"/api/stages/{verify.pk}/next/", HTTP_ACCEPT="text/html")
    assert html.status_code == 200 and html.headers["Content-Type"].startswith("text/html")
    assert drf_calls == ["NextItemView", "NextItemView"]
