"""The lean request path of next and submit (api/views/annotate_lean.py) answers as the DRF
views do — the same JSON, statuses, errors and headers, a retried submit idempotent — and hands
every request it does not serve (a session, another Accept, a body of another shape, a refused
token) to them."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework.views import APIView

from annotation import services
from annotation.models import Annotation, Assignment
from api.views import annotate_lean
from tests.api.test_views import client_for
from tests.factories import make_member, pipeline
from tests.threads import run_annotators

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


def test_a_retried_submit_with_next_returns_the_lease_it_already_got(drf_calls):
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=3)
    api = client_for(alice)
    lease = api.post(f"/api/stages/{verify.pk}/next/").json()
    url = f"/api/assignments/{lease['id']}/submit/"
    first = api.post(url, {"payload": {"value": "keep"}, "next": True}, format="json")
    again = api.post(url, {"payload": {"value": "keep"}, "next": True}, format="json")
    assert (first.status_code, again.status_code) == (201, 200) and drf_calls == []
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["next"]["id"] == first.json()["next"]["id"]
    assert Annotation.objects.count() == 1
    assert Assignment.objects.filter(annotator=alice, status=Assignment.Status.ACTIVE).count() == 1


def test_a_submit_on_another_annotators_lease_is_not_found_and_stores_nothing(drf_calls):
    _, verify, _, (alice, bob, _) = pipeline(overlap=1, items=2)
    lease = client_for(alice).post(f"/api/stages/{verify.pk}/next/").json()
    url = f"/api/assignments/{lease['id']}/submit/"
    body = {"payload": {"value": "keep"}}
    foreign = client_for(bob).post(url, body, format="json")
    unknown = client_for(bob).post(f"/api/assignments/{2**70}/submit/", body, format="json")
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.json() == unknown.json() and set(foreign.json()) == {"message", "extra"}
    assert Annotation.objects.count() == 0
    # Once alice's answer is stored, bob's retry of her submit still learns nothing of it.
    assert client_for(alice).post(url, body, format="json").status_code == 201
    after = client_for(bob).post(url, body, format="json")
    assert (after.status_code, after.json()) == (404, foreign.json())
    assert "keep" not in after.content.decode() and Annotation.objects.count() == 1
    assert drf_calls == []


def test_a_stale_lease_is_accepted_while_its_slot_is_free_and_refused_once_taken(drf_calls):
    _, verify, _, (alice, bob, carol) = pipeline(overlap=1, items=2)
    body = {"payload": {"value": "keep"}}
    stale = []
    for person in (alice, bob):
        lease = client_for(person).post(f"/api/stages/{verify.pk}/next/").json()
        Assignment.objects.filter(pk=lease["id"]).update(
            expires_at=timezone.now() - timedelta(minutes=1)
        )
        stale.append(lease)
    # Alice's slot is still free: her late answer counts.
    late = client_for(alice).post(f"/api/assignments/{stale[0]['id']}/submit/", body, format="json")
    assert late.status_code == 201
    # Bob's slot went to carol: his answer is refused, with when his lease ended.
    assert services.leases_reclaim_expired() == 1
    taken = client_for(carol).post(f"/api/stages/{verify.pk}/next/").json()
    assert taken["item"]["id"] == stale[1]["item"]["id"]
    refused = client_for(bob).post(
        f"/api/assignments/{stale[1]['id']}/submit/", body, format="json"
    )
    assert refused.status_code == 409 and "expired" in refused.json()["message"]
    assert set(refused.json()["extra"]) == {"expires_at"}
    assert Annotation.objects.filter(annotator=bob).count() == 0
    ok = client_for(carol).post(f"/api/assignments/{taken['id']}/submit/", body, format="json")
    assert ok.status_code == 201
    assert Annotation.objects.count() == 2 and drf_calls == []


def sent_twice_at_once(person, url: str, body: dict) -> list[tuple[int, dict]]:
    """The (status, JSON) of two copies of one submit, sent by `person` on two threads (each
    with its own connection) released together."""
    start = threading.Barrier(2)
    answers: list[tuple[int, dict]] = []

    def send(person, index):
        client = client_for(person)
        start.wait(timeout=30)
        response = client.post(url, body, format="json")
        answers.append((response.status_code, response.json()))

    run_annotators(send, [person, person], timeout=120)
    return answers


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("following", [False, True], ids=["submit", "submit and next"])
def test_the_same_submit_sent_twice_at_once_stores_one_annotation(postgres, following):
    """Two copies of one submit race on two connections (a client that retries before the
    first answer came back): one stores the answer (201), the other gets it back (200), and
    with ``next`` both carry the same next lease."""
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=8)
    api = client_for(alice)
    body = {"payload": {"value": "keep"}, "next": following}
    lease = api.post(f"/api/stages/{verify.pk}/next/").json()
    for _ in range(3):
        url = f"/api/assignments/{lease['id']}/submit/"
        answers = sent_twice_at_once(alice, url, body)
        assert sorted(status for status, _ in answers) == [200, 201]
        (_, one), (_, other) = answers
        assert one["id"] == other["id"]
        assert Annotation.objects.filter(assignment_id=lease["id"]).count() == 1
        slot = Assignment.objects.get(pk=lease["id"]).item_stage
        assert (slot.submitted_count, slot.leased_count) == (1, 0)
        active = Assignment.objects.filter(annotator=alice, status=Assignment.Status.ACTIVE)
        if following:
            assert one["next"]["id"] == other["next"]["id"]
            assert list(active.values_list("pk", flat=True)) == [one["next"]["id"]]
            lease = one["next"]
        else:
            assert not active.exists()
            lease = api.post(f"/api/stages/{verify.pk}/next/").json()
