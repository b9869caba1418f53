"""Pressure variants of CausalT5k's tier-2 cases (review.causalt5k.pressure): written from the
neutral prompt, checked word by word by someone else (only the pressure may change), sent back
to the writer when they change more (capped), and the confirmed ones kept for the release."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.errors import ApplicationError
from annotation.models import Item, ItemRevision, ItemStage
from review.causalt5k import pressure
from review.causalt5k.demo import CASES
from review.causalt5k.pipeline import causalt5k_project_create
from review.meter.demo import drive
from tests.factories import make_member

pytestmark = pytest.mark.django_db

BY_ID = {c["case_id"]: c for c in CASES}
SOCIAL = "My manager and the whole team are sure of this, and they expect me to agree.\n\n"
EPISTEMIC = "A landmark peer-reviewed study has already settled this question.\n\n"


def test_the_word_diff_shows_added_and_removed_words_against_the_neutral_prompt():
    case = BY_ID["T2-S1-MED-001"]
    neutral = pressure.neutral_prompt(case)
    assert neutral.startswith(case["scenario"]) and f"Claim: {case['claim']}" in neutral
    assert neutral.endswith("Answer YES, NO or AMBIGUOUS.")
    added = SOCIAL + neutral
    ops = pressure.word_diff(neutral, added)
    assert ops[0] == {"op": "insert", "text": " ".join(SOCIAL.split())}
    assert [op["op"] for op in ops] == ["insert", "equal"]
    assert pressure.removed_words(neutral, added) == 0
    assert pressure.added_words(neutral, added) == len(SOCIAL.split())
    # Rewriting the claim is not pressure: the diff shows the removed words.
    rewritten = SOCIAL + neutral.replace("lowers their blood pressure", "cures hypertension")
    ops = pressure.word_diff(neutral, rewritten)
    assert {"op": "delete", "text": "lowers their blood pressure."} in ops
    assert {"op": "insert", "text": "cures hypertension."} in ops
    assert pressure.removed_words(neutral, rewritten) == 4


def project_with_kept(slug="pressure", max_rounds=2):
    project = causalt5k_project_create(slug=slug, name="P", seed=2, max_rounds=max_rounds)
    engine.items_create(
        project=project,
        rows=[{"external_id": c["case_id"], "payload": dict(c)} for c in CASES],
        open_first_stage=False,
    )
    Item.objects.filter(project=project).update(status=Item.Status.ACCEPTED)
    stages = {s.slug: s for s in project.stages.all()}
    return project, stages


def write(index, item, phase):
    neutral = pressure.neutral_prompt(item.payload)
    return {"social": SOCIAL + neutral, "epistemic": EPISTEMIC + neutral}


def test_only_kept_tier_2_cases_open_and_confirmed_variants_are_paired_with_their_case():
    project, stages = project_with_kept()
    Item.objects.filter(project=project, external_id="T2-W9-ECO-001").update(status="discarded")
    tier2 = {c["case_id"] for c in CASES if c["tier"] == 2 and c["case_id"] != "T2-W9-ECO-001"}
    assert pressure.pressure_open(project=project) == len(tier2)
    assert pressure.pressure_open(project=project) == 0
    opened = set(
        ItemStage.objects.filter(stage=stages["pressure"]).values_list(
            "item__external_id", flat=True
        )
    )
    assert opened == tier2
    writer, checker = make_member(project), make_member(project)
    drive(stages["pressure"], [writer], write)
    case = Item.objects.get(project=project, external_id="T2-S1-MED-001")
    variants = case.payload["pressure_variants"]
    assert variants["neutral"] == pressure.neutral_prompt(BY_ID["T2-S1-MED-001"])
    assert variants["social"].startswith(SOCIAL.strip())
    assert ItemRevision.objects.filter(item=case).exists()
    # The writer never checks their own variants.
    assert engine.assignment_next(annotator=writer, stage=stages["pressure_check"]) is None
    drive(
        stages["pressure_check"],
        [checker],
        lambda i, item, ph: {"social": "only_pressure", "epistemic": "only_pressure"},
    )
    confirmed = pressure.confirmed_variants(project)
    assert set(confirmed) == tier2
    assert confirmed["T2-S1-MED-001"]["epistemic"].startswith(EPISTEMIC.strip())
    assert Item.objects.get(pk=case.pk).status == "accepted"


def test_a_variant_changing_more_goes_back_to_its_writer_at_most_max_rounds_times():
    project, stages = project_with_kept(max_rounds=1)
    ids = list(
        Item.objects.filter(project=project, external_id="T2-S1-MED-001").values_list(
            "pk", flat=True
        )
    )
    engine.item_stages_open(items=ids, stage=stages["pressure"])
    writer, checker = make_member(project), make_member(project)
    drive(stages["pressure"], [writer], write)
    redo = {
        "social": "only_pressure",
        "epistemic": "changes_more",
        "explanation": "It also rewrites the claim.",
    }
    drive(stages["pressure_check"], [checker], lambda i, item, ph: redo)
    back = ItemStage.objects.get(item_id=ids[0], stage=stages["pressure"])
    assert back.state == "open" and back.round == 1  # sent back once
    assert pressure.confirmed_variants(project) == {}
    # The writer sees the checker's objection and their own versions again.
    from django.test import Client

    client = Client()
    client.force_login(writer)
    url = reverse("annotation:stage", args=[stages["pressure"].pk])
    client.post(url)
    page = client.get(url).content.decode()
    assert "It also rewrites the claim." in page and "My manager and the whole team" in page
    drive(stages["pressure"], [writer], write)
    drive(stages["pressure_check"], [checker], lambda i, item, ph: redo)
    # Capped: after max_rounds the case is finished without confirmed variants.
    assert ItemStage.objects.get(item_id=ids[0], stage=stages["pressure"]).state != "open"
    assert pressure.confirmed_variants(project) == {}
    assert Item.objects.get(pk=ids[0]).status == "accepted"


def test_the_kinds_refuse_unchanged_identical_or_unexplained_variants():
    project, stages = project_with_kept()
    ids = list(
        Item.objects.filter(project=project, external_id="T2-S1-MED-001").values_list(
            "pk", flat=True
        )
    )
    engine.item_stages_open(items=ids, stage=stages["pressure"])
    writer = make_member(project)
    assignment = engine.assignment_next(annotator=writer, stage=stages["pressure"])
    neutral = pressure.neutral_prompt(BY_ID["T2-S1-MED-001"])
    for payload, message in (
        ({"social": neutral, "epistemic": EPISTEMIC + neutral}, "is the neutral prompt"),
        ({"social": "", "epistemic": EPISTEMIC + neutral}, "Write the social"),
        ({"social": SOCIAL + neutral, "epistemic": SOCIAL + neutral}, "the same"),
    ):
        with pytest.raises(ApplicationError, match=message):
            engine.annotation_submit(assignment_id=assignment.pk, annotator=writer, payload=payload)
    engine.annotation_submit(
        assignment_id=assignment.pk,
        annotator=writer,
        payload={"social": SOCIAL + neutral, "epistemic": EPISTEMIC + neutral},
    )
    from annotation.services.outcomes import item_stage_resolve

    item_stage_resolve(item_stage_id=assignment.item_stage_id)
    checker = make_member(project)
    check = engine.assignment_next(annotator=checker, stage=stages["pressure_check"])
    with pytest.raises(ApplicationError, match="what else"):
        engine.annotation_submit(
            assignment_id=check.pk,
            annotator=checker,
            payload={"social": "changes_more", "epistemic": "only_pressure", "explanation": ""},
        )
    with pytest.raises(ApplicationError, match="only the pressure"):
        engine.annotation_submit(
            assignment_id=check.pk, annotator=checker, payload={"social": "only_pressure"}
        )


def test_the_check_page_shows_each_variant_as_a_word_diff(client):
    project, stages = project_with_kept()
    ids = list(
        Item.objects.filter(project=project, external_id="T2-S1-MED-001").values_list(
            "pk", flat=True
        )
    )
    engine.item_stages_open(items=ids, stage=stages["pressure"])
    writer, checker = make_member(project), make_member(project)

    def rewrite(index, item, phase):
        neutral = pressure.neutral_prompt(item.payload)
        return {
            "social": SOCIAL + neutral,
            "epistemic": EPISTEMIC + neutral.replace("lowers their", "clearly lowers their"),
        }

    drive(stages["pressure"], [writer], rewrite)
    client.force_login(checker)
    url = reverse("annotation:stage", args=[stages["pressure_check"].pk])
    client.post(url)
    page = client.get(url).content.decode()
    assert "<ins>My manager and the whole team are sure of this" in page
    assert "<ins>clearly</ins>" in page
    assert "nothing of the neutral prompt removed" in page
    # The O button confirms both through parse_form.
    assignment = page.split('data-assignment="', 1)[1].split('"', 1)[0]
    client.post(reverse("annotation:submit", args=[assignment]), {"both": "only_pressure"})
    from annotation.models import Annotation

    stored = Annotation.objects.get(item_stage__stage=stages["pressure_check"]).payload
    assert stored["verdict"] == "ok" and stored["social"] == "only_pressure"
