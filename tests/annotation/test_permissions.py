"""Who may open what: every role × every page and API endpoint of the annotator loop, and
blindness — another annotator's assignment ids lead nowhere, whatever the endpoint."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation, Assignment, Item, Role
from tests.factories import PASSWORD, make_member, make_project, make_user, make_verify_stage

pytestmark = pytest.mark.django_db

ROLES = [
    "anonymous",
    "non_member",
    "owner",  # the annotator holding the assignment the endpoint acts on
    "other_annotator",
    "reviewer",
    "researcher",
    "admin",  # the project's admin role (not a Django superuser)
    "superuser",
]


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        yield


@pytest.fixture
def world():
    project = make_project(slug="matrix")
    stage = make_verify_stage(project, overlap=3)
    services.items_create(
        project=project,
        rows=[{"external_id": f"m-{n}", "payload": {"text": f"Item {n}."}} for n in range(3)],
    )
    outsider_project = make_project(slug="elsewhere")
    users = {
        "non_member": make_member(outsider_project, Role.ANNOTATOR),
        "owner": make_member(project, Role.ANNOTATOR),
        "other_annotator": make_member(project, Role.ANNOTATOR),
        "reviewer": make_member(project, Role.REVIEWER),
        "researcher": make_member(project, Role.RESEARCHER),
        "admin": make_member(project, Role.ADMIN),
        "superuser": get_user_model().objects.create_superuser("root", password=PASSWORD),
    }
    owner = users["owner"]
    assignment = services.assignment_next(
        annotator=owner, stage=access_stage_for_annotator(user=owner, stage_id=stage.pk)
    )
    return {"project": project, "stage": stage, "users": users, "assignment": assignment}


def _client_for(client, world, role):
    if role != "anonymous":
        assert client.login(username=world["users"][role].get_username(), password=PASSWORD)
    return client


# (name, method, url builder, extra request kwargs)
ENDPOINTS = {
    "home": ("get", lambda w: reverse("annotation:home"), {}),
    "project": ("get", lambda w: reverse("annotation:project", args=[w["project"].slug]), {}),
    "item_screen": ("get", lambda w: reverse("annotation:stage", args=[w["stage"].pk]), {}),
    "submit": (
        "post",
        lambda w: reverse("annotation:submit", args=[w["assignment"].pk]),
        {"data": {"value": "keep"}},
    ),
    "skip": (
        "post",
        lambda w: reverse("annotation:skip", args=[w["assignment"].pk]),
        {"data": {"reason": "I can't judge this item"}},
    ),
    "submit_htmx": (
        "post",
        lambda w: reverse("annotation:submit", args=[w["assignment"].pk]),
        {"data": {"value": "keep"}, "HTTP_HX_REQUEST": "true"},
    ),
    "api_next": ("post", lambda w: reverse("api:next", args=[w["stage"].pk]), {}),
    "api_submit": (
        "post",
        lambda w: reverse("api:submit", args=[w["assignment"].pk]),
        {"data": {"payload": {"value": "keep"}}, "content_type": "application/json"},
    ),
    "api_skip": (
        "post",
        lambda w: reverse("api:skip", args=[w["assignment"].pk]),
        {"data": {"reason": "unclear"}, "content_type": "application/json"},
    ),
    "admin_annotations": ("get", lambda w: "/admin/annotation/annotation/", {}),
}

# Expected status per endpoint, in ROLES order:
#  anonymous, non_member, owner, other_annotator, reviewer, researcher, admin, superuser
EXPECTED = {
    "home": [302, 200, 200, 200, 200, 200, 200, 200],
    "project": [302, 404, 200, 200, 200, 200, 200, 200],
    # Only the project's annotators get items (superusers too must be annotators to annotate).
    "item_screen": [302, 404, 200, 200, 403, 403, 403, 403],
    # Acting on the owner's assignment: the owner is redirected to the next item (PRG);
    # everybody else gets the 404 an unknown id gets (the contract for a foreign lease), which
    # reveals nothing of the item, of the owner's answers, or that the id exists.
    "submit": [302, 404, 302, 404, 404, 404, 404, 404],
    "skip": [302, 404, 302, 404, 404, 404, 404, 404],
    "submit_htmx": [200, 404, 200, 404, 404, 404, 404, 404],  # anonymous: HX-Redirect to sign in
    "api_next": [403, 404, 200, 200, 403, 403, 403, 403],
    "api_submit": [403, 404, 201, 404, 404, 404, 404, 404],
    "api_skip": [403, 404, 200, 404, 404, 404, 404, 404],
    # The Django admin is for staff only; project roles do not make anyone staff.
    "admin_annotations": [302, 302, 302, 302, 302, 302, 302, 200],
}

CASES = [
    pytest.param(endpoint, role, EXPECTED[endpoint][index], id=f"{endpoint}-{role}")
    for endpoint in ENDPOINTS
    for index, role in enumerate(ROLES)
]


@pytest.mark.parametrize(("endpoint", "role", "expected"), CASES)
def test_permission_matrix(client, world, endpoint, role, expected):
    method, url_for, kwargs = ENDPOINTS[endpoint]
    client = _client_for(client, world, role)
    response = getattr(client, method)(url_for(world), **kwargs)
    assert response.status_code == expected, response.content.decode()[:500]
    assignment = Assignment.objects.get(pk=world["assignment"].pk)
    acted = endpoint in {"submit", "skip", "submit_htmx", "api_submit", "api_skip"}
    if acted and role != "owner":
        # Nobody but the owner can change the owner's assignment.
        assert assignment.status == Assignment.Status.ACTIVE
        assert not Annotation.objects.exists()
    if endpoint == "submit_htmx" and role == "anonymous":
        assert response["HX-Redirect"].startswith(reverse("login"))


@pytest.fixture
def data_world(world, settings, tmp_path):
    """The matrix world plus a published release and an import batch."""
    import io

    from imports.services import import_batch_create
    from releases.services import release_build, release_publish

    settings.MEDIA_ROOT = tmp_path
    project, admin_user = world["project"], world["users"]["admin"]
    # A release needs finished items; how they finished does not matter to permissions.
    Item.objects.filter(project=project, external_id="m-2").update(status=Item.Status.ACCEPTED)
    release = release_publish(project=project, user=admin_user)
    release_build(release_id=release.pk)
    batch = import_batch_create(
        project=project,
        user=admin_user,
        fileobj=io.BytesIO(b'{"id": "new-1", "text": "A new item."}\n'),
        filename="new.jsonl",
        options={},
    )
    return {**world, "release": release, "batch": batch, "item": project.items.first()}


def _project_url(name, extra_args=lambda w: []):
    return lambda w: reverse(f"api:{name}", args=[w["project"].slug, *extra_args(w)])


# The data and research API, in ROLES order:
#  anonymous, non_member, owner, other_annotator, reviewer, researcher, admin, superuser
# Members see their projects and stages; items and imports are the admins'; agreement figures
# and releases are the researchers' and admins' (annotators never download releases).
API_ENDPOINTS = {
    "api:projects": (lambda w: reverse("api:projects"), [403, 200, 200, 200, 200, 200, 200, 200]),
    "api:project": (
        _project_url("project", lambda w: []),
        [403, 404, 200, 200, 200, 200, 200, 200],
    ),
    "api:stages": (_project_url("stages", lambda w: []), [403, 404, 200, 200, 200, 200, 200, 200]),
    "api:items": (_project_url("items", lambda w: []), [403, 404, 403, 403, 403, 403, 200, 200]),
    "api:item": (
        _project_url("item", lambda w: [w["item"].pk]),
        [403, 404, 403, 403, 403, 403, 200, 200],
    ),
    "api:agreement": (
        _project_url("agreement", lambda w: []),
        [403, 404, 403, 403, 403, 200, 200, 200],
    ),
    "api:imports": (
        _project_url("imports", lambda w: []),
        [403, 404, 403, 403, 403, 403, 200, 200],
    ),
    "api:import": (
        _project_url("import", lambda w: [w["batch"].pk]),
        [403, 404, 403, 403, 403, 403, 200, 200],
    ),
    "api:releases": (
        _project_url("releases", lambda w: []),
        [403, 404, 403, 403, 403, 200, 200, 200],
    ),
    "api:release": (
        _project_url("release", lambda w: [w["release"].version]),
        [403, 404, 403, 403, 403, 200, 200, 200],
    ),
    "api:release-download": (
        _project_url("release-download", lambda w: [w["release"].version]),
        [403, 404, 403, 403, 403, 200, 200, 200],
    ),
    # Models' evaluations of releases: the researchers' and admins' (llm/evaluation); an id the
    # project does not hold is a 404 only for those who may look.
    "api:evaluations": (
        _project_url("evaluations", lambda w: []),
        [403, 404, 403, 403, 403, 200, 200, 200],
    ),
    "api:evaluation": (
        _project_url("evaluation", lambda w: [987654]),
        [403, 404, 403, 403, 403, 404, 404, 404],
    ),
}
API_CASES = [
    pytest.param(name, role, expected[index], id=f"{name}-{role}")
    for name, (_, expected) in API_ENDPOINTS.items()
    for index, role in enumerate(ROLES)
]


@pytest.mark.parametrize(("endpoint", "role", "expected"), API_CASES)
def test_data_api_permission_matrix(client, data_world, endpoint, role, expected):
    url_for, _ = API_ENDPOINTS[endpoint]
    client = _client_for(client, data_world, role)
    response = client.get(url_for(data_world))
    assert response.status_code == expected, (endpoint, role, response.content[:300])
    if expected >= 400:
        assert set(response.json()) == {"message", "extra"}


# Changing an answer: the owner's submitted answer (see `answered`).
CHANGE_ENDPOINTS = {
    "answers": ("get", lambda w: reverse("annotation:answers", args=[w["stage"].pk]), {}),
    "answer_last": ("get", lambda w: reverse("annotation:answer_last", args=[w["stage"].pk]), {}),
    "answer": ("get", lambda w: reverse("annotation:answer", args=[w["answer"].pk]), {}),
    "answer_change": (
        "post",
        lambda w: reverse("annotation:answer", args=[w["answer"].pk]),
        {"data": {"value": "reject"}},
    ),
    "api_revise": (
        "post",
        lambda w: reverse("api:revise", args=[w["answer"].pk]),
        {"data": {"payload": {"value": "reject"}}, "content_type": "application/json"},
    ),
}
CHANGE_EXPECTED = {
    "answers": [302, 404, 200, 200, 403, 403, 403, 403],
    # the owner goes to the change page of their answer, another annotator to their empty list
    "answer_last": [302, 404, 302, 302, 403, 403, 403, 403],
    # someone else's answer: the 404 an unknown id gets, superusers included
    "answer": [302, 404, 200, 404, 404, 404, 404, 404],
    "answer_change": [302, 404, 302, 404, 404, 404, 404, 404],
    "api_revise": [403, 404, 201, 404, 404, 404, 404, 404],
}


@pytest.fixture
def answered(world):
    owner = world["users"]["owner"]
    answer, _ = services.annotation_submit(
        assignment_id=world["assignment"].pk, annotator=owner, payload={"value": "keep"}
    )
    return {**world, "answer": answer}


@pytest.mark.parametrize(
    ("endpoint", "role", "expected"),
    [
        pytest.param(endpoint, role, CHANGE_EXPECTED[endpoint][index], id=f"{endpoint}-{role}")
        for endpoint in CHANGE_ENDPOINTS
        for index, role in enumerate(ROLES)
    ],
)
def test_change_permission_matrix(client, answered, endpoint, role, expected):
    method, url_for, kwargs = CHANGE_ENDPOINTS[endpoint]
    client = _client_for(client, answered, role)
    response = getattr(client, method)(url_for(answered), **kwargs)
    assert response.status_code == expected, response.content.decode()[:500]
    versions = Annotation.all_versions.filter(assignment=answered["assignment"].pk).count()
    changed = role == "owner" and endpoint in {"answer_change", "api_revise"}
    assert versions == (2 if changed else 1)


def test_guessing_answer_ids_never_reveals_another_annotators_answer(client, answered):
    bob, alice = answered["users"]["owner"], answered["users"]["other_annotator"]
    services.annotation_revise(
        annotation_id=answered["answer"].pk,
        annotator=bob,
        payload={"value": "reject", "comment": "BOB-PRIVATE-COMMENT"},
    )
    ids = list(Annotation.all_versions.filter(annotator=bob).values_list("pk", flat=True))
    assert client.login(username=alice.get_username(), password=PASSWORD)
    for annotation_id in [*ids, max(ids) + 1, max(ids) + 1000]:
        attempts = [
            client.get(reverse("annotation:answer", args=[annotation_id])),
            client.post(reverse("annotation:answer", args=[annotation_id]), {"value": "keep"}),
            client.post(
                reverse("api:revise", args=[annotation_id]),
                {"payload": {"value": "keep"}},
                content_type="application/json",
            ),
        ]
        for response in attempts:
            body = response.content.decode()
            assert response.status_code == 404, (annotation_id, body[:300])
            assert "no such answer among yours" in body
            assert "BOB-PRIVATE-COMMENT" not in body and "reject" not in body
    assert Annotation.all_versions.filter(annotator=bob).count() == 2


def test_the_matrix_covers_every_url_of_the_annotator_loop():
    """A new annotation page or API endpoint must be added to the matrix."""
    from django.urls import get_resolver

    names = set()
    for namespace in ("annotation", "api"):
        resolver = get_resolver().namespace_dict[namespace][1]
        names |= {f"{namespace}:{name}" for name in resolver.reverse_dict if isinstance(name, str)}
    covered = {
        "annotation:home",
        "annotation:project",
        "annotation:stage",
        "annotation:submit",
        "annotation:skip",
        "api:next",
        "api:submit",
        "api:skip",
        "annotation:answers",
        "annotation:answer_last",
        "annotation:answer",
        "api:revise",
        *API_ENDPOINTS,
        "api:token",  # public by design: exchanges credentials for a token (throttled)
        # POST only (pause / resume / cancel, admins): tests/llm/test_evaluation_api.py
        "api:evaluation-control",
        "api:unknown",  # the catch-all that answers 404 in the API's error format
    }
    assert names <= covered, f"not in the permission matrix: {sorted(names - covered)}"


def test_guessing_ids_never_reveals_another_annotators_annotation(client, world):
    """Bob submits (with a comment) and holds another lease; Alice tries every assignment id
    around them on every endpoint that takes one. She gets the same 404 each time and never
    sees Bob's answer."""
    stage, users = world["stage"], world["users"]
    bob, alice = users["owner"], users["other_annotator"]
    services.annotation_submit(
        assignment_id=world["assignment"].pk,
        annotator=bob,
        payload={"value": "reject", "comment": "BOB-PRIVATE-COMMENT"},
    )
    services.assignment_next(
        annotator=bob, stage=access_stage_for_annotator(user=bob, stage_id=stage.pk)
    )
    bobs_ids = list(Assignment.objects.filter(annotator=bob).values_list("pk", flat=True))
    assert client.login(username=alice.get_username(), password=PASSWORD)
    before = list(Annotation.objects.values_list("pk", "payload"))
    for assignment_id in [*bobs_ids, max(bobs_ids) + 1, max(bobs_ids) + 1000]:
        attempts = [
            client.post(reverse("annotation:submit", args=[assignment_id]), {"value": "keep"}),
            client.post(
                reverse("annotation:submit", args=[assignment_id]),
                {"value": "keep"},
                HTTP_HX_REQUEST="true",
            ),
            client.post(reverse("annotation:skip", args=[assignment_id]), {"reason": "x"}),
            client.post(
                reverse("api:submit", args=[assignment_id]),
                {"payload": {"value": "keep"}},
                content_type="application/json",
            ),
            client.post(
                reverse("api:skip", args=[assignment_id]),
                {"reason": "x"},
                content_type="application/json",
            ),
        ]
        for response in attempts:
            body = response.content.decode()
            # Bob's lease and an unknown id get the same 404: nothing of the item or of
            # Bob's answers, nor whether the id exists, is revealed.
            assert response.status_code == 404, (assignment_id, body[:300])
            assert "no such assignment among yours" in body
            assert "BOB-PRIVATE-COMMENT" not in body and "reject" not in body
    assert list(Annotation.objects.values_list("pk", "payload")) == before
    assert Assignment.objects.filter(annotator=bob, status=Assignment.Status.ACTIVE).count() == 1


