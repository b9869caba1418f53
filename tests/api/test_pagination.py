"""The API's item list: numbered pages with a count by default, cursor pages without one on
request (api/pagination.py)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Item, Role
from tests.factories import make_items, make_member, make_project

pytestmark = pytest.mark.django_db

PAGE = 4


def _admin_client(project):
    admin = make_member(project, Role.ADMIN)
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=admin)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _walk(client, url):
    """Every page from ``url`` on, following ``next``; the pages' bodies."""
    pages = []
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.json()
        pages.append(response.json())
        url = pages[-1]["next"]
    return pages


def test_cursor_pages_hold_every_item_once_in_id_order_without_a_count(monkeypatch):
    from api import pagination

    monkeypatch.setattr(pagination._ByPrimaryKey, "page_size", PAGE)
    monkeypatch.setattr(pagination.CountOrCursorPagination, "page_size", PAGE)
    project = make_project()
    make_items(project, 10)
    client = _admin_client(project)
    url = f"/api/projects/{project.slug}/items/"

    numbered = _walk(client, url)
    cursor = _walk(client, url + "?cursor=")

    expected = list(
        Item.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)
    )
    assert [row["id"] for page in cursor for row in page["results"]] == expected
    assert [row["id"] for page in numbered for row in page["results"]] == expected
    assert [len(page["results"]) for page in cursor] == [4, 4, 2]
    # Numbered pages keep their shape; cursor pages never carry a count.
    assert all(set(page) == {"count", "next", "previous", "results"} for page in numbered)
    assert numbered[0]["count"] == 10
    assert all(set(page) == {"next", "previous", "results"} for page in cursor)
    # next carries the cursor (the walk stays in cursor mode); previous leads back.
    assert "cursor" in parse_qs(urlparse(cursor[0]["next"]).query)
    assert cursor[0]["previous"] is None and cursor[1]["previous"] is not None
    back = client.get(cursor[1]["previous"]).json()
    assert [row["id"] for row in back["results"]] == expected[:PAGE]


def test_a_cursor_page_does_not_count_the_list():
    project = make_project()
    make_items(project, 3)
    client = _admin_client(project)
    url = f"/api/projects/{project.slug}/items/"
    with CaptureQueriesContext(connection) as numbered:
        assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as cursor:
        assert client.get(url + "?cursor=&status=active").status_code == 200
    item_table = Item._meta.db_table

    def counts(queries):
        return [
            q["sql"] for q in queries if "COUNT(" in q["sql"].upper() and item_table in q["sql"]
        ]

    assert counts(numbered.captured_queries)
    assert not counts(cursor.captured_queries)


def test_the_status_filter_holds_on_cursor_pages():
    project = make_project()
    make_items(project, 3)
    discarded = Item.objects.filter(project=project).order_by("pk").first()
    Item.objects.filter(pk=discarded.pk).update(status=Item.Status.DISCARDED)
    client = _admin_client(project)
    body = client.get(f"/api/projects/{project.slug}/items/?cursor=&status=active").json()
    assert discarded.pk not in [row["id"] for row in body["results"]]
    assert len(body["results"]) == 2 and body["next"] is None


@pytest.mark.parametrize("cursor", ["not base64!", "cD1hYmM"])  # the second: "p=abc"
def test_a_malformed_cursor_is_a_404_in_the_api_format(cursor):
    project = make_project()
    make_items(project, 2)
    response = _admin_client(project).get(
        f"/api/projects/{project.slug}/items/", {"cursor": cursor}
    )
    assert response.status_code == 404
    assert response.json() == {"message": "Invalid cursor", "extra": {}}


def test_the_schema_documents_both_shapes():
    from drf_spectacular.generators import SchemaGenerator

    document = SchemaGenerator().get_schema(request=None, public=True)
    operation = document["paths"]["/api/projects/{slug}/items/"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"page", "cursor", "status"} <= names
    reference = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    body = document["components"]["schemas"][reference.rsplit("/", 1)[1]]
    assert "count" in body["properties"] and "count" not in body["required"]
    assert "cursor" in body["properties"]["count"]["description"]


def _forged(**tokens) -> str:
    """A cursor as DRF's CursorPagination encodes one (base64 of o / r / p), with any tokens."""
    from base64 import b64encode
    from urllib.parse import urlencode

    return b64encode(urlencode(tokens).encode()).decode()


