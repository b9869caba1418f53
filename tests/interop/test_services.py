"""Importing another tool's export into a project: items through the engine, answers as
historic work by pseudonymous raters, decided by the stage's policy; all or nothing; and a
project exported as Label Studio tasks imports back into another project unchanged."""

from __future__ import annotations

import json

import pytest

from annotation.errors import ApplicationError, Conflict
from annotation.models import Annotation, Item, ItemStage, Resolution
from interop.demo import demo_export
from interop.labelstudio import label_studio_read
from interop.selectors import label_studio_json
from interop.services import interop_import
from tests.factories import make_label_stage, make_project
from tests.interop.test_potato import fixture_files

pytestmark = pytest.mark.django_db

CHOICES = ("causal", "temporal", "unrelated")


def _project(slug="interop"):
    project = make_project(slug=slug)
    make_label_stage(project, choices=CHOICES)
    earlier = make_label_stage(
        project, slug="earlier", name="Earlier labels", choices=CHOICES, is_active=False
    )
    return project, earlier


def _read(tasks, name="export.json"):
    return label_studio_read(json.dumps(tasks).encode(), filename=name)


def _database():
    return (
        sorted(Item.objects.values_list("external_id", flat=True)),
        Annotation.objects.count(),
        ItemStage.objects.count(),
        Resolution.objects.count(),
    )


def test_a_label_studio_export_becomes_items_and_historic_answers_by_pseudonyms():
    project, earlier = _project()
    result = interop_import(
        project=project, stage=earlier, export=_read(demo_export()), field=None, key="k1"
    )
    assert (result.tasks, result.items_created, result.annotations, result.raters) == (8, 8, 23, 3)
    assert result.skipped == {"predictions": 2, "cancelled annotations": 1}
    raters = set(Annotation.objects.values_list("external_rater", flat=True))
    assert len(raters) == 3 and all(rater.startswith("ls-N") for rater in raters)
    stored = json.dumps(list(Annotation.objects.values("payload", "external_rater", "client_info")))
    assert "example.org" not in stored and "rater13" not in stored
    # Task 2: 11 and 13 said causal, 12 temporal → a majority for causal.
    item = Item.objects.get(project=project, external_id="2")
    decided = Resolution.objects.get(item_stage__item=item, item_stage__stage=earlier)
    assert (decided.value, decided.status, decided.n_annotations) == ("causal", "majority", 3)
    # The new items also wait in the first active stage, as any new item.
    assert ItemStage.objects.filter(item=item, stage__slug="label").exists()


def test_the_same_person_gets_the_same_rater_in_a_second_file():
    project, earlier = _project()
    tasks = demo_export()
    interop_import(project=project, stage=earlier, export=_read(tasks[:4]), field=None, key="a")
    interop_import(project=project, stage=earlier, export=_read(tasks[4:]), field=None, key="b")
    assert Annotation.objects.values("external_rater").distinct().count() == 3


def test_every_problem_is_named_by_file_task_and_field_and_nothing_is_written():
    project, earlier = _project()
    tasks = demo_export()
    tasks[1]["annotations"][0]["result"][0]["value"]["choices"] = ["sarcastic"]
    tasks[3]["annotations"][1]["result"][0]["value"]["choices"] = ["causal", "temporal"]
    tasks[5]["annotations"][2]["result"][0]["type"] = "labels"
    before = _database()
    with pytest.raises(ApplicationError) as caught:
        interop_import(
            project=project, stage=earlier, export=_read(tasks, "ls.json"), field=None, key="k"
        )
    problems = caught.value.extra["problems"]
    assert len(problems) == 3
    assert problems[0].startswith("ls.json, task 2, annotations[0].result[0]: relation: Choose")
    assert "sarcastic" in problems[0]
    assert problems[1] == "ls.json, task 4, annotations[1].result[0]: relation holds 2 choices"
    assert "task 6, annotations[2].result[0]: relation is a labels answer" in problems[2]
    assert _database() == before


def test_a_malformed_file_names_its_tasks():
    with pytest.raises(ApplicationError) as caught:
        _read([{"id": 1, "data": {"text": "x"}}, {"data": {"text": "y"}}, {"id": 1, "data": {}}])
    assert caught.value.extra["problems"] == [
        "export.json, task #2, id: is missing (every task of an export has one)",
        "export.json, task 1, data: is missing or not an object",
    ]
    with pytest.raises(ApplicationError, match="is not JSON"):
        label_studio_read(b"[{", filename="broken.json")


def test_an_active_stage_or_a_second_import_of_one_file_is_refused_unchanged():
    project, earlier = _project()
    active = project.stages.get(slug="label")
    with pytest.raises(ApplicationError, match="is active"):
        interop_import(
            project=project, stage=active, export=_read(demo_export()), field=None, key="k"
        )
    interop_import(project=project, stage=earlier, export=_read(demo_export()), field=None, key="k")
    before = _database()
    with pytest.raises(Conflict):
        interop_import(
            project=project, stage=earlier, export=_read(demo_export()), field=None, key="k"
        )
    assert _database() == before


def test_a_potato_output_into_a_rating_stage_and_a_label_stage():
    from interop.potato import potato_read

    project = make_project(slug="potato")
    make_label_stage(project, choices=CHOICES)
    relation = make_label_stage(
        project, slug="relation", name="Relation", choices=("causal", "not_causal"), is_active=False
    )
    export = potato_read(fixture_files(), name="potato")
    with pytest.raises(ApplicationError, match="several fields"):
        interop_import(project=project, stage=relation, export=export, field=None, key="p")
    result = interop_import(
        project=project, stage=relation, export=export, field="relation", key="p"
    )
    assert (result.items_created, result.annotations, result.raters) == (4, 12, 3)
    assert result.skipped == {"answers to other fields": 12}
    assert all(
        rater.startswith("potato-N")
        for rater in Annotation.objects.values_list("external_rater", flat=True)
    )


def test_a_project_exported_as_label_studio_tasks_imports_back_with_its_decisions():
    project, earlier = _project()
    interop_import(project=project, stage=earlier, export=_read(demo_export()), field=None, key="k")
    text = "".join(label_studio_json(project))
    tasks = json.loads(text)
    assert len(tasks) == 8
    first = tasks[0]
    assert first["data"]["sentence_a"] == "The kettle was left on the stove."
    assert first["annotations"][0]["ground_truth"] is True
    assert first["annotations"][0]["result"][0]["from_name"] == "earlier"
    assert first["annotations"][0]["result"][0]["value"] == {"choices": ["causal"]}

    copy, copy_stage = _project(slug="copy")
    result = interop_import(
        project=copy, stage=copy_stage, export=_read(tasks), field="earlier", key="round trip"
    )
    assert result.annotations == 8
    original = dict(
        Resolution.objects.filter(item_stage__stage=earlier).values_list(
            "item_stage__item__external_id", "value"
        )
    )
    copied = dict(
        Resolution.objects.filter(item_stage__stage=copy_stage).values_list(
            "item_stage__item__external_id", "value"
        )
    )
    assert copied == original
    assert dict(Item.objects.filter(project=copy).values_list("external_id", "payload")) == dict(
        Item.objects.filter(project=project).values_list("external_id", "payload")
    )
