"""Ratings writes: project setup, pair imports (8 items per pair), practice and attention checks,
all-or-nothing imports, historic ratings on their own stage, model runs, ExpliCa-format files,
and the engine's random order spreading the variants of a pair."""

from __future__ import annotations

import hashlib
import io
import json
from collections import defaultdict

import pytest

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError, Conflict
from annotation.kinds import KindContext, get_kind
from annotation.models import Annotation, Item, ItemStage, Resolution, Role, Stage
from imports.models import ImportBatch
from ratings import services
from ratings.models import ModelRun, RatingsSetup, SentencePair
from tests.factories import make_member
from tests.ratings.conftest import PAIRS, csv_text, make_ratings_project, pairs_csv

pytestmark = pytest.mark.django_db


def counts(project):
    return {
        "items": Item.objects.filter(project=project).count(),
        "pairs": SentencePair.objects.filter(project=project).count(),
        "item_stages": ItemStage.objects.filter(stage__project=project).count(),
        "annotations": Annotation.objects.filter(item_stage__stage__project=project).count(),
        "batches": ImportBatch.objects.filter(project=project).count(),
        "stages": Stage.objects.filter(project=project).count(),
        "runs": ModelRun.objects.filter(project=project).count(),
    }


def rejected(call) -> list[tuple[int, str]]:
    with pytest.raises(ApplicationError) as caught:
        call()
    return [(row["line"], row["field"]) for row in caught.value.extra["errors"]]


# --- Setup ------------------------------------------------------------------------------------


def test_a_ratings_project_starts_with_explica_defaults():
    project = make_ratings_project(overlap=15)
    setup = RatingsSetup.objects.get(project=project)
    stage = setup.rating_stage
    assert project.kind == "ratings"
    assert [c["word"] for c in setup.connective_set["connectives"]] == [
        "so",
        "because",
        "then",
        "after",
    ]
    assert setup.label_rule["best_mean_threshold"] == 6.0
    assert setup.label_rule["tie_priority"] == ["because", "so", "after", "then"]
    assert (stage.kind, stage.overlap, stage.order_policy, stage.resolution_policy) == (
        "rate", 15, "random", "mean"
    )  # fmt: skip
    assert (stage.config["min"], stage.config["max"], stage.config["allow_cannot_judge"]) == (
        1,
        10,
        True,
    )
    # Annotators see the sentence and its connective mark, never the pair's relation, subset,
    # origin or flags (the rate kind's allow-list).
    assert get_kind("rate").visible_fields(KindContext(stage=stage)) == ("text", "mark")


def test_a_broken_connective_set_or_label_rule_is_refused_before_anything_is_written():
    with pytest.raises(ApplicationError, match="order"):
        make_ratings_project(
            slug="bad-set",
            connective_set={"connectives": [{"word": "so", "relation": "causal", "order": "up"}]},
        )
    with pytest.raises(ApplicationError, match="label rule"):
        make_ratings_project(slug="bad-rule", label_rule={"tie_break": "coin"})
    assert not RatingsSetup.objects.exists()


# --- Pairs ------------------------------------------------------------------------------------


def test_each_pair_becomes_eight_items_grouped_by_pair_and_open_for_rating(ratings_project):
    items = Item.objects.filter(project=ratings_project).order_by("pk")
    assert items.count() == 8 * len(PAIRS)
    first = items.filter(group="p1")
    assert sorted(first.values_list("external_id", flat=True)) == sorted(
        f"p1:{order}:{word}"
        for order in ("AB", "BA")
        for word in ("so", "because", "then", "after")
    )
    item = items.get(external_id="p1:BA:because")
    payload = item.payload
    assert payload["text"] == "The floor was flooded, because the pipe burst."
    start, end = payload["mark"]
    assert payload["text"][start:end] == "because"
    assert (payload["relation"], payload["connective_order"], payload["subset"]) == (
        "causal", "anti-iconic", "causal"
    )  # fmt: skip
    assert payload["flags"] == ["socially challenging"]
    setup = RatingsSetup.objects.get(project=ratings_project)
    stages = ItemStage.objects.filter(stage=setup.rating_stage)
    assert stages.count() == 24 and set(stages.values_list("target_count", flat=True)) == {3}
    pair = SentencePair.objects.get(project=ratings_project, pair_id="p2")
    assert (pair.subset, pair.origin, pair.flags) == ("temporal", "DeScript", [])
    batch = ImportBatch.objects.get(project=ratings_project)
    assert (batch.status, batch.items_created, batch.filename) == ("succeeded", 24, "pairs.csv")


