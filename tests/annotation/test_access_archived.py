"""Archived projects are read-only (annotation/access.py, "Archived projects are read-only"):
every URL that changes a project is refused while it is archived — walked from the URL
inventory of tests/test_blindness.py, so a page added tomorrow is covered — reading stays open,
and restoring the project lets the same changes through again."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import api, services
from annotation.access import access_stage_for_annotator
from annotation.models import Role
from studio.services import invite_create
from tests.factories import PASSWORD, make_items, make_member, make_project, make_verify_stage
from tests.test_blindness import EXCLUDED, url_patterns

pytestmark = pytest.mark.django_db

ARCHIVED = "is archived, so it is read-only"

#: Changes an archived project still takes, with why.
ALLOWED_WHILE_ARCHIVED = {
    "studio:archive": "restoring it",
    "studio:clone": "copying its setup into a new project (the archived one is only read)",
    "studio:items_columns": "the member's own columns of the data manager, not the project's",
}


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        yield


@pytest.fixture
def archived():
    """An archived project with a stage, items, an annotator holding a lease and one answer,
    an admin, an invite link; and a project of someone else's."""
    project = make_project(slug="attic")
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 3)
    annotator = make_member(project, Role.ANNOTATOR, username="ann")
    admin = make_member(project, Role.ADMIN, username="boss")
    reached = access_stage_for_annotator(user=annotator, stage_id=stage.pk)
    first = services.assignment_next(annotator=annotator, stage=reached)
    answer, _ = services.annotation_submit(
        assignment_id=first.pk, annotator=annotator, payload={"value": "keep"}
    )
    reached = access_stage_for_annotator(user=annotator, stage_id=stage.pk)
    held = services.assignment_next(annotator=annotator, stage=reached)
    invite = invite_create(
        project=project, role=Role.ANNOTATOR, days=3, max_uses=0, created_by=admin
    )
    api.project_archive_set(project=project, archived=True)
    return {
        "project": project,
        "stage": stage,
        "annotator": annotator,
        "admin": admin,
        "held": held,
        "answer": answer,
        "invite": invite,
    }


def row_counts() -> dict[str, int]:
    """Rows of every table the apps own (sessions and sign-in logs left out)."""
    skipped = {"sessions", "axes", "admin"}
    return {
        model._meta.label: model._base_manager.count()
        for model in apps.get_models()
        if model._meta.app_label not in skipped
    }


#: A value of the right shape for a parameter the guard never reads (it refuses on the project),
#: and the values of parameters a view checks before it fetches the project.
_CONVERTER_VALUES = {"int": 1, "slug": "x", "str": "x", "path": "x"}
_PARAMETER_VALUES = {"action": "pause"}


def project_urls(slug: str) -> list[tuple[str, str]]:
    """(name, URL) of every URL pattern with a project slug, the other parameters filled with a
    value of their converter's shape."""
    found = []
    for pattern in url_patterns():
        if not pattern.name or "slug" not in pattern.parameters:
            continue
        if any(pattern.route.startswith(start) for start in EXCLUDED):
            continue
        converters = dict(
            (name, converter or "str")
            for converter, name in re.findall(r"<(?:(\w+):)?(\w+)>", pattern.route)
        )
        kwargs = {
            name: slug
            if name == "slug"
            else _PARAMETER_VALUES.get(name, _CONVERTER_VALUES[converters[name]])
            for name in pattern.parameters
        }
        found.append((pattern.name, reverse(pattern.name, kwargs=kwargs)))
    return found


def test_every_url_that_changes_an_archived_project_is_refused(client, archived):
    root = get_user_model().objects.create_superuser("root", password=PASSWORD)
    client.force_login(root)
    before = row_counts()
    urls = project_urls("attic")
    assert len(urls) > 60  # the inventory is walked, not a hand-kept list
    refused, read_only, wrong = [], [], []
    for name, url in urls:
        if name in ALLOWED_WHILE_ARCHIVED:  # tested below (restoring would end this walk)
            continue
        response = client.post(url, {"archived": "0", "name": "Renamed", "value": "keep"})
        body = response.content.decode()
        if response.status_code == 405:  # a page that only reads: GET only
            read_only.append(name)
        elif response.status_code == 409 and ARCHIVED in body:
            refused.append(name)
        else:
            wrong.append((name, url, response.status_code, body[:200]))
    assert not wrong, "\n".join(f"{n} {u} {c}" for n, u, c, _ in wrong)
    assert row_counts() == before
    # The ones a team changes a study with are among them.
    assert {
        "studio:stage_edit",
        "studio:stage_add",
        "studio:member_add",
        "studio:member_role",
        "studio:invite_create",
        "studio:item_act",
        "studio:items_bulk",
        "imports:imports",
        "releases:publish",
        "agreement:adjudicate",
        "api:imports",
        "api:releases",
    } <= set(refused)
    assert {"studio:setup", "studio:items", "api:items"} <= set(read_only)


