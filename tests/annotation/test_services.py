"""The engine's services: next item, submit, skip, leases, resolution, the two-stage pipeline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError, Conflict, NotFound, PermissionDenied
from annotation.models import Annotation, Assignment, Item, ItemStage, Resolution, Stage
from tests.factories import make_items, make_member, make_project, make_verify_stage, pipeline

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks, monkeypatch):
    """Run on-commit work (the resolve task, eager here) right after each service call, as it
    would run after a real commit."""
    original = services.annotation_submit

    def submit_and_commit(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return original(**kwargs)

    monkeypatch.setattr(services, "annotation_submit", submit_and_commit)


def next_for(user, stage):
    return services.assignment_next(
        annotator=user, stage=access_stage_for_annotator(user=user, stage_id=stage.pk)
    )


def submit(user, assignment, value="keep"):
    return services.annotation_submit(
        assignment_id=assignment.pk, annotator=user, payload={"value": value}
    )


def test_asking_again_while_holding_a_lease_returns_the_same_item():
    _, verify, _, (alice, *_) = pipeline()
    first = next_for(alice, verify)
    again = next_for(alice, verify)
    assert again.pk == first.pk
    assert again.expires_at >= first.expires_at
    assert ItemStage.objects.get(pk=first.item_stage_id).leased_count == 1


def test_an_annotator_never_gets_an_item_twice_and_overlap_is_never_exceeded():
    project, verify, _, people = pipeline(overlap=2, items=3, annotators=4)
    seen: dict[int, list[int]] = {}
    for person in people:
        while (assignment := next_for(person, verify)) is not None:
            seen.setdefault(person.pk, []).append(assignment.item_stage.item_id)
            submit(person, assignment)
    for items in seen.values():
        assert len(items) == len(set(items))
    for item_stage in ItemStage.objects.filter(stage=verify):
        assert item_stage.submitted_count == 2
        assert item_stage.annotations.count() == 2
    # 3 items × 2 slots = 6 annotations shared among 4 people
    assert sum(len(items) for items in seen.values()) == 6


def test_items_in_progress_come_first_for_depth_first_stages():
    project, verify, _, (alice, bob, _) = pipeline(items=10)
    first = next_for(alice, verify)
    submit(alice, first)
    assert next_for(bob, verify).item_stage_id == first.item_stage_id


def test_each_annotator_gets_a_seeded_personal_order():
    project = make_project()
    stage = make_verify_stage(project, overlap=5, order_policy=Stage.OrderPolicy.RANDOM)
    make_items(project, 40)
    people = [make_member(project) for _ in range(3)]
    orders = []
    for person in people:
        order = []
        for _ in range(8):
            assignment = next_for(person, stage)
            order.append(assignment.item_stage.item_id)
            submit(person, assignment)
        orders.append(order)
    assert len({tuple(order) for order in orders}) == 3  # different orders per annotator


def test_random_order_spreads_the_variants_of_one_group():
    project = make_project()
    stage = make_verify_stage(project, overlap=1, order_policy=Stage.OrderPolicy.RANDOM)
    make_items(project, 32, group_size=8)  # 4 groups of 8 variants
    alice = make_member(project)
    groups = []
    for _ in range(8):
        assignment = next_for(alice, stage)
        groups.append(assignment.item_stage.item.group)
        submit(alice, assignment)
    # the first four items come from four different groups, as do the next four
    assert len(set(groups[:4])) == 4 and len(set(groups[4:])) == 4


def test_skip_releases_the_slot_and_the_item_never_comes_back():
    project, verify, _, (alice, bob, carol) = pipeline(overlap=1, items=1)
    assignment = next_for(alice, verify)
    assert next_for(bob, verify) is None  # the only slot is leased
    with pytest.raises(ApplicationError, match="why"):
        services.assignment_skip(assignment_id=assignment.pk, annotator=alice, reason=" ")
    services.assignment_skip(assignment_id=assignment.pk, annotator=alice, reason="unclear text")
    services.assignment_skip(assignment_id=assignment.pk, annotator=alice, reason="twice is fine")
    assert next_for(alice, verify) is None
    assert next_for(bob, verify).item_stage_id == assignment.item_stage_id
    assert Assignment.objects.get(pk=assignment.pk).skip_reason == "unclear text"


def test_a_retried_submit_returns_the_stored_annotation():
    _, verify, _, (alice, *_) = pipeline()
    assignment = next_for(alice, verify)
    first, created = submit(alice, assignment, "keep")
    again, created_again = submit(alice, assignment, "reject")
    assert (created, created_again) == (True, False)
    assert again.pk == first.pk and again.payload["value"] == "keep"
    assert Annotation.objects.count() == 1
    assert ItemStage.objects.get(pk=assignment.item_stage_id).submitted_count == 1


def test_invalid_payload_is_rejected_with_the_field_and_nothing_is_written():
    _, verify, _, (alice, *_) = pipeline()
    assignment = next_for(alice, verify)
    with pytest.raises(ApplicationError) as error:
        submit(alice, assignment, "maybe")
    assert "keep or reject" in error.value.message and "value" in error.value.extra
    assert Annotation.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.ACTIVE


def test_a_foreign_lease_and_an_unknown_one_are_not_found_alike():
    _, verify, _, (alice, bob, _) = pipeline()
    assignment = next_for(alice, verify)
    with pytest.raises(NotFound) as foreign:
        submit(bob, assignment)
    with pytest.raises(NotFound) as unknown:
        services.annotation_submit(assignment_id=999_999, annotator=bob, payload={"value": "keep"})
    assert foreign.value.message == unknown.value.message
    assert not Annotation.objects.filter(assignment=assignment).exists()


def test_an_expired_lease_is_accepted_while_its_slot_is_free_and_refused_once_taken():
    _, verify, _, (alice, bob, _) = pipeline(overlap=1, items=1)
    assignment = next_for(alice, verify)
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(1))
    assert services.leases_reclaim_expired() == 1
    taken = next_for(bob, verify)  # the slot went to bob
    assert taken.item_stage_id == assignment.item_stage_id
    with pytest.raises(Conflict, match="expired"):
        submit(alice, assignment)
    submit(bob, taken)


def test_expired_leases_are_reclaimed_lazily_when_nothing_else_is_left():
    _, verify, _, (alice, bob, _) = pipeline(overlap=1, items=1)
    assignment = next_for(alice, verify)
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(1))
    assert next_for(bob, verify).item_stage_id == assignment.item_stage_id
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.EXPIRED


def test_two_stage_pipeline_end_to_end():
    project, verify, label, people = pipeline(overlap=3, items=4, annotators=3)
    votes = {0: "keep", 1: "keep", 2: "reject"}
    for index, person in enumerate(people):
        while (assignment := next_for(person, verify)) is not None:
            item = assignment.item_stage.item
            # every item is kept by 2 of 3, except item-00003 which all reject
            value = "reject" if item.external_id == "item-00003" else votes[index]
            submit(person, assignment, value)
    resolutions = Resolution.objects.filter(item_stage__stage=verify)
    assert resolutions.count() == 4
    assert set(resolutions.values_list("status", flat=True)) == {"majority", "unanimous"}
    assert ItemStage.objects.filter(stage=label).count() == 3  # kept items advanced
    assert Item.objects.get(external_id="item-00003").status == Item.Status.DISCARDED
    for person in people:
        while (assignment := next_for(person, label)) is not None:
            services.annotation_submit(
                assignment_id=assignment.pk, annotator=person, payload={"value": "causal"}
            )
    assert Item.objects.filter(project=project, status=Item.Status.ACCEPTED).count() == 3
    assert set(
        Resolution.objects.filter(item_stage__stage=label).values_list("value", flat=True)
    ) == {"causal"}


def test_a_tie_goes_to_adjudication_and_a_reviewer_decides():
    project = make_project()
    stage = services.stage_create(
        project=project,
        slug="label",
        name="Label",
        kind="label",
        overlap=2,
        config={"choices": ["a", "b"]},
    )
    make_items(project, 1)
    alice, bob = make_member(project), make_member(project)
    for person, value in ((alice, "a"), (bob, "b")):
        assignment = next_for(person, stage)
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=person, payload={"value": value}
        )
    item_stage = ItemStage.objects.get(stage=stage)
    assert item_stage.state == ItemStage.State.ADJUDICATION
    assert item_stage.resolution.status == "needs_adjudication"
    reviewer = make_member(project, role="reviewer")
    with pytest.raises(ApplicationError, match="reason"):
        services.item_stage_adjudicate(
            item_stage_id=item_stage.pk, reviewer=reviewer, value="a", reason=""
        )
    resolution = services.item_stage_adjudicate(
        item_stage_id=item_stage.pk, reviewer=reviewer, value="a", reason="a fits the guideline"
    )
    assert (resolution.status, resolution.value, resolution.decided_by) == (
        "adjudicated",
        "a",
        reviewer,
    )
    with pytest.raises(Conflict):
        services.item_stage_adjudicate(
            item_stage_id=item_stage.pk, reviewer=reviewer, value="b", reason="again"
        )


def test_a_tie_can_ask_for_one_more_annotator():
    project = make_project()
    stage = services.stage_create(
        project=project,
        slug="label",
        name="Label",
        kind="label",
        overlap=2,
        config={"choices": ["a", "b"]},
        tie_policy="extra_annotation",
    )
    make_items(project, 1)
    people = [make_member(project) for _ in range(3)]
    for person, value in zip(people[:2], "ab", strict=True):
        assignment = next_for(person, stage)
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=person, payload={"value": value}
        )
    item_stage = ItemStage.objects.get(stage=stage)
    assert (item_stage.state, item_stage.target_count) == (ItemStage.State.OPEN, 3)
    assignment = next_for(people[2], stage)
    services.annotation_submit(
        assignment_id=assignment.pk, annotator=people[2], payload={"value": "b"}
    )
    item_stage.refresh_from_db()
    assert item_stage.state == ItemStage.State.RESOLVED and item_stage.resolution.value == "b"


def test_resolution_is_idempotent():
    _, verify, _, people = pipeline(overlap=1, items=1, annotators=1)
    assignment = next_for(people[0], verify)
    submit(people[0], assignment)
    first = services.item_stage_resolve(item_stage_id=assignment.item_stage_id)
    second = services.item_stage_resolve(item_stage_id=assignment.item_stage_id)
    assert first.pk == second.pk and Resolution.objects.count() == 1


def test_non_members_and_paused_annotators_get_no_items():
    project, verify, _, (alice, *_) = pipeline()
    outsider = make_member(make_project())
    with pytest.raises(NotFound):
        access_stage_for_annotator(user=outsider, stage_id=verify.pk)
    researcher = make_member(project, role="researcher")
    with pytest.raises(PermissionDenied):
        access_stage_for_annotator(user=researcher, stage_id=verify.pk)
    held = next_for(alice, verify)
    services.membership_set_paused(
        project=project, user_id=alice.pk, paused=True, reason="low agreement"
    )
    with pytest.raises(PermissionDenied, match="paused"):
        access_stage_for_annotator(user=alice, stage_id=verify.pk)
    assert Assignment.objects.get(pk=held.pk).status == Assignment.Status.REVOKED
    assert ItemStage.objects.get(pk=held.item_stage_id).leased_count == 0


def test_item_revisions_keep_history_and_diff():
    project = make_project()
    (item,) = make_items(project, 1)
    editor = make_member(project, role="admin")
    revision = services.item_revise(
        item=item, payload={"text": "Edited."}, author=editor, reason="typo"
    )
    assert revision.number == 2 and revision.diff["text"]["new"] == "Edited."
    assert list(item.revisions.values_list("number", flat=True)) == [1, 2]
    with pytest.raises(ApplicationError, match="changes nothing"):
        services.item_revise(item=item, payload={"text": "Edited."}, author=editor, reason="noop")


def test_duplicate_external_ids_are_rejected_and_nothing_is_kept():
    project = make_project()
    make_items(project, 2)
    with pytest.raises(ApplicationError, match="already exist"):
        services.items_create(
            project=project, rows=[{"external_id": "new"}, {"external_id": "item-00000"}]
        )
    assert Item.objects.filter(project=project).count() == 2


@pytest.fixture
def broker_unreachable(monkeypatch):
    """The Celery app publishes to a Redis that is not running (a loopback port nobody listens
    on), as during the soak's outage; its connection pool is rebuilt before and after."""
    from rungwise.celery import app
    from tests.processes import free_port

    monkeypatch.setenv("CELERY_BROKER_URL", f"redis://127.0.0.1:{free_port()}/0")
    app.conf.task_always_eager = False  # the autouse fixture restores it
    app._pool = app.amqp._producer_pool = None  # connections to the earlier broker
    yield
    monkeypatch.undo()
    app._pool = app.amqp._producer_pool = None


