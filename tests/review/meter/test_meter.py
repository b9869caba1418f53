"""METER in review/: pairs in through the import, the any-reject rule, the generation round
trip, check → edit → vote with the winning version as the entry's revision (and a split going
to a reviewer), the filter, blindness, the page and the release in METER's layout. On SQLite
here, on PostgreSQL under `make test`."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.urls import reverse

from annotation.models import Annotation, Item, ItemRevision, ItemStage, Role
from annotation.selectors import annotations_shown
from imports.services import import_batch_create, import_batch_run
from review.meter import services
from review.meter.demo import _answer, drive, edited
from review.meter.entries import release_question
from review.meter.fixtures import ENTRIES, PAIRS, entry_line
from review.meter.kinds import stage_candidates
from tests.factories import make_member

pytestmark = pytest.mark.django_db


def pairs_csv(pairs) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["pair_id", "source", "context", "cause", "effect", "triggers"])
    for pair in pairs:
        writer.writerow(
            [pair["pair_id"], pair["source"], pair["context"], pair["cause"], pair["effect"],
             ";".join(pair["triggers"])]
        )  # fmt: skip
    return out.getvalue().encode()


@pytest.fixture
def meter():
    project = services.meter_project_create(slug="meter", name="METER", seed=7)
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(pairs_csv(PAIRS)), filename="pairs.csv"
    )
    assert import_batch_run(batch_id=batch.pk).status == "succeeded"
    people = [make_member(project) for _ in range(3)]
    stages = {stage.slug: stage for stage in project.stages.all()}
    return project, stages, people


def verified(meter):
    project, stages, people = meter
    drive(stages["verify"], people, _answer)  # meci-0006 gets one reject
    return project, stages, people


def entries_text(*lines) -> str:
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def counts(project):
    return (
        Item.objects.filter(project=project).count(),
        ItemStage.objects.filter(item__project=project).count(),
    )


def test_pairs_come_in_through_the_import_with_their_fields(meter):
    project, stages, _ = meter
    item = Item.objects.get(project=project, external_id="esl-0001")
    assert item.payload["cause"] == "The river flooded the lower streets"
    assert item.payload["triggers"] == ["so"]
    assert item.source == "ESL"
    assert ItemStage.objects.filter(stage=stages["verify"]).count() == len(PAIRS)


def test_one_reject_discards_a_pair_and_the_others_are_verified(meter):
    project, stages, _ = verified(meter)
    statuses = dict(Item.objects.filter(project=project).values_list("external_id", "status"))
    assert statuses["meci-0006"] == "discarded"
    assert {statuses[p["pair_id"]] for p in PAIRS if p["pair_id"] != "meci-0006"} == {"accepted"}
    rejected = Annotation.objects.get(payload__value="reject")
    assert rejected.payload["reason"] == "erroneous"


def test_a_reject_needs_a_reason(meter):
    project, stages, people = meter
    from annotation import services as engine
    from annotation.access import access_stage_for_annotator
    from annotation.errors import ApplicationError

    stage = access_stage_for_annotator(user=people[0], stage_id=stages["verify"].pk)
    assignment = engine.assignment_next(annotator=people[0], stage=stage)
    with pytest.raises(ApplicationError, match="Say why"):
        engine.annotation_submit(
            assignment_id=assignment.pk, annotator=people[0], payload={"value": "reject"}
        )
    assert not Annotation.objects.exists()


def test_generation_export_lists_verified_pairs_without_an_entry(meter, client):
    project, stages, people = verified(meter)
    services.entries_import_text(project=project, text=entries_text(entry_line("esl-0001")))
    pair_ids = [row["pair_id"] for row in services.generation_rows(project)]
    assert "esl-0001" not in pair_ids and "meci-0006" not in pair_ids
    assert len(pair_ids) == len(PAIRS) - 2
    researcher = make_member(project, role=Role.RESEARCHER)
    client.force_login(researcher)
    url = reverse("meter:generation_export", args=[project.slug, "jsonl"])
    lines = b"".join(client.get(url).streaming_content).decode().splitlines()
    assert [json.loads(line)["pair_id"] for line in lines] == pair_ids


def test_the_generation_csv_is_safe_to_open_in_a_spreadsheet(meter, client):
    project, stages, people = meter
    Item.objects.filter(external_id="esl-0001").update(
        payload={**PAIRS[0], "cause": '=HYPERLINK("http://x","y")'}
    )
    verified(meter)
    researcher = make_member(project, role=Role.RESEARCHER)
    client.force_login(researcher)
    url = reverse("meter:generation_export", args=[project.slug, "csv"])
    text = b"".join(client.get(url).streaming_content).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["cause"].startswith("'=HYPERLINK")


BAD_ENTRIES = [
    ({"pair_id": "nope", "questions": ENTRIES["esl-0001"]}, "pair_id", "no pair 'nope'"),
    ({"pair_id": "meci-0006", "questions": ENTRIES["esl-0001"]}, "pair_id", "discarded"),
    ({"questions": ENTRIES["esl-0001"]}, "pair_id", "required"),
    (
        {"pair_id": "meci-0005", "questions": ENTRIES["esl-0001"][:2]},
        "questions",
        "level 3 (counterfactual) is missing",
    ),
    (
        {"pair_id": "meci-0005", "questions": [ENTRIES["esl-0001"][0]] * 2 + [ENTRIES["esl-0001"][2]]},
        "questions",
        "level 1 (causal discovery) appears 2 times",
    ),
    (
        {"pair_id": "meci-0005",
         "questions": [{**ENTRIES["esl-0001"][0], "options": ENTRIES["esl-0001"][0]["options"][:4]},
                       *ENTRIES["esl-0001"][1:]]},
        "questions[0].options",
        "exactly 5 options, found 4",
    ),
    (
        {"pair_id": "meci-0005",
         "questions": [{**ENTRIES["esl-0001"][0],
                        "options": [{**o, "correct": True} for o in ENTRIES["esl-0001"][0]["options"]]},
                       *ENTRIES["esl-0001"][1:]]},
        "questions[0].options",
        "exactly one correct option, found 5",
    ),
    (
        {"pair_id": "meci-0005",
         "questions": [ENTRIES["esl-0001"][0],
                       {**ENTRIES["esl-0001"][1],
                        "options": ENTRIES["esl-0001"][1]["options"][:4]
                        + [{"text": "Something else.", "category": "red herring"}]},
                       ENTRIES["esl-0001"][2]]},
        "questions[1].options[4].category",
        "unknown distractor category 'red herring'",
    ),
]  # fmt: skip


@pytest.mark.parametrize("entry, field, message", BAD_ENTRIES)
def test_a_bad_entry_refuses_the_file_with_line_and_field_and_keeps_nothing(
    meter, entry, field, message
):
    project, stages, people = verified(meter)
    before = counts(project)
    good = entry_line("esl-0001")
    report = services.entries_import_text(project=project, text=entries_text(good, entry))
    assert not report.ok and report.created == 0
    assert any(
        error.line == 2 and error.field == field and message in error.message
        for error in report.errors
    ), [(e.line, e.field, e.message) for e in report.errors]
    assert counts(project) == before


def test_entries_for_unverified_or_twice_given_pairs_are_refused(meter):
    project, stages, people = meter  # nothing verified yet
    report = services.entries_import_text(
        project=project, text=entries_text(entry_line("esl-0001"))
    )
    assert "not verified yet" in report.errors[0].message
    verified(meter)
    twice = entries_text(entry_line("esl-0001"), entry_line("esl-0001"))
    report = services.entries_import_text(project=project, text=twice)
    assert "also on line 1" in report.errors[0].message
    assert services.entries_import_text(
        project=project, text=entries_text(entry_line("esl-0001"))
    ).ok
    again = services.entries_import_text(project=project, text=entries_text(entry_line("esl-0001")))
    assert "already has an entry" in again.errors[0].message


def test_broken_json_and_csv_are_refused_clearly(meter):
    project, stages, people = verified(meter)
    report = services.entries_import_text(
        project=project, text=entries_text(entry_line("esl-0001")) + '{"pair_id": "x",\n'
    )
    assert not report.ok and report.errors[0].line == 2
    from annotation.errors import ApplicationError

    with pytest.raises(ApplicationError, match="not CSV"):
        services.entries_import_text(project=project, text="pair_id\nx\n", filename="e.csv")


def import_entries(project, *pair_ids):
    report = services.entries_import_text(
        project=project, text=entries_text(*(entry_line(p) for p in pair_ids))
    )
    assert report.ok, report.errors
    return report


def test_the_winning_edit_becomes_the_entrys_revision_with_its_diff(meter):
    project, stages, people = verified(meter)
    import_entries(project, "esl-0001")
    drive(stages["edit"], people, _answer)
    entry = Item.objects.get(external_id="esl-0001/entry")
    winner = edited("esl-0001", {(2, "d1"): "The river would still have flooded the streets."})
    assert entry.payload["questions"] == winner and entry.version == 2
    original, revision = ItemRevision.objects.filter(item=entry).order_by("number")
    assert original.reason == "original"
    assert "2 of 3 voted for edit A" in revision.reason
    assert set(revision.diff) == {"questions"}
    # Every candidate stays in the history: both edits are annotations of the item stage.
    edits = Annotation.objects.filter(item_stage__item=entry, phase=1)
    assert edits.count() == 2
    # The entry moved on to the filter.
    assert ItemStage.objects.get(item=entry, stage=stages["filter"]).state == "open"


def test_when_the_original_wins_the_entry_is_unchanged(meter):
    project, stages, people = verified(meter)
    import_entries(project, "maven-0003")
    drive(stages["edit"], people, _answer)
    entry = Item.objects.get(external_id="maven-0003/entry")
    assert entry.version == 1 and not ItemRevision.objects.filter(item=entry).exists()
    assert entry.item_stages.get(stage=stages["edit"]).resolution.value == "original"


def test_a_three_way_split_goes_to_a_reviewer_whose_choice_becomes_the_revision(meter):
    from annotation.services import item_stage_adjudicate

    project, stages, people = verified(meter)
    import_entries(project, "wikiwhy-0008")
    drive(stages["edit"], people, _answer)
    entry = Item.objects.get(external_id="wikiwhy-0008/entry")
    item_stage = entry.item_stages.get(stage=stages["edit"])
    assert item_stage.state == "adjudication"
    assert [c["label"] for c in stage_candidates(item_stage, entry)] == ["original", "A", "B"]
    reviewer = make_member(project, role=Role.REVIEWER)
    item_stage_adjudicate(
        item_stage_id=item_stage.pk, reviewer=reviewer, value="B", reason="B reads better"
    )
    entry.refresh_from_db()
    assert entry.version == 2
    assert entry.payload["questions"][1]["question"].startswith("Suppose the city had doubled")
    assert "a reviewer chose edit B" in entry.revisions.get(number=2).reason
    assert ItemStage.objects.get(item=entry, stage=stages["filter"]).state == "open"


def test_editors_never_see_each_other_and_voters_never_see_who_wrote_what(meter, client):
    from annotation import services as engine
    from annotation.access import access_stage_for_annotator

    project, stages, people = verified(meter)
    import_entries(project, "esl-0001")
    edit = stages["edit"]

    def lease(person):
        return engine.assignment_next(
            annotator=person, stage=access_stage_for_annotator(user=person, stage_id=edit.pk)
        )

    check = lease(people[0])
    engine.annotation_submit(
        assignment_id=check.pk,
        annotator=people[0],
        payload=_answer(0, check.item_stage.item, "check"),
    )
    from annotation.services.outcomes import item_stage_resolve

    item_stage_resolve(item_stage_id=check.item_stage_id)
    first, second = lease(people[1]), lease(people[2])
    secret = "A SECRET EDIT BY THE FIRST EDITOR"
    questions = edited("esl-0001", {(1, "question"): secret})
    engine.annotation_submit(
        assignment_id=first.pk, annotator=people[1], payload={"questions": questions}
    )
    shown = annotations_shown(second)
    assert [row["phase"] for row in shown] == ["check"]
    client.force_login(people[2])
    page = client.get(reverse("annotation:stage", args=[edit.pk])).content.decode()
    assert "L2.distractor1:ambiguous" in page  # the checker's flags are shown
    assert secret not in page
    engine.annotation_submit(
        assignment_id=second.pk,
        annotator=people[2],
        payload={"questions": edited("esl-0001", {(3, "correct"): "Another edit."})},
    )
    item_stage_resolve(item_stage_id=second.item_stage_id)
    vote = lease(people[0])
    shown = annotations_shown(vote)
    assert [(row["phase"], row["label"]) for row in shown] == [("edit", "A"), ("edit", "B")]
    for person in people:
        assert person.username not in json.dumps(shown)
    client.force_login(people[0])
    page = client.get(reverse("annotation:stage", args=[edit.pk])).content.decode()
    assert secret in page and "Edit A" in page and "Edit B" in page
    for person in people:
        assert person.username not in page.split("<main", 1)[1].replace(people[0].username, "")


def test_the_filter_keeps_by_majority_and_refuses_inconsistent_answers(meter):
    from annotation import services as engine
    from annotation.access import access_stage_for_annotator
    from annotation.errors import ApplicationError

    project, stages, people = verified(meter)
    import_entries(project, "esl-0001", "maven-0003")
    drive(stages["edit"], people, _answer)
    stage = access_stage_for_annotator(user=people[0], stage_id=stages["filter"].pk)
    assignment = engine.assignment_next(annotator=people[0], stage=stage)
    with pytest.raises(ApplicationError, match="failed criteria"):
        engine.annotation_submit(
            assignment_id=assignment.pk,
            annotator=people[0],
            payload={"value": "keep", "failed": ["L2.fluent"]},
        )
    with pytest.raises(
        ApplicationError, match="Nothing is ticked: tick the criterion the entry fails"
    ):
        engine.annotation_submit(
            assignment_id=assignment.pk, annotator=people[0], payload={"value": "discard"}
        )

    def judge(index, item, phase):
        if item.external_id.startswith("maven") and index < 2:
            return {"value": "discard", "failed": ["L1.distractors", "L3.faithful"][index:]}
        return {"value": "keep", "failed": []}

    drive(stages["filter"], people, judge)
    statuses = dict(
        Item.objects.filter(external_id__endswith="/entry").values_list("external_id", "status")
    )
    assert statuses == {"esl-0001/entry": "accepted", "maven-0003/entry": "discarded"}
    figures = {row["criterion"]: row for row in services.criterion_agreement(project)}
    assert figures["faithful"]["failed"] == 2 and figures["distractors"]["failed"] == 1
    assert figures["fluent"]["failed"] == 0
    steps = {step["step"]: step for step in services.cascade(project)}
    assert (steps["Kept"]["count"], steps["Kept"]["dropped"]) == (1, 1)
    assert steps["Verified"]["dropped"] == 1 and steps["Generated"]["count"] == 2


def test_the_meter_page_is_for_researchers_and_admins(meter, client):
    project, stages, people = verified(meter)
    import_entries(project, "esl-0001")
    url = reverse("meter:meter", args=[project.slug])
    client.force_login(people[0])
    assert client.get(url).status_code == 403
    researcher = make_member(project, role=Role.RESEARCHER)
    client.force_login(researcher)
    page = client.get(url).content.decode()
    assert "The cascade" in page and "<svg" in page and "0.780" in page
    assert 'href="/projects/meter/meter/"' in page  # the tab, on the project's tabs
    assert "Import generated entries" not in page  # admins only
    admin = make_member(project, role=Role.ADMIN)
    client.force_login(admin)
    bad = io.BytesIO(entries_text({"pair_id": "nope", "questions": []}).encode())
    bad.name = "entries.jsonl"
    response = client.post(reverse("meter:entries_upload", args=[project.slug]), {"file": bad})
    assert response.status_code == 400
    assert "nothing was imported" in response.content.decode()


def test_the_release_has_the_kept_entries_in_meters_layout(
    meter, settings, tmp_path, django_capture_on_commit_callbacks
):
    from releases.models import Release
    from releases.services import release_publish

    settings.MEDIA_ROOT = str(tmp_path)
    project, stages, people = verified(meter)
    import_entries(project, "esl-0001", "maven-0003")
    drive(stages["edit"], people, _answer)
    drive(
        stages["filter"],
        people,
        lambda i, item, phase: (
            {"value": "keep", "failed": []}
            if item.external_id.startswith("esl")
            else {"value": "discard", "failed": ["L1.fluent"]}
        ),
    )
    with django_capture_on_commit_callbacks(execute=True):
        release = release_publish(project=project, user=None)
    release = Release.objects.get(pk=release.pk)
    assert release.status == "published", release.error
    with zipfile.ZipFile(release.archive.path) as archive:
        names = archive.namelist()
        lines = archive.read(next(n for n in names if n.endswith("meter.jsonl"))).decode()
        cascade_csv = archive.read(next(n for n in names if n.endswith("meter_cascade.csv")))
    rows = [json.loads(line) for line in lines.splitlines()]
    assert [row["id"] for row in rows] == ["esl-0001"]
    row = rows[0]
    entry = Item.objects.get(external_id="esl-0001/entry")
    assert row["revision"] == entry.version == 2
    for question, stored in zip(row["questions"], entry.payload["questions"], strict=True):
        assert len(question["options"]) == 5
        assert question["options"][question["answer"]] == stored["correct"]
        assert question["distractor_categories"][question["answer"]] is None
        assert sorted(c for c in question["distractor_categories"] if c) == sorted(
            d["category"] for d in stored["distractors"]
        )
        assert question == release_question(stored, "esl-0001")  # the same order every time
    assert b"Kept,1,1" in cascade_csv


def test_the_demo_project_has_work_in_every_stage(django_user_model):
    from annotation.models import Project
    from review.meter.demo import seed

    users = {
        name: django_user_model.objects.create_user(name, password="x")
        for name in ("admin", "researcher", "reviewer", "annotator1", "annotator2", "annotator3")
    }
    project = seed(users=users, slug="meter-demo")
    states = {
        stage.slug: sorted(stage.item_stages.values_list("state", flat=True))
        for stage in project.stages.all()
    }
    assert states["verify"].count("open") == 3 and states["verify"].count("discarded") == 1
    assert "adjudication" in states["edit"] and "open" in states["edit"]
    assert states["filter"] == ["open", "resolved"]
    assert states["baseline"] == ["open"]
    assert seed(users=users, slug="meter-demo") == Project.objects.get(slug="meter-demo")


def test_the_commands_round_trip_pairs_and_entries(tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from annotation.models import Project

    call_command("meter_create_project", "cli-meter", "CLI METER")
    project = Project.objects.get(slug="cli-meter")
    pairs = tmp_path / "pairs.csv"
    pairs.write_bytes(pairs_csv(PAIRS[:3]))
    call_command("import_items", "cli-meter", str(pairs))
    people = [make_member(project) for _ in range(3)]
    drive(project.stages.get(slug="verify"), people, _answer)
    out = tmp_path / "for-generation.jsonl"
    call_command("meter_export_for_generation", "cli-meter", str(out))
    exported = [json.loads(line)["pair_id"] for line in out.read_text().splitlines()]
    assert exported == [p["pair_id"] for p in PAIRS[:3]]
    entries = tmp_path / "entries.jsonl"
    entries.write_text(entries_text({"pair_id": "esl-0002", "questions": []}))
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("meter_import_entries", "cli-meter", str(entries))
    entries.write_text(entries_text({"pair_id": "esl-0002", "questions": ENTRIES["esl-0001"]}))
    call_command("meter_import_entries", "cli-meter", str(entries))
    assert Item.objects.filter(project=project, external_id="esl-0002/entry").exists()


def test_the_kappa_reported_recovers_a_planted_value_within_its_ci():
    """Three simulated verifiers of accuracy 0.85 on 400 pairs with 60 % planted keeps: the
    X."""
    from agreement.selectors import latest_snapshots
    from agreement.services import stage_agreement_refresh
    from annotation import services as engine
    from review.meter.fixtures import generated_pairs
    from review.meter.simulate import expected_kappa, simulate_binary_stage

    project = services.meter_project_create(slug="sim", name="Simulated", seed=5)
    engine.items_create(
        project=project,
        rows=[
            {"external_id": p["pair_id"], "payload": p, "group": p["pair_id"]}
            for p in generated_pairs(400, seed=3)
        ],
    )
    people = [make_member(project) for _ in range(3)]
    verify = project.stages.get(slug="verify")
    assert simulate_binary_stage(verify, people, [0.85] * 3, prevalence=0.6, seed=11) == 1200
    stage_agreement_refresh(stage_id=verify.pk, force=True)
    kappa = latest_snapshots(verify, metrics=["fleiss_kappa"])["fleiss_kappa"]
    planted = expected_kappa(0.85, 0.6)
    assert round(planted, 3) == 0.48
    assert kappa.n_items == 400
    assert kappa.ci_low <= planted <= kappa.ci_high, (kappa.value, kappa.ci_low, kappa.ci_high)
    # Not a vacuous interval: a much higher or lower planted agreement falls outside it.
    assert not kappa.ci_low <= expected_kappa(0.95, 0.6) <= kappa.ci_high
    assert not kappa.ci_low <= expected_kappa(0.7, 0.6) <= kappa.ci_high


def test_the_human_baseline_answers_blind_and_is_scored_by_level(meter, client):
    """Kept entries go to the baseline only when a sample is opened; annotators see the
    questions and options but never the answer, the categories or the cause and effect; the
    accuracy by level counts the answers against the release's option order."""
    project, stages, people = verified(meter)
    import_entries(project, "esl-0001", "maven-0003")
    drive(stages["edit"], people, _answer)
    drive(stages["filter"], people, _answer)
    baseline = stages["baseline"]
    assert not ItemStage.objects.filter(stage=baseline).exists()  # the filter finishes
    assert services.baseline_open(project=project, sample=1, seed=3) == 1
    assert services.baseline_open(project=project, sample=5, seed=3) == 1  # the other one
    assert services.baseline_open(project=project, sample=5, seed=3) == 0
    answerers = [make_member(project) for _ in range(5)]
    client.force_login(answerers[0])
    from annotation import services as engine
    from annotation.access import access_stage_for_annotator

    assignment = engine.assignment_next(
        annotator=answerers[0],
        stage=access_stage_for_annotator(user=answerers[0], stage_id=baseline.pk),
    )
    entry = assignment.item_stage.item
    page = client.get(reverse("annotation:stage", args=[baseline.pk])).content.decode()
    first = entry.payload["questions"][0]
    assert first["question"] in page and first["distractors"][0]["text"] in page
    shown = page.split('class="item-body"', 1)[1].split("</form>", 1)[0]
    assert first["question"] in shown
    for hidden in ("correct", "contradictory", "Causal reversal", "Cause</dt>", "Effect</dt>"):
        assert hidden not in shown, hidden
    from tests.api.test_views import client_for

    leased = client_for(answerers[1]).post(f"/api/stages/{baseline.pk}/next/")
    assert leased.status_code == 200
    seen = leased.json()["item"]["payload"]
    assert set(seen) == {"context", "mcq"} and len(seen["mcq"][0]["options"]) == 5
    assert "correct" not in json.dumps(seen) and "contradictory" not in json.dumps(seen)
    key = {
        q["level"]: release_question(q, entry.payload["pair_id"])["answer"]
        for q in entry.payload["questions"]
    }
    engine.annotation_submit(
        assignment_id=assignment.pk,
        annotator=answerers[0],
        payload={"answers": {"L1": key[1], "L2": key[2], "L3": (key[3] + 1) % 5}},
    )

    def answer(index, item, phase):
        seed = item.payload["pair_id"]
        right = {q["level"]: release_question(q, seed)["answer"] for q in item.payload["questions"]}
        return {"answers": {f"L{level}": right[level] for level in right}}

    drive(baseline, answerers, answer)
    figures = {row["level"]: row for row in services.baseline_accuracy(project)}
    assert figures[1]["answers"] == 10 and figures[1]["correct"] == 10
    assert figures[3]["correct"] == 9 and figures[3]["accuracy"] == 0.9
    assert figures[3]["ci_low"] < 0.9 <= figures[3]["ci_high"]
    assert figures[2]["published"] == 0.928
    assert set(
        Item.objects.filter(external_id__endswith="/entry").values_list("status", flat=True)
    ) == {"accepted"}


