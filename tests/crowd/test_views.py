"""The participant's pages and the researcher's Crowd tab, through the test client: every
class of bad entry, exclusion, full studies, resume, the whole Prolific path to the completion
redirect, MTurk's preview and submit form, the study page and its CSV."""

from __future__ import annotations

import csv
import html
import io
import re
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Annotation, Assignment, Role
from crowd.models import Participant, Study
from tests.factories import make_crowd_study, make_member, prolific_ids, took_seconds

pytestmark = pytest.mark.django_db

COMPLETE = "https://app.prolific.com/submissions/complete"


def entry_url(study, query) -> str:
    return reverse("crowd:enter", args=[study.token]) + "?" + urlencode(query)


def nothing_written(users_before: int) -> bool:
    return not Participant.objects.exists() and get_user_model().objects.count() == users_before


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"PROLIFIC_PID": "0" * 24},
        {**prolific_ids(1), "SESSION_ID": ""},
        {**prolific_ids(1), "PROLIFIC_PID": "<script>"},
        {**prolific_ids(1), "STUDY_ID": "b" * 24},  # the study names its own STUDY_ID
        {"pid": "someone"},  # another platform's parameter
    ],
)
def test_missing_or_forged_parameters_answer_a_clear_400_and_write_nothing(client, query):
    study = make_crowd_study(platform_study_id="5" * 24)
    users = get_user_model().objects.count()
    response = client.get(entry_url(study, query))
    assert response.status_code == 400
    assert "This link is incomplete" in response.content.decode()
    assert "Nothing was recorded" in response.content.decode()
    assert nothing_written(users)
    assert "_auth_user_id" not in client.session


def test_an_unknown_study_is_a_404_page(client):
    response = client.get(reverse("crowd:enter", args=["nope"]) + "?" + urlencode(prolific_ids(1)))
    assert response.status_code == 404 and "No such study" in response.content.decode()


def test_an_excluded_participant_gets_a_refusal_page(client):
    study = make_crowd_study(excluded_ids=prolific_ids(1)["PROLIFIC_PID"])
    users = get_user_model().objects.count()
    response = client.get(entry_url(study, prolific_ids(1)))
    assert response.status_code == 403
    assert "You cannot take part" in response.content.decode()
    assert nothing_written(users)


def test_a_full_study_says_so(client):
    study = make_crowd_study(places=1)
    client.get(entry_url(study, prolific_ids(1)))
    client.logout()
    response = client.get(entry_url(study, prolific_ids(2)))
    assert response.status_code == 409
    assert "All places of this study are taken" in response.content.decode()
    assert Participant.objects.count() == 1


def test_an_entry_signs_in_and_asks_for_consent_first(client):
    study = make_crowd_study()
    response = client.get(entry_url(study, prolific_ids(1)))
    assert response.status_code == 302 and response.url == reverse(
        "crowd:consent", args=[study.token]
    )
    participant = Participant.objects.get()
    assert int(client.session["_auth_user_id"]) == participant.user_id
    # the item screen sends them back to the consent
    response = client.get(reverse("annotation:stage", args=[study.stage_id]))
    assert response.url == reverse("crowd:consent", args=[study.token])
    # consenting without ticking the box is a 400 with the reason
    response = client.post(reverse("crowd:consent", args=[study.token]), {"decision": "accept"})
    assert response.status_code == 400 and "Tick the box" in response.content.decode()
    participant.refresh_from_db()
    assert participant.consented_at is None


