"""Label Studio's JSON export read as Label Studio 1.23.2 writes it
(tests/interop/fixtures/label_studio_1_23.json: four tasks, three people — one annotation
cancelled —, a prediction; interop/README.md, "Fixtures"), imported into a label stage and a
rating stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation import api as engine
from annotation.models import Annotation, Resolution
from interop.labelstudio import label_studio_read
from interop.services import interop_import
from tests.factories import make_label_stage, make_project

FIXTURE = Path(__file__).parent / "fixtures" / "label_studio_1_23.json"


def _export():
    return label_studio_read(FIXTURE.read_bytes(), filename=FIXTURE.name)


def test_the_real_export_reads_as_tasks_with_each_persons_answers():
    export = _export()
    assert [task.source_id for task in export.tasks] == ["1", "2", "3", "4"]
    assert export.tasks[0].data == {"text": "The storm knocked out power, so the school closed."}
    assert export.fields() == {"relation": {"choices"}, "plausibility": {"rating"}}
    assert export.skipped == {"predictions": 1, "cancelled annotations": 1}
    first = {(a.rater, a.field): a.value for a in export.tasks[0].answers}
    assert first[("1", "relation")] == ["causal"] and first[("1", "plausibility")] == 4


@pytest.mark.django_db
def test_the_real_export_goes_into_a_label_stage_and_a_rating_stage():
    project = make_project(slug="from-ls")
    make_label_stage(project, choices=("causal", "temporal", "unrelated"))
    labels = make_label_stage(
        project,
        slug="ls-relation",
        name="Relation (Label Studio)",
        choices=("causal", "temporal", "unrelated"),
        is_active=False,
    )
    ratings = engine.stage_create(
        project=project,
        slug="ls-plausibility",
        name="Plausibility (Label Studio)",
        kind="rate",
        config={"min": 1, "max": 5},
        resolution_policy="mean",
        is_active=False,
    )
    export = _export()
    first = interop_import(project=project, stage=labels, export=export, field="relation", key="a")
    assert (first.items_created, first.annotations, first.raters) == (4, 11, 3)
    second = interop_import(
        project=project, stage=ratings, export=export, field="plausibility", key="b"
    )
    assert (second.items_created, second.items_existing, second.annotations) == (0, 4, 11)
    means = dict(
        Resolution.objects.filter(item_stage__stage=ratings).values_list(
            "item_stage__item__external_id", "value"
        )
    )
    raw = json.loads(FIXTURE.read_text())
    for task in raw:
        given = [
            result["value"]["rating"]
            for annotation in task["annotations"]
            if not annotation["was_cancelled"]
            for result in annotation["result"]
            if result["from_name"] == "plausibility"
        ]
        assert means[str(task["id"])] == pytest.approx(sum(given) / len(given))
    # One rater per Label Studio user, the same in both stages.
    by_stage = {
        slug: set(
            Annotation.objects.filter(item_stage__stage__slug=slug).values_list(
                "external_rater", flat=True
            )
        )
        for slug in ("ls-relation", "ls-plausibility")
    }
    assert by_stage["ls-relation"] == by_stage["ls-plausibility"]
    assert len(by_stage["ls-relation"]) == 3