#: Cursors no page of ours ever carries: garbled, or naming a position no id can hold.
FORGED = {
    "binary behind the base64": "//79AAE=",
    "not ASCII": "cD0x\u00e9",
    "no position": _forged(p=""),
    "a negative position": _forged(p="-1"),
    "position zero": _forged(p="0"),
    "a position past every id": _forged(p=str(2**63)),
    "a huge position": _forged(p="9" * 40),
    "a huge position, backwards": _forged(r="1", p="9" * 40),
    "a position with digits of another script": _forged(p="\u0661\u0662"),
    "a position with a separator": _forged(p="1_000"),
    "SQL in the position": _forged(p="1 OR 1=1"),
    "SQL ending the statement": _forged(p="1); DELETE FROM annotation_item; --"),
    "SQL as the cursor itself": "' OR 1=1 --",
    "a negative offset": _forged(o="-1", p="1"),
    "a direction that is not 0 or 1": _forged(r="x", p="1"),
}


@pytest.mark.parametrize("cursor", FORGED.values(), ids=FORGED.keys())
def test_a_forged_cursor_is_refused_in_the_api_format_and_changes_nothing(cursor):
    project = make_project()
    make_items(project, 3)
    client = _admin_client(project)
    response = client.get(f"/api/projects/{project.slug}/items/", {"cursor": cursor})
    assert response.status_code == 404
    assert response.json() == {"message": "Invalid cursor", "extra": {}}
    assert Item.objects.filter(project=project).count() == 3


def test_the_largest_id_is_a_position_past_the_last_page():
    project = make_project()
    make_items(project, 2)
    client = _admin_client(project)
    url = f"/api/projects/{project.slug}/items/"
    onwards = client.get(url, {"cursor": _forged(p=str(2**63 - 1))})
    assert onwards.status_code == 200 and onwards.json()["results"] == []
    backwards = client.get(url, {"cursor": _forged(r="1", p=str(2**63 - 1))}).json()
    expected = list(Item.objects.filter(project=project).values_list("pk", flat=True))
    assert sorted(row["id"] for row in backwards["results"]) == sorted(expected)


def test_a_cursor_from_another_project_pages_this_project_only(monkeypatch):
    """A cursor is a position in id order, not a key to a list: carried to another project's
    list it pages on that project's items after the position, and never shows the first's."""
    from api import pagination

    monkeypatch.setattr(pagination._ByPrimaryKey, "page_size", 2)
    first, second = make_project(), make_project()
    make_items(first, 3, prefix="first")
    make_items(second, 3, prefix="second")
    make_items(first, 3, prefix="first-later")  # ids after the second project's
    admin = make_member(first, Role.ADMIN)
    services.membership_add(project=second, user=admin, role=Role.ADMIN)
    admin_of_both = APIClient()
    admin_of_both.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin).key}")
    client = _admin_client(first)

    page = admin_of_both.get(f"/api/projects/{first.slug}/items/?cursor=").json()
    carried = parse_qs(urlparse(page["next"]).query)["cursor"][0]
    position = max(row["id"] for row in page["results"])
    answer = admin_of_both.get(f"/api/projects/{second.slug}/items/", {"cursor": carried})
    assert answer.status_code == 200
    ids = [row["id"] for row in answer.json()["results"]]
    assert ids
    assert ids == list(
        Item.objects.filter(project=second, pk__gt=position)
        .order_by("pk")[:2]
        .values_list("pk", flat=True)
    )
    assert not Item.objects.filter(pk__in=ids).exclude(project=second).exists()
    # Someone who is not an admin of the second project gets nothing from it, cursor or not.
    outsider = client.get(f"/api/projects/{second.slug}/items/", {"cursor": carried})
    assert outsider.status_code == 404 and set(outsider.json()) == {"message", "extra"}


def test_the_lists_without_cursor_pages_ignore_a_cursor():
    """Only the item list walks by cursor; every other list answers as without one."""
    project = make_project()
    make_items(project, 2)
    client = _admin_client(project)
    for path in ("projects/", f"projects/{project.slug}/stages/",
                 f"projects/{project.slug}/imports/", f"projects/{project.slug}/releases/",
                 f"projects/{project.slug}/agreement/",
                 f"projects/{project.slug}/evaluations/"):  # fmt: skip
        plain = client.get(f"/api/{path}")
        for cursor in ("", FORGED["SQL ending the statement"], FORGED["a huge position"]):
            carried = client.get(f"/api/{path}", {"cursor": cursor})
            assert (carried.status_code, carried.json()) == (plain.status_code, plain.json()), path
