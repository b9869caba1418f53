"""A CARL-GT release carries the benchmark's own layout beside the engine's files: per task and
graph line-aligned questions / answers / people's answers files (imported questions come out on
the benchmark's own lines, byte for byte), an index, every human answer and the scores with
Fleiss' κ; and the Graphs tab shows the agreement on yes / no questions."""

from __future__ import annotations

import csv
import io
import zipfile

import pytest
from django.urls import reverse

from annotation.models import Item, Role
from graphs import services
from graphs.demo import answer_all
from releases.services import release_build, release_publish
from tests.factories import make_member
from tests.graphs.test_carlgt_import import GOOD, write

pytestmark = pytest.mark.django_db

FORMULA = "=HYPERLINK(1)"


def answer(index: int, item):
    """Two people: the first right everywhere, the second wrong on the first line of every
    yes / no file and half a unit off on numbers."""
    truth = item.payload["answer"]
    if item.payload["answer_type"] == "number":
        return {"value": float(truth) + (0.5 if index else 0.0)}
    if index == 1 and item.payload.get("source_line") == 1:
        return {"value": "no" if truth == "yes" else "yes"}
    return {"value": truth}


@pytest.fixture
def released(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    files = dict(GOOD)
    files["graph/1_questions.txt"] = f"Are V0 and V1 d-seperated?\n{FORMULA} given V1?\n"
    project = services.carlgt_project_create(slug="carl", name="CARL", overlap=2, seed=1)
    report = services.carlgt_import(project=project, directory=write(tmp_path / "data", files))
    assert report.ok, report.problems
    answer_all(project.stages.get(), [make_member(project), make_member(project)], answer)
    assert not Item.objects.filter(project=project).exclude(status="accepted").exists()
    admin = make_member(project, Role.ADMIN)
    release = release_build(release_id=release_publish(project=project, user=admin).pk)
    assert release.status == "published", release.message
    with zipfile.ZipFile(release.archive.path) as archive:
        contents = {
            name.rsplit("/", 1)[-1]: archive.read(name).decode()
            for name in archive.namelist()
            if not name.endswith(".parquet")  # the text files' binary copies
        }
    return project, files, contents


def table(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_benchmarks_files_come_back_line_aligned(released):
    _project, files, contents = released
    # imported questions and answers: the benchmark's own lines, in its order
    assert contents["carlgt_d_separation_1_questions.txt"] == files["graph/1_questions.txt"]
    assert contents["carlgt_d_separation_1_answers.txt"] == files["graph/1_answers.txt"]
    assert contents["carlgt_conditional_independence_100_answers.txt"] == "yes\n"
    assert contents["carlgt_causal_direction_100_answers.txt"] == "yes\n"
    assert contents["carlgt_intervention_1_answers.txt"] == "1.5\n"
    assert contents["carlgt_counterfactual_100_answers.txt"] == "-0.25\n"
    # people's answers on the same lines: the two disagree on line 1 (a tie), agree on line 2
    assert contents["carlgt_d_separation_1_human.txt"] == "tie\nyes\n"
    assert contents["carlgt_intervention_1_human.txt"] == "1.75\n"
    for name, text in contents.items():
        if name.endswith("_questions.txt"):
            stem = name.removesuffix("_questions.txt")
            lines = text.count("\n")
            assert contents[f"{stem}_answers.txt"].count("\n") == lines
            assert contents[f"{stem}_human.txt"].count("\n") == lines
    index = {row["questions_file"]: row for row in table(contents["carlgt_files.csv"])}
    row = index["carlgt_d_separation_1_questions.txt"]
    assert (row["source_file"], row["lines"], row["graph_size"]) == (
        "graph/1_questions.txt", "2", "large",
    )  # fmt: skip
    assert "target is our reading" in index["carlgt_intervention_1_questions.txt"]["note"]
    assert row["note"] == ""
    # the engine's files and the datasheet are there too
    assert {"items.jsonl", "annotations.csv", "README.md", "manifest.json"} <= set(contents)


def test_every_human_answer_and_the_scores_with_kappa(released):
    _project, _files, contents = released
    answers = table(contents["carlgt_human_answers.csv"])
    assert len(answers) == 2 * 6  # six questions (the small graph's intervention is skipped)
    assert {row["rater"] for row in answers} == {"R0001", "R0002"}  # pseudonyms only
    line_1 = [r for r in answers if r["external_id"] == "carlgt-d_separation-1-1"]
    assert sorted(r["correct"] for r in line_1) == ["false", "true"]
    assert {r["abs_error"] for r in answers if r["task"] == "intervention"} == {"0.0", "0.5"}
    formula = next(r for r in answers if r["external_id"] == "carlgt-d_separation-1-2")
    assert formula["question"].startswith("'=")  # inert in a spreadsheet
    scores = {(r["task"], r["graph_size"]): r for r in table(contents["carlgt_scores.csv"])}
    dsep = scores[("d_separation", "large")]
    assert float(dsep["accuracy"]) == pytest.approx(0.75)
    # 2 questions × 2 raters, one disagreement: κ is defined and below 1
    assert float(dsep["fleiss_kappa"]) < 1 and dsep["kappa_items"] == "2"
    assert float(scores[("intervention", "large")]["mae"]) == pytest.approx(0.25)
    assert scores[("intervention", "large")]["fleiss_kappa"] == ""  # numbers: no κ


def test_kappa_rows_per_task_and_overall():
    triples = [
        (1, {"task": "d_separation", "graph_size": "small"}, {"value": "yes"}),
        (1, {"task": "d_separation", "graph_size": "small"}, {"value": "yes"}),
        (2, {"task": "d_separation", "graph_size": "small"}, {"value": "no"}),
        (2, {"task": "d_separation", "graph_size": "small"}, {"value": "no"}),
        (3, {"task": "causal_direction", "graph_size": "small"}, {"value": "yes"}),
        (4, {"task": "intervention", "graph_size": "small"}, {"value": 1.0}),
    ]
    rows = {(r["task"], r["graph_size"]): r for r in services.agreement_rows(triples)}
    assert rows[("d_separation", "small")]["kappa"] == pytest.approx(1.0)
    assert rows[("causal_direction", "small")]["kappa"] is None  # one answer: undefined
    assert rows[("all", "all")]["answers"] == 5 and ("intervention", "small") not in rows


def test_the_graphs_tab_shows_the_agreement(released, client):
    project, _files, _contents = released
    client.force_login(make_member(project, Role.RESEARCHER))
    page = client.get(reverse("graphs:scores", args=[project.slug])).content.decode()
    assert 'id="graph-agreement"' in page and "Fleiss" in page
    assert "Every yes / no question" in page
