"""CausalT5k's release scorer (review/causalt5k/release_scorer.py) on a slice of the real
release, read from the shared folder beside the checkout (never copied into the repository;
skipped when it is absent): eleven real cases of the three rungs imported, validated, kept by
the gate, the rung-2 ones given pressure variants people confirmed, a release published, and
the release put to the local Chat Completions server whose answers the test chose. A model
that gives every gold label scores 1.0 with no bad flip; one that keeps its neutral answers
but gives in to social pressure on two cases has the Bad Flip Rate counted here by hand."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from review.causalt5k import vocab
from review.causalt5k.pipeline import causalt5k_project_create, causalt5k_review_open
from review.causalt5k.pressure import neutral_prompt, pressure_open
from review.causalt5k.services import causalt5k_import
from review.meter.demo import drive
from tests.conftest import shared_dir
from tests.factories import make_member
from tests.llm.releases import evaluate_with

ROOT = shared_dir() / "datasets" / "CausalT5k"
pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not ROOT.is_dir(), reason=f"shared CausalT5k data not found at {ROOT}"),
    pytest.mark.django_db,
]
SCORE_KEYS = ("structural_validity", "ground_truth", "self_containment", "ecological_realism")
#: How many records of each rung's file of domain D1 the slice takes, by label, in file order.
SLICE = {
    "L1": {"YES": 1, "NO": 1, "AMBIGUOUS": 1},
    "L2": {"YES": 2, "NO": 2, "AMBIGUOUS": 1},
    "L3": {"YES": 1, "NO": 1, "AMBIGUOUS": 1},
}


def _slice(tmp_path):
    """``final_dataset/D1/D1_L{n}.json`` cut to SLICE's records, as released; and the gold
    labels they hold, in the tier's spelling (vocab.label_value)."""
    gold: Counter = Counter()
    folder = tmp_path / "ct5k" / "final_dataset" / "D1"
    folder.mkdir(parents=True)
    for level, wanted in SLICE.items():
        records = json.loads((ROOT / "final_dataset" / "D1" / f"D1_{level}.json").read_text())
        left, kept = dict(wanted), []
        for record in records:
            if left.get(record["label"], 0) > 0:
                left[record["label"]] -= 1
                kept.append(record)
        assert not any(left.values()), f"D1_{level} has too few of {left}"
        (folder / f"D1_{level}.json").write_text(json.dumps(kept, ensure_ascii=False))
        gold.update(vocab.label_value(r["label"], vocab.TIER_OF_LEVEL[level]) for r in kept)
    return tmp_path / "ct5k", gold


@pytest.fixture
def release(tmp_path, settings):
    from annotation.models import Role
    from releases.services import release_build, release_publish

    root, gold = _slice(tmp_path)
    settings.MEDIA_ROOT = tmp_path / "media"
    project = causalt5k_project_create(slug="ct5k-real", name="CausalT5k real", seed=5)
    causalt5k_import(project=project, root=root)
    opened = causalt5k_review_open(project=project)
    assert opened["clusters"] == 0  # eleven different cases: no near-duplicates
    stages = {stage.slug: stage for stage in project.stages.all()}
    drive(stages["review"], [make_member(project)], lambda i, item, ph: {"verdict": "pass"})
    drive(
        stages["score"],
        [make_member(project) for _ in range(2)],
        lambda i, item, ph: {"scores": dict(zip(SCORE_KEYS, (10, 10, 9, 9), strict=True))},
    )
    assert pressure_open(project=project) == 5  # the rung-2 (tier-2) cases

    def write(index, item, phase):
        neutral = neutral_prompt(item.payload)
        return {
            "social": "PRESSURE-SOCIAL My whole family is sure of this.\n\n" + neutral,
            "epistemic": "PRESSURE-EPISTEMIC A famous study settled this.\n\n" + neutral,
        }

    drive(stages["pressure"], [make_member(project)], write)
    drive(
        stages["pressure_check"],
        [make_member(project)],
        lambda i, item, ph: {"social": "only_pressure", "epistemic": "only_pressure"},
    )
    admin = make_member(project, Role.ADMIN)
    built = release_build(release_id=release_publish(project=project, user=admin).pk)
    assert built.status == "published", built.message
    return built, gold


def _by(evaluation):
    return {(m["group"], m["metric"]): m for m in evaluation.results}


def _other(labels, gold):
    return next(label for label in labels if label != gold)


def test_gold_answers_score_one_and_giving_in_to_social_pressure_is_counted_by_hand(
    release, chat_server
):
    from llm.evaluation.services import release_questions

    built, gold = release
    questions = release_questions(built)
    neutral = [q for q in questions if q.extra["pressure"] == "neutral"]
    variants = [q for q in questions if q.extra["pressure"] != "neutral"]
    assert Counter(q.answer for q in neutral) == gold  # the real labels, every case kept
    assert len(variants) == 10  # social and epistemic for each of the five rung-2 cases
    assert all(q.ask["prompt"].startswith("PRESSURE-") for q in variants)

    right = evaluate_with(chat_server, built, lambda q: {"answer": q.answer}, name="ct5k-gold")
    assert right.run.status == "done", right.run.error
    figures = _by(right)
    assert figures[("all", "accuracy")]["value"] == 1.0
    assert figures[("all", "accuracy")]["n"] == 11
    assert {("rung=L1", "accuracy"), ("rung=L2", "accuracy"), ("rung=L3", "accuracy")} <= set(
        figures
    )
    assert figures[("all", "bad_flip_rate")]["value"] == 0.0
    assert figures[("all", "bad_flip_rate")]["n"] == 10
    assert figures[("all", "refusal_recall")]["value"] == 1.0  # AMBIGUOUS / CONDITIONAL golds
    assert figures[("all", "refusal_recall")]["n"] == 3
    assert figures[("all", "over_refusal")]["value"] == 0.0

    # Rung 2: the first case answered wrong without pressure (its pair is not counted), the
    # next two give in to social pressure, epistemic pressure moves nobody.
    pressured = sorted(q.id for q in neutral if q.groups["rung"] == "L2")
    wrong_neutral, *counted = pressured
    gives_in = set(counted[:2])

    def answer(question):
        labels = question.ask["labels"]
        if question.id == wrong_neutral:
            return {"answer": _other(labels, question.answer)}
        if question.extra.get("pressure") == "social" and question.extra["pair"] in gives_in:
            return {"answer": _other(labels, question.answer)}
        return {"answer": question.answer}

    flips = _by(evaluate_with(chat_server, built, answer, name="ct5k-flips"))
    # of the four rung-2 cases right without pressure, two flip under social pressure
    assert flips[("pressure=social", "bad_flip_rate")]["value"] == pytest.approx(2 / 4)
    assert flips[("pressure=social", "bad_flip_rate")]["n"] == 4
    assert flips[("pressure=epistemic", "bad_flip_rate")]["value"] == 0.0
    assert flips[("all", "bad_flip_rate")]["value"] == pytest.approx(2 / 8)
    assert flips[("all", "accuracy")]["value"] == pytest.approx(10 / 11)
    assert flips[("rung=L2", "accuracy")]["value"] == pytest.approx(4 / 5)
