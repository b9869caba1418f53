"""Setting a study up in the app (studio/): a project from a template, the pipeline edited
through the services' checks, members by name and invite links."""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from annotation.models import Membership, Project, Role, Stage
from studio.models import Invite
from tests.factories import make_member, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = make_user("staffer", is_staff=True)
    client.force_login(user)
    return user


def create(client, **data):
    return client.post(reverse("studio:new"), data)


def test_staff_create_a_project_from_each_template(client, staff):
    page = client.get(reverse("studio:new")).content.decode()
    for label in ("Acceptability ratings", "METER", "From scratch"):
        assert label in page
    response = create(client, workflow="meter", slug="m1", name="METER one")
    assert response.status_code == 302 and response.url == reverse("studio:setup", args=["m1"])
    project = Project.objects.get(slug="m1")
    assert project.kind == "meter"
    assert list(project.stages.order_by("position").values_list("slug", flat=True)) == [
        "verify", "edit", "filter", "baseline", "evidence",
    ]  # fmt: skip
    assert Membership.objects.filter(project=project, user=staff, role=Role.ADMIN).exists()
    create(client, workflow="ratings", slug="r1", name="Ratings one")
    assert Project.objects.get(slug="r1").stages.count() >= 1
    create(client, workflow="generic", slug="g1", name="Empty")
    assert Project.objects.get(slug="g1").stages.count() == 0


@pytest.mark.parametrize(
    "data, field",
    [
        ({"workflow": "nope", "slug": "x", "name": "X"}, "workflow"),
        ({"workflow": "generic", "slug": "bad slug!", "name": "X"}, "slug"),
        ({"workflow": "generic", "slug": "new", "name": "X"}, "slug"),
        ({"workflow": "generic", "slug": "ok", "name": " "}, "name"),
    ],
)
def test_a_bad_new_project_form_says_what_and_creates_nothing(client, staff, data, field):
    response = create(client, **data)
    assert response.status_code == 400
    assert response.context["error"].extra.get(field) is not None
    assert not Project.objects.exists()


def test_only_staff_create_projects(client):
    client.force_login(make_user("someone"))
    assert client.get(reverse("studio:new")).status_code == 403


@pytest.fixture
def project(client, staff):
    create(client, workflow="generic", slug="p", name="P")
    return Project.objects.get(slug="p")


def test_stages_are_added_and_edited_through_the_engines_checks(client, project):
    url = reverse("studio:stage_add", args=[project.slug])
    assert (
        client.post(
            url, {"slug": "verify", "name": "Verify", "kind": "verify", "overlap": "3"}
        ).status_code
        == 302
    )
    client.post(url, {"slug": "label", "name": "Label", "kind": "label", "overlap": "2"})
    # A label stage needs its choices: refused by the kind, nothing added.
    assert not project.stages.filter(slug="label").exists()
    verify = project.stages.get(slug="verify")
    edit = reverse("studio:stage_edit", args=[project.slug, verify.pk])
    ok = client.post(edit, {"name": "Verify pairs", "overlap": "5", "routes": ""})
    assert ok.status_code == 302
    verify.refresh_from_db()
    assert (verify.name, verify.overlap) == ("Verify pairs", 5)
    broken = client.post(
        edit, {"overlap": "2", "routes": '{"accept": {"action": "stage", "stage": "nowhere"}}'}
    )
    assert broken.status_code == 400
    assert "no stage 'nowhere'" in html.unescape(broken.content.decode())
    not_json = client.post(edit, {"overlap": "2", "config": "{oops"})
    assert not_json.status_code == 400 and "config: not valid JSON" in not_json.content.decode()
    verify.refresh_from_db()
    assert verify.overlap == 5  # nothing changed by the refused forms
    page = client.get(reverse("studio:setup", args=[project.slug])).content.decode()
    assert "Verify pairs" in page and "Invite links" in page


def test_the_setup_page_is_for_the_projects_admins(client, project):
    annotator = make_member(project)
    client.force_login(annotator)
    assert client.get(reverse("studio:setup", args=[project.slug])).status_code == 403
    client.force_login(make_user("stranger"))
    assert client.get(reverse("studio:setup", args=[project.slug])).status_code == 404


def test_members_are_added_by_name_and_removed(client, project):
    make_user("Ada")
    url = reverse("studio:member_add", args=[project.slug])
    assert client.post(url, {"username": "ada", "role": "reviewer"}).status_code == 302
    ada = get_user_model().objects.get(username="Ada")
    assert Membership.objects.filter(project=project, user=ada, role="reviewer").exists()
    missing = client.post(url, {"username": "nobody", "role": "annotator"})
    assert missing.status_code == 404 and "invite link" in missing.content.decode()
    remove = reverse("studio:member_remove", args=[project.slug])
    client.post(remove, {"user": ada.pk, "role": "reviewer"})
    assert not Membership.objects.filter(project=project, user=ada).exists()