def walk(client, study, number: int, *, answer=lambda item: "causal"):
    """A participant from the study URL to the end: returns the last response."""
    response = client.get(entry_url(study, prolific_ids(number)))
    response = client.post(response.url, {"decision": "accept", "agree": "1"})
    assert response.url == reverse("crowd:instructions", args=[study.token])
    response = client.post(response.url)
    for _ in range(50):
        stage_url = response.url
        if not stage_url.startswith("/annotate/"):
            return response
        response = client.post(stage_url)  # lease the next item (PRG)
        assignment = Assignment.objects.filter(
            annotator__crowd_participant__study=study,
            annotator__crowd_participant__platform_id=prolific_ids(number)["PROLIFIC_PID"],
            status="active",
        ).first()
        if assignment is None:
            response = client.get(stage_url)
            continue
        response = client.post(
            reverse("annotation:submit", args=[assignment.pk]),
            {"value": answer(assignment.item_stage.item)},
        )
        while response.status_code == 302 and response.url.startswith("/s/"):
            response = client.get(response.url)
        if response.status_code == 200:
            return response  # the end page (crowd/done.html)
    raise AssertionError("the participant never finished")


def returned_to(response) -> str:
    """Where the end page sends a Prolific participant (a refresh and a link, beside the code
    in view: crowd/done.html), checked to be the same in both and to carry the code shown."""
    assert response.status_code == 200
    page = response.content.decode()
    link = re.search(r'<a class="button" href="([^"]+)" data-completion-url', page)
    refresh = re.search(r'<meta http-equiv="refresh" content="3;url=([^"]+)">', page)
    assert link and refresh and link.group(1) == refresh.group(1), page
    url = html.unescape(link.group(1))
    code = re.search(r'data-testid="crowd-code">([^<]+)<', page)
    assert code and url.endswith("cc=" + code.group(1))
    return url


def test_the_whole_prolific_path_ends_at_the_completion_redirect(client):
    study = make_crowd_study(regular=8, practice=2, checks=0, quota=3)
    response = walk(client, study, 1)
    assert returned_to(response) == f"{COMPLETE}?cc=C0MPLETE"
    participant = Participant.objects.get()
    assert participant.status == "completed"
    purposes = list(
        Annotation.objects.filter(annotator=participant.user)
        .order_by("pk")
        .values_list("item_stage__item__purpose", flat=True)
    )
    assert purposes == ["practice", "practice", "regular", "regular", "regular"]
    # coming back with the same link lands on the end again, not on a new session
    client.logout()
    response = client.get(entry_url(study, prolific_ids(1)))
    assert response.url == reverse("crowd:done", args=[study.token])
    assert returned_to(client.get(response.url)) == f"{COMPLETE}?cc=C0MPLETE"
    assert Participant.objects.count() == 1


def test_failing_checks_ends_with_the_screen_out_code(client):
    study = make_crowd_study(regular=1, practice=0, checks=3, quota=4, max_check_failures=0)
    response = walk(client, study, 1, answer=lambda item: "temporal")
    assert returned_to(response) == f"{COMPLETE}?cc=SCREEN0UT"
    assert Participant.objects.get().status == "screened_out"


def test_the_same_pid_resumes_where_they_were(client, django_user_model):
    study = make_crowd_study()
    client.get(entry_url(study, prolific_ids(1)))
    client.post(reverse("crowd:consent", args=[study.token]), {"decision": "accept", "agree": "1"})
    client.logout()
    response = client.get(entry_url(study, prolific_ids(1)))
    assert response.url == reverse("crowd:instructions", args=[study.token])
    assert Participant.objects.count() == 1


def test_the_completion_base_url_is_configurable(client, settings):
    settings.PROLIFIC_COMPLETE_URL = "https://example.test/complete"
    study = make_crowd_study(regular=2, practice=0, checks=0, quota=1)
    assert returned_to(walk(client, study, 1)) == "https://example.test/complete?cc=C0MPLETE"


def test_a_plain_link_shows_its_code(client):
    study = make_crowd_study(platform="link", practice=0, checks=0, quota=1)
    response = client.get(reverse("crowd:enter", args=[study.token]) + "?pid=abc")
    assert response.url == reverse("crowd:consent", args=[study.token])
    client.post(response.url, {"decision": "accept", "agree": "1"})
    response = client.post(reverse("crowd:instructions", args=[study.token]))
    client.post(response.url)
    assignment = Assignment.objects.get(status="active")
    response = client.post(reverse("annotation:submit", args=[assignment.pk]), {"value": "causal"})
    response = client.get(response.url)
    assert response.status_code == 200 and "C0MPLETE" in response.content.decode()