def test_jsonl_pairs_with_flag_lists():
    project = make_ratings_project()
    lines = [
        {
            "pair_id": 10,
            "sentence_a": "It rained.",
            "sentence_b": "The street got wet.",
            "flags": ["a", "b"],
        },
        {"pair_id": 11, "sentence_a": "She sang.", "sentence_b": "He danced."},
    ]
    content = "\n".join(json.dumps(line) for line in lines)
    result = services.pairs_import(project=project, content=content, filename="pairs.jsonl")
    assert (result.pairs, result.items) == (2, 16)
    assert SentencePair.objects.get(project=project, pair_id="10").flags == ["a", "b"]


def test_a_file_with_one_bad_row_keeps_nothing():
    project = make_ratings_project()
    before = counts(project)
    rows = [
        list(PAIRS[0]),
        ["p2", "", "B.", "", "", ""],
        list(PAIRS[1]),
        ["p1", "A.", "B.", "", "", ""],
    ]
    content = csv_text(["pair_id", "sentence_a", "sentence_b", "subset", "origin", "flags"], rows)
    assert rejected(
        lambda: services.pairs_import(project=project, content=content, filename="bad.csv")
    ) == [(3, "sentence_a"), (4, "pair_id"), (5, "pair_id")]
    assert counts(project) == before


def test_pair_ids_already_in_the_project_are_refused(ratings_project):
    before = counts(ratings_project)
    assert rejected(
        lambda: services.pairs_import(
            project=ratings_project, content=pairs_csv(PAIRS[:1]), filename="again.csv"
        )
    ) == [(2, "pair_id")]
    assert counts(ratings_project) == before


def test_practice_items_get_their_own_first_stage_and_checks_reach_every_rater(ratings_project):
    content = csv_text(
        ["pair_id", "sentence_a", "sentence_b", "purpose", "connective", "order", "expected_min", "expected_max", "feedback"],
        [
            ["practice-1", "The glass fell.", "It broke.", "practice", "so", "AB", "7", "10", "Falls break glass."],
            ["check-1", "He was born.", "He graduated.", "attention_check", "after", "AB", "", "3", ""],
        ],
    )  # fmt: skip
    result = services.pairs_import(project=ratings_project, content=content, filename="extra.csv")
    assert (result.pairs, result.practice_items, result.attention_checks) == (0, 1, 1)
    setup = RatingsSetup.objects.get(project=ratings_project)
    practice = setup.practice_stage
    assert (practice.slug, practice.position, practice.overlap) == (
        "practice",
        0,
        services.EVERYONE,
    )
    assert practice.position < setup.rating_stage.position
    practice_item = Item.objects.get(project=ratings_project, purpose="practice")
    assert practice_item.item_stages.get().stage == practice
    assert practice_item.payload["feedback"] == "Falls break glass."
    check = Item.objects.get(project=ratings_project, purpose="attention_check")
    assert check.item_stages.get().stage == setup.rating_stage
    assert check.item_stages.get().target_count == services.EVERYONE
    # The item screen shows the external id; it must not give the check away.
    assert "check" not in check.external_id and check.external_id.endswith(":AB:after")
    assert check.payload["pair_id"] == "check-1"
    assert check.payload["text"] == "He was born, after he graduated."
    # Importing the same check id again is refused.
    assert rejected(
        lambda: services.pairs_import(
            project=ratings_project, content=content, filename="extra.csv"
        )
    ) == [(2, "pair_id"), (3, "pair_id")]


