"""The annotator's pages: my projects, project, the item screen with and without htmx."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation import services
from annotation.models import Annotation, Assignment, ItemStage, Role
from tests.factories import PASSWORD, make_member, make_project, make_verify_stage, pipeline

LABELS = ["causal", "temporal"]

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks):
    """Resolution (eager Celery) runs on commit; let it run inside the test transaction."""
    with django_capture_on_commit_callbacks(execute=True):
        yield


def signed_in(client, user):
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def pair_project(items: int = 4, overlap: int = 3, annotators: int = 3):
    project = make_project(guidelines="Keep **fluent** pairs.")
    stage = make_verify_stage(project, overlap=overlap, instructions="Reject pairs with typos.")
    services.items_create(
        project=project,
        rows=[
            {
                "external_id": f"pair-{index}",
                "payload": {
                    "sentence_a": f"The storm hit the coast {index}.",
                    "sentence_b": f"The power went out {index}.",
                    "expected": "causal",
                    "gold": {"verify": "keep"},
                },
            }
            for index in range(items)
        ],
    )
    people = [make_member(project) for _ in range(annotators)]
    return project, stage, people


def error_box(response) -> str:
    html = response.content.decode()
    return html[html.index('<div class="notice danger error-box"') :].split("</div>")[0]


def stage_url(stage):
    return reverse("annotation:stage", args=[stage.pk])


def submit_url(assignment):
    return reverse("annotation:submit", args=[assignment.pk])


def skip_url(assignment):
    return reverse("annotation:skip", args=[assignment.pk])


def active(user, stage):
    return Assignment.objects.get(annotator=user, stage=stage, status=Assignment.Status.ACTIVE)


# --- My projects and project pages ----------------------------------------------------------


def test_home_lists_my_projects_with_roles_and_my_progress_only(client):
    project, stage, (alice, bob, _) = pair_project()
    other = make_project(slug="someone-elses")
    make_verify_stage(other)
    signed_in(client, bob)
    client.post(stage_url(stage), follow=True)
    client.post(submit_url(active(bob, stage)), {"value": "keep"})
    signed_in(client, alice)
    page = client.get(reverse("annotation:home")).content.decode()
    assert project.name in page
    assert "annotator" in page
    assert "someone-elses" not in page and other.name not in page
    # Bob's annotation is not Alice's progress: she has done none, and 4 items are left for her.
    assert "0 done · 4 left for you" in page


def test_project_page_shows_stages_guidelines_and_instructions(client):
    project, stage, (alice, *_) = pair_project()
    page = signed_in(client, alice).get(reverse("annotation:project", args=[project.slug]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "<strong>fluent</strong>" in html
    assert "Reject pairs with typos." in html
    assert stage_url(stage) in html


def test_a_project_i_am_not_a_member_of_is_a_404_with_a_message(client):
    project, *_ = pair_project()
    outsider = make_member(make_project())
    response = signed_in(client, outsider).get(reverse("annotation:project", args=[project.slug]))
    assert response.status_code == 404
    assert "There is no such project among yours." in response.content.decode()


# --- The item screen --------------------------------------------------------------------------


def test_item_screen_shows_the_pair_form_shortcuts_and_progress_but_no_known_answers(client):
    _, stage, (alice, *_) = pair_project()
    response = signed_in(client, alice).post(stage_url(stage), follow=True)
    html = response.content.decode()
    assignment = active(alice, stage)
    item = assignment.item_stage.item
    assert response.status_code == 200
    assert item.payload["sentence_a"] in html and item.payload["sentence_b"] in html
    assert 'data-key="k"' in html and 'data-key="r"' in html and 'data-key="s"' in html
    assert f'action="{submit_url(assignment)}"' in html
    assert f'hx-post="{submit_url(assignment)}"' in html
    assert "0</span> done" in html and "4</span> left for you in this stage" in html
    assert "Reject pairs with typos." in html
    # Known answers in the payload never reach the annotator.
    assert "causal" not in html and "gold" not in html.lower()


def test_reloading_the_item_screen_keeps_the_same_item(client):
    _, stage, (alice, *_) = pair_project()
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    first = active(alice, stage)
    client.post(stage_url(stage), follow=True)
    assert active(alice, stage).pk == first.pk
    assert Assignment.objects.filter(annotator=alice).count() == 1


def test_without_javascript_a_submit_redirects_to_the_next_item(client):
    _, stage, (alice, *_) = pair_project()
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    first = active(alice, stage)
    response = client.post(submit_url(first), {"value": "reject", "comment": " typo in B "})
    assert response.status_code == 302
    assert response["Location"] == stage_url(stage)
    annotation = Annotation.objects.get(assignment=first)
    assert annotation.payload == {"value": "reject", "comment": "typo in B"}
    assert annotation.client_info == {"via": "form", "timing": "lease"}
    assert annotation.seconds_spent is not None and annotation.seconds_spent >= 0
    page = client.get(response["Location"]).content.decode()
    second = active(alice, stage)
    assert second.item_stage_id != first.item_stage_id
    assert second.item_stage.item.payload["sentence_a"] in page
    assert "1</span> done" in page and "3</span> left for you" in page


def test_with_htmx_a_submit_swaps_in_the_next_item_and_progress(client):
    _, stage, (alice, *_) = pair_project()
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    first = active(alice, stage)
    response = client.post(submit_url(first), {"value": "keep", "seconds_spent": "3.25"}, **HTMX)
    html = response.content.decode()
    second = active(alice, stage)
    assert response.status_code == 200
    assert "<html" not in html and html.lstrip().startswith('<section id="annotate"')
    assert second.item_stage.item.payload["sentence_a"] in html
    assert submit_url(second) in html
    assert "1</span> done" in html and "3</span> left for you in this stage" in html
    annotation = Annotation.objects.get(assignment=first)
    assert annotation.seconds_spent == pytest.approx(3.25)
    assert annotation.client_info == {"via": "htmx", "timing": "client"}


@pytest.mark.parametrize("posted", ["-1", "nan", "inf", "soon", "999999999"])
def test_an_implausible_client_time_falls_back_to_the_lease_age(client, posted):
    _, stage, (alice, *_) = pair_project()
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    assignment = active(alice, stage)
    Assignment.objects.filter(pk=assignment.pk).update(
        created_at=timezone.now() - timedelta(seconds=30)
    )
    client.post(submit_url(assignment), {"value": "keep", "seconds_spent": posted})
    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.client_info["timing"] == "lease"
    assert 29 <= annotation.seconds_spent < 60


def test_a_label_stage_renders_numbered_choices_and_stores_the_label(client):
    project = make_project()
    stage = services.stage_create(
        project=project,
        slug="label",
        name="Label",
        kind="label",
        overlap=1,
        config={"choices": ["causal", "temporal", "unrelated"]},
    )
    services.items_create(
        project=project, rows=[{"external_id": "x", "payload": {"text": "It rained."}}]
    )
    alice = make_member(project)
    signed_in(client, alice)
    html = client.post(stage_url(stage), follow=True).content.decode()
    assert 'data-key="1"' in html and 'data-key="3"' in html and "It rained." in html
    assignment = active(alice, stage)
    response = client.post(submit_url(assignment), {"value": "temporal"}, **HTMX)
    assert Annotation.objects.get(assignment=assignment).payload["value"] == "temporal"
    assert "All done" in response.content.decode()


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_an_invalid_value_is_shown_as_a_form_error_and_nothing_is_stored(client, headers):
    _, stage, (alice, *_) = pair_project()
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    assignment = active(alice, stage)
    response = client.post(submit_url(assignment), {"value": "maybe", "comment": "hmm"}, **headers)
    html = response.content.decode()
    assert response.status_code == 400
    assert "Not saved" in html and "Choose keep or reject (got &#x27;maybe&#x27;)." in html
    # The same item comes back with its form and the comment the annotator typed.
    assert submit_url(assignment) in html and ">hmm</textarea>" in html
    assert not Annotation.objects.exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ACTIVE
    assert ItemStage.objects.get(pk=assignment.item_stage_id).submitted_count == 0


def test_an_expired_lease_taken_by_others_gets_a_409_and_a_way_to_the_next_item(client):
    _, stage, (alice, *_) = pair_project()
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    assignment = active(alice, stage)
    Assignment.objects.filter(pk=assignment.pk).update(
        status=Assignment.Status.EXPIRED, expires_at=timezone.now() - timedelta(minutes=1)
    )
    ItemStage.objects.filter(pk=assignment.item_stage_id).update(leased_count=0, state="resolving")
    response = client.post(submit_url(assignment), {"value": "keep"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 409
    assert "expired" in html and "Get the next item" in html
    assert f'action="{stage_url(stage)}"' in html  # a POST form leases the next item
    assert submit_url(assignment) not in html  # no form for an item that is gone
    assert not Annotation.objects.exists()


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_skip_with_a_reason_moves_on_and_the_item_never_comes_back(client, headers):
    _, stage, (alice, *_) = pair_project(items=2)
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    first = active(alice, stage)
    response = client.post(skip_url(first), {"reason": "I can't judge this item"}, **headers)
    assert response.status_code == (200 if headers else 302)
    first.refresh_from_db()
    assert (
        first.status == Assignment.Status.SKIPPED and first.skip_reason == "I can't judge this item"
    )
    client.post(stage_url(stage), follow=True)
    assert active(alice, stage).item_stage_id != first.item_stage_id


def test_a_typed_skip_reason_wins_and_an_empty_one_is_refused(client):
    _, stage, (alice, *_) = pair_project()
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    assignment = active(alice, stage)
    refused = client.post(skip_url(assignment), {"reason": "", "other_reason": "  "}, **HTMX)
    assert refused.status_code == 400 and "Say why you skip this item." in refused.content.decode()
    assert active(alice, stage).pk == assignment.pk
    client.post(
        skip_url(assignment),
        {"reason": "I can't judge this item", "other_reason": "Duplicate of 3"},
    )
    assignment.refresh_from_db()
    assert assignment.skip_reason == "Duplicate of 3"


@pytest.mark.parametrize("action", ["submit", "skip"])
@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_another_annotators_assignment_and_an_unknown_one_get_the_same_404(client, action, headers):
    _, stage, (alice, bob, _) = pair_project()
    signed_in(client, bob)
    client.post(stage_url(stage), follow=True)
    bobs = active(bob, stage)
    signed_in(client, alice)
    url = reverse(f"annotation:{action}", args=[bobs.pk])
    unknown = reverse(f"annotation:{action}", args=[bobs.pk + 1000])
    data = {"value": "keep", "reason": "I can't judge this item"}
    foreign, missing = client.post(url, data, **headers), client.post(unknown, data, **headers)
    assert (foreign.status_code, missing.status_code) == (404, 404)
    assert "There is no such assignment among yours" in foreign.content.decode()
    assert error_box(foreign) == error_box(missing)
    assert "Sentence" not in error_box(foreign)
    bobs.refresh_from_db()
    assert bobs.status == Assignment.Status.ACTIVE and not Annotation.objects.exists()


def test_all_done_when_nothing_is_left(client):
    _, stage, (alice, *_) = pair_project(items=2)
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    client.post(submit_url(active(alice, stage)), {"value": "keep"})
    client.post(stage_url(stage), follow=True)
    response = client.post(submit_url(active(alice, stage)), {"value": "keep"}, **HTMX)
    html = response.content.decode()
    assert "All done" in html and "You have annotated 2 items" in html
    assert "2</span> done" in html and "0</span> left for you" in html
    page = client.post(stage_url(stage), follow=True).content.decode()
    assert "All done" in page and not Assignment.objects.filter(status="active").exists()


def test_other_annotators_answers_never_appear_on_my_item_screen(client):
    _, stage, (alice, bob, _) = pair_project(items=1)
    signed_in(client, bob)
    client.post(stage_url(stage), follow=True)
    client.post(submit_url(active(bob, stage)), {"value": "reject", "comment": "BOB-SECRET-NOTE"})
    signed_in(client, alice)
    html = client.post(stage_url(stage), follow=True).content.decode()
    # Alice gets the item Bob annotated, without his answer, comment or a vote count.
    assert active(alice, stage).item_stage.submitted_count == 1
    assert "BOB-SECRET-NOTE" not in html and "reject</" not in html
    assert "1 vote" not in html and "0</span> done" in html


def test_signed_out_users_are_sent_to_sign_in_and_htmx_gets_a_full_page_redirect(client):
    _, stage, _ = pair_project()
    plain = client.get(stage_url(stage))
    assert plain.status_code == 302 and plain["Location"].startswith(reverse("login"))
    htmx = client.post("/annotate/assignments/1/submit/", {"value": "keep"}, **HTMX)
    assert htmx.status_code == 200 and htmx["HX-Redirect"].startswith(reverse("login"))


def test_a_paused_annotator_sees_why(client):
    project, stage, (alice, *_) = pair_project()
    services.membership_set_paused(
        project=project, user_id=alice.pk, paused=True, reason="quality check"
    )
    response = signed_in(client, alice).post(stage_url(stage), follow=True)
    assert response.status_code == 403
    assert "paused" in response.content.decode()


def test_htmx_submit_and_next_stays_within_the_query_budget(client, django_assert_max_num_queries):
    _, stage, (alice, *_) = pair_project(items=6)
    signed_in(client, alice)
    client.post(stage_url(stage), follow=True)
    assignment = active(alice, stage)
    # session + user (2), access_assignment (1), submit (4), access_stage (1), next (3: the
    # lease renewal is skipped after a submit), progress (1) = 12 statements. The test runs
    # inside a transaction, so the services' atomic blocks add savepoint statements on top.
    with django_assert_max_num_queries(16) as captured:
        response = client.post(submit_url(assignment), {"value": "keep"}, **HTMX)
    statements = [
        query["sql"]
        for query in captured.captured_queries
        if not query["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    ]
    assert len(statements) <= 12, "\n".join(statements)
    assert response.status_code == 200 and active(alice, stage).pk != assignment.pk


def test_password_change_page_and_sign_out(client):
    _, _, (alice, *_) = pair_project()
    signed_in(client, alice)
    assert client.get(reverse("password_change")).status_code == 200
    response = client.post(
        reverse("password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "a-much-longer-pass-1",
            "new_password2": "a-much-longer-pass-1",
        },
    )
    assert response.status_code == 302
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("annotation:home")).status_code == 302
    assert client.login(username=alice.get_username(), password="a-much-longer-pass-1")


def test_superusers_see_every_project_but_annotate_only_as_members(client, django_user_model):
    project, stage, _ = pair_project()
    root = django_user_model.objects.create_superuser("root", password=PASSWORD)
    signed_in(client, root)
    assert project.name in client.get(reverse("annotation:home")).content.decode()
    assert client.post(stage_url(stage), follow=True).status_code == 403
    services.membership_add(project=project, user=root, role=Role.ANNOTATOR)
    assert client.post(stage_url(stage), follow=True).status_code == 200


def test_project_tabs_show_only_for_held_roles_and_existing_urls(client, monkeypatch):
    from annotation import navigation, views  # noqa: F401  (views registers the Overview tab)

    # Start from the built-in tab only: other apps (agreement, releases) register their own.
    monkeypatch.setattr(
        navigation,
        "PROJECT_TABS",
        [tab for tab in navigation.PROJECT_TABS if tab.url_name == "annotation:project"],
    )
    navigation.register_project_tab(
        "Monitor", "annotation:project", roles=[Role.RESEARCHER], order=5
    )
    navigation.register_project_tab("Later", "annotation:not-built-yet", roles=[Role.ANNOTATOR])
    project, *_ = pair_project()
    annotator_tabs = navigation.project_tabs(project, {Role.ANNOTATOR})
    researcher_tabs = navigation.project_tabs(project, {Role.RESEARCHER})
    # Registering a URL name again replaces its tab (here the built-in "Overview").
    assert [tab["label"] for tab in annotator_tabs] == []
    assert [tab["label"] for tab in researcher_tabs] == ["Monitor"]
    assert researcher_tabs[0]["url"] == reverse("annotation:project", args=[project.slug])


def test_opening_the_item_screen_never_takes_an_item(client):
    """A GET (a link preview, a prefetch, a reload) leases nothing; the start button does."""
    _, stage, (alice, *_) = pair_project()
    page = signed_in(client, alice).get(stage_url(stage))
    html = page.content.decode()
    assert page.status_code == 200 and "Ready when you are" in html
    assert f'action="{stage_url(stage)}"' in html and "data-start" in html
    assert not Assignment.objects.exists()

    started = client.post(stage_url(stage))
    assert started.status_code == 302 and started["Location"] == stage_url(stage)
    held = active(alice, stage)
    expires = held.expires_at
    again = client.get(stage_url(stage)).content.decode()
    assert held.item_stage.item.external_id in again and submit_url(held) in again
    held.refresh_from_db()
    assert held.expires_at == expires  # shown, not renewed
    assert Assignment.objects.count() == 1


def test_the_start_button_swaps_the_item_in_for_htmx(client):
    _, stage, (alice, *_) = pair_project()
    response = signed_in(client, alice).post(stage_url(stage), **HTMX)
    held = active(alice, stage)
    assert response.status_code == 200 and submit_url(held) in response.content.decode()


def test_every_role_has_a_home_that_leads_somewhere(client, django_capture_on_commit_callbacks):
    """Researchers, reviewers and admins see each stage's progress and the pages their roles
    open (with the adjudication queue's count), not "You don't annotate in this stage"."""
    from tests.factories import annotate_stage

    project, verify, label, people = pipeline(overlap=2, items=3, annotators=2)
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(verify, people, lambda person, item: "keep")
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(label, people, lambda person, item: LABELS[people.index(person)])
    reviewer = make_member(project, role=Role.REVIEWER)
    client.force_login(reviewer)
    page = client.get(reverse("annotation:home")).content.decode()
    assert "You don't annotate in this stage" not in page
    assert "3 of 3 items decided" in page  # verify
    assert "3 waiting for a reviewer" in page  # label: every item split 1–1
    assert reverse("agreement:adjudication", args=[project.slug]) in page
    assert "3 waiting</span>" in page
    researcher = make_member(project, role=Role.RESEARCHER)
    client.force_login(researcher)
    page = client.get(reverse("annotation:home")).content.decode()
    assert reverse("agreement:dashboard", args=[project.slug]) in page
    assert reverse("agreement:adjudication", args=[project.slug]) not in page


def test_the_done_screen_leads_to_the_next_stage_with_work(client):
    project, verify, label, people = pipeline(overlap=1, items=2, annotators=1)
    from annotation.services import item_stages_open

    item_stages_open(items=project.items.all(), stage=label)
    client.force_login(people[0])
    for _ in range(2):
        assignment = services.assignment_next(annotator=people[0], stage=verify)
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=people[0], payload={"value": "keep"}
        )
    page = client.get(reverse("annotation:stage", args=[verify.pk])).content.decode()
    assert "All done" in page
    assert f'href="{reverse("annotation:stage", args=[label.pk])}" data-next-stage' in page


