"""CARL-GT's release scorer (graphs/release_scorer.py): the questions of the line-aligned files
with their answers kept apart, answers parsed strictly, accuracy / F1 / MAE per task, people's
majority file as the baseline; and a release built from the real benchmark's files."""

from __future__ import annotations

import shutil

import pytest

from graphs.release_scorer import CarlGTScorer
from tests.conftest import shared_dir
from tests.llm.releases import carlgt_files, release_files

SCORER = CarlGTScorer()


def by_metric(metrics, group="all"):
    return {m.metric: m for m in metrics if m.group == group}


def test_questions_pair_each_line_with_its_answer_and_peoples_majority(tmp_path):
    questions = list(SCORER.questions(release_files(tmp_path, carlgt_files())))
    assert [q.id for q in questions] == [
        "d_separation/1/1",
        "d_separation/1/2",
        "d_separation/1/3",
        "counterfactual/100/1",
        "counterfactual/100/2",
    ]
    first = questions[0]
    assert first.ask == {
        "task": "d_separation",
        "answer_type": "yes_no",
        "question": "Are V0 and V1 d-seperated?",
    }
    assert first.answer == "no" and first.humans == ("no",)
    assert questions[2].humans == ()  # a tie is no answer
    assert questions[3].answer == -0.25 and questions[3].humans == (0.25,)
    assert questions[4].humans == ()  # NA


def test_answers_are_parsed_strictly():
    yes_no = {"answer_type": "yes_no"}
    assert SCORER.parse({"answer": " Yes."}, yes_no) == "yes"
    with pytest.raises(ValueError):
        SCORER.parse({"answer": "maybe"}, yes_no)
    number = {"answer_type": "number"}
    assert SCORER.parse({"answer": "2.5"}, number) == 2.5
    for bad in ({"answer": "nan"}, {"answer": True}, {"value": 1}, "2"):
        with pytest.raises(ValueError):
            SCORER.parse(bad, number)


def test_accuracy_f1_and_mae_per_task(tmp_path):
    questions = list(SCORER.questions(release_files(tmp_path, carlgt_files())))
    said = {"d_separation/1/1": "yes", "d_separation/1/2": "yes", "d_separation/1/3": "yes",
            "counterfactual/100/1": 0.75, "counterfactual/100/2": 3.5}  # fmt: skip
    metrics = SCORER.score([(q, said[q.id]) for q in questions])
    overall = by_metric(metrics)
    assert overall["accuracy"].value == pytest.approx(2 / 3) and overall["accuracy"].n == 3
    assert overall["f1"].value == pytest.approx(0.8)  # tp 2, fp 1, fn 0
    assert overall["mae"].value == pytest.approx(0.5)
    assert set(by_metric(metrics, "task=counterfactual")) == {"mae"}
    assert set(by_metric(metrics, "task=d-separation")) == {"accuracy", "f1"}
    baseline = by_metric(SCORER.score([(q, h) for q in questions for h in q.humans]))
    assert baseline["accuracy"].value == 0.5 and baseline["accuracy"].n == 2
    assert baseline["mae"].value == pytest.approx(0.5)


DATA = shared_dir() / "datasets" / "CARL-GT"


@pytest.mark.django_db
def test_a_release_built_from_the_real_benchmark_is_read_back_line_for_line(tmp_path, settings):
    """Two small graphs of the real CARL-GT files imported, answered by two people, released;
    the scorer reads every question back, each with the benchmark's own answer."""
    if not DATA.exists():
        pytest.skip("../shared/datasets/CARL-GT is not present")
    from annotation.models import Role
    from graphs import services
    from graphs.demo import answer_all
    from llm.evaluation.files import ReleaseFiles
    from releases.services import release_build, release_publish
    from tests.factories import make_member

    source = DATA / "carl_gt" / "data"
    target = tmp_path / "data" / "carl_gt" / "data"
    (target / "graph").mkdir(parents=True)
    (target / "table").mkdir()
    for name in ("100_questions.txt", "100_answers.txt", "101_questions.txt", "101_answers.txt"):
        shutil.copy(source / "graph" / name, target / "graph" / name)
    settings.MEDIA_ROOT = tmp_path / "media"
    project = services.carlgt_project_create(slug="carl-real", name="CARL real", overlap=2, seed=1)
    report = services.carlgt_import(project=project, directory=tmp_path / "data")
    assert report.ok, report.problems
    people = [make_member(project), make_member(project)]
    answer_all(project.stages.get(), people, lambda index, item: {"value": item.payload["answer"]})
    admin = make_member(project, Role.ADMIN)
    release = release_build(release_id=release_publish(project=project, user=admin).pk)
    assert release.status == "published", release.message
    questions = list(SCORER.questions(ReleaseFiles.of_path(release.archive.path)))
    expected = [
        (line, answer)
        for graph in ("100", "101")
        for line, answer in zip(
            (source / "graph" / f"{graph}_questions.txt").read_text().splitlines(),
            (source / "graph" / f"{graph}_answers.txt").read_text().splitlines(),
            strict=True,
        )
    ]
    assert sorted((q.ask["question"], q.answer) for q in questions) == sorted(expected)
    baseline = by_metric(SCORER.score([(q, h) for q in questions for h in q.humans]))
    assert baseline["accuracy"].value == 1.0  # both people gave the truth