def test_a_custom_connective_set_with_its_own_template_and_relations():
    connectives = {
        "name": "since-while",
        "connectives": [
            {"word": "since", "relation": "causal", "order": "anti-iconic"},
            {"word": "and then", "relation": "temporal", "order": "iconic"},
            {"word": "although", "relation": "concessive", "order": "iconic", "template": "{connective} {first}, {second}"},
        ],
        "second_initial": "keep",
    }  # fmt: skip
    project = make_ratings_project(connective_set=connectives, scale=(1, 7))
    services.pairs_import(
        project=project,
        content=pairs_csv([("x", "It rained.", "The match went on.", "", "", "")]),
        filename="p.csv",
    )
    items = {item.external_id: item.payload for item in Item.objects.filter(project=project)}
    assert len(items) == 6
    text = items["x:AB:although"]["text"]
    assert text == "although It rained, The match went on."
    start, end = items["x:AB:although"]["mark"]
    assert text[start:end] == "although"
    assert items["x:BA:and then"]["text"] == "The match went on, and then It rained."
    assert RatingsSetup.objects.get(project=project).rating_stage.config["anchors"] == {}


# --- Historic ratings -------------------------------------------------------------------------


def ratings_csv(rows):
    return csv_text(["pair_id", "order", "connective", "rater", "rating"], rows)


def test_historic_ratings_live_on_an_inactive_resolved_stage(ratings_project):
    content = ratings_csv(
        [["p1", "AB", "so", f"r{n}", str(value)] for n, value in enumerate([9, 8, 10, 7], start=1)]
        + [["p1", "AB", "because", "r1", "2"]]
    )
    stored = services.historic_ratings_import(
        project=ratings_project, content=content, filename="old.csv"
    )
    assert stored == 5
    setup = RatingsSetup.objects.get(project=ratings_project)
    historic = setup.historic_stage
    assert (historic.slug, historic.is_active, historic.kind) == ("historic", False, "rate")
    item_stage = ItemStage.objects.get(stage=historic, item__external_id="p1:AB:so")
    assert (item_stage.state, item_stage.target_count, item_stage.submitted_count, item_stage.leased_count) == (
        "resolved", 4, 4, 0
    )  # fmt: skip
    resolution = Resolution.objects.get(item_stage=item_stage)
    assert (resolution.value, resolution.status, resolution.n_annotations) == (8.5, "mean", 4)
    annotation = Annotation.objects.filter(item_stage=item_stage).order_by("pk").first()
    assert annotation.assignment_id is None and annotation.annotator_id is None
    assert (annotation.external_rater, annotation.payload) == ("r1", {"value": 9})
    # A second file adds to the counts and the mean.
    services.historic_ratings_import(
        project=ratings_project,
        content=ratings_csv([["p1", "AB", "so", "r9", "1"]]),
        filename="more.csv",
    )
    item_stage.refresh_from_db()
    assert (item_stage.target_count, item_stage.submitted_count) == (5, 5)
    assert Resolution.objects.get(item_stage=item_stage).value == pytest.approx(35 / 5)


def test_historic_items_are_never_handed_out_and_the_stage_is_closed(ratings_project):
    services.historic_ratings_import(
        project=ratings_project,
        content=ratings_csv([["p1", "AB", "so", "", "9"]]),
        filename="old.csv",
    )
    setup = RatingsSetup.objects.get(project=ratings_project)
    rater = make_member(ratings_project, Role.ANNOTATOR)
    with pytest.raises(Conflict):
        access_stage_for_annotator(user=rater, stage_id=setup.historic_stage_id)
    stage = access_stage_for_annotator(user=rater, stage_id=setup.rating_stage_id)
    seen = set()
    while (assignment := engine.assignment_next(annotator=rater, stage=stage)) is not None:
        assert assignment.item_stage.stage_id == setup.rating_stage_id
        seen.add(assignment.item_stage.item_id)
        engine.annotation_submit(assignment_id=assignment.pk, annotator=rater, payload={"value": 5})
        stage = access_stage_for_annotator(user=rater, stage_id=setup.rating_stage_id)
    assert len(seen) == 24


