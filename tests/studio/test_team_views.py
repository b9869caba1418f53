"""What a team changes in its first week (studio/team_views.py): a member's role, the licence
and citation a release carries, archiving and restoring, cloning a setup without its data, the
archived list; who may do each."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.models import Item, ItemStage, Membership, Project, Role, Stage
from annotation.selectors import projects_for_user
from studio import services
from tests.factories import (
    PASSWORD,
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_user,
    make_verify_stage,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(client):
    user = make_user("boss", is_staff=True)
    client.force_login(user)
    return user


@pytest.fixture
def project(admin):
    project = make_project(slug="team")
    engine.membership_add(project=project, user=admin, role=Role.ADMIN)
    return project


def setup_url(name, project, *args):
    return reverse(f"studio:{name}", args=[project.slug, *args])


def roles(project, user):
    return set(Membership.objects.filter(project=project, user=user).values_list("role", flat=True))


def test_an_admin_changes_a_members_role_on_the_setup_page(client, project, admin):
    ada = make_member(project, Role.ANNOTATOR, "ada")
    page = client.get(setup_url("setup", project)).content.decode()
    assert 'aria-label="Role of ada"' in page or "Role of ada" in page
    changed = client.post(
        setup_url("member_role", project),
        {"user": ada.pk, "role": "annotator", "new_role": "reviewer", "anchor": "#members"},
    )
    assert changed.status_code == 302 and changed.url.endswith("#members")
    assert roles(project, ada) == {"reviewer"}
    # A second role is added, then changed: the person holds both, each changed on its own.
    engine.membership_add(project=project, user=ada, role=Role.ANNOTATOR)
    client.post(
        setup_url("member_role", project),
        {"user": ada.pk, "role": "reviewer", "new_role": "researcher"},
    )
    assert roles(project, ada) == {"annotator", "researcher"}
    # Changing to a role already held merges the two.
    client.post(
        setup_url("member_role", project),
        {"user": ada.pk, "role": "researcher", "new_role": "annotator"},
    )
    assert roles(project, ada) == {"annotator"}


@pytest.mark.parametrize(
    "posted, status, words",
    [
        ({"role": "annotator", "new_role": "boss"}, 400, "Unknown role"),
        ({"role": "reviewer", "new_role": "annotator"}, 404, "does not hold that role"),
        ({"role": "annotator", "new_role": "reviewer", "user": "x"}, 400, "Choose a member"),
    ],
)
def test_a_refused_role_change_says_why_and_changes_nothing(client, project, posted, status, words):
    ada = make_member(project, Role.ANNOTATOR, "ada")
    response = client.post(setup_url("member_role", project), {"user": ada.pk, **posted})
    assert response.status_code == status
    assert words in html.unescape(response.content.decode())
    assert roles(project, ada) == {"annotator"}


def test_an_admin_cannot_change_away_their_own_admin_role(client, project, admin):
    response = client.post(
        setup_url("member_role", project),
        {"user": admin.pk, "role": "admin", "new_role": "annotator"},
    )
    assert response.status_code == 400 and "your own admin role" in response.content.decode()
    assert roles(project, admin) == {"admin"}


def _submit(person, stage, value):
    assignment = engine.assignment_next(
        annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
    )
    engine.annotation_submit(
        assignment_id=assignment.pk, annotator=person, payload={"value": value}
    )


def test_an_annotator_made_reviewer_never_decides_an_item_they_annotated(
    client, project, django_capture_on_commit_callbacks
):
    """Roles changed on the setup page keep the blindness rule (agreement.access): whoever
    annotated an item does not adjudicate it, whatever role they hold now."""
    stage = make_label_stage(project, overlap=3)
    make_items(project, 1)
    people = [make_member(project, Role.ANNOTATOR, f"a{n}") for n in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        for person, value in zip(people, ["causal", "temporal", "none"], strict=True):
            _submit(person, stage, value)
    tied = ItemStage.objects.get(stage=stage, state="adjudication")
    client.post(
        setup_url("member_role", project),
        {"user": people[0].pk, "role": "annotator", "new_role": "reviewer"},
    )
    engine.membership_add(project=project, user=people[1], role=Role.REVIEWER)
    outsider = make_member(project, Role.ANNOTATOR, "fresh")
    client.post(
        setup_url("member_role", project),
        {"user": outsider.pk, "role": "annotator", "new_role": "reviewer"},
    )
    adjudicate = reverse("agreement:adjudicate", args=[project.slug, tied.pk])
    for person in people[:2]:
        client.logout()
        assert client.login(username=person.username, password=PASSWORD)
        refused = client.get(adjudicate)
        assert refused.status_code == 403, person
        assert "You annotated this item" in refused.content.decode()
    client.logout()
    client.login(username="fresh", password=PASSWORD)
    assert client.get(adjudicate).status_code == 200


def test_licence_and_citation_are_chosen_and_written_into_the_datasheet(
    client, project, admin, settings, tmp_path
):
    from releases.services import release_build, release_datasheet, release_publish

    settings.MEDIA_ROOT = tmp_path
    page = client.get(setup_url("setup", project)).content.decode()
    assert "CC-BY-SA-4.0" in page and "ODbL-1.0" in page
    citation = "@misc{team2026,\n  title = {Team},\n  year = {2026}\n}"
    saved = client.post(
        setup_url("publication", project), {"license": "CC-BY-SA-4.0", "citation": citation}
    )
    assert saved.status_code == 302
    project.refresh_from_db()
    assert (project.license, project.citation) == ("CC-BY-SA-4.0", citation)
    refused = client.post(setup_url("publication", project), {"license": "WTFPL", "citation": ""})
    assert refused.status_code == 400 and "not a licence offered here" in html.unescape(
        refused.content.decode()
    )
    project.refresh_from_db()
    assert project.license == "CC-BY-SA-4.0"
    make_verify_stage(project)
    make_items(project, 1)
    Item.objects.filter(project=project).update(status=Item.Status.ACCEPTED)
    release = release_publish(project=project, user=admin)
    release_build(release_id=release.pk)
    release.refresh_from_db()
    datasheet = release_datasheet(release)
    assert "| License | CC-BY-SA-4.0 |" in datasheet
    assert f"```bibtex\n{citation}\n```" in datasheet


def test_an_archived_project_leaves_home_lists_hands_out_no_work_and_is_restored(
    client, project, admin
):
    stage = make_label_stage(project, overlap=1)
    make_items(project, 2)
    ada = make_member(project, Role.ANNOTATOR, "ada")
    archived = client.post(setup_url("archive", project), {"archived": "1"})
    assert archived.status_code == 302
    assert project not in [access.project for access in projects_for_user(ada)]
    assert project not in [access.project for access in projects_for_user(admin)]
    with pytest.raises(Exception, match="archived, so it is read-only"):
        access_stage_for_annotator(user=ada, stage_id=stage.pk)
    page = client.get(setup_url("setup", project)).content.decode()
    assert "This project is archived" in page and "Restore the project" in page
    restore_link = setup_url("setup", project) + "#project"
    assert restore_link in client.get(reverse("studio:archived")).content.decode()
    assert Item.objects.filter(project=project).count() == 2  # nothing deleted
    client.post(setup_url("archive", project), {"archived": "0"})
    assert project in [access.project for access in projects_for_user(ada)]
    assert access_stage_for_annotator(user=ada, stage_id=stage.pk).stage == stage
    assert restore_link not in client.get(reverse("studio:archived")).content.decode()


def test_the_archived_list_shows_only_projects_one_administers(client, project, admin):
    services.project_archive(project=project, archived=True)
    other = make_project(slug="elsewhere")
    services.project_archive(project=other, archived=True)
    page = client.get(reverse("studio:archived")).content.decode()
    assert project.name in page and other.name not in page
    client.force_login(make_member(project, Role.ANNOTATOR))
    assert project.name not in client.get(reverse("studio:archived")).content.decode()


def test_a_clone_copies_the_setup_not_the_data(client, project, admin):
    label = make_label_stage(project, overlap=2, instructions="Read twice.")
    verify = engine.stage_create(project=project, slug="verify", name="Verify", kind="verify")
    engine.stage_update(
        stage=label, routes={"accept": {"action": "stage", "stage": "verify"}}, lease_seconds=900
    )
    Project.objects.filter(pk=project.pk).update(guidelines="Be careful.", citation="@misc{x}")
    make_items(project, 3)
    ada = make_member(project, Role.REVIEWER, "ada")
    cloned = client.post(
        setup_url("clone", project), {"name": "Team two", "slug": "team-two", "with_members": "1"}
    )
    assert cloned.status_code == 302 and cloned.url == reverse("studio:setup", args=["team-two"])
    copy = Project.objects.get(slug="team-two")
    assert (copy.kind, copy.guidelines, copy.citation) == (
        project.kind,
        "Be careful.",
        "@misc{x}",
    )
    stages = list(copy.stages.order_by("position"))
    assert [s.slug for s in stages] == ["label", "verify"]
    copied_label = stages[0]
    assert copied_label.routes == Stage.objects.get(pk=label.pk).routes
    assert (copied_label.overlap, copied_label.lease_seconds, copied_label.instructions) == (
        2,
        900,
        "Read twice.",
    )
    assert copied_label.config == label.config and stages[1].kind == verify.kind
    assert not Item.objects.filter(project=copy).exists()
    assert roles(copy, ada) == {"reviewer"} and roles(copy, admin) == {"admin"}
    alone = client.post(setup_url("clone", project), {"name": "Solo", "slug": "solo"})
    assert alone.status_code == 302
    assert not Membership.objects.filter(project__slug="solo", user=ada).exists()


@pytest.mark.parametrize(
    "posted, words",
    [
        ({"name": "X", "slug": "team"}, "already exists"),
        ({"name": "X", "slug": "bad slug"}, "letters, digits"),
        ({"name": " ", "slug": "fine"}, "Give the project a name"),
        ({"name": "X", "slug": "archived"}, "taken by a page"),
    ],
)
def test_a_refused_clone_says_why_and_writes_nothing(client, project, posted, words):
    make_label_stage(project)
    before = Project.objects.count()
    response = client.post(setup_url("clone", project), posted)
    assert response.status_code == 400
    assert words in html.unescape(response.content.decode())
    assert Project.objects.count() == before


def test_only_staff_who_admin_the_project_clone_it(client, project):
    admin_not_staff = make_member(project, Role.ADMIN, "local-admin")
    client.force_login(admin_not_staff)
    refused = client.post(setup_url("clone", project), {"name": "X", "slug": "x"})
    assert refused.status_code == 403 and not Project.objects.filter(slug="x").exists()
    assert 'id="clone"' not in client.get(setup_url("setup", project)).content.decode()


@pytest.mark.parametrize("name", ["member_role", "publication", "archive", "clone"])
def test_the_team_forms_are_for_the_projects_admins(client, project, name):
    """Annotators, reviewers and researchers are refused (403); outsiders see no project (404);
    nothing changes either way."""
    posted = {
        "member_role": {"user": "1", "role": "admin", "new_role": "annotator"},
        "publication": {"license": "MIT", "citation": ""},
        "archive": {"archived": "1"},
        "clone": {"name": "X", "slug": "x"},
    }[name]
    for role in (Role.ANNOTATOR, Role.REVIEWER, Role.RESEARCHER):
        client.force_login(make_member(project, role))
        assert client.post(setup_url(name, project), posted).status_code == 403
    client.force_login(make_user(is_staff=True))
    assert client.post(setup_url(name, project), posted).status_code == 404
    project.refresh_from_db()
    assert project.is_active and project.license != "MIT"
    assert not Project.objects.filter(slug="x").exists()
    assert client.get(setup_url(name, project)).status_code == 405


def test_the_archived_list_needs_a_sign_in(client):
    response = client.get(reverse("studio:archived"))
    assert response.status_code == 302 and reverse("login") in response.url
