"""annotation.api, the engine's public API for plug-ins: every name it promises resolves, the
services it adds for plug-ins (historic annotations, discarding items, linking authors,
accepting items, project settings, the record-and-score policy base) keep the engine's
invariants, and no plug-in writes the engine's rows itself. On SQLite and PostgreSQL (the
historic import writes with COPY there)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from django.db import models

from annotation import api
from annotation import models as engine_models
from annotation.errors import ApplicationError, Conflict
from annotation.models import Annotation, Item, ItemStage, Resolution
from annotation.policies import Ballot, PolicySettings, RecordPolicy
from tests.factories import make_items, make_member, make_project, make_user, make_verify_stage

pytestmark = pytest.mark.django_db


def test_every_name_the_api_promises_resolves():
    assert sorted(api.__all__) == sorted(set(api.__all__))
    assert all(hasattr(api, name) for name in api.__all__)
    assert api.EVERYONE == 100_000


def _historic_stage(project):
    return api.stage_create(
        project=project, slug="historic", name="Historic", kind="verify", overlap=1, is_active=False
    )


def _mean(payloads):
    values = [payload["score"] for payload in payloads]
    mean = sum(values) / len(values)
    return api.HistoricResolution(value=mean, outcome="accept" if mean >= 5 else "reject")


def test_historic_annotations_are_resolved_item_stages_whose_counters_equal_the_rows():
    project = make_project()
    make_verify_stage(project)
    items = make_items(project, 2)
    stage = _historic_stage(project)
    result = api.historic_annotations_import(
        stage=stage,
        annotations=[
            api.HistoricAnnotation(item_id=items[0].pk, payload={"score": 8}, external_rater="a"),
            api.HistoricAnnotation(item_id=items[0].pk, payload={"score": 4}, external_rater="b"),
            api.HistoricAnnotation(item_id=items[1].pk, payload={"score": 2}),
        ],
        resolve=_mean,
        client_info={"via": "import"},
        key="file-1",
    )
    assert (result.annotations, result.item_stages_created, result.item_stages_updated) == (3, 2, 0)
    first = ItemStage.objects.get(stage=stage, item=items[0])
    assert first.state == ItemStage.State.RESOLVED
    assert (first.target_count, first.submitted_count, first.leased_count) == (2, 2, 0)
    assert (first.resolution.value, first.resolution.outcome) == (6.0, "accept")
    assert first.resolution.n_annotations == 2
    assert first.resolution.policy == stage.resolution_policy
    second = ItemStage.objects.get(stage=stage, item=items[1])
    assert second.resolution.outcome == "reject"
    rows = Annotation.objects.filter(item_stage__stage=stage)
    assert {(a.assignment_id, a.annotator_id, a.item_version, a.version) for a in rows} == {
        (None, None, None, 1)
    }
    assert {a.client_info["import_key"] for a in rows} == {"file-1"}

    # A second import adds up and resolves again over every annotation.
    again = api.historic_annotations_import(
        stage=stage,
        annotations=[api.HistoricAnnotation(item_id=items[0].pk, payload={"score": 0})],
        resolve=_mean,
        key="file-2",
    )
    assert (again.item_stages_created, again.item_stages_updated) == (0, 1)
    first.refresh_from_db()
    assert (first.target_count, first.submitted_count) == (3, 3)
    assert Resolution.objects.get(item_stage=first).value == 4.0
    assert Resolution.objects.get(item_stage=first).n_annotations == 3


def test_historic_imports_read_their_items_in_slices_a_statement_can_bind(monkeypatch):
    """More items than one statement's parameters (65,535 on PostgreSQL) are read in slices:
    here slices of 2, so every look-up takes several statements, and the result is the same."""
    from annotation.services import historic

    monkeypatch.setattr(historic, "IDS_PER_STATEMENT", 2)
    project = make_project()
    make_verify_stage(project)
    items = make_items(project, 5)
    stage = _historic_stage(project)
    rows = [
        api.HistoricAnnotation(item_id=item.pk, payload={"score": score}, external_rater=rater)
        for item in items
        for score, rater in ((8, "a"), (2, "b"))
    ]
    first = api.historic_annotations_import(stage=stage, annotations=rows, resolve=_mean, key="1")
    assert (first.annotations, first.item_stages_created) == (10, 5)
    again = api.historic_annotations_import(
        stage=stage,
        annotations=[
            api.HistoricAnnotation(item_id=item.pk, payload={"score": 5}) for item in items
        ],
        resolve=_mean,
        key="2",
    )
    assert (again.item_stages_created, again.item_stages_updated) == (0, 5)
    values = Resolution.objects.filter(item_stage__stage=stage).values_list("value", flat=True)
    assert sorted(values) == [5.0] * 5
    assert set(ItemStage.objects.filter(stage=stage).values_list("submitted_count", flat=True)) == {
        3
    }


def test_a_key_imported_before_is_refused_and_nothing_is_written():
    project = make_project()
    make_verify_stage(project)
    (item,) = make_items(project, 1)
    stage = _historic_stage(project)
    rows = [api.HistoricAnnotation(item_id=item.pk, payload={"score": 7})]
    api.historic_annotations_import(stage=stage, annotations=rows, resolve=_mean, key="same")
    with pytest.raises(Conflict):
        api.historic_annotations_import(stage=stage, annotations=rows, resolve=_mean, key="same")
    assert Annotation.objects.filter(item_stage__stage=stage).count() == 1


def test_historic_annotations_need_an_inactive_stage_and_the_stage_projects_items():
    project = make_project()
    live = make_verify_stage(project)
    (item,) = make_items(project, 1)
    rows = [api.HistoricAnnotation(item_id=item.pk, payload={"score": 7})]
    with pytest.raises(ApplicationError, match="inactive"):
        api.historic_annotations_import(stage=live, annotations=rows, resolve=_mean)
    other = make_project()
    make_verify_stage(other)
    (foreign,) = make_items(other, 1, prefix="other")
    with pytest.raises(ApplicationError, match="not items of this stage's project"):
        api.historic_annotations_import(
            stage=_historic_stage(project),
            annotations=[api.HistoricAnnotation(item_id=foreign.pk, payload={"score": 1})],
            resolve=_mean,
        )
    assert not Annotation.objects.filter(external_rater="", assignment__isnull=True).exists()


def test_items_discard_touches_only_the_projects_items():
    project, other = make_project(), make_project()
    make_verify_stage(project)
    make_verify_stage(other)
    mine = make_items(project, 2)
    (theirs,) = make_items(other, 1, prefix="other")
    assert api.items_discard(project=project, item_ids=[mine[0].pk, theirs.pk]) == 1
    statuses = dict(Item.objects.values_list("pk", "status"))
    assert statuses[mine[0].pk] == Item.Status.DISCARDED
    assert statuses[mine[1].pk] == Item.Status.ACTIVE
    assert statuses[theirs.pk] == Item.Status.ACTIVE
    assert api.items_discard(project=project, item_ids=[mine[0].pk]) == 0


def test_items_author_link_sets_members_as_authors_of_items_without_one():
    project = make_project()
    make_verify_stage(project)
    items = make_items(project, 3)
    member = make_member(project)
    stranger = make_user()
    Item.objects.filter(pk=items[2].pk).update(author=stranger)
    linked = api.items_author_link(
        project=project,
        authors={items[0].pk: member.pk, items[1].pk: stranger.pk, items[2].pk: member.pk},
    )
    assert linked == 1
    authors = dict(Item.objects.filter(project=project).values_list("pk", "author_id"))
    assert authors == {items[0].pk: member.pk, items[1].pk: None, items[2].pk: stranger.pk}


class _ShareRight(RecordPolicy):
    key = "test_share_right"
    label = "Share right"

    def score(self, ballots, settings):
        truth = settings.item_payload.get("answer")
        votes = [ballot.vote for ballot in ballots if ballot.vote is not None]
        if not votes or truth is None:
            return None
        return sum(vote == truth for vote in votes) / len(votes), "share correct"


def test_a_record_policy_accepts_every_item_stage_with_its_score():
    policy = _ShareRight()
    ballots = [Ballot(vote="y", payload={}), Ballot(vote="n", payload={})]
    decided = policy.decide(ballots, PolicySettings(item_payload={"answer": "y"}))
    assert (decided.value, decided.status, decided.outcome) == (0.5, "mean", "accept")
    assert decided.reason == "share correct"
    unscored = policy.decide(ballots, PolicySettings())
    assert (unscored.value, unscored.outcome, unscored.reason) == (
        None,
        "accept",
        "answers recorded",
    )
    assert policy.outcomes == ("accept",)
    with pytest.raises(ValueError, match="no option anything"):
        policy.validate_settings(PolicySettings(options={"anything": 1}))


def test_items_accept_marks_active_items_of_the_project_unless_work_may_come_in_the_stage():
    project, other = make_project(), make_project()
    done, live, dropped = make_items(project, 3)  # no stage yet: no item stage either
    (theirs,) = make_items(other, 1, prefix="other")
    stage = make_verify_stage(project)
    api.item_stages_open(items=[live], stage=stage)
    api.items_discard(project=project, item_ids=[dropped.pk])
    accepted = api.items_accept(
        project=project,
        item_ids=[done.pk, live.pk, dropped.pk, theirs.pk],
        unless_in_stage=stage,
    )
    assert accepted == 1
    statuses = dict(Item.objects.values_list("pk", "status"))
    assert statuses == {
        done.pk: Item.Status.ACCEPTED,
        live.pk: Item.Status.ACTIVE,
        dropped.pk: Item.Status.DISCARDED,
        theirs.pk: Item.Status.ACTIVE,
    }
    assert api.items_accept(project=project, item_ids=[live.pk]) == 1
    assert ItemStage.objects.get(item=live).state == ItemStage.State.OPEN  # only the item


def test_project_settings_update_merges_keys_and_refuses_what_cannot_be_stored():
    project = make_project(settings={"gate": "strict", "seed": 3})
    stored = api.project_settings_update(project=project, changes={"seed": 4, "threshold": 0.8})
    expected = {"gate": "strict", "seed": 4, "threshold": 0.8}
    assert stored.settings == project.settings == expected
    project.refresh_from_db()
    assert project.settings == expected
    with pytest.raises(ApplicationError, match="cannot be stored"):
        api.project_settings_update(project=project, changes={"note": "a\x00b"})
    with pytest.raises(ApplicationError, match="mapping"):
        api.project_settings_update(project=project, changes={1: "one"})
    project.refresh_from_db()
    assert project.settings == expected


def test_items_create_names_ids_stored_before_however_many_rows_come(monkeypatch):
    from annotation.services import setup

    monkeypatch.setattr(setup, "_IDS_PER_LOOKUP", 2)  # several lookups for five rows
    project = make_project()
    api.items_create(project=project, rows=[{"external_id": "e4", "payload": {}}])
    rows = [{"external_id": f"e{n}", "payload": {}} for n in range(5)]
    with pytest.raises(ApplicationError, match="already exist") as refused:
        api.items_create(project=project, rows=rows)
    assert refused.value.extra == {"external_id": ["e4"]}
    with pytest.raises(ApplicationError, match="more than once: e1"):
        api.items_create(project=project, rows=[*rows[:2], rows[1]])
    assert list(Item.objects.values_list("external_id", flat=True)) == ["e4"]


#: Plug-in modules allowed to write engine rows themselves, with why. Nothing else is.
_WRITES_ALLOWED = {
    # Demo data: the simulated participants' leases are moved back in time after each submit,
    # so the demo's "too fast" check sees reading time (no real path does this).
    "crowd/demo.py",
    "quality/demo.py",  # the same, for the gold-checks study's times per item
}
_PLUGINS = ("ratings", "review", "graphs", "narratives", "crowd", "studio", "llm", "quality")
_WRITES = {"create", "update", "bulk_create", "bulk_update", "delete"}
_WRITES |= {"get_or_create", "update_or_create"}


def _engine_writes(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, "Model.method") of every ``Model.objects….write(…)`` on an engine model."""
    engine = {
        name
        for name, value in inspect.getmembers(engine_models, inspect.isclass)
        if issubclass(value, models.Model) and value.__module__ == engine_models.__name__
    }
    found = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _WRITES
        ):
            continue
        inner = node.func.value
        while isinstance(inner, ast.Call | ast.Attribute | ast.Subscript):
            if (
                isinstance(inner, ast.Attribute)
                and inner.attr in ("objects", "all_versions")
                and isinstance(inner.value, ast.Name)
                and inner.value.id in engine
            ):
                found.append((node.lineno, f"{inner.value.id}.{node.func.attr}"))
                break
            inner = inner.func if isinstance(inner, ast.Call) else inner.value
    return found


def test_the_scan_finds_a_plugins_write_of_an_engine_row():
    code = "Item.objects.filter(pk=1).exclude(pk=2).update(status='accepted')\n"
    code += "ItemStage.objects.bulk_create([])\nPair.objects.create()\n"
    assert _engine_writes(ast.parse(code)) == [(1, "Item.update"), (2, "ItemStage.bulk_create")]


def test_no_plugin_writes_engine_rows_itself():
    """CONTRIBUTING.md, "Apps and boundaries": plug-ins write annotations, item stages,
    resolutions, items, stages and projects only through annotation.api's services."""
    root = Path(__file__).resolve().parents[2]
    found = [
        f"{path.relative_to(root)}:{line}: {write}"
        for app in _PLUGINS
        for path in sorted((root / app).rglob("*.py"))
        if "migrations" not in path.parts and str(path.relative_to(root)) not in _WRITES_ALLOWED
        for line, write in _engine_writes(ast.parse(path.read_text()))
    ]
    assert found == [], "call an annotation.api service instead"
    assert all((root / path).exists() for path in _WRITES_ALLOWED)