def test_a_ratings_file_with_a_bad_row_keeps_nothing(ratings_project):
    before = counts(ratings_project)
    content = ratings_csv(
        [["p1", "AB", "so", "r1", "9"], ["p1", "AB", "since", "r1", "9"], ["p1", "BA", "so", "r1", "11"], ["p9", "AB", "so", "r1", "5"]]
    )  # fmt: skip
    assert rejected(
        lambda: services.historic_ratings_import(
            project=ratings_project, content=content, filename="bad.csv"
        )
    ) == [(3, "connective"), (4, "rating"), (5, "pair_id")]
    assert counts(ratings_project) == before
    assert RatingsSetup.objects.get(project=ratings_project).historic_stage is None


def test_uploads_are_streamed_from_file_objects_and_hashed_whole(ratings_project):
    # The pages hand the services the upload itself (a file object), not its bytes.
    content = ratings_csv([["p1", "AB", "so", "r1", "9"], ["p1", "BA", "so", "r1", "3"]])
    data = content.encode("utf-8")
    stored = services.historic_ratings_import(
        project=ratings_project, content=io.BytesIO(data), filename="old.csv"
    )
    assert stored == 2
    batch = ImportBatch.objects.get(project=ratings_project, filename="old.csv")
    assert batch.sha256 == hashlib.sha256(data).hexdigest()
    with pytest.raises(Conflict, match="already imported"):
        services.historic_ratings_import(
            project=ratings_project, content=io.BytesIO(data), filename="again.csv"
        )
    answers = csv_text(
        ["pair_id", "order", "connective", "rating"],
        [["p1", "AB", "so", "9"], ["p1", "AB", "because", "-1"]],
    ).encode("utf-8")
    run = services.model_run_import(
        project=ratings_project, name="m", content=io.BytesIO(answers), filename="m.csv"
    )
    assert run.answers == {"p1:AB:so": 9.0, "p1:AB:because": None}
    assert run.sha256 == hashlib.sha256(answers).hexdigest()
    pairs = pairs_csv([("s1", "A one.", "B one.", "", "", "")]).encode("utf-8")
    result = services.pairs_import(
        project=ratings_project, content=io.BytesIO(pairs), filename="more.csv"
    )
    assert result.pairs == 1
    assert result.import_batch.sha256 == hashlib.sha256(pairs).hexdigest()
    assert result.import_batch.format == "csv"


# --- Live ratings and the spread order --------------------------------------------------------


def test_each_rater_gets_their_own_order_with_the_variants_of_a_pair_spread_apart():
    project = make_ratings_project(overlap=2, seed=99)
    pairs = [
        (f"q{n}", f"Event {n} happened.", f"Event {n} followed.", "", "", "") for n in range(6)
    ]
    services.pairs_import(project=project, content=pairs_csv(pairs), filename="p.csv")
    setup = RatingsSetup.objects.get(project=project)
    raters = [make_member(project, Role.ANNOTATOR) for _ in range(2)]
    sequences = defaultdict(list)
    for rater in raters:
        for _ in range(48):
            stage = access_stage_for_annotator(user=rater, stage_id=setup.rating_stage_id)
            assignment = engine.assignment_next(annotator=rater, stage=stage)
            sequences[rater.pk].append(assignment.item_stage.item.group)
            engine.annotation_submit(
                assignment_id=assignment.pk, annotator=rater, payload={"value": 4}
            )
    for groups in sequences.values():
        assert sorted(groups) == sorted(f"q{n}" for n in range(6) for _ in range(8))
        # One variant of every pair before the second variant of any: 8 rounds of 6 pairs.
        rounds = [groups[start : start + 6] for start in range(0, 48, 6)]
        assert all(len(set(round_)) == 6 for round_ in rounds)
    first, second = sequences.values()
    assert first != second


