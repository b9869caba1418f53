"""The item page (studio/item_views.py): progress, skips, leases and why an item is stuck, its
history; the admin's actions with their confirmation and errors; who may act (admins only);
the stranding warning on the Setup tab and the Agreement dashboard."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Item, ItemEvent, ItemStage, Role
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        yield


def lease(user, stage):
    return services.assignment_next(
        annotator=user, stage=access_stage_for_annotator(user=user, stage_id=stage.pk)
    )


@pytest.fixture
def stranded():
    """Two annotators on a stage that needs two answers per item; one of them skips."""
    project = make_project(slug="strand")
    verify = make_verify_stage(project, overlap=2)
    (item,) = make_items(project, 1)
    ann = make_member(project, username="ann")
    ben = make_member(project, username="ben")
    held = lease(ann, verify)
    services.annotation_submit(
        assignment_id=held.pk, annotator=ann, payload={"value": "keep", "comment": "fine"}
    )
    held = lease(ben, verify)
    services.assignment_skip(assignment_id=held.pk, annotator=ben, reason="BEN-CANNOT-READ")
    people = {
        role: make_member(project, role, username=role)
        for role in (Role.ADMIN, Role.RESEARCHER, Role.REVIEWER)
    }
    people["annotator"] = ann
    return project, verify, item, people


def page(client, user, project, item):
    client.force_login(user)
    response = client.get(reverse("studio:item", args=[project.slug, item.pk]))
    assert response.status_code == 200
    return response.content.decode()


def act(client, user, project, item, **data):
    client.force_login(user)
    return client.post(reverse("studio:item_act", args=[project.slug, item.pk]), data)


def test_the_item_page_says_why_the_item_is_stuck_and_who_skipped(client, stranded):
    project, verify, item, people = stranded
    body = page(client, people[Role.ADMIN], project, item)
    assert "Stuck: needs 1 more answer; 0 eligible annotators can still take it." in body
    assert "ben · skipped: “BEN-CANNOT-READ”" in body
    assert "Resolve by hand" in body and 'name="confirm"' in body
    # The open answer stays blind: ann's vote is not on the page until the item is decided.
    assert "1 answer by others not shown" in body


def test_reviewers_see_the_skip_but_not_the_name_and_get_no_actions(client, stranded):
    project, verify, item, people = stranded
    body = page(client, people[Role.REVIEWER], project, item)
    assert "BEN-CANNOT-READ" in body and "Annotator 1 · skipped" in body
    assert "ben ·" not in body and "Resolve by hand" not in body
    assert "studio:item_act" not in body and "/act/" not in body


def test_the_setup_tab_and_the_dashboard_warn_of_stranded_items(client, stranded):
    project, verify, item, people = stranded
    client.force_login(people[Role.ADMIN])
    for url in (
        reverse("studio:setup", args=[project.slug]),
        reverse("agreement:dashboard", args=[project.slug]),
    ):
        body = client.get(url).content.decode()
        assert "Items that cannot finish" in body, url
        assert "Verify: 1 item needs more people than can still take it" in body
        assert reverse("studio:item", args=[project.slug, item.pk]) in body


def test_an_admin_rescues_the_stranded_item_and_the_history_says_so(client, stranded):
    project, verify, item, people = stranded
    admin = people[Role.ADMIN]
    response = act(
        client, admin, project, item,
        action="resolve", stage="verify", value="keep", reason="ann's reading is enough",
        confirm="yes",
    )  # fmt: skip
    assert response.status_code == 302
    assert response.url == reverse("studio:item", args=[project.slug, item.pk]) + "#history"
    item.refresh_from_db()
    assert item.status == Item.Status.ACCEPTED
    body = page(client, admin, project, item)
    assert "Resolved by hand" in body and "ann&#x27;s reading is enough" in body
    assert "item active → accepted" in body
    # Decided now: the answer is shown, as fields, not as JSON.
    assert '<strong class="item-vote">keep</strong>' in body and '{"value"' not in body
    assert "Stuck" not in body
    setup = client.get(reverse("studio:setup", args=[project.slug])).content.decode()
    assert "Items that cannot finish" not in setup


def test_an_action_needs_the_confirmation_and_a_refusal_changes_nothing(client, stranded):
    project, verify, item, people = stranded
    admin = people[Role.ADMIN]
    response = act(client, admin, project, item, action="discard", reason="dup")
    body = response.content.decode()
    assert response.status_code == 400
    assert "Tick the box to confirm" in body
    assert body.index("Tick the box") < body.index("Where it is")  # at the top of the page
    response = act(
        client, admin, project, item, action="resolve", value="maybe", reason="x", confirm="yes"
    )
    assert response.status_code == 409
    assert "Decide one of: keep, reject" in response.content.decode()
    response = act(client, admin, project, item, action="discard", confirm="yes")
    assert response.status_code == 400 and "Give a reason" in response.content.decode()
    item.refresh_from_db()
    assert item.status == Item.Status.ACTIVE and not ItemEvent.objects.exists()
    assert ItemStage.objects.get(item=item).state == ItemStage.State.OPEN


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.RESEARCHER, "annotator"])
def test_only_admins_act(client, stranded, role):
    project, verify, item, people = stranded
    response = act(
        client, people[role], project, item,
        action="discard", reason="not mine to do", confirm="yes",
    )  # fmt: skip
    assert response.status_code in (403, 404)
    item.refresh_from_db()
    assert item.status == Item.Status.ACTIVE and not ItemEvent.objects.exists()


def test_an_item_of_another_project_is_not_found(client, stranded):
    project, verify, item, people = stranded
    other = make_project(slug="other")
    make_verify_stage(other, overlap=1)
    (foreign,) = make_items(other, 1)
    client.force_login(people[Role.ADMIN])
    response = client.post(
        reverse("studio:item_act", args=[project.slug, foreign.pk]),
        {"action": "discard", "reason": "x", "confirm": "yes"},
    )
    assert response.status_code == 404
    foreign.refresh_from_db()
    assert foreign.status == Item.Status.ACTIVE


def test_reopening_needs_a_reason_said_next_to_the_field(client, stranded):
    project, verify, item, people = stranded
    admin = people[Role.ADMIN]
    act(
        client, admin, project, item,
        action="resolve", stage="verify", value="keep", reason="enough", confirm="yes",
    )  # fmt: skip
    response = act(
        client, admin, project, item, action="reopen", stage="verify", reason="  ", confirm="yes"
    )
    body = response.content.decode()
    assert response.status_code == 400
    # The reason field says it, is marked invalid and takes the focus; its form stays open.
    field = body[body.index('id="reopen-reason"') :]
    field = field[: field.index("</div>")]
    assert 'aria-invalid="true"' in field and "autofocus" in field
    assert '<p class="field-error" id="reopen-reason-error">Give a reason to reopen' in field
    item.refresh_from_db()
    assert item.status == Item.Status.ACCEPTED
    assert list(ItemEvent.objects.values_list("action", flat=True)) == ["resolve"]
    response = act(
        client, admin, project, item,
        action="reopen", stage="verify", reason="the guidelines changed", confirm="yes",
    )  # fmt: skip
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.status == Item.Status.ACTIVE
