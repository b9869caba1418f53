"""Routes as data, registered policies and the pipeline graph (annotation.routing,
annotation.policies, annotation.pipeline), through the services that carry them out."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.errors import ApplicationError
from annotation.models import Item, ItemRevision, ItemStage, Resolution, Role
from annotation.pipeline import pipeline_svg, project_pipeline
from annotation.policies import POLICIES, Policy, register_policy
from annotation.resolution import Decision
from tests.factories import (
    PASSWORD,
    annotate_stage,
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_verify_stage,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def work(django_capture_on_commit_callbacks):
    """annotate_stage until nobody gets an item, resolving (on commit) after each pass, so that
    items reopened by a route are worked on again."""

    def run(stage, people, choose):
        total = 0
        while True:
            with django_capture_on_commit_callbacks(execute=True):
                done = annotate_stage(stage, people, choose)
            total += done
            if not done:
                return total

    return run


def states(stage):
    return sorted(ItemStage.objects.filter(stage=stage).values_list("state", flat=True))


def test_without_routes_a_stage_follows_on_accept_and_on_reject(work):
    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    label = make_label_stage(project, overlap=1)
    make_items(project, 2)
    alice = make_member(project)
    work(
        verify, [alice], lambda person, item: "keep" if item.external_id.endswith("0") else "reject"
    )
    assert states(verify) == ["discarded", "resolved"]
    assert ItemStage.objects.filter(stage=label).count() == 1
    assert sorted(Item.objects.values_list("status", flat=True)) == ["active", "discarded"]


def test_a_route_sends_rejects_to_a_named_stage_and_accepts_to_finish(work):
    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    label = make_label_stage(project, overlap=1)
    services.stage_update(
        stage=verify,
        routes={"reject": {"action": "stage", "stage": "label"}, "accept": {"action": "finish"}},
    )
    make_items(project, 2)
    alice = make_member(project)
    work(
        verify, [alice], lambda person, item: "keep" if item.external_id.endswith("0") else "reject"
    )
    assert ItemStage.objects.filter(stage=label).count() == 1
    assert sorted(Item.objects.values_list("status", flat=True)) == ["accepted", "active"]


def test_a_back_route_reopens_the_stage_for_another_round_until_the_cap(work):
    project = make_project()
    verify = make_verify_stage(
        project,
        overlap=1,
        routes={
            "reject": {
                "action": "back",
                "stage": "verify",
                "max_loops": 2,
                "otherwise": {"action": "discard", "reason": "rejected three times"},
            }
        },
    )
    make_items(project, 1)
    people = [make_member(project) for _ in range(4)]
    work(verify, people, lambda person, item: "reject")
    item_stage = ItemStage.objects.get(stage=verify)
    # Round 0, then two loops: three rejections, then the cap discards it.
    assert (item_stage.round, item_stage.state) == (2, "discarded")
    assert item_stage.annotations.count() == 3
    assert sorted(item_stage.annotations.values_list("round", flat=True)) == [0, 1, 2]
    assert Item.objects.get().status == "discarded"
    assert Resolution.objects.get(item_stage=item_stage).reason == "rejected three times"


def test_a_back_route_to_a_stage_the_item_never_entered_counts_that_first_visit_as_loop_one(
    work,
):
    # An author-revision stage items enter only when sent back: max_loops=1 allows one visit.
    project = make_project()
    fix = make_verify_stage(project, slug="fix", name="Fix", overlap=1)
    check = make_verify_stage(
        project,
        slug="check",
        name="Check",
        overlap=1,
        routes={
            "reject": {
                "action": "back",
                "stage": "fix",
                "max_loops": 1,
                "otherwise": {"action": "discard", "reason": "still rejected"},
            }
        },
    )
    services.stage_update(stage=fix, routes={"accept": {"action": "stage", "stage": "check"}})
    item = services.items_create(
        project=project,
        rows=[{"external_id": "x", "payload": {"text": "t"}}],
        open_first_stage=False,
    )[0]
    services.item_stages_open(items=[item], stage=check)
    people = [make_member(project) for _ in range(3)]
    work(check, people[:1], lambda person, item: "reject")
    assert ItemStage.objects.get(stage=fix).round == 1
    work(fix, people[1:2], lambda person, item: "keep")
    work(check, people[2:], lambda person, item: "reject")
    assert ItemStage.objects.get(stage=fix).state == "resolved"  # not reopened a second time
    assert Item.objects.get().status == "discarded"


def test_a_decided_listener_runs_inside_the_decision_and_its_failure_rolls_it_back(work):
    from annotation import events

    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    make_items(project, 1)
    seen = []

    def listener(item_stage, resolution):
        seen.append((item_stage.stage.slug, resolution.outcome))
        if len(seen) == 1:
            raise RuntimeError("listener failed")

    events.on_item_stage_decided(listener)
    try:
        person = make_member(project)
        assignment = services.assignment_next(annotator=person, stage=verify)
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=person, payload={"value": "keep"}
        )
        from annotation.services.outcomes import item_stage_resolve

        with pytest.raises(RuntimeError):
            item_stage_resolve(item_stage_id=assignment.item_stage_id)
        assert ItemStage.objects.get().state == "resolving"  # rolled back
        assert not Resolution.objects.exists()
        item_stage_resolve(item_stage_id=assignment.item_stage_id)
        assert ItemStage.objects.get().state == "resolved"
        assert seen == [("verify", "accept"), ("verify", "accept")]
    finally:
        events._decided_listeners.remove(listener)


class PickLongest(Policy):
    """A test policy: the longest edit wins and becomes the item's new text."""

    key = "pick_longest_for_tests"
    label = "Longest edit"
    outcomes = ("revise", "reject")

    def decide(self, ballots, settings):
        texts = [ballot.payload.get("comment") or "" for ballot in ballots]
        best = max(texts, key=len)
        if not best:
            return Decision(None, "unanimous", "reject", False)
        return Decision(
            best, "majority", "revise", False, revision={"text": best}, reason="longest"
        )


