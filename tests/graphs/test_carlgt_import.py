"""CARL-GT's line-aligned files: problems by file and line (mismatched counts, empty lines,
answers that do not parse), nothing imported on any error; the real benchmark's counts from the
shared folder (skipped when absent)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Item
from graphs import services
from graphs.carlgt import read_carlgt
from tests.conftest import shared_dir

ROOT = shared_dir() / "datasets" / "CARL-GT"


def write(base: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = base / "carl_gt" / "data" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return base


GOOD = {
    "graph/1_questions.txt": "Are V0 and V1 d-seperated?\nAre V0 and V2 d-seperated given V1?\n",
    "graph/1_answers.txt": "no\nyes\n",
    "table/100_questions.txt": "Are V0 and V1 conditionally independent?\n",
    "table/100_answers.txt": "yes\n",
    "table/cdir_100_questions.txt": "Between V0 and V1, is V0 the cause?\n",
    "table/counterfactual_questions_100.txt": "Given …, what is the expectation of V1?\n",
    "table/counterfactual_answers_100.txt": "-0.25\n",
    "table/intervention_questions.txt": "What is the expectation of V3?\n",
    "table/intervention_1_gt.txt": "1.5\n",
    "table/intervention_100_gt.txt": "2.5\n",
}


def test_a_good_folder_is_read_with_every_task(tmp_path):
    reading = read_carlgt(write(tmp_path, GOOD))
    assert reading.ok, reading.problems
    assert reading.counts() == {
        "d_separation": 2,
        "conditional_independence": 1,
        "causal_direction": 1,
        "intervention": 1,
        "counterfactual": 1,
    }
    by_id = {r.external_id: r for r in reading.records}
    assert by_id["carlgt-d_separation-1-2"].answer == "yes"
    assert by_id["carlgt-causal_direction-100-1"].answer == "yes"  # all-yes, no answers file
    assert by_id["carlgt-counterfactual-100-1"].answer == -0.25
    assert by_id["carlgt-intervention-1-1"].graph_size == "large"
    assert by_id["carlgt-conditional_independence-100-1"].graph_size == "small"
    assert reading.skipped == [
        "table/intervention_100_gt.txt: expected values without question text"
    ]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"graph/1_answers.txt": "no\n"}, "graph/1_answers.txt:2: 1 answers for 2 questions"),
        ({"graph/1_answers.txt": "no\n\n"}, "graph/1_answers.txt:2: empty answer"),
        (
            {"graph/1_questions.txt": "\nAre V0 and V2?\n"},
            "graph/1_questions.txt:1: empty question",
        ),
        ({"graph/1_answers.txt": "no\nmaybe\n"}, "graph/1_answers.txt:2: expected yes or no"),
        (
            {"table/counterfactual_answers_100.txt": "about 3\n"},
            "table/counterfactual_answers_100.txt:1: expected a number, got 'about 3'",
        ),
        ({"table/intervention_1_gt.txt": "nan\n"}, "table/intervention_1_gt.txt:1: expected a"),
    ],
)
@pytest.mark.django_db
def test_any_problem_is_named_by_file_and_line_and_nothing_is_imported(tmp_path, change, problem):
    write(tmp_path, {**GOOD, **change})
    project = services.carlgt_project_create(slug="carl", name="CARL")
    report = services.carlgt_import(project=project, directory=tmp_path)
    assert not report.ok
    assert any(p.startswith(problem) for p in report.problems), report.problems
    assert not Item.objects.filter(project=project).exists()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("graphs_import_carlgt", "carl", str(tmp_path))


@pytest.mark.django_db
def test_the_command_imports_once_and_refuses_a_second_time(tmp_path, capsys):
    write(tmp_path, GOOD)
    call_command("graphs_import_carlgt", "carl", str(tmp_path))
    assert "Imported 6 questions" in capsys.readouterr().out
    item = Item.objects.get(external_id="carlgt-d_separation-1-1")
    assert item.payload["answer"] == "no"
    assert item.payload["source_file"] == "graph/1_questions.txt"
    with pytest.raises(CommandError):
        call_command("graphs_import_carlgt", "carl", str(tmp_path))
    assert Item.objects.filter(project__slug="carl").count() == 6


@pytest.mark.shared_data
@pytest.mark.skipif(not ROOT.is_dir(), reason=f"shared CARL-GT data not found at {ROOT}")
@pytest.mark.django_db
def test_the_real_benchmark_is_imported_whole():
    reading = read_carlgt(ROOT)
    assert reading.ok, reading.problems[:5]
    assert reading.counts() == {
        "d_separation": 4952,
        "conditional_independence": 4952,
        "causal_direction": 426,
        "intervention": 510,  # 10 large graphs × 51; small graphs' values have no questions
        "counterfactual": 610,
    }
    assert len(reading.skipped) == 11
    yes_no = [r for r in reading.records if r.task == "d_separation" and r.graph_id == 100]
    assert [(r.question, r.answer) for r in yes_no[:1]] == [
        ("Are V5 and V9 d-seperated given V4?", "yes")
    ]
    project = services.carlgt_project_create(slug="carlgt", name="CARL-GT")
    report = services.carlgt_import(project=project, directory=ROOT)
    assert report.ok and report.created == 11450
    counts = {(r["task"], r["graph_size"]): r["count"] for r in services.question_counts(project)}
    assert counts[("counterfactual", "small")] == 100
    assert counts[("counterfactual", "large")] == 510
    assert counts[("intervention", "large")] == 510


INTERVENTION = re.compile(
    r"intervention value on (V\d+) is (\S+), what is the expectation of the interventional "
    r"distribution of (V\d+)"
)
COUNTERFACTUAL = re.compile(
    r"values of V0 to V\d+ are (.*?),\s*what is the expectation of the distribution of (V\d+) "
    r"if the value of (V\d+) is (\S+?)\?"
)


@pytest.mark.shared_data
@pytest.mark.skipif(not ROOT.is_dir(), reason=f"shared CARL-GT data not found at {ROOT}")
def test_the_evidence_behind_the_intervention_pairing():
    """What the decision in graphs/README.md ("Which intervention file pairs with which") rests
    on, checked on the real files:

    * the shared questions file has one line per value of every large graph (51), and line k of
      it intervenes on the same variable with the same value as line k of every graph's
      counterfactual questions (one intervention list for the whole benchmark, V(k-1));
    * its targets name variables a small graph (V0–V9) does not have: it is not theirs;
    * where a graph's counterfactual question on line k asks about the same target, "no causal
      effect" must show in both files (the interventional expectation exactly 0, the
      counterfactual value equal to the observed one): it does on 11 of the 12 such lines, and
      not on graph 5's line 32 (expectation 0.0359, counterfactual unchanged) — so the shared
      targets cannot be every graph's."""
    data = ROOT / "carl_gt" / "data"
    shared = [
        INTERVENTION.search(line).groups()
        for line in open(data / "table/intervention_questions.txt")
    ]
    assert len(shared) == 51
    assert max(int(target[1:]) for _, _, target in shared[:10]) > 9
    agree, disagree = 0, []
    for graph in [*range(1, 11), *range(100, 110)]:
        truth = [float(v) for v in open(data / f"table/intervention_{graph}_gt.txt")]
        assert len(truth) == (51 if graph < 100 else 10)
        answers = [float(v) for v in open(data / f"table/counterfactual_answers_{graph}.txt")]
        lines = open(data / f"table/counterfactual_questions_{graph}.txt").read().splitlines()
        for k, (line, answer) in enumerate(zip(lines, answers, strict=True)):
            observed, target, variable, value = COUNTERFACTUAL.search(line).groups()
            assert (variable, float(value)) == (shared[k][0], float(shared[k][1]))
            if graph >= 100 or target != shared[k][2]:
                continue
            seen = float(observed.split(",")[int(target[1:])])
            no_effect_here = abs(answer - seen) < 1e-3
            if no_effect_here == (truth[k] == 0.0):
                agree += 1
            else:
                disagree.append((graph, k + 1))
    assert (agree, disagree) == (11, [(5, 32)])


def test_lines_are_read_by_the_import_core_and_checked_by_registered_schemas(tmp_path):
    from graphs.carlgt import NUMBER_SCHEMA, YES_NO_SCHEMA
    from imports.core.schema import schema_for_kind

    assert schema_for_kind("graphs.carlgt_yes_no") is YES_NO_SCHEMA
    assert schema_for_kind("graphs.carlgt_number") is NUMBER_SCHEMA
    write(tmp_path, {**GOOD, "graph/1_answers.txt": "no\ryes\r"})  # old Mac line ends
    reading = read_carlgt(tmp_path)
    assert reading.ok, reading.problems
    assert [r.answer for r in reading.records if r.task == "d_separation"] == ["no", "yes"]


def test_a_file_that_is_not_utf8_is_named_by_line_and_column(tmp_path):
    write(tmp_path, GOOD)
    (tmp_path / "carl_gt" / "data" / "graph" / "1_answers.txt").write_bytes(b"no\ny\xe9s\n")
    [problem] = read_carlgt(tmp_path).problems
    assert str(problem).startswith(
        "graph/1_answers.txt: line 2, column 2: not UTF-8 (byte 0xE9 at offset 4)"
    )