def test_live_ratings_resolve_to_their_mean(ratings_project, django_capture_on_commit_callbacks):
    setup = RatingsSetup.objects.get(project=ratings_project)
    raters = [make_member(ratings_project, Role.ANNOTATOR) for _ in range(3)]
    for value, rater in zip((3, 6, 10), raters, strict=True):
        for _ in range(24):
            stage = access_stage_for_annotator(user=rater, stage_id=setup.rating_stage_id)
            assignment = engine.assignment_next(annotator=rater, stage=stage)
            with django_capture_on_commit_callbacks(execute=True):
                engine.annotation_submit(
                    assignment_id=assignment.pk, annotator=rater, payload={"value": value}
                )
    resolved = ItemStage.objects.filter(stage=setup.rating_stage, state="resolved")
    assert resolved.count() == 24
    values = Resolution.objects.filter(item_stage__in=resolved).values_list("value", flat=True)
    assert list(values) == pytest.approx([19 / 3] * 24)


# --- Model runs -------------------------------------------------------------------------------


def test_model_runs_store_ratings_or_choices_and_refuse_bad_files(ratings_project):
    content = csv_text(
        ["pair_id", "order", "connective", "rating"],
        [["p1", "AB", "so", "9"], ["p1", "AB", "because", "-1"], ["p1", "BA", "so", ""]],
    )
    run = services.model_run_import(
        project=ratings_project, name="m1", content=content, filename="m1.csv"
    )
    assert (run.answer_kind, run.n_answers, run.n_no_answer) == ("ratings", 3, 2)
    assert run.answers == {"p1:AB:so": 9.0, "p1:AB:because": None, "p1:BA:so": None}
    choices = csv_text(["pair_id", "order", "choice"], [["p1", "AB", "so"], ["p2", "BA", ""]])
    run = services.model_run_import(
        project=ratings_project, name="m2", content=choices, filename="m2.csv"
    )
    assert run.answers == {"p1|AB": "so", "p2|BA": None}
    with pytest.raises(ApplicationError, match="already a model run"):
        services.model_run_import(
            project=ratings_project, name="m1", content=content, filename="x.csv"
        )
    bad = csv_text(["pair_id", "order", "connective", "rating"], [["p1", "AB", "so", "42"]])
    assert rejected(
        lambda: services.model_run_import(
            project=ratings_project, name="m3", content=bad, filename="b.csv"
        )
    ) == [(2, "rating")]
    assert ModelRun.objects.filter(project=ratings_project).count() == 2
    services.model_run_delete(project=ratings_project, run_id=run.pk)
    assert ModelRun.objects.filter(project=ratings_project).count() == 1


# --- ExpliCa's own file layout ----------------------------------------------------------------


def explica_files(tmp_path, pairs):
    """Tiny files in the layout of ExpliCa's release: the pair file (one row per ordered pair and
    tested connective) and an acceptability result file with accept_answers and a model column."""
    columns = {"so": "rating_iconic_causal", "because": "rating_anticonic_causal", "then": "rating_iconic_temporal", "after": "rating_anticonic_temporal"}  # fmt: skip
    pair_rows, accept_rows = [], []
    item_id = 0
    for pair_id, a, b, subset, answers in pairs:
        for first, second in ((a, b), (b, a)):
            means = {
                word: sum(values) / len(values) for word, values in answers[(first, second)].items()
            }
            for word in columns:
                pair_rows.append(
                    [first, second, "origin", pair_id, *(means[w] for w in columns), subset, "B follows A",
                     "Causal-A,B", word, "socially_challenging" if pair_id == 0 else "none"]
                )  # fmt: skip
                values = answers[(first, second)][word]
                accept_rows.append(
                    [pair_id, first, second, word, str([str(v) for v in values]), -1 if word == "then" else 7, item_id]
                )  # fmt: skip
                item_id += 1
    pair_file = tmp_path / "explica_freq_4800.tsv"
    pair_file.write_text(
        csv_text(
            [
                "Sentence_A",
                "Sentence_B",
                "origin",
                "pair_id",
                *columns.values(),
                "tested_relation",
                "tested_order",
                "condition_human",
                "tested_connective",
                "additional_dimension",
            ],
            pair_rows,
        )  # fmt: skip
    )
    accept_file = tmp_path / "accept_res_outlines_tiny-model.tsv"
    accept_file.write_text(
        csv_text(
            [
                "pair_id",
                "Sentence_A",
                "Sentence_B",
                "conn_in_list",
                "accept_answers",
                "answer_greedy_cleaned",
                "pair_ID",
            ],
            accept_rows,
            delimiter="\t",
        )  # fmt: skip
    )
    return pair_file, accept_file