def test_other_methods_are_refused_too_and_reading_stays_open(client, archived):
    client.force_login(archived["admin"])
    setup = reverse("studio:setup", args=["attic"])
    for method in ("put", "patch", "delete"):
        response = getattr(client, method)(reverse("studio:stage_add", args=["attic"]))
        assert response.status_code in (405, 409), method
    api = client.post(reverse("api:releases", args=["attic"]), {}, content_type="application/json")
    assert api.status_code == 409 and ARCHIVED in api.json()["message"]
    for url in (
        setup,
        reverse("studio:items", args=["attic"]),
        reverse("api:items", args=["attic"]),
    ):
        assert client.get(url).status_code == 200, url


def test_someone_outside_the_project_learns_nothing_from_the_refusal(client, archived):
    outsider = make_member(make_project(slug="elsewhere"), Role.ADMIN, username="eve")
    client.force_login(outsider)
    response = client.post(reverse("studio:stage_add", args=["attic"]), {"name": "X"})
    assert response.status_code == 404 and "Attic" not in response.content.decode()


def test_the_annotator_invitees_and_participants_change_nothing(client, archived):
    stage, held, answer = archived["stage"], archived["held"], archived["answer"]
    before = row_counts()
    client.force_login(archived["annotator"])
    attempts = {
        "next": client.post(reverse("annotation:stage", args=[stage.pk])),
        "submit": client.post(reverse("annotation:submit", args=[held.pk]), {"value": "keep"}),
        "skip": client.post(reverse("annotation:skip", args=[held.pk]), {"reason": "x"}),
        "change": client.post(reverse("annotation:answer", args=[answer.pk]), {"value": "reject"}),
        "api_next": client.post(reverse("api:next", args=[stage.pk])),
        "api_submit": client.post(
            reverse("api:submit", args=[held.pk]),
            {"payload": {"value": "keep"}},
            content_type="application/json",
        ),
    }
    for name, response in attempts.items():
        assert response.status_code in (403, 409), (name, response.status_code)
    assert ARCHIVED in attempts["next"].content.decode()
    client.logout()
    joined = client.post(
        reverse("studio:join", args=[archived["invite"].token]),
        {"username": "newcomer", "password": "a-long-enough-password-1"},
    )
    assert joined.status_code == 409 and ARCHIVED in joined.content.decode()
    assert row_counts() == before


def test_a_participant_cannot_enter_a_study_of_an_archived_project(client, archived):
    from tests.factories import make_crowd_study, prolific_ids

    project = make_project(slug="crowded")
    study = make_crowd_study(project=project)
    api.project_archive_set(project=project, archived=True)
    before = row_counts()
    response = client.get(reverse("crowd:enter", args=[study.token]), prolific_ids(1))
    assert response.status_code == 409 and "closed" in response.content.decode()
    assert row_counts() == before


def test_the_pages_say_it_and_hide_their_forms_and_restoring_lets_changes_through(client, archived):
    project = archived["project"]
    client.force_login(archived["admin"])
    item = project.items.first()
    page = client.get(reverse("studio:item", args=["attic", item.pk])).content.decode()
    assert 'class="container project-archived"' in page and "data-archived-notice" in page
    assert "Attic is archived: it is read-only." in page
    setup = client.get(reverse("studio:setup", args=["attic"])).content.decode()
    assert setup.count("data-archived-notice") == 1  # the Setup tab's own, with Restore
    assert f'action="{reverse("studio:archive", args=["attic"])}" data-archived-ok' in setup
    add = reverse("studio:stage_add", args=["attic"])
    stage = {"slug": "second", "name": "Second", "kind": "verify", "overlap": "1"}
    assert client.post(add, stage).status_code == 409
    restored = client.post(reverse("studio:archive", args=["attic"]), {"archived": "0"})
    assert restored.status_code == 302
    project.refresh_from_db()
    assert project.is_active
    assert client.post(add, stage).status_code == 302
    assert project.stages.filter(slug="second").exists()
    assert (
        "data-archived-notice"
        not in client.get(reverse("studio:setup", args=["attic"])).content.decode()
    )
