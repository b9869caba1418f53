"""CausalT5k's validation stages (review.causalt5k.pipeline): the near-duplicate queue, the
adversarial review with its author loop (capped), the quality gate with a third reviewer, the
scorers' agreement, eligibility, the tab and the demo. On SQLite here, on PostgreSQL under
`make test`."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.errors import ApplicationError
from annotation.models import Item, ItemRevision, ItemStage, Resolution
from annotation.services.outcomes import item_stage_resolve
from review.causalt5k.demo import CASES
from review.causalt5k.models import CausalT5kDuplicate
from review.causalt5k.pipeline import causalt5k_project_create, causalt5k_review_open
from review.meter.demo import drive
from tests.factories import make_member

pytestmark = pytest.mark.django_db

BY_ID = {case["case_id"]: case for case in CASES}
SCORE_KEYS = ("structural_validity", "ground_truth", "self_containment", "ecological_realism")


def make(case_ids, slug="ct5k", **settings):
    project = causalt5k_project_create(slug=slug, name="CT5k", seed=5, **settings)
    engine.items_create(
        project=project,
        rows=[{"external_id": cid, "payload": dict(BY_ID[cid])} for cid in case_ids],
        open_first_stage=False,
    )
    stages = {stage.slug: stage for stage in project.stages.all()}
    return project, stages


def scores(*values):
    return {"scores": dict(zip(SCORE_KEYS, values, strict=True))}


def state(project, case_id, slug):
    return ItemStage.objects.get(item__project=project, item__external_id=case_id, stage__slug=slug)


def test_the_pipeline_is_dedup_author_review_score_with_not_author_rules():
    project, stages = make([])
    assert list(stages) == [
        "dedup",
        "author",
        "review",
        "score",
        "answer",
        "pressure",
        "pressure_check",
    ]
    assert stages["review"].eligibility == [{"rule": "not_author"}]
    assert stages["score"].eligibility == [{"rule": "not_author"}]
    assert stages["author"].eligibility == [{"rule": "author_if_known"}]
    assert stages["score"].max_overlap == 3
    assert stages["review"].routes["major"]["max_loops"] == 2


def test_a_cluster_is_confirmed_its_survivor_reviewed_and_the_copy_discarded_with_the_reason():
    project, stages = make(["T1-W7-MED-001", "T1-W7-MED-002", "T2-S1-MED-001"])
    counts = causalt5k_review_open(project=project, threshold=0.6)
    assert counts["clusters"] == 1 and counts["in_clusters"] == 2
    assert counts["opened_in_review"] == 1  # the case in no cluster
    cluster = Item.objects.get(project=project, external_id__startswith="cluster/")
    assert [m["case_id"] for m in cluster.payload["members"]] == ["T1-W7-MED-001", "T1-W7-MED-002"]
    # The clustered cases wait: in no stage until the cluster is decided.
    assert not ItemStage.objects.filter(item__external_id="T1-W7-MED-002").exists()
    reviewer = make_member(project)
    drive(
        stages["dedup"],
        [reviewer],
        lambda i, item, phase: {"verdict": "confirm", "keep": ["T1-W7-MED-002"]},
    )
    assert state(project, "T1-W7-MED-002", "review").state == "open"
    discarded = Item.objects.get(project=project, external_id="T1-W7-MED-001")
    assert discarded.status == "discarded"
    record = CausalT5kDuplicate.objects.get(item=discarded)
    assert record.survivor.external_id == "T1-W7-MED-002"
    assert "near-duplicate of T1-W7-MED-002" in record.reason and "C0001" in record.reason


def test_a_split_keeps_the_ticked_cases_and_the_kind_refuses_a_confirm_with_two():
    project, stages = make(["T1-W7-MED-001", "T1-W7-MED-002"])
    causalt5k_review_open(project=project, threshold=0.6)
    reviewer = make_member(project)
    assignment = engine.assignment_next(annotator=reviewer, stage=stages["dedup"])
    with pytest.raises(ApplicationError, match="exactly one"):
        engine.annotation_submit(
            assignment_id=assignment.pk,
            annotator=reviewer,
            payload={"verdict": "confirm", "keep": ["T1-W7-MED-001", "T1-W7-MED-002"]},
        )
    with pytest.raises(ApplicationError, match="this cluster"):
        engine.annotation_submit(
            assignment_id=assignment.pk,
            annotator=reviewer,
            payload={"verdict": "split", "keep": ["T1-W7-MED-001", "T2-S1-MED-001"]},
        )
    engine.annotation_submit(
        assignment_id=assignment.pk,
        annotator=reviewer,
        payload={"verdict": "split", "keep": ["T1-W7-MED-002", "T1-W7-MED-001"]},
    )
    item_stage_resolve(item_stage_id=assignment.item_stage_id)
    assert ItemStage.objects.filter(stage=stages["review"]).count() == 2
    assert not CausalT5kDuplicate.objects.exists()


def test_the_threshold_is_configurable_and_a_high_one_finds_no_cluster():
    project, _ = make(["T2-W2-MKT-001", "T2-W2-MKT-002"])
    assert causalt5k_review_open(project=project, threshold=0.99)["clusters"] == 0
    project.refresh_from_db()
    assert project.settings["neardup_threshold"] == 0.99
    with pytest.raises(ApplicationError, match="threshold"):
        causalt5k_review_open(project=project, threshold=1.5)


def review(verdict, **extra):
    return {"verdict": verdict, **extra}


def test_pass_goes_to_scoring_and_a_minor_revision_is_edited_in_place_with_a_diff():
    project, stages = make(["T2-S1-MED-001", "T2-W9-ECO-001"])
    causalt5k_review_open(project=project)
    reviewer = make_member(project)
    new_claim = "Cutting police numbers in a district will lower its recorded crime."

    def answer(i, item, phase):
        if item.external_id == "T2-S1-MED-001":
            return review("pass")
        return review(
            "minor",
            attacks=["ambiguous"],
            explanation="The claim mixes crime and recorded crime.",
            edits={"claim": new_claim, "scenario": item.payload["scenario"]},
        )

    drive(stages["review"], [reviewer], answer)
    assert ItemStage.objects.filter(stage=stages["score"]).count() == 2
    edited = Item.objects.get(project=project, external_id="T2-W9-ECO-001")
    assert edited.version == 2 and edited.payload["claim"] == new_claim
    revision = ItemRevision.objects.get(item=edited, number=2)
    assert "claim" in str(revision.diff) and "scenario" not in str(revision.diff)
    assert "minor revision: ambiguous" in revision.reason
    assert Item.objects.get(external_id="T2-S1-MED-001").version == 1


def test_anything_but_pass_names_the_attack_and_explains_it_and_minor_changes_a_field():
    project, stages = make(["T2-S1-MED-001"])
    causalt5k_review_open(project=project)
    reviewer = make_member(project)
    assignment = engine.assignment_next(annotator=reviewer, stage=stages["review"])

    def submit(payload):
        return engine.annotation_submit(
            assignment_id=assignment.pk, annotator=reviewer, payload=payload
        )

    with pytest.raises(ApplicationError, match="Name the attack"):
        submit(review("remove", explanation="The answer is in the text."))
    with pytest.raises(ApplicationError, match="Explain"):
        submit(review("remove", attacks=["answer_leaked"], explanation=""))
    with pytest.raises(ApplicationError, match="change at least one field"):
        submit(review("minor", attacks=["ambiguous"], explanation="It is ambiguous somehow."))
    with pytest.raises(ApplicationError, match="label must be one of"):
        submit(
            review(
                "minor", attacks=["label_wrong"], explanation="Wrong label here.",
                edits={"label": "VALID"},
            )
        )  # fmt: skip
    submit(review("remove", attacks=["answer_leaked"], explanation="The answer is in the text."))
    item_stage_resolve(item_stage_id=assignment.item_stage_id)
    item = Item.objects.get(external_id="T2-S1-MED-001")
    assert item.status == "discarded"
    reason = Resolution.objects.get(item_stage_id=assignment.item_stage_id).reason
    assert reason.startswith("remove: answer leaked in the scenario")


def test_a_major_restructure_goes_back_to_the_author_and_is_reviewed_again_at_most_n_times():
    project, stages = make(["T2-W4-SPT-001"], max_rounds=2)
    reviewer = make_member(project)
    author = make_member(project, username="annotator2")
    outsider = make_member(project)
    causalt5k_review_open(project=project)
    item = Item.objects.get(external_id="T2-W4-SPT-001")
    assert item.author == author  # the case's "author" names a member
    major = review(
        "major", attacks=["ambiguous"], explanation="Needs a comparison group of non-cover stars."
    )
    for loop in range(1, 3):
        drive(stages["review"], [reviewer], lambda i, it, ph: major)
        author_stage = state(project, "T2-W4-SPT-001", "author")
        assert (author_stage.state, author_stage.round) == ("open", loop)
        # Only the case's author is given the author revision.
        assert engine.assignment_next(annotator=outsider, stage=stages["author"]) is None
        drive(
            stages["author"],
            [author],
            lambda i, it, ph, loop=loop: {"edits": {"claim": f"{it.payload['claim']} (v{loop})"}},
        )
        assert state(project, "T2-W4-SPT-001", "review").round == loop
    assert Item.objects.get(pk=item.pk).version == 3
    # The author never reviews their own case.
    assert engine.assignment_next(annotator=author, stage=stages["review"]) is None
    drive(stages["review"], [reviewer], lambda i, it, ph: major)  # a third major: capped
    item.refresh_from_db()
    assert item.status == "discarded"
    assert state(project, "T2-W4-SPT-001", "review").state == "discarded"
    assert state(project, "T2-W4-SPT-001", "author").round == 2


def scored(project, stages, people, values):
    """The people score every case in the score stage: values[index] for person index."""
    drive(stages["score"], people, lambda i, item, phase: scores(*values[i]))


def to_scoring(case_ids, **settings):
    project, stages = make(
        case_ids, slug=f"ct5k-{len(settings)}-{settings.get('gate')}", **settings
    )
    causalt5k_review_open(project=project)
    drive(stages["review"], [make_member(project)], lambda i, it, ph: review("pass"))
    return project, stages


def test_two_close_scores_meeting_the_gate_keep_the_case_and_below_it_drop_it():
    project, stages = to_scoring(["T2-S1-MED-001"])
    people = [make_member(project) for _ in range(2)]
    scored(project, stages, people, [(10, 10, 9, 9), (9, 10, 9, 9)])
    item_stage = state(project, "T2-S1-MED-001", "score")
    assert item_stage.state == "resolved"
    assert Resolution.objects.get(item_stage=item_stage).value == pytest.approx(9.375)
    assert Item.objects.get(external_id="T2-S1-MED-001").status == "accepted"

    project2, stages2 = to_scoring(["T2-W9-ECO-001"], gate=9.5)
    people2 = [make_member(project2) for _ in range(2)]
    scored(project2, stages2, people2, [(10, 10, 9, 9), (9, 10, 9, 9)])
    assert Item.objects.get(project=project2).status == "discarded"
    assert (
        "gate 9.5"
        in Resolution.objects.get(
            item_stage__item__project=project2, item_stage__stage__slug="score"
        ).reason
    )


def test_scores_far_apart_call_a_third_reviewer_whose_closest_pair_decides():
    project, stages = to_scoring(["T2-S1-MED-001"])
    people = [make_member(project) for _ in range(3)]
    scored(project, stages, people[:2], [(10, 10, 10, 10), (6, 7, 7, 6)])
    item_stage = state(project, "T2-S1-MED-001", "score")
    assert (item_stage.state, item_stage.target_count, item_stage.submitted_count) == ("open", 3, 2)
    assert "a third reviewer" in Resolution.objects.get(item_stage=item_stage).reason
    scored(project, stages, people[2:], [(9, 10, 9, 10)])
    item_stage.refresh_from_db()
    assert item_stage.state == "resolved"  # 10 and 9.5 are closest: mean 9.75 ≥ 9
    assert Resolution.objects.get(item_stage=item_stage).value == pytest.approx(9.75)


def test_the_rubric_is_configurable_and_checked():
    rubric = [
        {"key": "validity", "label": "Validity", "min": 1, "max": 5, "weight": 3},
        {"key": "realism", "label": "Realism", "min": 1, "max": 5, "weight": 1},
    ]
    project, stages = to_scoring(["T2-S1-MED-001"], rubric=rubric, gate=7.0)
    person = make_member(project)
    assignment = engine.assignment_next(annotator=person, stage=stages["score"])
    with pytest.raises(ApplicationError, match="from 1 to 5"):
        engine.annotation_submit(
            assignment_id=assignment.pk,
            annotator=person,
            payload={"scores": {"validity": 6, "realism": 5}},
        )
    annotation, _ = engine.annotation_submit(
        assignment_id=assignment.pk,
        annotator=person,
        payload={"scores": {"validity": 5, "realism": 1}},
    )
    assert annotation.payload["composite"] == pytest.approx(7.5)  # (3·1 + 1·0) / 4 on 0–10
    assert annotation.payload["verdict"] == "keep"
    for bad, message in (
        ([{"key": "a", "min": 5, "max": 5}], "min must be below max"),
        ([{"key": "a"}, {"key": "a"}], "appears twice"),
        ([{"key": "a", "weight": 0}], "weight"),
        ([], "non-empty"),
    ):
        with pytest.raises(ApplicationError, match=message):
            engine.stage_update(stage=stages["score"], config={"rubric": bad, "gate": 9})
    with pytest.raises(ApplicationError, match="gate"):
        engine.stage_update(stage=stages["score"], policy_options={"gate": 11})


def test_the_tab_shows_the_cascade_beside_the_paper_and_the_scorers_agreement(client):
    from review.causalt5k.figures import cascade, score_agreement

    ids = ["T1-W7-MED-001", "T1-W7-MED-002", "T2-S1-MED-001", "T2-W9-ECO-001", "T2-W10-DLY-001"]
    project, stages = make(ids)
    causalt5k_review_open(project=project, threshold=0.6)
    reviewer = make_member(project)
    drive(
        stages["dedup"],
        [reviewer],
        lambda i, it, ph: {"verdict": "confirm", "keep": ["T1-W7-MED-001"]},
    )

    def verdict(i, item, phase):
        if item.external_id == "T2-W10-DLY-001":
            return review(
                "remove", attacks=["answer_leaked"], explanation="Says 'wrongly' outright."
            )
        return review("pass")

    drive(stages["review"], [reviewer], verdict)
    people = [make_member(project) for _ in range(2)]
    scored(project, stages, people, [(10, 10, 9, 9), (9, 9, 10, 10)])
    figures = cascade(project)
    assert [step["count"] for step in figures["steps"]] == [5, 4, 3, 3]
    assert figures["review"]["counts"] == {"pass": 3, "minor": 0, "major": 0, "removed": 1}
    assert figures["steps"][1]["paper"] == 6151 and figures["steps"][3]["paper"] == 5147
    agreement = score_agreement(project, n_boot=50)
    assert agreement["n_items"] == 3
    assert agreement["alpha"].metric.startswith("krippendorff")
    assert agreement["icc"].metric == "icc_1_1"

    researcher = make_member(project, role="researcher")
    client.force_login(researcher)
    response = client.get(reverse("causalt5k:report", args=[project.slug]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "The filtering cascade" in page and "6,151" in page and "80.1" in page
    assert "ICC(1,1)" in page and "<svg" in page


@pytest.fixture
def demo():
    from annotation.models import Role
    from annotation.plugins import get_plugin
    from tests.factories import make_user

    users = {
        name: make_user(name)
        for name in ("admin", "researcher", "reviewer", "annotator1", "annotator2", "annotator3")
    }
    get_plugin("review.causalt5k").demo(users=users)
    from annotation.models import Project

    project = Project.objects.get(slug="causalt5k-demo")
    assert project.memberships.filter(role=Role.ANNOTATOR).count() == 3
    return project, users


def test_the_demo_has_work_in_every_stage(demo):
    from review.causalt5k.figures import cascade

    project, users = demo
    open_in = {
        slug: ItemStage.objects.filter(
            stage__project=project, stage__slug=slug, state="open"
        ).count()
        for slug in ("dedup", "author", "review", "score")
    }
    assert open_in == {"dedup": 1, "author": 1, "review": 3, "score": 1}
    figures = cascade(project)
    assert figures["duplicates"] == 1
    assert figures["review"]["counts"] == {"pass": 2, "minor": 1, "major": 0, "removed": 1}
    assert figures["score"] == {"kept": 1, "dropped": 1, "pending": 1}
    # annotator1 wrote T2-W6-MED-003 and is never given it; annotator2 has the author revision.
    review_stage = project.stages.get(slug="review")
    given = set()
    while (
        a := engine.assignment_next(annotator=users["annotator1"], stage=review_stage)
    ) is not None:
        given.add(a.item_stage.item.external_id)
        engine.assignment_skip(assignment_id=a.pk, annotator=users["annotator1"], reason="test")
    assert "T2-W6-MED-003" not in given and given
    assert (
        engine.assignment_next(
            annotator=users["annotator1"], stage=project.stages.get(slug="author")
        )
        is None
    )
    author = engine.assignment_next(
        annotator=users["annotator2"], stage=project.stages.get(slug="author")
    )
    assert author.item_stage.item.external_id == "T2-W4-SPT-001"
    # The third scorer is annotator3 (the two first scorers are done with it).
    score = engine.assignment_next(
        annotator=users["annotator3"], stage=project.stages.get(slug="score")
    )
    # The agreement app computes its figures for every stage (κ on the scorers' verdicts).
    from agreement.services import stage_agreement_refresh

    for stage in project.stages.all():
        stage_agreement_refresh(stage_id=stage.pk, force=True)
    assert score.item_stage.item.external_id == "T2-W9-ECO-001"


@pytest.mark.parametrize("slug", ["dedup", "author", "review", "score", "answer", "pressure_check"])
def test_every_item_screen_renders_for_its_annotator(client, demo, slug):
    project, users = demo
    person = users["annotator2" if slug == "author" else "annotator3"]
    stage = project.stages.get(slug=slug)
    client.force_login(person)
    url = reverse("annotation:stage", args=[stage.pk])
    response = client.post(url, follow=True) if False else client.get(url)
    assert response.status_code == 200
    assignment = engine.assignment_next(annotator=person, stage=stage)
    assert assignment is not None
    page = client.get(url).content.decode()
    assert 'class="item-form' in page or "item-form" in page
    expected = {
        "dedup": "Keep only",
        "author": "The reviewer asked for a major restructure",
        "review": "Break it",
        "score": "Structural validity",
        "answer": "Is the claim justified",
        "pressure_check": "Do both versions change only the pressure",
    }[slug]
    assert expected in page


def test_the_review_form_posts_through_parse_form(client, demo):
    project, users = demo
    stage = project.stages.get(slug="review")
    person = users["annotator2"]
    assignment = engine.assignment_next(annotator=person, stage=stage)
    item = assignment.item_stage.item
    client.force_login(person)
    response = client.post(
        reverse("annotation:submit", args=[assignment.pk]),
        {
            "verdict": "minor",
            "attacks": ["ambiguous", "unrealistic"],
            "explanation": "The claim could be read two ways.",
            "edit_claim": item.payload["claim"] + " (edited)",
            "edit_scenario": item.payload["scenario"],
            "edit_label": item.payload["label"],
        },
    )
    assert response.status_code == 302
    stored = assignment.item_stage.annotations.get()
    assert stored.payload["attacks"] == ["ambiguous", "unrealistic"]
    assert stored.payload["edits"] == {"claim": item.payload["claim"] + " (edited)"}


def test_the_release_has_the_kept_cases_with_their_composite_and_the_cascade(
    settings, tmp_path, django_capture_on_commit_callbacks
):
    import json
    import zipfile

    from releases.models import Release
    from releases.services import release_publish

    settings.MEDIA_ROOT = str(tmp_path)
    project, stages = to_scoring(["T2-S1-MED-001", "T2-W9-ECO-001"])
    people = [make_member(project) for _ in range(2)]
    drive(
        stages["score"],
        people,
        lambda i, item, phase: (
            scores(10, 10, 9, 9) if item.external_id == "T2-S1-MED-001" else scores(5, 5, 5, 5)
        ),
    )
    with django_capture_on_commit_callbacks(execute=True):
        release = release_publish(project=project, user=None)
    release = Release.objects.get(pk=release.pk)
    assert release.status == "published", release.error
    with zipfile.ZipFile(release.archive.path) as archive:
        names = archive.namelist()
        lines = archive.read(next(n for n in names if n.endswith("causalt5k_cases.jsonl")))
        cascade_csv = archive.read(next(n for n in names if n.endswith("causalt5k_cascade.csv")))
    rows = [json.loads(line) for line in lines.decode().splitlines()]
    assert [(row["case_id"], row["composite"]) for row in rows] == [("T2-S1-MED-001", 9.5)]
    assert b"Kept by the quality gate,1,50.0,5147,67.6" in cascade_csv
    assert not any("normalisation" in name for name in names)  # no release was imported


def test_the_demo_projects_pages_render_for_researchers_and_reviewers(client, demo):
    from agreement.services import stage_agreement_refresh

    project, users = demo
    # The kept case waits in the blind stage for annotator3 (annotator1 reviewed and scored
    # it, annotator2 scored it: the stage keeps them out); their answer is on the tab.
    answer = project.stages.get(slug="answer")
    for name in ("annotator1", "annotator2"):
        assert engine.assignment_next(annotator=users[name], stage=answer) is None
    assert drive(answer, [users["annotator3"]], lambda i, item, phase: {"label": "YES"}) == 1
    for stage in project.stages.all():
        stage_agreement_refresh(stage_id=stage.pk, force=True)
    client.force_login(users["researcher"])
    urls = [
        reverse("annotation:project", args=[project.slug]),
        reverse("agreement:dashboard", args=[project.slug]),
        *[
            reverse("agreement:stage", args=[project.slug, slug])
            for slug in (
                "dedup",
                "author",
                "review",
                "score",
                "answer",
                "pressure",
                "pressure_check",
                "historic",
            )
        ],
        reverse("causalt5k:report", args=[project.slug]),
        reverse("causalt5k:human_floor", args=[project.slug]),
        reverse("causalt5k:human_floor_csv", args=[project.slug]),
    ]
    for url in urls:
        assert client.get(url).status_code == 200, url
    tab = client.get(reverse("causalt5k:report", args=[project.slug])).content.decode()
    assert 'id="historic-agreement"' in tab and 'id="blind-accuracy"' in tab
    floor_page = client.get(reverse("causalt5k:human_floor", args=[project.slug])).content.decode()
    assert "below the floor" in floor_page
    client.force_login(users["reviewer"])
    assert client.get(reverse("agreement:adjudication", args=[project.slug])).status_code == 200


def _selected_option(page: str, name: str) -> str:
    """The value a browser submits for the select ``name`` of a page: its selected option, or
    its first one when none is selected."""
    import re

    select = re.search(rf'<select[^>]*name="{name}"[^>]*>(.*?)</select>', page, re.S).group(1)
    options = re.findall(r'<option value="([^"]*)"( selected)?>', select)
    return next((value for value, selected in options if selected), options[0][0])


def test_a_minor_revision_keeps_a_trap_the_editor_does_not_list(client):
    project, stages = make(["T2-W9-ECO-001"])
    Item.objects.filter(project=project).update(
        payload={**BY_ID["T2-W9-ECO-001"], "trap": "T3", "label": None}
    )
    causalt5k_review_open(project=project)
    reviewer = make_member(project)
    client.force_login(reviewer)
    assignment = engine.assignment_next(annotator=reviewer, stage=stages["review"])
    page = client.get(reverse("annotation:stage", args=[stages["review"].pk])).content.decode()
    assert '<option value="T3" selected>T3 (not in the list)</option>' in page
    assert '<option value="" selected>— (none)</option>' in page  # the label it lacks
    item = assignment.item_stage.item
    new_claim = item.payload["claim"] + " (edited)"
    response = client.post(
        reverse("annotation:submit", args=[assignment.pk]),
        {
            "verdict": "minor",
            "attacks": ["ambiguous"],
            "explanation": "The claim could be read two ways.",
            "edit_claim": new_claim,
            "edit_scenario": item.payload["scenario"],
            "edit_trap": _selected_option(page, "edit_trap"),
            "edit_label": _selected_option(page, "edit_label"),
        },
    )
    assert response.status_code == 302
    assert assignment.item_stage.annotations.get().payload["edits"] == {"claim": new_claim}
    item_stage_resolve(item_stage_id=assignment.item_stage_id)
    item.refresh_from_db()
    assert item.version == 2 and item.payload["claim"] == new_claim
    assert item.payload["trap"] == "T3" and item.payload["label"] is None


def test_the_editor_checks_a_trap_only_when_it_changes():
    from review.causalt5k.kinds import clean_edits

    case = {"trap": "T3", "claim": "Old.", "label": "NO", "tier": 2}
    assert clean_edits({"trap": "T3", "claim": "New."}, case) == {"claim": "New."}
    assert clean_edits({"trap": "W7"}, case) == {"trap": "W7"}
    assert clean_edits({"trap": ""}, case) == {"trap": ""}  # chosen explicitly: "—"
    with pytest.raises(ApplicationError, match="W1–W10 or S1–S8"):
        clean_edits({"trap": "T4"}, case)