MTURK = {
    "workerId": "A1B2C3D4E5",
    "assignmentId": "3ABCDEF1234567",
    "hitId": "3HITID12345678",
    "turkSubmitTo": "https://workersandbox.mturk.com",
}


def test_mturk_preview_shows_a_sample_item_and_writes_nothing(client):
    study = make_crowd_study(platform="mturk")
    users = get_user_model().objects.count()
    response = client.get(entry_url(study, {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Regular sentence" in page and "Preview" in page
    assert nothing_written(users) and not Assignment.objects.exists()
    assert "X-Frame-Options" not in response.headers  # MTurk shows it in a frame
    assert "workersandbox.mturk.com" in response.headers["Content-Security-Policy"]


def test_mturk_inside_the_frame_offers_a_tab_and_writes_nothing(client):
    study = make_crowd_study(platform="mturk")
    users = get_user_model().objects.count()
    response = client.get(entry_url(study, MTURK), headers={"Sec-Fetch-Dest": "iframe"})
    assert response.status_code == 200 and "Open the task" in response.content.decode()
    assert nothing_written(users)


def test_mturk_completion_posts_the_assignment_to_turk_submit_to(client):
    study = make_crowd_study(platform="mturk", practice=0, checks=0, quota=1)
    response = client.get(entry_url(study, MTURK))
    client.post(response.url, {"decision": "accept", "agree": "1"})
    response = client.post(reverse("crowd:instructions", args=[study.token]))
    client.post(response.url)
    assignment = Assignment.objects.get(status="active")
    response = client.post(reverse("annotation:submit", args=[assignment.pk]), {"value": "causal"})
    response = client.get(response.url)
    page = response.content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in page
    assert 'name="assignmentId" value="3ABCDEF1234567"' in page
    assert "crowd-autosubmit.js" in page
    assert "workersandbox.mturk.com" in response.headers["Content-Security-Policy"]


def test_participant_pages_need_the_study_session(client):
    study = make_crowd_study()
    for name in ("consent", "instructions", "work", "done"):
        response = client.get(reverse(f"crowd:{name}", args=[study.token]))
        assert response.status_code == 403 and "open the study again" in response.content.decode()


def test_htmx_submits_leave_for_the_completion_as_a_whole_page(client):
    study = make_crowd_study(regular=2, practice=0, checks=0, quota=1)
    response = client.get(entry_url(study, prolific_ids(1)))
    client.post(response.url, {"decision": "accept", "agree": "1"})
    response = client.post(reverse("crowd:instructions", args=[study.token]))
    client.post(response.url)
    assignment = Assignment.objects.get(status="active")
    response = client.post(
        reverse("annotation:submit", args=[assignment.pk]),
        {"value": "causal"},
        HTTP_HX_REQUEST="true",
    )
    assert response["HX-Redirect"] == reverse("crowd:done", args=[study.token])


# --- The researcher's tab ---------------------------------------------------------------------


@pytest.fixture
def admin_client(client):
    study = make_crowd_study(
        places=3, quota=3, regular=2, practice=0, checks=1, max_check_failures=0
    )
    admin = make_member(study.project, Role.ADMIN)
    return client, study, admin


def test_the_study_page_counts_and_suggests(admin_client, django_user_model):
    client, study, admin = admin_client
    from tests.crowd.test_services import answer, enter, next_item, ready

    fast = ready(enter(study, 1))
    while fast.status == "active":
        fast = answer(fast, next_item(fast))
    took_seconds(Annotation.objects.filter(annotator=fast.user), 0.4)
    bad = ready(enter(study, 2))
    while bad.status == "active":
        bad = answer(bad, next_item(bad), "temporal")
    took_seconds(Annotation.objects.filter(annotator=bad.user), 10)
    enter(study, 3)
    Participant.objects.filter(pk=fast.pk).update(platform_status='=HYPERLINK("x")')
    client.force_login(admin)
    response = client.get(reverse("crowd:study", args=[study.project.slug, study.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "3 / 3" in page  # places filled
    assert "too fast" in page and "failed" in page
    response = client.get(reverse("crowd:study_csv", args=[study.project.slug, study.pk]))
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert rows[0][:3] == ["participant_id", "status", "items_done"]
    assert rows[0][4:6] == ["median_seconds_per_item", "median_browser_seconds_per_item"]
    by_id = {row[0]: row for row in rows[1:]}
    fast_row = by_id[prolific_ids(1)["PROLIFIC_PID"]]
    assert fast_row[1] == "completed" and fast_row[7] == "reject" and "too fast" in fast_row[8]
    assert fast_row[9].startswith("'=")  # formula injection defused
    assert by_id[prolific_ids(2)["PROLIFIC_PID"]][7] == "reject"
    assert by_id[prolific_ids(3)["PROLIFIC_PID"]][1] == "active"


def test_only_admins_open_the_crowd_tab(admin_client):
    client, study, _admin = admin_client
    researcher = make_member(study.project, Role.RESEARCHER)
    client.force_login(researcher)
    assert client.get(reverse("crowd:studies", args=[study.project.slug])).status_code == 403
    assert (
        client.get(reverse("crowd:study_csv", args=[study.project.slug, study.pk])).status_code
        == 403
    )


def test_admins_create_and_edit_studies_on_the_tab(admin_client):
    client, study, admin = admin_client
    client.force_login(admin)
    url = reverse("crowd:studies", args=[study.project.slug])
    page = client.get(url).content.decode()
    assert "Pilot study" in page and "New study" in page
    data = {
        "name": "Second",
        "stage": study.stage_id,
        "platform": "link",
        "places": "4",
        "quota": "2",
        "time_limit_minutes": "20",
        "practice_rule": "none",
        "max_check_failures": "0",
        "too_fast_seconds": "1.5",
        "completion_code": "DONE2",
        "consent_text": "",
        "on_return": "keep",
        "is_open": "1",
    }
    response = client.post(url, data)
    assert response.status_code == 400 and "consent text" in response.content.decode()
    assert Study.objects.count() == 1
    response = client.post(url, {**data, "consent_text": "I agree."})
    second = Study.objects.get(name="Second")
    assert response.url == reverse("crowd:study", args=[study.project.slug, second.pk])
    response = client.post(response.url, {"places": "0"})
    assert response.status_code == 400
    response = client.post(
        reverse("crowd:study", args=[study.project.slug, second.pk]),
        {"places": "9", "is_open": "0"},
    )
    second.refresh_from_db()
    assert (second.places, second.is_open) == (9, False)


def test_a_submit_after_the_time_limit_lands_on_the_end_page(client):
    from datetime import timedelta

    from django.utils import timezone

    from crowd import services

    study = make_crowd_study(practice=0, checks=0, quota=3, time_limit_minutes=5)
    response = client.get(entry_url(study, prolific_ids(1)))
    client.post(response.url, {"decision": "accept", "agree": "1"})
    response = client.post(reverse("crowd:instructions", args=[study.token]))
    client.post(response.url)
    assignment = Assignment.objects.get(status="active")
    services.participants_time_out(now=timezone.now() + timedelta(minutes=6))
    response = client.post(reverse("annotation:submit", args=[assignment.pk]), {"value": "causal"})
    assert response.url == reverse("crowd:done", args=[study.token])
    page = client.get(response.url).content.decode()
    assert "Your time is up" in page and "C0MPLETE" not in page
    assert not Annotation.objects.exists()


def test_the_item_screen_counts_the_participants_quota_not_the_stage(client):
    study = make_crowd_study(regular=30, practice=2, checks=0, quota=3)
    response = client.get(entry_url(study, prolific_ids(1)))
    client.post(response.url, {"decision": "accept", "agree": "1"})
    response = client.post(reverse("crowd:instructions", args=[study.token]))
    page = client.get(response.url).content.decode()
    assert "<span data-left>5</span> left for you" in page  # 2 practice items + 3
    client.post(response.url)
    assignment = Assignment.objects.get(status="active")
    client.post(reverse("annotation:submit", args=[assignment.pk]), {"value": "causal"})
    page = client.get(response.url).content.decode()
    assert "<span data-left>4</span> left for you" in page


def test_a_participant_stays_in_their_study_and_stage(client):
    from annotation import services as engine

    study = make_crowd_study(practice=0, checks=0)
    other_stage = engine.stage_create(
        project=study.project, slug="verify", name="Verify", kind="verify", overlap=1
    )
    other_study = make_crowd_study()
    response = client.get(entry_url(study, prolific_ids(1)))
    client.post(response.url, {"decision": "accept", "agree": "1"})
    client.post(reverse("crowd:instructions", args=[study.token]))
    # another study's pages do not know this session
    response = client.get(reverse("crowd:consent", args=[other_study.token]))
    assert response.status_code == 403
    # another stage of the same project sends them back to their own
    response = client.get(reverse("annotation:stage", args=[other_stage.pk]))
    assert response.url == reverse("annotation:stage", args=[study.stage_id])
    response = client.post(reverse("annotation:stage", args=[other_stage.pk]))
    assert response.url == reverse("annotation:stage", args=[study.stage_id])
    assert not Assignment.objects.filter(stage=other_stage).exists()


def test_a_separate_practice_stage_comes_first_then_the_study_stage(client):
    from annotation import services as engine
    from crowd import services
    from tests.factories import make_label_stage, make_project

    project = make_project()
    practice_stage = make_label_stage(project, slug="practice", name="Practice")
    stage = make_label_stage(project, slug="label", name="Label")
    extra = engine.stage_create(project=project, slug="other", name="Other", kind="verify")
    items = engine.items_create(
        project=project,
        open_first_stage=False,
        rows=[{"external_id": f"r{n}", "payload": {"text": f"Pair {n}"}} for n in range(4)]
        + [
            {"external_id": f"p{n}", "payload": {"text": f"Try {n}"}, "purpose": "practice"}
            for n in range(2)
        ],
    )
    engine.item_stages_open(items=[i for i in items if i.purpose == "regular"], stage=stage)
    engine.item_stages_open(items=items, stage=extra)
    engine.item_stages_open(
        items=[i for i in items if i.purpose == "practice"], stage=practice_stage
    )
    study = services.study_create(
        project=project, stage=stage, practice_stage=practice_stage, name="Two stages",
        consent_text="Agree?", completion_code="TWO", quota=2,
    )  # fmt: skip
    response = client.get(entry_url(study, prolific_ids(1)))
    client.post(response.url, {"decision": "accept", "agree": "1"})
    response = client.post(reverse("crowd:instructions", args=[study.token]))
    assert response.url == reverse("annotation:stage", args=[practice_stage.pk])
    # the main stage sends them back to the practice, and gives nothing through the engine
    response = client.get(reverse("annotation:stage", args=[stage.pk]))
    assert response.url == reverse("annotation:stage", args=[practice_stage.pk])
    for _ in range(2):
        client.post(reverse("annotation:stage", args=[practice_stage.pk]))
        assignment = Assignment.objects.get(status="active")
        assert assignment.stage_id == practice_stage.pk
        response = client.post(
            reverse("annotation:submit", args=[assignment.pk]), {"value": "causal"}
        )
        # Each practice answer's feedback first (annotation/practice.py), then Continue.
        practice_page = reverse("annotation:stage", args=[practice_stage.pk])
        assert response.url == f"{practice_page}?practice={assignment.pk}"
        assert "data-practice-feedback" in client.get(response.url).content.decode()
    response = client.post(reverse("annotation:stage", args=[practice_stage.pk]))
    assert response.url == reverse("annotation:stage", args=[stage.pk])
    for _ in range(2):
        client.post(response.url)
        assignment = Assignment.objects.get(status="active")
        assert assignment.stage_id == stage.pk
        response = client.post(
            reverse("annotation:submit", args=[assignment.pk]), {"value": "causal"}
        )
    assert returned_to(client.get(response.url)) == f"{COMPLETE}?cc=TWO"
    # the project's other stage never gave them anything, even asked directly
    from annotation.access import access_stage_for_annotator

    participant = Participant.objects.get()
    study.refresh_from_db()
    Participant.objects.filter(pk=participant.pk).update(status="active")
    access = access_stage_for_annotator(user=participant.user, stage_id=extra.pk)
    assert engine.assignment_next(annotator=participant.user, stage=access) is None


def test_the_admin_lists_studies_and_participants_read_only(client):
    from tests.factories import make_user

    study = make_crowd_study()
    client.get(entry_url(study, prolific_ids(1)))
    client.force_login(make_user("root", is_superuser=True, is_staff=True))
    page = client.get("/admin/crowd/participant/").content.decode()
    assert "In progress" in page
    assert client.get("/admin/crowd/study/").status_code == 200
    assert client.get("/admin/crowd/study/add/").status_code == 403
    participant = Participant.objects.get()
    response = client.get(f"/admin/crowd/participant/{participant.pk}/change/")
    assert response.status_code == 200 and 'name="status"' not in response.content.decode()


STUDY_FORM = {
    "name": "Second",
    "platform": "link",
    "places": "4",
    "quota": "2",
    "consent_text": "I agree.",
    "completion_code": "DONE2",
}


@pytest.mark.parametrize(
    ("page", "extra", "named"),
    [
        ("create", "project", "no field 'project'"),
        ("create", "study", "no field 'study'"),
        ("create", "token", "no field 'token'"),
        ("edit", "project", "no field 'project'"),
        ("edit", "study", "no field 'study'"),
        ("edit", "stage", "stage: a study's stages cannot change"),
    ],
)
def test_a_study_form_with_a_field_it_does_not_take_is_refused_naming_it(
    admin_client, page, extra, named
):
    """A posted field the study forms do not have (once a 500: ``project`` or ``study`` clashed
    with the service's own arguments) is a 400 naming it, and nothing is written."""
    client, study, admin = admin_client
    client.force_login(admin)
    slug = study.project.slug
    url = (
        reverse("crowd:studies", args=[slug])
        if page == "create"
        else reverse("crowd:study", args=[slug, study.pk])
    )
    data = {**STUDY_FORM, "stage": study.stage_id} if page == "create" else dict(STUDY_FORM)
    before = list(Study.objects.values())
    response = client.post(url, {**data, extra: str(study.project_id)})
    assert response.status_code == 400 and named in html.unescape(response.content.decode())
    assert list(Study.objects.values()) == before
    # the same form without the extra field goes through
    assert client.post(url, data).status_code == 302


def link_url(study, pid: str) -> str:
    return reverse("crowd:enter", args=[study.token]) + "?" + urlencode({"pid": pid})


def answered_one(client, study) -> Annotation:
    """Through the consent and the instructions to one answered item (the plain link's "p1")."""
    client.get(link_url(study, "p1"))
    client.post(reverse("crowd:consent", args=[study.token]), {"decision": "accept", "agree": "1"})
    response = client.post(reverse("crowd:instructions", args=[study.token]))
    client.post(response.url)
    assignment = Assignment.objects.get(status="active")
    client.post(reverse("annotation:submit", args=[assignment.pk]), {"value": "temporal"})
    return Annotation.objects.get()


def test_a_plain_link_id_alone_resumes_with_new_items_only(client):
    from django.test import Client

    study = make_crowd_study(platform="link", practice=0, checks=0, quota=4)
    earlier = answered_one(client, study)
    item = earlier.item_stage.item.external_id
    other = Client()  # another browser that knows the id
    response = other.get(link_url(study, "p1"))
    assert response.url == reverse("annotation:stage", args=[study.stage_id])
    # it never sees the earlier answer ...
    page = other.get(reverse("annotation:answers", args=[study.stage_id])).content.decode()
    assert item not in page
    response = other.get(reverse("annotation:answer_last", args=[study.stage_id]))
    assert response.url == reverse("annotation:answers", args=[study.stage_id])
    assert other.get(reverse("annotation:answer", args=[earlier.pk])).status_code == 404
    # ... nor changes it, on the change page or through the API
    response = other.post(reverse("annotation:answer", args=[earlier.pk]), {"value": "causal"})
    assert response.status_code == 404
    response = other.post(
        reverse("api:revise", args=[earlier.pk]),
        {"payload": {"value": "causal"}},
        content_type="application/json",
    )
    assert response.status_code in (403, 404)
    assert Annotation.all_versions.get().payload["value"] == "temporal"
    # but goes on with new items, which it may change
    other.post(reverse("annotation:stage", args=[study.stage_id]))
    assignment = Assignment.objects.get(status="active")
    other.post(reverse("annotation:submit", args=[assignment.pk]), {"value": "causal"})
    later = Annotation.objects.get(assignment=assignment)
    page = other.get(reverse("annotation:answers", args=[study.stage_id])).content.decode()
    assert later.item_stage.item.external_id in page
    response = other.post(reverse("annotation:answer", args=[later.pk]), {"value": "temporal"})
    assert response.status_code == 302


def test_the_original_browser_resuming_keeps_its_answers(client):
    study = make_crowd_study(platform="link", practice=0, checks=0, quota=4)
    earlier = answered_one(client, study)
    client.get(link_url(study, "p1"))  # the same browser opens the link again
    assert Participant.objects.get().answers_sealed_at is None
    assert client.get(reverse("annotation:answer", args=[earlier.pk])).status_code == 200


def test_an_mturk_resume_needs_the_assignment_on_record(client):
    from django.test import Client

    study = make_crowd_study(platform="mturk", practice=0, checks=0, quota=4)
    query = dict(MTURK)
    url = reverse("crowd:enter", args=[study.token])
    client.get(url + "?" + urlencode(query))
    client.post(reverse("crowd:consent", args=[study.token]), {"decision": "accept", "agree": "1"})
    response = client.post(reverse("crowd:instructions", args=[study.token]))
    client.post(response.url)
    assignment = Assignment.objects.get(status="active")
    client.post(reverse("annotation:submit", args=[assignment.pk]), {"value": "temporal"})
    earlier = Annotation.objects.get()
    proven = Client()
    proven.get(url + "?" + urlencode(query))
    assert proven.get(reverse("annotation:answer", args=[earlier.pk])).status_code == 200
    guessed = Client()
    guessed.get(url + "?" + urlencode({**query, "assignmentId": "3ZZZZZZ9999999"}))
    assert guessed.get(reverse("annotation:answer", args=[earlier.pk])).status_code == 404
    # sealed for every session from then on: the site cannot tell which browser is whose
    assert proven.get(reverse("annotation:answer", args=[earlier.pk])).status_code == 404


def test_a_study_link_asks_a_signed_in_researcher_before_signing_them_out(client):
    study = make_crowd_study()
    researcher = make_member(study.project, Role.RESEARCHER, username="rhea")
    client.force_login(researcher)
    url = entry_url(study, prolific_ids(1))
    response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 200
    assert "You are signed in as rhea" in page
    assert "Continue as a study participant (signs you out)" in page
    assert "Stay signed in" in page
    assert int(client.session["_auth_user_id"]) == researcher.pk
    assert not Participant.objects.exists()
    # a forged cross-site POST carries no CSRF token: refused, still signed in
    from django.test import Client

    forged = Client(enforce_csrf_checks=True)
    forged.force_login(researcher)
    assert forged.post(url, {"decision": "participant"}).status_code == 403
    assert not Participant.objects.exists()
    # continuing from the page switches
    response = client.post(url, {"decision": "participant"})
    assert response.url == reverse("crowd:consent", args=[study.token])
    participant = Participant.objects.get()
    assert int(client.session["_auth_user_id"]) == participant.user_id
