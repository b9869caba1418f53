"""A decision is named by the policy that made it (agreement/decisions.py), and every table of
items on the agreement pages links each row to the item's page when the viewer may open it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from agreement.decisions import ITEM_PAGE_ROLES, decision_label, may_open_items
from annotation.models import ItemStage, Resolution, Role
from studio.access import BROWSE_ROLES
from tests.factories import (
    PASSWORD,
    annotate_stage,
    make_items,
    make_member,
    make_project,
    make_verify_stage,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def client_for(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_the_item_page_roles_are_studios():
    assert ITEM_PAGE_ROLES == frozenset(BROWSE_ROLES)
    assert may_open_items({Role.REVIEWER}) and not may_open_items({Role.ANNOTATOR})


def test_each_status_is_named_with_the_policy():
    def label(**fields):
        return decision_label(Resolution(**fields))

    assert label(
        status="majority", value="keep", votes={"keep": 2, "reject": 1}, policy="majority"
    ) == ("2 of 3 voted keep · Strict majority (ties by the tie policy)")
    assert label(status="unanimous", value="keep", votes={"keep": 3}, policy="majority") == (
        "unanimous, 3 of 3 · Strict majority (ties by the tie policy)"
    )
    assert label(status="adjudicated", value="keep", votes={}, policy="majority").startswith(
        "decided by a reviewer · "
    )
    assert label(status="mean", value=6.5, votes={}, n_annotations=4, policy="mean") == (
        "mean of 4 answers · Mean rating (optionally rejected below accept_threshold)"
    )
    assert label(status="majority", value="x", votes={"x": 2}, policy="gone") == (
        "2 of 2 voted x · gone"
    )
    assert decision_label(None) == ""


@pytest.fixture
def any_reject(django_capture_on_commit_callbacks):
    """METER's raw verification: one reject of three discards the item."""
    project = make_project(slug="any-reject")
    stage = make_verify_stage(project, overlap=3, resolution_policy="unanimity_keep")
    make_items(project, 2)
    people = [make_member(project, username=f"ann{rank}") for rank in range(3)]
    for rank, person in enumerate(people):
        person.rank = rank

    def choose(person, item):
        return "reject" if item.external_id.endswith("0") and person.rank == 0 else "keep"

    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(stage, people, choose)
    return project, stage


def test_an_any_reject_discard_names_its_rule_and_links_to_the_item(any_reject):
    project, stage = any_reject
    discarded = ItemStage.objects.get(stage=stage, item__external_id="item-00000")
    assert discarded.resolution.outcome == "reject"
    assert discarded.resolution.status == "majority"  # how the votes fell, not why
    researcher = make_member(project, Role.RESEARCHER, username="rita")
    html = (
        client_for(researcher)
        .get(reverse("agreement:disagreements", args=[project.slug, stage.slug]))
        .content.decode()
    )
    assert "1 of 3 voted reject · Any reject discards (METER&#x27;s raw verification)" in html
    assert "Majority" not in html
    item_url = reverse("studio:item", args=[project.slug, discarded.item_id])
    assert f'href="{item_url}"' in html


def test_the_adjudication_queue_links_its_rows(django_capture_on_commit_callbacks):
    project = make_project(slug="ties")
    stage = make_verify_stage(project, overlap=2, tie_policy="adjudicate")
    make_items(project, 1)
    people = [make_member(project, username=f"ann{rank}") for rank in range(2)]
    for rank, person in enumerate(people):
        person.rank = rank
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(stage, people, lambda person, item: ("keep", "reject")[person.rank])
    waiting = ItemStage.objects.get(stage=stage)
    assert waiting.state == ItemStage.State.ADJUDICATION
    reviewer = make_member(project, Role.REVIEWER, username="rev")
    html = client_for(reviewer).get(reverse("agreement:adjudication", args=[project.slug]))
    text = html.content.decode()
    assert f'href="{reverse("studio:item", args=[project.slug, waiting.item_id])}"' in text
    assert "no majority: waiting for a reviewer · Strict majority" in text