def test_a_broker_outage_is_logged_in_one_line_per_publish(
    broker_unreachable, caplog, django_capture_on_commit_callbacks
):
    """Each submit that completes an item publishes a resolution; with Redis down the web
    processes logged a 40-line traceback for every one (≈ 650 in the soak's 60 s outage).
    An unreachable broker is expected and repaired by the sweeps: one warning line each."""
    from annotation.tasks import sweep_unresolved

    caplog.set_level("WARNING", logger="annotation.services.common")
    with django_capture_on_commit_callbacks(execute=True):
        services.enqueue_on_commit(sweep_unresolved, 0)
    records = [r for r in caplog.records if r.name == "annotation.services.common"]
    assert len(records) == 1
    assert records[0].levelname == "WARNING" and not records[0].exc_info
    assert "could not run or enqueue annotation.tasks.sweep_unresolved" in records[0].getMessage()
    assert "Connection refused" in records[0].getMessage()


def test_opening_items_promised_new_never_writes_a_second_item_stage():
    """item_stages_open(new_items=True) leaves out ON CONFLICT (imports open a batch of items
    they created): items already in the stage are then an IntegrityError that keeps nothing,
    never a second row; without the promise they are left as they are."""
    from django.db import IntegrityError, transaction

    project = make_project()
    stage = make_verify_stage(project)
    items = make_items(project, 3)  # opened in the stage already
    fresh = services.items_create(
        project=project,
        rows=[{"external_id": "fresh", "payload": {"text": "t"}}],
        open_first_stage=False,
    )
    assert services.item_stages_open(items=fresh, stage=stage, new_items=True) == 1
    queryset = Item.objects.filter(pk__in=[item.pk for item in items])
    with pytest.raises(IntegrityError), transaction.atomic():
        services.item_stages_open(items=queryset, stage=stage, new_items=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        services.item_stages_open(items=items, stage=stage, new_items=True)
    assert services.item_stages_open(items=[*items, *fresh], stage=stage) == 0
    assert ItemStage.objects.filter(stage=stage).count() == 4


def test_opening_items_promised_ungrouped_refuses_an_item_with_a_group():
    """item_stages_open(ungrouped=True) computes no group ranks (imports that read no group):
    items without a group get rank 0 in a group of one, as without the promise; an item with a
    group is an IntegrityError that keeps nothing, never a wrong rank."""
    from django.db import IntegrityError, transaction

    project = make_project()
    stage = make_verify_stage(project)
    rows = [{"external_id": f"i{n}", "payload": {"text": "t"}} for n in range(3)]
    plain = services.items_create(project=project, rows=rows, open_first_stage=False)
    paired = services.items_create(
        project=project,
        rows=[
            {"external_id": f"p{n}", "payload": {"text": "t"}, "group": "pair"} for n in range(2)
        ],
        open_first_stage=False,
    )
    queryset = Item.objects.filter(pk__in=[item.pk for item in [*plain, *paired]])
    with pytest.raises(IntegrityError), transaction.atomic():
        services.item_stages_open(items=queryset, stage=stage, new_items=True, ungrouped=True)
    assert not ItemStage.objects.filter(stage=stage).exists()
    assert services.item_stages_open(items=plain, stage=stage, ungrouped=True) == 3
    assert services.item_stages_open(items=paired, stage=stage) == 2
    opened = ItemStage.objects.filter(stage=stage)
    assert {(row.spread_rank, row.group_size) for row in opened if not row.item.group} == {(0, 1)}
    assert sorted(row.spread_rank for row in opened if row.item.group) == [0, 1]