def test_a_stage_behind_practice_says_practice_first_and_leads_there(client):
    """A stage with an after_stage rule ("practice first") never shows a start button that
    leases nothing, nor "All done" beside items left: it says which stage comes first, how many
    items wait there, and leads there — until the practice is done."""
    from annotation.models import Stage
    from tests.factories import make_items, make_label_stage

    project = make_project()
    practice = make_verify_stage(project, overlap=5, slug="practice", name="Practice")
    real = make_label_stage(
        project, overlap=1, eligibility=[{"rule": "after_stage", "stage": "practice"}]
    )
    items = make_items(project, 3)  # opened in the first stage: the practice
    services.item_stages_open(items=items, stage=Stage.objects.get(pk=real.pk))
    rater = make_member(project)
    client.force_login(rater)
    url = reverse("annotation:stage", args=[real.pk])

    for response in (client.get(url), client.post(url, **HTMX)):
        page = response.content.decode()
        assert "Practice first" in page
        assert "3 items are still waiting for you there" in page
        assert f'href="{reverse("annotation:stage", args=[practice.pk])}"' in page
        assert "All done" not in page and "data-start" not in page
        assert "3</span> waiting here once you finish Practice" in page
    assert not Assignment.objects.filter(annotator=rater, stage=real).exists()

    for _ in range(3):
        assignment = services.assignment_next(annotator=rater, stage=practice)
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=rater, payload={"value": "keep"}
        )
    page = client.get(url).content.decode()
    assert "Practice first" not in page
    assert "Ready when you are" in page


