"""The annotator loop over the REST API: statuses, error format, query budget."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotation
from tests.factories import make_member, pipeline

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_next_submit_retry_and_exhaustion(django_capture_on_commit_callbacks):
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=1)
    api = client_for(alice)
    leased = api.post(f"/api/stages/{verify.pk}/next/")
    assert leased.status_code == 200
    body = leased.json()
    assert body["item"]["payload"]["text"].startswith("Sentence")
    url = f"/api/assignments/{body['id']}/submit/"
    with django_capture_on_commit_callbacks(execute=True):
        first = api.post(url, {"payload": {"value": "keep"}}, format="json")
    again = api.post(url, {"payload": {"value": "reject"}}, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"] and again.json()["payload"]["value"] == "keep"
    assert api.post(f"/api/stages/{verify.pk}/next/").status_code == 204


def test_errors_have_one_format_and_name_the_problem():
    _, verify, _, (alice, bob, _) = pipeline()
    leased = client_for(alice).post(f"/api/stages/{verify.pk}/next/").json()
    url = f"/api/assignments/{leased['id']}/submit/"
    invalid = client_for(alice).post(url, {"payload": {"value": "perhaps"}}, format="json")
    assert invalid.status_code == 400
    assert invalid.json() == {
        "message": "Choose keep or reject (got 'perhaps').",
        "extra": {"value": "expected one of: keep, reject"},
    }
    foreign = client_for(bob).post(url, {"payload": {"value": "keep"}}, format="json")
    assert foreign.status_code == 404 and "no such assignment" in foreign.json()["message"]
    missing = client_for(bob).post(
        "/api/assignments/987654/submit/", {"payload": {}}, format="json"
    )
    assert missing.status_code == 404 and missing.json() == foreign.json()
    malformed = client_for(alice).post(url, {"payload": [1, 2]}, format="json")
    assert malformed.status_code == 400 and "payload" in malformed.json()["extra"]
    assert Annotation.objects.count() == 0
    anonymous = APIClient().post(f"/api/stages/{verify.pk}/next/")
    assert anonymous.status_code in (401, 403) and "message" in anonymous.json()


def test_a_non_member_cannot_tell_a_stage_exists():
    _, verify, _, _ = pipeline()
    stranger = make_member(pipeline()[0])
    response = client_for(stranger).post(f"/api/stages/{verify.pk}/next/")
    unknown = client_for(stranger).post("/api/stages/999999/next/")
    assert response.status_code == unknown.status_code == 404
    assert response.json() == unknown.json()


def statements(context: CaptureQueriesContext) -> list[str]:
    """SQL statements run, transaction control (BEGIN, COMMIT, savepoints) left out."""
    control = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")
    return [
        query["sql"] for query in context.captured_queries if not query["sql"].startswith(control)
    ]


@pytest.mark.django_db(transaction=True)
def test_next_plus_submit_stays_within_eight_queries(postgres):
    """Budget of the annotator loop, authentication included (token: one query a request),
    counted in SQL statements besides BEGIN/COMMIT. Transactional, so that the services' atomic
    blocks are real transactions as in production, not savepoints in the test's transaction."""
    assert connection.vendor == "postgresql"
    _, verify, _, (alice, *_) = pipeline(overlap=3, items=20)
    api = client_for(alice)
    first = api.post(f"/api/stages/{verify.pk}/next/").json()
    with CaptureQueriesContext(connection) as renewing:
        assert api.post(f"/api/stages/{verify.pk}/next/").json()["id"] == first["id"]
    url = f"/api/assignments/{first['id']}/submit/"
    with CaptureQueriesContext(connection) as submitting:
        assert api.post(url, {"payload": {"value": "keep"}}, format="json").status_code == 201
    with CaptureQueriesContext(connection) as leasing:
        assert api.post(f"/api/stages/{verify.pk}/next/").status_code == 200
    # next: the token with the stage, its membership and the current lease (one statement on
    # the lean path, api/views/annotate_lean.py), then one statement that searches, locks the
    # row, takes the slot and inserts the lease (no transaction around it). submit: the token
    # with the assignment, then one statement storing the annotation and moving the counters.
    assert len(statements(renewing)) <= 3, statements(renewing)
    assert len(statements(leasing)) <= 2, statements(leasing)
    lease = statements(leasing)[-1]
    assert "FOR UPDATE SKIP LOCKED" in lease and "INSERT INTO" in lease
    assert len(statements(submitting)) <= 2, statements(submitting)
    assert len(statements(leasing)) + len(statements(submitting)) <= 4