def test_evidence_spans_on_a_sample_agree_and_reach_the_release(
    meter, settings, tmp_path, django_capture_on_commit_callbacks
):
    """Kept entries sampled into the evidence stage; annotators see the passage and each
    question with its answer (never the distractors); spans that are not whole words are
    refused; agreement is token F1 and κ; the release carries the majority's spans."""
    from annotation import services as engine
    from annotation.access import access_stage_for_annotator
    from annotation.errors import ApplicationError
    from releases.models import Release
    from releases.services import release_publish
    from review.meter.spans import tokens

    settings.MEDIA_ROOT = str(tmp_path)
    project, stages, people = verified(meter)
    import_entries(project, "esl-0001")
    drive(stages["edit"], people, _answer)
    drive(stages["filter"], people, _answer)
    assert services.evidence_open(project=project, sample=500, seed=2) == 1
    evidence = stages["evidence"]
    entry = Item.objects.get(external_id="esl-0001/entry")
    text = entry.payload["context"]
    words = tokens(text)

    def spans_of(first: int, last: int) -> list[int]:
        return [words[first][0], words[last][1]]

    seen = engine.assignment_next(
        annotator=people[0], stage=access_stage_for_annotator(user=people[0], stage_id=evidence.pk)
    )
    from annotation.selectors import item_payload_for_annotator

    shown = item_payload_for_annotator(entry, evidence)
    assert set(shown) == {"context", "evidence_for"}
    assert "distractors" not in json.dumps(shown) and shown["evidence_for"][0]["answer"]
    with pytest.raises(ApplicationError, match="not a run of whole words"):
        engine.annotation_submit(
            assignment_id=seen.pk,
            annotator=people[0],
            payload={"spans": {"L1": [[0, 3]], "L2": [spans_of(0, 1)], "L3": [spans_of(0, 1)]}},
        )
    marks = {0: (10, 14), 1: (11, 14), 2: (0, 2)}  # two agree on the flood, one does not

    def answer(index, item, phase):
        first, last = marks[index]
        return {"spans": {level: [spans_of(first, last)] for level in ("L1", "L2", "L3")}}

    assert drive(evidence, people, answer) == 3
    figures = services.evidence_agreement(project)
    assert figures["entries"] == 1 and figures["pairs"] == 9
    assert figures["f1"] == pytest.approx((2 * 4 / 9 + 0 + 0) / 3)
    with django_capture_on_commit_callbacks(execute=True):
        release = release_publish(project=project, user=None)
    release = Release.objects.get(pk=release.pk)
    with zipfile.ZipFile(release.archive.path) as archive:
        name = next(n for n in archive.namelist() if n.endswith("meter.jsonl"))
        row = json.loads(archive.read(name).decode().splitlines()[0])
    assert row["evidence"]["L1"] == [spans_of(11, 14)]
    start, end = row["evidence"]["L2"][0]
    assert text[start:end] == " ".join(text[s:e] for s, e in words[11:15])


