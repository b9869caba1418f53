"""Potato's output read as Potato 2.12.1 writes it (tests/interop/fixtures/potato_2_12: three
simulated annotators, written by ``potato start`` and ``python -m potato.simulator``; see
interop/README.md, "Fixtures"), and Potato 1.x's annotated_instances.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.errors import ApplicationError
from interop.potato import potato_read

FIXTURE = Path(__file__).parent / "fixtures" / "potato_2_12"


def fixture_files() -> dict[str, bytes]:
    return {
        str(path.relative_to(FIXTURE)): path.read_bytes()
        for path in sorted(FIXTURE.rglob("*"))
        if path.is_file()
    }


def test_a_real_potato_output_gives_every_instance_and_each_users_answers():
    export = potato_read(fixture_files(), name="potato_2_12")
    assert [task.external_id for task in export.tasks] == ["p1", "p2", "p3", "p4"]
    assert export.tasks[0].data["text"].startswith("The storm knocked out power")
    assert export.fields() == {"relation": {"radio"}, "plausibility": {"likert"}}
    first = export.tasks[0]
    raters = {answer.rater for answer in first.answers}
    assert raters == {"sim_user_0000", "sim_user_0001", "sim_user_0002"}
    state = json.loads((FIXTURE / "annotation_output/sim_user_0000/user_state.json").read_text())
    stored = dict(
        (pair[0]["schema"], pair[0]["name"])
        for pair in state["instance_id_to_label_to_value"]["p1"]
    )
    mine = {a.field: a.value for a in first.answers if a.rater == "sim_user_0000"}
    assert mine == {"relation": [stored["relation"]], "plausibility": stored["plausibility"]}


def test_without_its_config_the_schemes_are_told_from_the_answers():
    files = {k: v for k, v in fixture_files().items() if not k.endswith(".yaml")}
    export = potato_read(files, name="no config")
    assert export.fields() == {"relation": {"radio"}, "plausibility": {"likert"}}


def test_potato_1_annotated_instances_are_read_too():
    files = {
        "data/items.jsonl": b'{"id": "a", "text": "One."}\n{"id": "b", "text": "Two."}\n',
        "annotation_output/ann@example.org/annotated_instances.jsonl": json.dumps(
            {"id": "a", "label_annotations": {"relation": {"causal": "true"}}}
        ).encode(),
    }
    export = potato_read(files, name="v1")
    assert export.tasks[0].answers[0].value == ["causal"]
    assert export.tasks[0].answers[0].rater == "ann@example.org"
    assert export.tasks[1].answers == []


def test_an_answer_to_an_instance_not_in_the_data_is_named_with_its_file():
    files = fixture_files()
    files["data/items.jsonl"] = b'{"id": "p1", "text": "Only one."}\n'
    with pytest.raises(ApplicationError) as caught:
        potato_read(files, name="potato_2_12")
    problems = caught.value.extra["problems"]
    assert (
        "annotation_output/sim_user_0000/user_state.json, task p2, id: is not an instance"
        in (problems[0])
    )
    assert len(problems) == 9  # p2–p4 for each of the three users


def test_a_folder_without_annotation_output_is_refused_in_words():
    with pytest.raises(ApplicationError, match="annotation_output/<user>/user_state.json"):
        potato_read({"data/items.jsonl": b'{"id": "a", "text": "x"}\n'}, name="upload.zip")