def test_submit_with_next_returns_the_next_lease_and_a_retry_the_same_one():
    """``"next": true`` on a submit: the answer carries the next lease of the stage (as
    POST next/ would), a retried submit returns the lease it already got, and null comes back
    when nothing is left for the annotator."""
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=2)
    api = client_for(alice)
    first = api.post(f"/api/stages/{verify.pk}/next/").json()
    url = f"/api/assignments/{first['id']}/submit/"
    submitted = api.post(url, {"payload": {"value": "keep"}, "next": True}, format="json")
    assert submitted.status_code == 201
    body = submitted.json()
    assert body["assignment"] == first["id"] and body["payload"]["value"] == "keep"
    following = body["next"]
    assert following["id"] != first["id"] and following["stage"] == verify.pk
    assert following["item"]["id"] != first["item"]["id"]
    assert following["item"]["payload"]["text"].startswith("Sentence")
    retried = api.post(url, {"payload": {"value": "keep"}, "next": True}, format="json")
    assert retried.status_code == 200 and retried.json()["next"]["id"] == following["id"]
    last = api.post(
        f"/api/assignments/{following['id']}/submit/",
        {"payload": {"value": "reject"}, "next": True},
        format="json",
    )
    assert last.status_code == 201 and last.json()["next"] is None
    plain = api.post(url, {"payload": {"value": "keep"}}, format="json").json()
    assert "next" not in plain
    unclear = api.post(url, {"payload": {"value": "keep"}, "next": "perhaps"}, format="json")
    assert unclear.status_code == 400 and "next" in unclear.json()["extra"]
    assert Annotation.objects.filter(annotator=alice).count() == 2


@pytest.mark.django_db(transaction=True)
def test_submit_with_next_costs_less_than_submit_then_next(postgres):
    """One request per item: the token is read once, so submit-with-next stays within the
    budget of next + submit (token and assignment, the write, the stage, the lease)."""
    _, verify, _, (alice, *_) = pipeline(overlap=3, items=20)
    api = client_for(alice)
    first = api.post(f"/api/stages/{verify.pk}/next/").json()
    url = f"/api/assignments/{first['id']}/submit/"
    with CaptureQueriesContext(connection) as both:
        answer = api.post(url, {"payload": {"value": "keep"}, "next": True}, format="json")
    assert answer.status_code == 201 and answer.json()["next"]["id"] != first["id"]
    assert len(statements(both)) <= 4, statements(both)


def test_an_annotator_changes_their_answer_through_the_api_once_and_not_after_the_decision(
    django_capture_on_commit_callbacks,
):
    _, verify, _, (alice, bob, carol) = pipeline(overlap=3, items=1)
    api = client_for(alice)
    lease = api.post(f"/api/stages/{verify.pk}/next/").json()
    first = api.post(
        f"/api/assignments/{lease['id']}/submit/", {"payload": {"value": "keep"}}, format="json"
    ).json()
    url = f"/api/annotations/{first['id']}/revise/"
    changed = api.post(url, {"payload": {"value": "reject"}}, format="json")
    assert changed.status_code == 201
    body = changed.json()
    assert (body["version"], body["supersedes"], body["payload"]["value"]) == (
        2,
        first["id"],
        "reject",
    )
    retried = api.post(url, {"payload": {"value": "reject"}}, format="json")
    assert retried.status_code == 200 and retried.json()["id"] == body["id"]
    stale = api.post(url, {"payload": {"value": "keep"}}, format="json")
    assert stale.status_code == 409 and "changed since" in stale.json()["message"]
    assert (
        client_for(bob).post(url, {"payload": {"value": "keep"}}, format="json").status_code == 404
    )
    for person in (bob, carol):
        other = client_for(person)
        held = other.post(f"/api/stages/{verify.pk}/next/").json()
        with django_capture_on_commit_callbacks(execute=True):  # the last one resolves the item
            other.post(
                f"/api/assignments/{held['id']}/submit/",
                {"payload": {"value": "keep"}},
                format="json",
            )
    late = api.post(
        f"/api/annotations/{body['id']}/revise/", {"payload": {"value": "keep"}}, format="json"
    )
    assert late.status_code == 409 and "decided" in late.json()["message"]
    assert Annotation.objects.filter(assignment=lease["id"]).get().pk == body["id"]


def test_the_stage_list_counts_each_stages_items_by_state(django_capture_on_commit_callbacks):
    from annotation.models import ItemStage, Role
    from tests.factories import annotate_stage

    project, verify, label, people = pipeline(items=5)
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(verify, people, lambda person, item: "keep")
    admin = make_member(project, Role.ADMIN)
    with CaptureQueriesContext(connection) as queries:
        listed = client_for(admin).get(f"/api/projects/{project.slug}/stages/").json()["results"]
    assert [row["slug"] for row in listed] == ["verify", "label"]
    for row, stage in zip(listed, (verify, label), strict=True):
        item_stages = ItemStage.objects.filter(stage=stage)
        assert row["items_total"] == item_stages.count()
        assert row["items_open"] == item_stages.filter(state="open").count()
        assert row["items_resolved"] == item_stages.filter(state="resolved").count()
    assert listed[0]["items_resolved"] == 5 and listed[1]["items_total"] == 5
    # One grouped count of the item stages for all the stages, not one per stage.
    assert sum("annotation_itemstage" in query["sql"] for query in queries) == 1
