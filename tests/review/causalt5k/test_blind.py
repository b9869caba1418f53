"""CausalT5k's blind answer stage (review.causalt5k.blind): a sample of kept cases answered under
a neutral handle, never showing the gold label, trap, rationale, key insight, wise-refusal
fields or the canonical id — checked in the page HTML and the API responses, field by field —
and the answers scored against the gold."""

from __future__ import annotations

import html
import json

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.errors import ApplicationError
from annotation.models import Item, ItemStage
from review.causalt5k import blind
from review.causalt5k.demo import CASES
from review.causalt5k.pipeline import causalt5k_project_create
from review.meter.demo import drive
from tests.api.test_views import client_for
from tests.factories import make_member

pytestmark = pytest.mark.django_db

#: Every gold field gets a value no scenario contains, so any leak is found by a substring test.
SENTINEL = "GOLD-{}-7f3e"


def gold_case(case):
    case = dict(case)
    for field in blind.GOLD_FIELDS:
        if field not in ("case_id", "label", "reviews", "sources", "original_ids"):
            case[field] = SENTINEL.format(field)
    case["reviews"] = [{"round": 1, "reviewer": SENTINEL.format("reviewer"), "score": 9.5}]
    case["sources"] = [SENTINEL.format("source")]
    case["original_ids"] = [SENTINEL.format("original_id")]
    case["variables"] = {
        "X": {"name": "coffee", "role": SENTINEL.format("role-x")},
        "Y": {"name": "heart attacks", "role": "outcome"},
        "Z": [{"name": "smoking", "role": SENTINEL.format("role-z")}],
    }
    return case


def kept_project(slug="blind", answerers=2):
    project = causalt5k_project_create(slug=slug, name="Blind", seed=3, answerers=answerers)
    engine.items_create(
        project=project,
        rows=[{"external_id": c["case_id"], "payload": gold_case(c)} for c in CASES],
        open_first_stage=False,
    )
    Item.objects.filter(project=project).update(status=Item.Status.ACCEPTED)
    return project, project.stages.get(slug="answer")


def leaks(text: str, case: dict) -> list[str]:
    """The gold values and ids of ``case`` found in ``text``."""
    found = [s for s in (case["case_id"],) if s in text]
    found += [
        SENTINEL.format(f)
        for f in (*blind.GOLD_FIELDS, "reviewer", "source", "role-x", "role-z")
        if SENTINEL.format(f) in text
    ]
    return found


def test_a_sample_opens_under_neutral_handles_and_never_twice():
    project, stage = kept_project()
    assert blind.blind_open(project=project, sample=4, seed=1) == 4
    assert blind.blind_open(project=project, sample=100, seed=1) == len(CASES) - 4
    assert blind.blind_open(project=project, sample=100, seed=1) == 0
    answer_items = Item.objects.filter(project=project, external_id__startswith="answer/")
    assert answer_items.count() == len(CASES)
    assert {i.payload["case_id"] for i in answer_items} == {c["case_id"] for c in CASES}
    for item in answer_items:
        assert item.external_id == f"answer/{item.payload['handle']}"
        assert item.external_id.startswith("answer/q-") and len(item.payload["handle"]) == 12
        # The answer item holds no gold at all (only the case id, which is never shown).
        assert set(item.payload) <= {*blind.SHOWN_FIELDS, "case_id"}
        assert leaks(json.dumps(item.payload), item.payload) == [item.payload["case_id"]]
        assert item.group == "" and item.source == ""
    assert ItemStage.objects.filter(stage=stage, state="open").count() == len(CASES)
    # The cascade and the release count cases only, not answer items.
    from review.causalt5k.figures import cascade

    assert cascade(project)["raw"] == len(CASES)
    with pytest.raises(ApplicationError, match="1 to 10,000"):
        blind.blind_open(project=project, sample=0)


def test_only_kept_cases_are_sampled():
    project, _ = kept_project()
    Item.objects.filter(project=project, external_id="T1-W7-MED-001").update(status="discarded")
    Item.objects.filter(project=project, external_id="T2-S1-MED-001").update(status="active")
    assert blind.blind_open(project=project, sample=100) == len(CASES) - 2
    sampled = set(
        Item.objects.filter(project=project, external_id__startswith="answer/").values_list(
            "payload__case_id", flat=True
        )
    )
    assert "T1-W7-MED-001" not in sampled and "T2-S1-MED-001" not in sampled