def test_the_api_never_sends_known_answers_to_annotators(client, world):
    project, stage = world["project"], world["stage"]
    services.items_create(
        project=project,
        rows=[
            {
                "external_id": "gold-1",
                "payload": {"text": "T.", "gold": "keep", "_note": "x", "expected": "causal"},
            }
        ],
    )
    alice = world["users"]["other_annotator"]
    assert client.login(username=alice.get_username(), password=PASSWORD)
    seen = []
    for _ in range(4):
        response = client.post(reverse("api:next", args=[stage.pk]))
        if response.status_code == 204:
            break
        body = response.json()
        seen.append(body["item"]["payload"])
        client.post(
            reverse("api:submit", args=[body["id"]]),
            {"payload": {"value": "keep"}},
            content_type="application/json",
        )
    assert {"text": "T."} in seen
    assert all(set(payload) == {"text"} for payload in seen)


def test_an_outsider_cannot_tell_a_real_project_from_a_missing_one(client, world):
    outsider = make_user()
    assert client.login(username=outsider.get_username(), password=PASSWORD)
    real = client.get(reverse("annotation:project", args=[world["project"].slug]))
    missing = client.get(reverse("annotation:project", args=["no-such-project"]))
    real_stage = client.get(reverse("annotation:stage", args=[world["stage"].pk]))
    missing_stage = client.get(reverse("annotation:stage", args=[world["stage"].pk + 999]))
    assert real.status_code == missing.status_code == 404
    assert real_stage.status_code == missing_stage.status_code == 404
    assert world["project"].name not in real.content.decode()
