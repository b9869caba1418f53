"""annotation.api, the engine's public API for plug-ins: every name it promises resolves, and the
services it adds for plug-ins (historic annotations, discarding items, linking authors, the
record-and-score policy base) keep the engine's invariants. On SQLite and PostgreSQL (the
historic import writes with COPY there)."""

from __future__ import annotations

import pytest

from annotation import api
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
