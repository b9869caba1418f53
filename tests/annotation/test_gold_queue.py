"""Silent gold in the queue (annotation/gold.py, annotation/services/next_item.py): gold items
come among an annotator's items at the stage's rate, never first, never as work, and nothing an
annotator receives says which items they are."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services
from annotation.gold import gold_answers
from annotation.models import Annotation, Assignment, Item, ItemStage, Resolution, Stage
from annotation.services import next_item
from annotation.slots import EVERYONE
from tests.factories import PASSWORD, make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


def gold_stage(*, every=3, regular=30, gold=5, overlap=3, order=Stage.OrderPolicy.DEPTH_FIRST):
    project = make_project()
    stage = make_verify_stage(project, overlap=overlap, gold_every=every, order_policy=order)
    make_items(project, regular)
    services.items_create(
        project=project,
        rows=[
            {
                "external_id": f"item-9{index:04d}",
                "payload": {
                    "text": f"Sentence {index}: the wind rose, so the sea grew.",
                    "gold": "keep",
                },
                "purpose": "gold",
            }
            for index in range(gold)
        ],
    )
    return project, stage


def is_gold(assignment: Assignment) -> bool:
    return assignment.item_stage.item.purpose == Item.Purpose.GOLD


def work_through(stage, person, answer="keep") -> list[bool]:
    """The person takes items until none is left; returns, in order, whether each was gold."""
    seen = []
    while (
        assignment := services.assignment_next(
            annotator=person, stage=next_item.reached_by(stage, person.pk)
        )
    ) is not None:
        seen.append(is_gold(assignment))
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=person, payload={"value": answer}
        )
    return seen


def assert_rate(seen: list[bool], every: int) -> None:
    assert seen and not seen[0], "the first item is never gold"
    for start in range(len(seen)):
        assert sum(seen[start : start + every]) <= 1, f"two gold items within {every}: {seen}"


@pytest.mark.parametrize("order", [Stage.OrderPolicy.DEPTH_FIRST, Stage.OrderPolicy.RANDOM])
def test_gold_comes_at_most_one_in_n_never_first_and_every_gold_item_once(order):
    project, stage = gold_stage(every=3, regular=30, gold=5, order=order)
    person = make_member(project)
    seen = work_through(stage, person)
    assert_rate(seen, 3)
    assert seen.count(False) == 30
    assert seen.count(True) == 5  # 30 regular items leave room for every gold item once


def test_no_gold_when_the_rate_is_off_and_gold_items_are_never_work():
    project, stage = gold_stage(every=0, regular=6, gold=3)
    person = make_member(project)
    assert work_through(stage, person) == [False] * 6


def test_gold_answers_never_count_as_work(django_capture_on_commit_callbacks):
    project, stage = gold_stage(every=2, regular=8, gold=4, overlap=3)
    people = [make_member(project) for _ in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        for person in people:
            assert_rate(work_through(stage, person, answer="reject"), 2)
    golds = ItemStage.objects.filter(stage=stage, item__purpose=Item.Purpose.GOLD)
    assert {(g.state, g.target_count) for g in golds} == {(ItemStage.State.OPEN, EVERYONE)}
    assert not Resolution.objects.filter(item_stage__in=golds).exists()
    assert all(g.gold == "keep" for g in golds)
    regular = ItemStage.objects.filter(stage=stage, item__purpose=Item.Purpose.REGULAR)
    assert {r.submitted_count for r in regular} == {3}
    assert Resolution.objects.filter(item_stage__in=regular).count() == 8
    answers = gold_answers(stage=stage)
    assert answers and all(a.correct is False and a.vote == "reject" for a in answers)
    assert (
        len(answers)
        == golds.aggregate(
            n=__import__("django.db.models", fromlist=["Sum"]).Sum("submitted_count")
        )["n"]
    )


# --- Nothing an annotator receives tells a gold item from another ---------------------------

_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"|"X-CSRFToken": "[^"]*"')


def _shape(html: str) -> str:
    """A page with what differs between any two items blanked: numbers (ids, times, counts)
    and the CSRF token."""
    return re.sub(r"\d+", "0", _CSRF.sub("", html))


def _keys(value):
    if isinstance(value, dict):
        return {key: _keys(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_keys(inner) for inner in value[:1]]
    return type(value).__name__


def look_alike_stage():
    """Regular and gold items written alike (the same sentence but for its number)."""
    project = make_project()
    stage = make_verify_stage(project, overlap=3, gold_every=2)
    rows = [
        {
            "external_id": f"item-{index:05d}",
            "payload": {"text": f"Sentence {index}: the rain fell, so the river rose."},
            **(
                {
                    "purpose": "gold",
                    "payload": {
                        "text": f"Sentence {index}: the rain fell, so the river rose.",
                        "gold": "keep",
                    },
                }
                if index % 3 == 2
                else {}
            ),
        }
        for index in range(12)
    ]
    services.items_create(project=project, rows=rows)
    return project, stage


def test_the_item_pages_of_gold_and_regular_items_are_alike_and_never_say_gold(
    client, django_capture_on_commit_callbacks
):
    project, stage = look_alike_stage()
    person = make_member(project)
    assert client.login(username=person.get_username(), password=PASSWORD)
    pages: dict[bool, list[str]] = {True: [], False: []}
    bodies = []
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post(reverse("annotation:stage", args=[stage.pk]), follow=True)
        while Assignment.objects.filter(annotator=person, stage=stage, status="active").exists():
            held = Assignment.objects.get(annotator=person, stage=stage, status="active")
            html = page.content.decode()
            bodies.append(html)
            pages[is_gold(held)].append(_shape(html))
            page = client.post(
                reverse("annotation:submit", args=[held.pk]), {"value": "keep"}, follow=True
            )
            bodies.append(page.content.decode())
        gold_answer = Annotation.objects.filter(
            annotator=person, item_stage__item__purpose="gold"
        ).first()
        assert gold_answer is not None
        for url in (
            reverse("annotation:answers", args=[stage.pk]),
            reverse("annotation:answer_last", args=[stage.pk]),
            reverse("annotation:answer", args=[gold_answer.pk]),
            reverse("annotation:project", args=[project.slug]),
            reverse("annotation:home"),
        ):
            response = client.get(url, follow=True)
            assert response.status_code == 200
            bodies.append(response.content.decode())
    assert pages[True] and pages[False]
    assert set(pages[True]) <= set(pages[False]), (
        "a gold item's page differs from every regular one"
    )
    for body in bodies:
        assert "gold" not in body.lower()


def test_the_api_answers_for_gold_and_regular_items_are_alike_and_never_say_gold(
    django_capture_on_commit_callbacks,
):
    project, stage = look_alike_stage()
    people = [make_member(project) for _ in range(2)]
    shapes: dict[bool, set[str]] = {True: set(), False: set()}
    texts = []
    with django_capture_on_commit_callbacks(execute=True):
        for person in people:
            api = APIClient()
            api.credentials(
                HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=person)[0].key}"
            )
            leased = api.post(f"/api/stages/{stage.pk}/next/")
            while leased.status_code == 200:
                texts.append(leased.content.decode())
                body = leased.json()
                gold = (
                    Item.objects.get(
                        external_id=body["item"]["external_id"], project=project
                    ).purpose
                    == "gold"
                )
                shapes[gold].add(repr(_keys(body)))
                done = api.post(
                    f"/api/assignments/{body['id']}/submit/",
                    {"payload": {"value": "keep"}, "next": True},
                    format="json",
                )
                assert done.status_code == 201
                texts.append(done.content.decode())
                revised = api.post(
                    f"/api/annotations/{done.json()['id']}/revise/",
                    {"payload": {"value": "reject"}},
                    format="json",
                )
                assert revised.status_code in (200, 201)
                texts.append(revised.content.decode())
                leased = api.post(f"/api/stages/{stage.pk}/next/")
            texts.append(leased.content.decode())
    assert shapes[True] and shapes[True] == shapes[False]
    for text in texts:
        assert "gold" not in text.lower()