def test_opening_a_sample_refuses_a_bad_size_and_opens_either_stage(meter, client):
    project, stages, people = verified(meter)
    import_entries(project, "esl-0001")
    drive(stages["edit"], people, _answer)
    drive(stages["filter"], people, _answer)
    client.force_login(make_member(project, role=Role.ADMIN))
    url = reverse("meter:sample_open", args=[project.slug])
    bad = client.post(url, {"sample": "lots"})
    assert bad.status_code == 400 and "whole number" in bad.content.decode()
    assert client.post(url, {"sample": "0"}).status_code == 400
    assert client.post(url, {"sample": "5", "stage": "evidence"}).status_code == 302
    assert ItemStage.objects.filter(stage=stages["evidence"]).count() == 1
    assert not ItemStage.objects.filter(stage=stages["baseline"]).exists()
    assert client.post(url, {"sample": "5"}).status_code == 302
    assert ItemStage.objects.filter(stage=stages["baseline"]).count() == 1


def test_the_editor_keeps_a_distractor_category_it_does_not_list(meter, client):
    import copy

    from annotation import services as engine
    from annotation.errors import ApplicationError
    from annotation.services.outcomes import item_stage_resolve

    project, stages, people = verified(meter)
    import_entries(project, "esl-0001")
    entry = Item.objects.get(external_id="esl-0001/entry")
    stored = copy.deepcopy(entry.payload)
    stored["questions"][0]["distractors"][0]["category"] = "legacy-other"
    Item.objects.filter(pk=entry.pk).update(
        payload=stored
    )  # imported before categories were checked
    edit = stages["edit"]
    check = engine.assignment_next(annotator=people[0], stage=edit)
    engine.annotation_submit(
        assignment_id=check.pk, annotator=people[0], payload={"flags": [], "comments": {}}
    )
    item_stage_resolve(item_stage_id=check.item_stage_id)

    editor = engine.assignment_next(annotator=people[1], stage=edit)
    client.force_login(people[1])
    page = client.get(reverse("annotation:stage", args=[edit.pk])).content.decode()
    assert '<option value="legacy-other" selected>legacy-other (not in the list)</option>' in page
    questions = copy.deepcopy(stored["questions"])
    questions[0]["question"] += " (reworded)"
    engine.annotation_submit(
        assignment_id=editor.pk, annotator=people[1], payload={"questions": questions}
    )
    kept = Annotation.objects.get(assignment=editor).payload["questions"][0]["distractors"][0]
    assert kept["category"] == "legacy-other"

    # A category that is neither METER's nor the stored one is still refused.
    other = engine.assignment_next(annotator=people[2], stage=edit)
    questions[0]["distractors"][1]["category"] = "made-up"
    with pytest.raises(ApplicationError, match="unknown distractor category 'made-up'"):
        engine.annotation_submit(
            assignment_id=other.pk, annotator=people[2], payload={"questions": questions}
        )


