"""Import and release pages, and the same rules over the API: admins import and publish,
researchers and admins download, annotators get 403, strangers 404; tampering is refused."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Item, Role
from imports.models import ImportBatch
from releases.models import Release
from releases.services import release_publish
from tests.factories import PASSWORD, make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def team(django_capture_on_commit_callbacks):
    project = make_project(slug="team")
    make_verify_stage(project)
    make_items(project, 5)
    Item.objects.filter(project=project, external_id__lt="item-00003").update(status="accepted")
    people = {
        role: make_member(project, role, f"{role}-1")
        for role in (Role.ADMIN, Role.RESEARCHER, Role.ANNOTATOR)
    }
    people["stranger"] = make_member(make_project(), Role.ADMIN, "stranger")
    with django_capture_on_commit_callbacks(execute=True):
        release = release_publish(project=project, user=people[Role.ADMIN])
    release.refresh_from_db()
    assert release.status == "published"
    return project, people, release


def browser(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_pages_follow_roles(team):
    project, people, release = team
    pages = {
        "/projects/team/imports/": {"admin": 200, "researcher": 403, "annotator": 403, "stranger": 404},
        "/projects/team/releases/": {"admin": 200, "researcher": 200, "annotator": 403, "stranger": 404},
        "/projects/team/releases/v1/": {"admin": 200, "researcher": 200, "annotator": 403, "stranger": 404},
        "/projects/team/releases/v1/download/": {"admin": 200, "researcher": 200, "annotator": 403,
                                                 "stranger": 404},
    }  # fmt: skip
    for url, expected in pages.items():
        for who, status in expected.items():
            response = browser(people[who]).get(url)
            assert response.status_code == status, (url, who, response.status_code)
    assert Client().get("/projects/team/releases/").status_code == 302  # to sign in
    researcher = browser(people["researcher"])
    listing = researcher.get("/projects/team/releases/").content.decode()
    assert "Publish the next version" not in listing and "v1" in listing
    assert (
        browser(people["admin"])
        .get("/projects/team/releases/")
        .content.decode()
        .count("Review v2 before publishing")
        == 1
    )
    assert researcher.post("/projects/team/releases/publish/").status_code == 403
    tabs = browser(people["annotator"]).get("/projects/team/").content.decode()
    assert "/projects/team/releases/" not in tabs and "/projects/team/imports/" not in tabs


def test_download_streams_the_zip_with_its_checksum(team):
    project, people, release = team
    response = browser(people["researcher"]).get("/projects/team/releases/v1/download/")
    body = b"".join(response.streaming_content)
    assert hashlib.sha256(body).hexdigest() == release.sha256 == response["X-Checksum-SHA256"]
    assert response["Content-Disposition"] == 'attachment; filename="team-v1.zip"'
    assert "team-v1/README.md" in zipfile.ZipFile(io.BytesIO(body)).namelist()
    over_api = api(people["researcher"]).get("/api/projects/team/releases/1/download/")
    assert over_api.status_code == 200 and over_api["Content-Type"] == "application/zip"
    assert b"".join(over_api.streaming_content) == body


def test_tampering_is_refused(team, django_capture_on_commit_callbacks):
    project, people, release = team
    admin, annotator = api(people[Role.ADMIN]), api(people[Role.ANNOTATOR])
    # A forged release id (version), in the UI and the API: 404 in the one error format.
    assert browser(people["admin"]).get("/projects/team/releases/v99/").status_code == 404
    forged = admin.get("/api/projects/team/releases/99/download/")
    assert forged.status_code == 404 and set(forged.json()) == {"message", "extra"}
    # Another project's release through this project's URL, by its admin: 404 as well.
    other = people["stranger"]
    assert api(other).get("/api/projects/team/releases/1/").status_code == 404
    # An annotator cannot download or even list.
    denied = annotator.get("/api/projects/team/releases/1/download/")
    assert denied.status_code == 403 and "researcher" in denied.json()["message"]
    assert annotator.get("/api/projects/team/releases/").status_code == 403
    # A second publish of the same version: 409 in the API and on the page.
    again = admin.post("/api/projects/team/releases/", {"version": 1}, format="json")
    assert again.status_code == 409 and "already published" in again.json()["message"]
    assert again.json()["extra"] == {"version": 1, "next_version": 2}
    # Releases have no write endpoint besides publish.
    for method in ("put", "patch", "delete"):
        assert getattr(admin, method)("/api/projects/team/releases/1/").status_code == 405
    assert Release.objects.get(pk=release.pk).sha256 == release.sha256


def test_publishing_over_the_api_and_the_page(team, django_capture_on_commit_callbacks):
    project, people, _ = team
    admin = api(people[Role.ADMIN])
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post("/api/projects/team/releases/", {"notes": "Second."}, format="json")
    assert response.status_code == 202 and response.json()["version"] == 2
    detail = admin.get("/api/projects/team/releases/2/").json()
    assert detail["status"] == "published" and detail["stats"]["diff"]["unchanged"] == 3
    assert detail["download_url"] == "/api/projects/team/releases/2/download/"
    page = browser(people[Role.ADMIN])
    with django_capture_on_commit_callbacks(execute=True):
        posted = page.post(
            "/projects/team/releases/publish/",
            {"notes": "Third.", "confirm": "publish", "version": "3"},
        )
    assert posted.status_code == 302 and posted["Location"] == "/projects/team/releases/v3/"
    shown = page.get("/projects/team/releases/v3/").content.decode()
    assert "Changes since v2" in shown and "README.md" in shown and "Third." in shown
    confirmed = {"confirm": "publish", "version": "4"}
    building = page.post("/projects/team/releases/publish/", confirmed)  # stays building
    assert building.status_code == 302
    conflict = page.post("/projects/team/releases/publish/", {**confirmed, "version": "5"})
    assert conflict.status_code == 409 and "still being built" in conflict.content.decode()
    refused = page.get("/projects/team/releases/publish/").content.decode()
    assert "cannot be published now" in refused and 'value="publish"' not in refused
    polled = page.get("/projects/team/releases/v4/", headers={"HX-Request": "true"})
    assert 'hx-trigger="every 1s"' in polled.content.decode()
    assert "<html" not in polled.content.decode()


def test_upload_page_runs_small_files_and_shows_every_error(team):
    project, people, _ = team
    page = browser(people[Role.ADMIN])
    bad = b'{"id": "n1", "text": "ok"}\n{"text": "no id"}\n{"id": "n1"}\nnot json\n'
    response = page.post(
        "/projects/team/imports/",
        {"file": SimpleUploadedFile("bad.jsonl", bad), "duplicate_policy": "reject"},
    )
    batch = ImportBatch.objects.get(project=project)
    assert (
        response.status_code == 302
        and response["Location"] == f"/projects/team/imports/{batch.pk}/"
    )
    shown = page.get(response["Location"]).content.decode()
    assert "Nothing was imported" in shown and "3 problems" in shown
    assert "line 2" in shown and "line 3" in shown and "line 4" in shown
    assert "hx-trigger" not in shown  # finished: no more polling
    assert Item.objects.filter(project=project).count() == 5
    good = page.post(
        "/projects/team/imports/", {"file": SimpleUploadedFile("good.csv", b"id,text\nn2,x\n")}
    )
    shown = page.get(good["Location"]).content.decode()
    assert "1 new item." in shown and "Succeeded" in shown
    missing = page.post("/projects/team/imports/", {"duplicate_policy": "reject"})
    assert missing.status_code == 400 and "Choose a file" in missing.content.decode()
    listing = page.get("/projects/team/imports/").content.decode()
    assert "bad.jsonl" in listing and "good.csv" in listing


def test_progress_partial_polls_while_the_import_runs(team, settings):
    project, people, _ = team
    settings.RUNGWISE_IMPORT_INLINE_MAX_BYTES = 10
    page = browser(people[Role.ADMIN])
    response = page.post(
        "/projects/team/imports/", {"file": SimpleUploadedFile("q.jsonl", b'{"id": "q"}\n' * 3)}
    )
    # Queued on commit (which never comes in this test): the page polls every second.
    partial = page.get(response["Location"], headers={"HX-Request": "true"}).content.decode()
    assert 'hx-trigger="every 1s"' in partial and "Waiting for a worker" in partial
    assert "<html" not in partial


def test_import_api_status_and_pagination(team):
    project, people, _ = team
    admin = api(people[Role.ADMIN])
    data = b"".join(
        json.dumps({"id": f"a{n}", "text": f"Sentence {n}."}).encode() + b"\n" for n in range(3)
    )
    created = admin.post(
        "/api/projects/team/imports/",
        {"file": SimpleUploadedFile("a.jsonl", data), "duplicate_policy": "update"},
        format="multipart",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["status"] == "succeeded" and body["items_created"] == 3
    assert body["sha256"] == hashlib.sha256(data).hexdigest()
    assert body["progress"]["finished"] is True and body["progress"]["percent"] == 100.0
    failed = admin.post(
        "/api/projects/team/imports/",
        {"file": SimpleUploadedFile("b.csv", "id\nx\u00e9\n".encode("latin-1"))},
        format="multipart",
    ).json()
    assert failed["status"] == "failed" and failed["errors"][0]["code"] == "encoding"
    status = admin.get(f"/api/projects/team/imports/{failed['id']}/").json()
    assert status["error_count"] == 1 and status["errors"][0]["line"] == 2
    listing = admin.get("/api/projects/team/imports/").json()
    assert listing["count"] == 2 and [row["filename"] for row in listing["results"]] == [
        "b.csv",
        "a.jsonl",
    ]
    items = admin.get("/api/projects/team/items/?status=accepted").json()
    assert items["count"] == 3
    assert admin.get("/api/projects/team/items/?status=nope").status_code == 400
    assert admin.get("/api/projects/team/items/?page=99").status_code == 404
    researcher = api(people[Role.RESEARCHER])
    assert researcher.get("/api/projects/team/items/").status_code == 403
    assert researcher.get("/api/projects/team/imports/").status_code == 403
    assert researcher.get("/api/projects/team/agreement/").status_code == 200
    stages = api(people[Role.ANNOTATOR]).get("/api/projects/team/stages/").json()
    assert stages["results"][0]["slug"] == "verify" and stages["results"][0]["items_total"] == 8


def test_token_auth_and_throttles(team, settings):
    project, people, _ = team
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"auth": "3/min", "submit": "2/min"}}  # fmt: skip
    from django.core.cache import cache

    cache.clear()
    client = APIClient()
    good = client.post(
        "/api/auth/token/", {"username": "admin-1", "password": PASSWORD}, format="json"
    )
    assert good.status_code == 200 and len(good.json()["token"]) == 40
    wrong = client.post("/api/auth/token/", {"username": "admin-1", "password": "x"}, format="json")
    assert wrong.status_code == 400 and set(wrong.json()) == {"message", "extra"}
    client.post("/api/auth/token/", {"username": "admin-1", "password": "x"}, format="json")
    limited = client.post(
        "/api/auth/token/", {"username": "admin-1", "password": PASSWORD}, format="json"
    )
    assert limited.status_code == 429 and limited.json()["extra"]["retry_after"] > 0
    token = APIClient()
    token.credentials(HTTP_AUTHORIZATION=f"Token {good.json()['token']}")
    assert token.get("/api/projects/").json()["results"][0]["slug"] == "team"
    annotator = api(people[Role.ANNOTATOR])
    codes = [annotator.post("/api/assignments/1/submit/", {"payload": {}}, format="json").status_code
             for _ in range(3)]  # fmt: skip
    assert codes[:2] != [429, 429] and codes[2] == 429
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"auth": "3/min", "submit": "off"}}  # fmt: skip
    assert (
        annotator.post("/api/assignments/1/submit/", {"payload": {}}, format="json").status_code
        != 429
    )
    cache.clear()


def test_unknown_api_urls_answer_in_the_error_format(team):
    _, people, _ = team
    response = api(people[Role.ADMIN]).get("/api/assignments/abc/skip/")
    assert response.status_code == 404 and response.json()["message"].startswith("There is no API")


def test_publishing_asks_for_confirmation_stating_what_it_publishes(
    team, django_capture_on_commit_callbacks
):
    """The form, or a GET, shows the confirmation page (version, items, annotations, files);
    nothing is published before its own POST with the version it stated."""
    project, people, _ = team
    page = browser(people[Role.ADMIN])
    for response in (
        page.get("/projects/team/releases/publish/"),
        page.post("/projects/team/releases/publish/", {"notes": "Second cut."}),
    ):
        text = response.content.decode()
        assert response.status_code == 200 and "Publish v2?" in text
        assert 'data-fact="items">3 (3 accepted, 0 rejected and kept)' in text
        assert 'data-fact="annotations">0,' in text
        for name in ("items.jsonl", "items.csv", "annotations.csv", "README.md", "SHA256SUMS"):
            assert f"<code>{name}</code>" in text
        assert 'name="version" value="2"' in text and 'value="publish"' in text
    assert "Second cut." in text
    assert Release.objects.filter(project=project).count() == 1  # nothing published yet
    stale = page.post("/projects/team/releases/publish/", {"confirm": "publish", "version": "1"})
    assert stale.status_code == 409 and "already published" in stale.content.decode()
    no_version = page.post("/projects/team/releases/publish/", {"confirm": "publish"})
    assert no_version.status_code == 400
    assert Release.objects.filter(project=project).count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        done = page.post(
            "/projects/team/releases/publish/",
            {"confirm": "publish", "version": "2", "notes": "Second cut."},
        )
    assert done.status_code == 302 and done["Location"] == "/projects/team/releases/v2/"
    assert Release.objects.get(project=project, version=2).notes == "Second cut."
    researcher = browser(people[Role.RESEARCHER])
    assert researcher.get("/projects/team/releases/publish/").status_code == 403


def test_a_release_is_compared_with_any_earlier_version(team, django_capture_on_commit_callbacks):
    """v3 against v1 (chosen) differs from v3 against v2 (stored at build); a version that is
    not an earlier published one is refused, naming the ones there are."""
    project, people, _ = team
    admin = people[Role.ADMIN]

    def publish():
        with django_capture_on_commit_callbacks(execute=True):
            release = release_publish(project=project, user=admin)
        release.refresh_from_db()
        assert release.status == "published", release.message

    Item.objects.filter(project=project, external_id="item-00003").update(status="accepted")
    publish()  # v2: one item added
    Item.objects.filter(project=project, external_id="item-00004").update(status="accepted")
    Item.objects.filter(project=project, external_id="item-00000").update(version=2)
    publish()  # v3: one more added, one changed
    page = browser(people[Role.RESEARCHER])
    stored = page.get("/projects/team/releases/v3/").content.decode()
    assert "Changes since v2" in stored and '<option value="1">v1</option>' in stored
    chosen = page.get("/projects/team/releases/v3/", {"against": "1"})
    text = chosen.content.decode()
    assert chosen.status_code == 200 and "Changes since v1" in text
    assert chosen.context["diff"]["added"] == 2 and chosen.context["diff"]["changed"] == 1
    assert chosen.context["diff"]["ids"]["added"] == ["item-00003", "item-00004"]
    assert '<option value="1" selected>v1</option>' in text
    for bad in ("3", "9", "x"):
        refused = page.get("/projects/team/releases/v3/", {"against": bad})
        assert refused.status_code == 400 and "v2, v1" in refused.content.decode()
    over_api = api(people[Role.RESEARCHER]).get("/api/projects/team/releases/3/?against=1")
    assert over_api.status_code == 200
    assert over_api.json()["compared_with"] == chosen.context["diff"]
    assert over_api.json()["stats"]["diff"]["previous_version"] == 2
    wrong = api(people[Role.RESEARCHER]).get("/api/projects/team/releases/3/?against=3")
    assert wrong.status_code == 400 and wrong.json()["extra"] == {"against": "3"}


def test_the_confirmation_lists_every_standard_file():
    from releases.layouts import STANDARD_FILES
    from releases.services import release_publish_preview

    project = make_project(slug="empty")
    assert release_publish_preview(project)["files"] == list(STANDARD_FILES)


def test_each_file_of_a_release_downloads_by_itself(team):
    """The release page offers the Parquet copies (and every file of the manifest) one by
    one: the bytes the manifest's SHA-256 states; a file it does not list is a 404 naming
    the files there are."""
    project, people, release = team
    client = browser(people[Role.RESEARCHER])
    page = client.get("/projects/team/releases/v1/").content.decode()
    assert 'href="/projects/team/releases/v1/download/?file=items.parquet"' in page
    assert 'href="/projects/team/releases/v1/download/?file=annotations.parquet"' in page
    manifest = {entry["name"]: entry for entry in release.manifest["files"]}
    for name in ("items.parquet", "annotations.parquet", "items.csv", "README.md"):
        response = client.get("/projects/team/releases/v1/download/", {"file": name})
        body = b"".join(response.streaming_content)
        assert response.status_code == 200, name
        assert hashlib.sha256(body).hexdigest() == manifest[name]["sha256"]
        assert response["X-Checksum-SHA256"] == manifest[name]["sha256"]
        assert response["Content-Length"] == str(len(body))
        assert f'filename="team-v1-{name}"' in response["Content-Disposition"]
    assert body.decode().startswith("# ")
    missing = client.get("/projects/team/releases/v1/download/", {"file": "../settings.py"})
    assert missing.status_code == 404 and "items.parquet" in missing.content.decode()
    stranger = browser(people["stranger"]).get(
        "/projects/team/releases/v1/download/", {"file": "items.parquet"}
    )
    assert stranger.status_code in (403, 404)