def test_with_debug_on_a_400_fragment_is_still_shown_in_place(client, settings):
    """django-htmx's debug script swapped the whole document for any 400 under `make run`
    (DEBUG on), so a skip without a reason showed an unstyled fragment: it is not loaded."""
    settings.DEBUG = True
    settings.INTERNAL_IPS = ["127.0.0.1"]
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    services.items_create(project=project, rows=[{"external_id": "a", "payload": {"text": "A."}}])
    person = make_member(project)
    client.force_login(person)
    page = client.get(reverse("annotation:stage", args=[stage.pk])).content.decode()
    assert page.count("<script") >= 1 and 'data-debug="True"' not in page
    assert "django-htmx.js" not in page and "django_htmx/django-htmx" not in page


def test_sending_another_answer_again_says_the_first_one_was_kept(client):
    """A second send of the same item with another answer (the back button, a double click)
    keeps the first answer, as before, and now says so above the next item."""
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    services.items_create(
        project=project,
        rows=[{"external_id": f"x{n}", "payload": {"text": f"T{n}."}} for n in range(2)],
    )
    person = make_member(project)
    client.force_login(person)
    assignment = services.assignment_next(annotator=person, stage=stage)
    url = reverse("annotation:submit", args=[assignment.pk])
    client.post(url, {"value": "keep"}, HTTP_HX_REQUEST="true")
    again = client.post(url, {"value": "reject"}, HTTP_HX_REQUEST="true").content.decode()
    assert "was kept: sending the form again does not change it" in again and "(keep)" in again
    same = client.post(url, {"value": "keep"}, HTTP_HX_REQUEST="true").content.decode()
    assert "was kept" not in same
    assert Annotation.objects.get().payload["value"] == "keep"


def test_the_projects_menu_names_each_project_with_my_roles_in_order(client):
    project, _, (alice, *_) = pair_project()
    services.membership_add(project=project, user=alice, role=Role.ADMIN)
    page = signed_in(client, alice).get(reverse("annotation:home")).content.decode()
    menu = page[page.index('<ul class="menu-list">') :]
    assert reverse("annotation:project", args=[project.slug]) in menu
    assert '<span class="menu-roles">annotator · admin</span>' in menu