def test_the_spans_field_is_read_within_the_nesting_limit():
    """The spans form field is JSON posted by the page (or by anyone): nested 100,000 deep it
    is an unreadable answer the kind then refuses, not a RecursionError (a 500)."""
    from annotation.kinds import get_kind

    kind = get_kind("meter_spans")
    assert kind.parse_form({"spans": "[" * 100_000 + "]" * 100_000}) == {"spans": None}
    assert kind.parse_form({"spans": '{"L1": [[0, 5]]}'}) == {"spans": {"L1": [[0, 5]]}}


def test_entry_texts_holding_what_the_database_cannot_store_are_named():
    """Question texts are checked by the one rule of annotation/values.py: NUL and unpaired
    surrogates (the latter used to pass, and stop the write with an encoding error)."""
    import copy

    from review.meter.entries import EntryInvalid, clean_questions

    for bad in ("a\x00b", "\ud800"):
        questions = copy.deepcopy(ENTRIES["esl-0001"])
        questions[0]["question"] = bad
        with pytest.raises(EntryInvalid) as refused:
            clean_questions(questions)
        assert any("holds" in str(problem) for problem in refused.value.problems), refused.value


def test_the_human_baseline_is_blind_to_everyone_who_worked_on_the_entry_or_its_pair(meter):
    """The template's baseline stage carries the ``blind`` rule following the entry's pair:
    the verifiers, checkers, editors, voters and filterers of the entry are never given it,
    nor the reviewer who decided its pair; someone new is."""
    from annotation import services as engine
    from annotation.eligibility import blind
    from annotation.models import Resolution

    project, stages, people = verified(meter)
    assert stages["baseline"].eligibility == [blind("pair_id")]
    import_entries(project, "esl-0001")
    drive(stages["edit"], people, _answer)
    drive(stages["filter"], people, _answer)
    assert services.baseline_open(project=project, sample=1, seed=3) == 1
    reviewer, fresh = make_member(project), make_member(project)
    Resolution.objects.filter(
        item_stage__item__external_id="esl-0001", item_stage__stage=stages["verify"]
    ).update(decided_by=reviewer)
    for person in [*people, reviewer]:
        assert engine.assignment_next(annotator=person, stage=stages["baseline"]) is None
    leased = engine.assignment_next(annotator=fresh, stage=stages["baseline"])
    assert leased.item_stage.item.external_id == "esl-0001/entry"