def test_explica_files_import_through_the_same_path(tmp_path):
    answers = {
        ("The pipe burst.", "The floor was flooded."): {"so": [9, 8, 9], "because": [2, 3, 2], "then": [6, 5, 6], "after": [2, 2, 1]},
        ("The floor was flooded.", "The pipe burst."): {"so": [2, 1, 2], "because": [9, 9, 8], "then": [2, 3, 2], "after": [6, 6, 5]},
    }  # fmt: skip
    pair_file, accept_file = explica_files(
        tmp_path, [(0, "The pipe burst.", "The floor was flooded.", "causality", answers)]
    )
    project = make_ratings_project()
    result = services.explica_import(
        project=project, pair_file=pair_file, ratings_file=accept_file, model_files=[accept_file]
    )
    assert (result.pairs.pairs, result.pairs.items, result.ratings) == (1, 8, 24)
    pair = SentencePair.objects.get(project=project)
    assert (pair.pair_id, pair.subset, pair.origin, pair.flags) == (
        "0",
        "causal",
        "hand-written",
        ["socially challenging"],
    )
    assert pair.extra["published_label"] == {"AB": "causal-iconic", "BA": "causal-iconic"}
    # Analysis-only by default: nothing opened for live rating.
    setup = RatingsSetup.objects.get(project=project)
    assert not ItemStage.objects.filter(stage=setup.rating_stage).exists()
    so = ItemStage.objects.get(stage=setup.historic_stage, item__external_id="0:AB:so")
    assert Resolution.objects.get(item_stage=so).value == pytest.approx(26 / 3)
    assert set(
        Annotation.objects.filter(item_stage=so).values_list("external_rater", flat=True)
    ) == {""}
    [run] = result.model_runs
    assert run.name == "tiny-model"
    assert run.n_answers == 8 and run.n_no_answer == 2  # "then" answered -1 in both orders


def test_the_analysis_refresh_stores_once_per_data_version_and_again_after_new_ratings(
    ratings_project,
):
    """services.analysis_refresh computes and stores the first time, is a no-op while the data
    are unchanged (safe to run twice), and computes again once ratings are added."""
    from ratings import selectors
    from ratings.models import StoredAnalysis

    def refresh():
        return services.analysis_refresh(project_id=ratings_project.pk, source="all", run_id=None)

    assert refresh() is True and refresh() is False
    row = StoredAnalysis.objects.get(project=ratings_project, source="all", run_key=0)
    assert row.computations == 1 and row.content is not None
    context = selectors.ratings_context(ratings_project)
    assert selectors.stored_analysis(context, source="all", run=None).fresh
    services.historic_ratings_import(
        project=ratings_project,
        content=csv_text(["pair_id", "order", "connective", "rating"], [["p1", "AB", "so", "5"]]),
        filename="more.csv",
    )
    context = selectors.ratings_context(ratings_project)  # the import added the historic stage
    state = selectors.stored_analysis(context, source="all", run=None)
    assert not state.fresh and state.analysis.report.n_ratings == 0
    assert refresh() is True
    state = selectors.stored_analysis(context, source="all", run=None)
    assert state.fresh and state.analysis.report.n_ratings == 1
    assert StoredAnalysis.objects.get(pk=row.pk).computations == 2


def test_an_unreadable_stored_analysis_counts_as_missing(ratings_project):
    """A result pickled by older code (classes changed since) is not served: the page asks
    for a new one instead of failing."""
    from ratings import selectors
    from ratings.models import StoredAnalysis

    services.analysis_refresh(project_id=ratings_project.pk, source="all", run_id=None)
    StoredAnalysis.objects.filter(project=ratings_project).update(content=b"not a pickle")
    state = selectors.stored_analysis(
        selectors.ratings_context(ratings_project), source="all", run=None
    )
    assert state.analysis is None and state.fresh is False
