"""quality/views.py: who may open and post what (a matrix over every URL of the app), the
page's figures and actions, errors shown beside the form they came from."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import get_resolver, reverse

from annotation import services
from annotation.models import Role
from quality import services as quality
from quality.models import QualityAction, QualityRule
from tests.factories import PASSWORD, make_label_stage, make_member, make_project

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "non_member", "annotator", "reviewer", "researcher", "admin", "superuser"]


@pytest.fixture
def world():
    project = make_project(slug="quality-matrix")
    stage = make_label_stage(project)
    services.items_create(
        project=project,
        rows=[
            {"external_id": "g-1", "payload": {"text": "A.", "gold": {"label": "causal"}}},
            {"external_id": "p-1", "payload": {"text": "B."}},
        ],
    )
    users = {
        "non_member": make_member(make_project(slug="elsewhere"), Role.ANNOTATOR),
        "annotator": make_member(project, Role.ANNOTATOR, username="ann-quality"),
        "reviewer": make_member(project, Role.REVIEWER),
        "researcher": make_member(project, Role.RESEARCHER),
        "admin": make_member(project, Role.ADMIN),
        "superuser": get_user_model().objects.create_superuser("root", password=PASSWORD),
    }
    return {"project": project, "stage": stage, "users": users}


def _url(name, world):
    return reverse(f"quality:{name}", args=[world["project"].slug, world["stage"].slug])


def _login(client, world, role):
    if role != "anonymous":
        assert client.login(username=world["users"][role].get_username(), password=PASSWORD)
    return client


def _action(world):
    return quality.quality_action_take(
        stage=world["stage"],
        annotator_id=world["users"]["annotator"].pk,
        by=world["users"]["researcher"],
        reason="matrix",
    )


# (method, data builder); statuses in ROLES order. Researchers and admins of the project only;
# a project's member without the role gets 403, anyone else the 404 of an unknown project;
# superusers see every project. Writes redirect back to the page (PRG).
ENDPOINTS = {
    "stage": ("get", lambda w: {}, [302, 404, 403, 403, 200, 200, 200]),
    "rule": (
        "post",
        lambda w: {"acts": "yes", "min_gold": "5", "min_accuracy": "60"},
        [302, 404, 403, 403, 302, 302, 302],
    ),
    "take": (
        "post",
        lambda w: {"annotator": w["users"]["annotator"].pk, "reason": "r"},
        [302, 404, 403, 403, 302, 302, 302],
    ),
    "undo": ("post", lambda w: {"action": _action(w).pk}, [302, 404, 403, 403, 302, 302, 302]),
    "withdraw": (
        "post",
        lambda w: {"action": _action(w).pk},
        [302, 404, 403, 403, 302, 302, 302],
    ),
}


@pytest.mark.parametrize(
    ("name", "role", "expected"),
    [
        pytest.param(name, role, statuses[index], id=f"{name}-{role}")
        for name, (_, _, statuses) in ENDPOINTS.items()
        for index, role in enumerate(ROLES)
    ],
)
def test_permission_matrix(client, world, name, role, expected):
    method, data, _ = ENDPOINTS[name]
    payload = data(world)
    response = getattr(_login(client, world, role), method)(_url(name, world), payload)
    assert response.status_code == expected, response.content.decode()[:300]
    if role not in ("researcher", "admin", "superuser") and method == "post":
        # Nothing written by anyone else.
        assert not QualityRule.objects.exists()
        if name in ("undo", "withdraw"):
            assert QualityAction.objects.get().undone_at is None
        if name == "take":
            assert not QualityAction.objects.exists()


def test_the_matrix_covers_every_url_of_the_app():
    names = set(get_resolver().namespace_dict["quality"][1].reverse_dict)
    assert {name for name in names if isinstance(name, str)} == set(ENDPOINTS)


def test_the_page_shows_intervals_actions_and_the_history(client, world):
    stage, annotator = world["stage"], world["users"]["annotator"]
    quality.quality_rule_set(stage=stage, acts=True, min_gold=1, min_accuracy=0.9, withdraw=False)
    from annotation.access import access_stage_for_annotator

    with_gold = None
    while with_gold is None:
        access = access_stage_for_annotator(user=annotator, stage_id=stage.pk)
        assignment = services.assignment_next(annotator=annotator, stage=access)
        assert assignment is not None
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=annotator, payload={"value": "temporal"}
        )
        with_gold = assignment.item_stage.gold
    _login(client, world, "researcher")
    page = client.get(_url("stage", world)).content.decode()
    assert "ann-quality" in page
    assert "0 of 1" in page  # the gold answer, wrong
    assert "0 %–79 %" in page  # Wilson's 95 % interval of 0 of 1
    assert "Screened out" not in page and "Undo: resume ann-quality" in page
    assert "automatically" in page
    # The Agreement page links to it.
    agreement = client.get(reverse("agreement:stage", args=[world["project"].slug, stage.slug]))
    assert _url("stage", world) in agreement.content.decode()
    csv = client.get(
        reverse("agreement:csv", args=[world["project"].slug, stage.slug, "annotator-quality"])
    )
    assert csv.status_code == 200
    assert b"ann-quality" in b"".join(csv.streaming_content)


def test_a_refused_rule_is_shown_above_its_form(client, world):
    _login(client, world, "researcher")
    response = client.post(
        _url("rule", world), {"acts": "yes", "min_gold": "0", "min_accuracy": "60"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Ask for at least one gold answer" in page
    assert page.index("Ask for at least one gold answer") < page.index("Save thresholds")
    assert not QualityRule.objects.exists()


def test_undo_from_the_page(client, world):
    action = _action(world)
    _login(client, world, "admin")
    response = client.post(_url("undo", world), {"action": action.pk}, follow=True)
    assert "gets this stage&#x27;s items again" in response.content.decode()
    action.refresh_from_db()
    assert action.undone_at is not None and action.undone_by == world["users"]["admin"]


def test_an_action_of_another_stage_is_not_found(client, world):
    other = make_label_stage(world["project"], slug="other", name="Other")
    action = quality.quality_action_take(
        stage=other, annotator_id=world["users"]["annotator"].pk, by=None, reason=""
    )
    _login(client, world, "researcher")
    response = client.post(_url("undo", world), {"action": action.pk})
    assert response.status_code == 404
    action.refresh_from_db()
    assert action.undone_at is None


def test_annotators_see_the_pause_on_the_item_screen(client, world):
    _action(world)
    _login(client, world, "annotator")
    response = client.post(reverse("annotation:stage", args=[world["stage"].pk]), follow=True)
    page = response.content.decode()
    assert "paused by the researchers" in page
    assert "gold" not in page.lower().replace("golden", "")