def test_an_invite_link_makes_a_new_account_a_member_once(client, project, staff):
    client.post(
        reverse("studio:invite_create", args=[project.slug]),
        {"role": "annotator", "days": "7", "max_uses": "2"},
    )
    invite = Invite.objects.get()
    assert invite.expires_at - timezone.now() > timedelta(days=6)
    client.logout()
    url = reverse("studio:join", args=[invite.token])
    page = client.get(url).content.decode()
    assert "Create your account" in page and project.name in page
    weak = client.post(url, {"username": "newbie", "password1": "x", "password2": "x"})
    assert (
        weak.status_code == 400 and not get_user_model().objects.filter(username="newbie").exists()
    )
    joined = client.post(
        url, {"username": "newbie", "password1": "a-long-pass-9!", "password2": "a-long-pass-9!"}
    )
    assert joined.status_code == 302
    newbie = get_user_model().objects.get(username="newbie")
    assert Membership.objects.filter(project=project, user=newbie, role="annotator").exists()
    client.post(url)  # the same person again: no second use
    invite.refresh_from_db()
    assert invite.uses == 1
    client.force_login(make_user("second"))
    client.post(url)
    client.force_login(make_user("third"))
    used_up = client.post(url)
    assert used_up.status_code == 409 and "used up" in used_up.content.decode()
    assert not Membership.objects.filter(project=project, user__username="third").exists()


def test_expired_withdrawn_and_unknown_links_say_so(client, project, staff):
    from studio.services import invite_create

    expired = invite_create(project=project, role="annotator", days=1, max_uses=0, created_by=staff)
    Invite.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    withdrawn = invite_create(
        project=project, role="annotator", days=1, max_uses=0, created_by=staff
    )
    client.post(reverse("studio:invite_revoke", args=[project.slug, withdrawn.pk]))
    client.force_login(make_user("late"))
    assert "expired" in client.get(reverse("studio:join", args=[expired.token])).content.decode()
    assert (
        "withdrawn" in client.get(reverse("studio:join", args=[withdrawn.token])).content.decode()
    )
    assert client.get(reverse("studio:join", args=["nope"])).status_code == 404
    assert not Membership.objects.filter(user__username="late").exists()


def test_stage_models_unchanged_by_a_refused_add(client, project):
    before = Stage.objects.count()
    client.post(
        reverse("studio:stage_add", args=[project.slug]),
        {"slug": "x y", "name": "", "kind": "verify", "overlap": "0"},
    )
    assert Stage.objects.count() == before


def test_the_item_browser_searches_filters_and_shows_an_items_history(
    client, django_capture_on_commit_callbacks
):
    from annotation import services as engine
    from tests.factories import annotate_stage, pipeline

    project, verify, label, people = pipeline(overlap=1, items=4, annotators=1)
    first = project.items.order_by("pk").first()
    engine.item_revise(
        item=first, payload={**first.payload, "text": "Revised text."}, author=None, reason="typo"
    )
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(
            verify, people, lambda person, item: "reject" if item.pk == first.pk else "keep"
        )
    researcher = make_member(project, role=Role.RESEARCHER)
    client.force_login(researcher)
    url = reverse("studio:items", args=[project.slug])
    page = client.get(url, {"q": "revised"}).content.decode()
    assert first.external_id in page and "1 item match" in page
    assert "3 items match" in client.get(url, {"stage": "label", "state": "open"}).content.decode()
    assert "1 item match" in client.get(url, {"status": "discarded"}).content.decode()
    assert client.get(url, {"state": "weird"}).status_code == 400
    detail = client.get(reverse("studio:item", args=[project.slug, first.pk])).content.decode()
    assert "Version 2" in detail and "typo" in detail and "Revised text." in detail
    assert people[0].username in detail and "reject" in detail
    client.force_login(people[0])  # annotators never browse others' work
    assert client.get(url).status_code == 403
    assert client.get(reverse("studio:item", args=[project.slug, first.pk])).status_code == 403


def test_the_item_history_shows_every_version_of_a_changed_answer(client):
    from annotation import services as engine
    from annotation.access import access_stage_for_annotator
    from tests.factories import pipeline

    project, verify, _, (alice, *_) = pipeline(overlap=3, items=1)
    assignment = engine.assignment_next(
        annotator=alice, stage=access_stage_for_annotator(user=alice, stage_id=verify.pk)
    )
    first, _ = engine.annotation_submit(
        assignment_id=assignment.pk, annotator=alice, payload={"value": "keep"}
    )
    engine.annotation_revise(annotation_id=first.pk, annotator=alice, payload={"value": "reject"})
    client.force_login(make_member(project, role=Role.REVIEWER))
    detail = client.get(
        reverse("studio:item", args=[project.slug, first.item_stage.item_id])
    ).content.decode()
    assert detail.count(alice.username) == 2
    assert "replaced" in detail and "changed · v2" in detail
    assert detail.index("keep") < detail.index("reject")


def test_a_revision_of_nested_content_lists_only_the_changed_leaves():
    from studio.selectors import revision_changes

    old = [{"level": 1, "distractors": [{"text": "a", "category": "x"}, {"text": "b"}]}]
    new = [{"level": 1, "distractors": [{"text": "a", "category": "y"}, {"text": "b"}]}]
    assert revision_changes({"questions": {"old": old, "new": new}, "t": {"old": 1, "new": 2}}) == [
        {"field": "questions[0].distractors[0].category", "old": "x", "new": "y"},
        {"field": "t", "old": 1, "new": 2},
    ]


def test_another_projects_stage_answers_like_an_unknown_one(client, project, staff):
    create(client, workflow="meter", slug="other", name="Other")
    foreign = Project.objects.get(slug="other").stages.first()
    url = reverse("studio:stage_edit", args=[project.slug, foreign.pk])
    assert client.post(url, {"name": "Taken over"}).status_code == 404
    unknown = reverse("studio:stage_edit", args=[project.slug, 999_999])
    assert client.post(unknown, {"name": "x"}).status_code == 404
    foreign.refresh_from_db()
    assert foreign.name != "Taken over"