def test_pages_and_api_show_no_gold_field_and_no_canonical_id(client):
    """Every answer item, leased through the page and through the API: none of the case's gold
    fields, its canonical or original ids, its reviewers or sources, or the variables' roles."""
    project, stage = kept_project(answerers=2)  # one person on the pages, one on the API
    blind.blind_open(project=project, sample=100, seed=2)
    by_case = {c["case_id"]: gold_case(c) for c in CASES}
    page_person, api_person = make_member(project), make_member(project)
    client.force_login(page_person)
    url = reverse("annotation:stage", args=[stage.pk])
    api = client_for(api_person)
    seen_pages = seen_api = 0
    while True:
        client.post(url)  # lease the next item (GET never takes one)
        page = html.unescape(client.get(url).content.decode())
        if "Is the claim justified" not in page:
            break
        handle = page.split("answer/q-", 1)[1][:10]
        item = Item.objects.get(project=project, external_id=f"answer/q-{handle}")
        case = by_case[item.payload["case_id"]]
        assert leaks(page, case) == [], item.payload["case_id"]
        assert case["scenario"] in page and case["claim"] in page
        assert 'data-field="label"' not in page and "Gold label" not in page
        assert "coffee" in page and "smoking" in page  # the variables' names, not their roles
        label = "VALID" if case["tier"] == 3 else "NO"
        response = client.post(
            reverse(
                "annotation:submit", args=[page.split('data-assignment="', 1)[1].split('"')[0]]
            ),
            {"label": label},
        )
        assert response.status_code in (200, 302)
        seen_pages += 1
    while (leased := api.post(f"/api/stages/{stage.pk}/next/")).status_code == 200:
        body = leased.json()
        text = json.dumps(body)
        item = Item.objects.get(pk=body["item"]["id"])
        case = by_case[item.payload["case_id"]]
        assert leaks(text, case) == [], item.payload["case_id"]
        assert body["item"]["external_id"].startswith("answer/q-")
        assert set(body["item"]["payload"]) <= set(blind.SHOWN_FIELDS)
        assert set(body["item"]["payload"]["variables"]["Z"]) == {"smoking"}
        assert api.post(
            f"/api/assignments/{body['id']}/submit/",
            {"payload": {"label": "YES" if case["tier"] != 3 else "INVALID"}},
            format="json",
        ).status_code in (200, 201)
        seen_api += 1
    assert seen_pages == len(CASES) and seen_api == len(CASES)
    # The item list and item detail (which hold the case id) are not for annotators.
    answer_item = Item.objects.filter(project=project, external_id__startswith="answer/").first()
    assert api.get(f"/api/projects/{project.slug}/items/").status_code in (403, 404)
    assert api.get(f"/api/projects/{project.slug}/items/{answer_item.pk}/").status_code in (
        403,
        404,
    )


def test_authors_never_answer_their_own_case_and_labels_follow_the_tier():
    project, stage = kept_project(answerers=1)
    author = make_member(project)
    Item.objects.filter(project=project, external_id="T2-S1-MED-001").update(author=author)
    blind.blind_open(project=project, sample=100, seed=4)
    given = set()
    while (a := engine.assignment_next(annotator=author, stage=stage)) is not None:
        given.add(a.item_stage.item.payload["case_id"])
        engine.assignment_skip(assignment_id=a.pk, annotator=author, reason="test")
    assert "T2-S1-MED-001" not in given and len(given) == len(CASES) - 1
    other = make_member(project)
    assignment = engine.assignment_next(annotator=other, stage=stage)
    wrong = "VALID" if assignment.item_stage.item.payload["tier"] != 3 else "YES"
    with pytest.raises(ApplicationError, match="Answer with one of"):
        engine.annotation_submit(
            assignment_id=assignment.pk, annotator=other, payload={"label": wrong}
        )


def test_the_answers_are_scored_against_the_gold_by_level():
    project, stage = kept_project(answerers=2)
    blind.blind_open(project=project, sample=100, seed=5)
    gold = {c["case_id"]: c["label"] for c in CASES}
    people = [make_member(project) for _ in range(2)]

    def answer(index, item, phase):  # the first person is always right, the second never
        right = gold[item.payload["case_id"]]
        if index == 0:
            return {"label": right}
        options = (
            ("VALID", "INVALID", "CONDITIONAL")
            if item.payload["tier"] == 3
            else ("YES", "NO", "AMBIGUOUS")
        )
        return {"label": next(o for o in options if o != right)}

    drive(stage, people, answer)
    figures = {row["level"]: row for row in blind.blind_accuracy(project)}
    assert figures["all"]["cases"] == len(CASES)
    assert figures["all"]["answers"] == 2 * len(CASES)
    assert figures["all"]["accuracy"] == 0.5
    assert figures["all"]["ci_low"] <= 0.5 <= figures["all"]["ci_high"]
    levels = {c["pearl_level"] for c in CASES}
    assert set(figures) == {*levels, "all"}
    # A revised gold label is the one scored.
    case = Item.objects.get(project=project, external_id="T1-W7-MED-001")
    case.payload = {**case.payload, "label": "YES"}
    case.save(update_fields=["payload"])
    after = {row["level"]: row for row in blind.blind_accuracy(project)}
    assert (
        after["all"]["correct"] == figures["all"]["correct"]
    )  # one right became wrong, one wrong right
    assert blind.blind_progress(project) == {"sampled": len(CASES), "answered": len(CASES)}


def test_nobody_who_worked_on_the_case_answers_it_blind():
    """The answer stage carries ``not_author`` and ``blind`` following the answer item's
    case_id: whoever held the case in an earlier stage (here a reviewer who only leased it) is
    never given its answer item; they are given the others'."""
    from annotation.eligibility import blind as blind_rule

    project, stage = kept_project(slug="blind-workers")
    assert stage.eligibility == [{"rule": "not_author"}, blind_rule("case_id")]
    reviewed = Item.objects.get(project=project, external_id=CASES[2]["case_id"])
    engine.item_stages_open(items=[reviewed], stage=project.stages.get(slug="review"))
    reviewer = make_member(project)
    held = engine.assignment_next(annotator=reviewer, stage=project.stages.get(slug="review"))
    assert held.item_stage.item == reviewed
    blind.blind_open(project=project, sample=100, seed=6)
    given = []
    while (answer := engine.assignment_next(annotator=reviewer, stage=stage)) is not None:
        given.append(answer.item_stage.item.payload["case_id"])
        engine.assignment_skip(assignment_id=answer.pk, annotator=reviewer, reason="test")
    assert reviewed.external_id not in given
    assert len(given) == len(CASES) - 1
    fresh = make_member(project)
    answered = []
    while (answer := engine.assignment_next(annotator=fresh, stage=stage)) is not None:
        answered.append(answer.item_stage.item.payload["case_id"])
        engine.assignment_skip(assignment_id=answer.pk, annotator=fresh, reason="test")
    assert reviewed.external_id in answered
