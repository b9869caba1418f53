"""The Items tab over HTTP: who opens what, exports equal to the filtered view (CSV made
spreadsheet-safe, JSONL), blindness of exports, remembered columns, bulk tags on the ticked
items and on all matching, and a refused bulk action shown on the page."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Item, Role
from annotation.search import item_search_index
from studio.models import ItemColumns, ItemTag
from tests.factories import annotate_stage, make_items, make_member, make_project, pipeline

pytestmark = pytest.mark.django_db


def _body(response) -> str:
    return b"".join(response.streaming_content).decode("utf-8-sig")


def _csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(_body(response))))


@pytest.fixture
def decided(django_capture_on_commit_callbacks):
    project, verify, _, people = pipeline(overlap=3, items=5, annotators=3)
    first = Item.objects.filter(project=project).order_by("pk").first()

    def choose(person, item):
        return "reject" if item.pk == first.pk and person == people[0] else "keep"

    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(verify, people, choose)
    return project, people, first


@pytest.mark.parametrize(
    ("name", "method"),
    [("items", "get"), ("items_export", "get"), ("items_columns", "post"), ("items_bulk", "post")],
)
def test_who_opens_the_data_manager(client, name, method):
    project = make_project()
    make_items(project, 2)
    url = reverse(f"studio:{name}", args=[project.slug])
    data = {"action": "tag_add", "scope": "all", "tag_name": "x"}
    expected = {
        "anonymous": 302,
        "outsider": 404,
        Role.ANNOTATOR: 403,
        Role.REVIEWER: 403 if name == "items_bulk" else (302 if method == "post" else 200),
        Role.RESEARCHER: 403 if name == "items_bulk" else (302 if method == "post" else 200),
        Role.ADMIN: 302 if method == "post" else 200,
    }
    for who, status in expected.items():
        client.logout()
        if who == "outsider":
            client.force_login(make_member(make_project(), Role.ADMIN))
        elif who != "anonymous":
            client.force_login(make_member(project, who))
        response = getattr(client, method)(url, data if method == "post" else {})
        assert response.status_code == status, (who, response.status_code)
    assert not ItemTag.objects.exists() or name == "items_bulk"


def test_the_export_holds_the_filtered_view_in_its_order(client, decided):
    project, _, first = decided
    client.force_login(make_member(project, Role.RESEARCHER))
    services.items_create(
        project=project, rows=[{"external_id": "=cmd", "payload": {"text": "@SUM(A1)"}}]
    )
    url = reverse("studio:items", args=[project.slug])
    client.post(
        reverse("studio:items_columns", args=[project.slug]),
        {"columns": ["status", "stage:verify:decision", "stage:verify:agreement", "field:text"]},
    )
    filters = {"stage": "verify", "decision": "keep", "sort": "id"}
    page = client.get(url, filters).content.decode()
    assert "5 items match" in page
    rows = _csv(
        client.get(
            reverse("studio:items_export", args=[project.slug]), {**filters, "format": "csv"}
        )
    )
    assert rows[0] == ["item id", "Status", "Verify: decision", "Verify: agreement", "text"]
    ids = [row[0] for row in rows[1:]]
    assert ids == sorted(
        Item.objects.filter(project=project)
        .exclude(external_id="=cmd")
        .values_list("external_id", flat=True)
    )
    by_id = {row[0]: row for row in rows[1:]}
    assert by_id[first.external_id][2:4] == ["keep", "Majority"]
    assert [row[3] for row in rows[1:]].count("Unanimous") == 4
    for external_id in ids:
        assert external_id in page
    # Every cell is spreadsheet-safe.
    everything = _csv(
        client.get(
            reverse("studio:items_export", args=[project.slug]), {"format": "csv", "q": "SUM"}
        )
    )
    assert everything[1][0] == "'=cmd" and everything[1][4] == "'@SUM(A1)"
    lines = _body(
        client.get(
            reverse("studio:items_export", args=[project.slug]), {**filters, "format": "jsonl"}
        )
    ).splitlines()
    records = [json.loads(line) for line in lines]
    assert [record["id"] for record in records] == ids
    assert records[0]["stage:verify:decision"] == "keep" and "field:text" in records[0]
    assert (
        client.get(
            reverse("studio:items_export", args=[project.slug]), {"format": "xml"}
        ).status_code
        == 400
    )


def test_reviewers_export_no_gold_and_no_annotator_filter(client, decided):
    project, people, _ = decided
    services.items_create(
        project=project, rows=[{"external_id": "g1", "payload": {"text": "T", "gold": "SECRET"}}]
    )
    reviewer = make_member(project, Role.REVIEWER)
    # Even a column list naming the gold field (saved before a role change) shows no gold.
    ItemColumns.objects.create(project=project, user=reviewer, columns=["field:gold", "field:text"])
    client.force_login(reviewer)
    export = reverse("studio:items_export", args=[project.slug])
    body = _body(client.get(export, {"format": "csv"})) + _body(
        client.get(export, {"format": "jsonl"})
    )
    assert "SECRET" not in body and "g1" in body
    page = client.get(reverse("studio:items", args=[project.slug])).content.decode()
    assert "SECRET" not in page and 'name="annotator"' not in page
    assert client.get(export, {"format": "csv", "annotator": people[0].username}).status_code == 403
    admin = make_member(project, Role.ADMIN)
    ItemColumns.objects.create(project=project, user=admin, columns=["field:gold"])
    client.force_login(admin)
    assert "SECRET" in _body(client.get(export, {"format": "csv"}))


def test_bulk_tags_on_ticked_items_and_on_all_matching(client, decided):
    project, _, first = decided
    other = make_project()
    make_items(other, 1, prefix="elsewhere")
    stranger = Item.objects.get(project=other)
    client.force_login(make_member(project, Role.ADMIN))
    bulk = reverse("studio:items_bulk", args=[project.slug])
    response = client.post(
        bulk,
        {
            "action": "tag_add",
            "scope": "selected",
            "items": [first.pk, stranger.pk],
            "tag_name": "look again",
        },
    )
    assert response.status_code == 302
    assert list(ItemTag.objects.values_list("item_id", flat=True)) == [first.pk]
    # All matching: the items of the verify stage decided "keep" (every one).
    response = client.post(
        bulk,
        {
            "action": "tag_add",
            "scope": "all",
            "tag_name": "kept",
            "stage": "verify",
            "decision": "keep",
        },
        follow=True,
    )
    assert "5 items tagged “kept”." in response.content.decode()
    page = client.get(
        reverse("studio:items", args=[project.slug]), {"tag": "kept"}
    ).content.decode()
    assert "5 items match" in page
    client.post(
        bulk, {"action": "tag_remove", "scope": "all", "tag_name": "kept", "disagreement": "1"}
    )
    assert ItemTag.objects.filter(item=first).count() == 1  # "look again" stays
    refused = client.post(bulk, {"action": "tag_add", "scope": "selected", "tag_name": "x"})
    text = refused.content.decode()
    assert refused.status_code == 400 and 'id="bulk-error"' in text
    assert "Tick at least one item" in text and "Items" in text


def test_columns_are_remembered_per_member_and_keep_the_filters(client, decided):
    project, _, _ = decided
    researcher = make_member(project, Role.RESEARCHER)
    client.force_login(researcher)
    response = client.post(
        reverse("studio:items_columns", args=[project.slug]),
        {"columns": ["field:text", "nonsense", "batch"], "stage": "verify"},
    )
    assert response["Location"].endswith("?stage=verify")
    assert ItemColumns.objects.get(user=researcher).columns == ["field:text", "batch"]
    page = client.get(reverse("studio:items", args=[project.slug])).content.decode()
    assert '<th scope="col">text</th>' in page and "Import batch" in page


def test_bulk_item_actions_go_through_the_engine_and_refusals_are_shown(client, decided):
    project, _, first = decided
    client.force_login(make_member(project, Role.ADMIN))
    bulk = reverse("studio:items_bulk", args=[project.slug])
    refused = client.post(bulk, {"action": "discard", "scope": "selected", "items": [first.pk]})
    assert refused.status_code == 400 and 'id="bulk-error"' in refused.content.decode()
    first.refresh_from_db()
    assert first.status != Item.Status.DISCARDED
    done = client.post(
        bulk,
        {"action": "discard", "scope": "selected", "items": [first.pk], "reason": "duplicate"},
        follow=True,
    )
    assert "1 item done" in done.content.decode()
    first.refresh_from_db()
    assert first.status == Item.Status.DISCARDED


def test_a_search_finds_items_not_yet_indexed_and_says_how_many_wait(client):
    """Items wait in the search queue until the indexing task runs (annotation/search.py):
    the search lists them all the same and says how many are not indexed yet; once indexed,
    the same search lists the same items and the note is gone."""
    project = make_project()
    make_items(project, 3)
    services.items_create(project=project, rows=[{"external_id": "p-1", "payload": {"t": "Okapi"}}])
    client.force_login(make_member(project, Role.RESEARCHER))
    url = reverse("studio:items", args=[project.slug])
    page = client.get(url, {"q": "okapi"}).content.decode()
    assert "p-1" in page and "item-00000" not in page
    assert "4 items added or changed recently are not in the search index yet" in page
    assert 'id="q-waiting"' not in client.get(url).content.decode()  # no search, no note
    item_search_index()
    page = client.get(url, {"q": "okapi"}).content.decode()
    assert "p-1" in page and "item-00000" not in page
    assert 'id="q-waiting"' not in page