@pytest.fixture
def longest_policy(monkeypatch):
    monkeypatch.setattr(
        "annotation.kinds.simple.VerifyKind.policies",
        ("majority", "unanimity_keep", PickLongest.key),
    )
    register_policy(PickLongest())
    yield
    POLICIES.pop(PickLongest.key, None)


def test_a_registered_policy_revises_the_item_and_the_route_moves_it_on(
    django_capture_on_commit_callbacks, longest_policy
):
    project = make_project()
    verify = make_verify_stage(
        project,
        overlap=2,
        resolution_policy=PickLongest.key,
        routes={"revise": {"action": "revise", "then": {"action": "finish"}}},
    )
    make_items(project, 1)
    people = [make_member(project) for _ in range(2)]
    from annotation.access import access_stage_for_annotator

    with django_capture_on_commit_callbacks(execute=True):
        for person, comment in zip(people, ["Rain fell.", "The rain fell hard."], strict=True):
            stage = access_stage_for_annotator(user=person, stage_id=verify.pk)
            assignment = services.assignment_next(annotator=person, stage=stage)
            services.annotation_submit(
                assignment_id=assignment.pk,
                annotator=person,
                payload={"value": "keep", "comment": comment},
            )
    item = Item.objects.get()
    assert (item.payload, item.version, item.status) == (
        {"text": "The rain fell hard."},
        2,
        "accepted",
    )
    revision = ItemRevision.objects.get(item=item, number=2)
    assert revision.diff["text"]["new"] == "The rain fell hard."
    assert revision.stage == verify and "longest" in revision.reason


def test_routes_are_checked_against_the_policy_and_the_project(longest_policy):
    project = make_project()
    make_verify_stage(project, overlap=1)
    with pytest.raises(ApplicationError, match="never decides 'revise'"):
        make_label_stage(project, routes={"revise": {"action": "finish"}})
    with pytest.raises(ApplicationError, match="no stage 'nowhere'"):
        make_label_stage(project, routes={"accept": {"action": "stage", "stage": "nowhere"}})
    label = make_label_stage(project, overlap=1)
    with pytest.raises(ApplicationError, match="comes later"):
        services.stage_update(
            stage=project.stages.get(slug="verify"),
            routes={"reject": {"action": "back", "stage": "label"}},
        )
    with pytest.raises(ApplicationError, match="max_loops"):
        services.stage_update(
            stage=label, routes={"accept": {"action": "back", "stage": "verify", "max_loops": 0}}
        )
    with pytest.raises(ApplicationError, match="unknown rule"):
        services.stage_update(stage=label, eligibility=[{"rule": "psychic"}])
    with pytest.raises(ApplicationError, match="has no option threshold"):
        services.stage_update(stage=label, policy_options={"threshold": 3})
    label.refresh_from_db()
    assert (label.routes, label.eligibility, label.policy_options) == ({}, [], {})


def test_the_pipeline_graph_counts_items_on_each_edge(work, client):
    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    make_label_stage(project, overlap=1)
    make_items(project, 3)
    alice = make_member(project)
    work(
        verify, [alice], lambda person, item: "reject" if item.external_id.endswith("2") else "keep"
    )
    stages, edges = project_pipeline(project)
    found = {(edge.source, edge.outcome, edge.target): edge.items for edge in edges}
    assert found[("verify", "accept", "label")] == 2
    assert found[("verify", "reject", "discard")] == 1
    assert found[("label", "accept", "finish")] == 0
    svg = pipeline_svg(stages, edges)
    assert svg.startswith("<svg") and "accept · 2" in svg and "Discarded" in svg

    researcher = make_member(project, role=Role.RESEARCHER)
    client.login(username=researcher.username, password=PASSWORD)
    page = client.get(reverse("annotation:project", args=[project.slug])).content.decode()
    assert 'class="pipeline-graph"' in page and "accept · 2" in page
    client.login(username=alice.username, password=PASSWORD)
    page = client.get(reverse("annotation:project", args=[project.slug])).content.decode()
    assert "pipeline-graph" not in page  # annotators see their stages, not the flow counts
