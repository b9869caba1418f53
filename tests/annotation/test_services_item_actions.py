"""An admin's item actions (annotation/services/item_actions.py, ``api.items_act``): each
action's effect on the item, its item stages and slot counters, the history it writes, and
refusals that leave everything as it was; the stranded item of a stage with exactly k people."""

from __future__ import annotations

import pytest

from annotation import api, services
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError
from annotation.models import Assignment, Item, ItemEvent, ItemStage, Resolution, Role
from tests.factories import make_items, make_member, make_project, make_verify_stage, pipeline

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks, monkeypatch):
    """Run on-commit work (the resolve task, eager here) right after each submit."""
    original = services.annotation_submit

    def submit_and_commit(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return original(**kwargs)

    monkeypatch.setattr(services, "annotation_submit", submit_and_commit)


def lease(user, stage):
    return services.assignment_next(
        annotator=user, stage=access_stage_for_annotator(user=user, stage_id=stage.pk)
    )


def answer(user, stage, value="keep"):
    assignment = lease(user, stage)
    services.annotation_submit(
        assignment_id=assignment.pk, annotator=user, payload={"value": value}
    )
    return assignment


def snapshot(project):
    """Every row an action may touch, to show that a refusal wrote nothing."""
    return (
        sorted(Item.objects.filter(project=project).values_list("pk", "status")),
        sorted(
            ItemStage.objects.filter(stage__project=project).values_list(
                "pk", "state", "round", "submitted_count", "leased_count", "target_count"
            )
        ),
        sorted(Assignment.objects.filter(stage__project=project).values_list("pk", "status")),
        sorted(Resolution.objects.filter(item_stage__stage__project=project).values_list("pk")),
        ItemEvent.objects.count(),
    )


def counters_hold():
    """The invariants the repair sweep checks: counters equal the rows, within the target."""
    assert services.item_stage_counters_repair() == 0
    for row in ItemStage.objects.all():
        assert row.submitted_count + row.leased_count <= row.target_count


@pytest.fixture
def stranded():
    """The issue's case: two annotators on a stage that needs two per item; one skips."""
    project = make_project()
    verify = make_verify_stage(project, overlap=2)
    (item,) = make_items(project, 1)
    ann, ben = make_member(project), make_member(project)
    admin = make_member(project, Role.ADMIN)
    answer(ann, verify)
    held = lease(ben, verify)
    services.assignment_skip(assignment_id=held.pk, annotator=ben, reason="cannot read it")
    return project, verify, item, (ann, ben), admin


def test_the_stranded_item_is_found_and_resolving_it_by_hand_moves_it_on(stranded):
    project, verify, item, (ann, ben), admin = stranded
    assert lease(ann, verify) is None and lease(ben, verify) is None
    (row,) = api.item_stages_stranded(project)
    assert (row.item_stage_id, row.missing, row.eligible) == (
        ItemStage.objects.get(item=item).pk,
        1,
        0,
    )
    report = api.items_act(
        project, [item.pk], "resolve", by=admin, reason="one reader is enough", value="keep"
    )
    assert report.done == [item.pk] and report.refused == {}
    item.refresh_from_db()
    assert item.status == Item.Status.ACCEPTED
    resolution = Resolution.objects.get(item_stage__item=item)
    assert (resolution.value, resolution.status, resolution.decided_by) == (
        "keep",
        Resolution.Status.ADJUDICATED,
        admin,
    )
    event = ItemEvent.objects.get(item=item)
    assert (event.action, event.by, event.reason, event.stage) == (
        "resolve",
        admin,
        "one reader is enough",
        verify,
    )
    assert (event.status_before, event.status_after) == ("active", "accepted")
    assert (event.state_before, event.state_after) == ("open", "resolved")
    assert api.item_stages_stranded(project) == []
    counters_hold()


def test_a_hand_decision_routes_to_the_next_stage():
    project, verify, label, people = pipeline(overlap=2, items=1, annotators=2)
    admin = make_member(project, Role.ADMIN)
    item = Item.objects.get(project=project)
    api.items_act(project, [item.pk], "resolve", by=admin, reason="obvious", value="keep")
    assert ItemStage.objects.get(item=item, stage=label).state == ItemStage.State.OPEN
    assert ItemStage.objects.get(item=item, stage=verify).state == ItemStage.State.RESOLVED
    counters_hold()


def test_resolve_refuses_a_value_the_stage_does_not_offer_and_writes_nothing(stranded):
    project, verify, item, _, admin = stranded
    before = snapshot(project)
    report = api.items_act(project, [item.pk], "resolve", by=admin, reason="x", value="maybe")
    assert report.done == [] and "keep, reject" in report.refused[item.pk]
    assert snapshot(project) == before


def test_bad_input_refuses_the_whole_call_with_words(stranded):
    project, verify, item, _, admin = stranded
    before = snapshot(project)
    with pytest.raises(ApplicationError, match="reason"):
        api.items_act(project, [item.pk], "resolve", by=admin, reason=" ", value="keep")
    with pytest.raises(ApplicationError, match="Unknown action"):
        api.items_act(project, [item.pk], "explode", by=admin)
    with pytest.raises(ApplicationError, match="no stage"):
        api.items_act(project, [item.pk], "send_back", by=admin, stage="nowhere")
    with pytest.raises(ApplicationError, match="Name the stage"):
        api.items_act(project, [item.pk], "send_back", by=admin)
    assert snapshot(project) == before


def test_items_of_another_project_are_refused(stranded):
    project, verify, item, _, admin = stranded
    other = make_project()
    make_verify_stage(other, overlap=1)
    (foreign,) = make_items(other, 1)
    before = snapshot(other)
    report = api.items_act(project, [foreign.pk], "discard", by=admin, reason="spam")
    assert report.refused == {foreign.pk: "There is no such item in this project."}
    assert snapshot(other) == before


def test_release_lease_gives_the_slot_to_someone_else():
    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    (item,) = make_items(project, 1)
    holder, other = make_member(project), make_member(project)
    admin = make_member(project, Role.ADMIN)
    held = lease(holder, verify)
    assert lease(other, verify) is None  # the only slot is taken
    report = api.items_act(project, [item.pk], "release_lease", by=admin, reason="gone home")
    assert report.done == [item.pk]
    held.refresh_from_db()
    assert (held.status, held.skip_reason) == (Assignment.Status.REVOKED, "gone home")
    assert ItemStage.objects.get(item=item).leased_count == 0
    counters_hold()
    assert lease(other, verify).item_stage.item_id == item.pk
    event = ItemEvent.objects.get(item=item)
    assert event.detail["holders"] == [holder.username]
    # Nothing more to release: refused, nothing written.
    api.items_act(project, [item.pk], "release_lease", by=admin)  # releases `other`
    report = api.items_act(project, [item.pk], "release_lease", by=admin)
    assert "Nobody holds a lease" in report.refused[item.pk]
    assert ItemEvent.objects.filter(item=item).count() == 2


def test_discard_closes_open_work_and_releases_leases():
    project = make_project()
    verify = make_verify_stage(project, overlap=2)
    (item,) = make_items(project, 1)
    ann = make_member(project)
    admin = make_member(project, Role.ADMIN)
    held = lease(ann, verify)
    report = api.items_act(project, [item.pk], "discard", by=admin, reason="duplicate")
    assert report.done == [item.pk]
    item.refresh_from_db()
    held.refresh_from_db()
    row = ItemStage.objects.get(item=item)
    assert item.status == Item.Status.DISCARDED
    assert (row.state, row.leased_count) == (ItemStage.State.DISCARDED, 0)
    assert held.status == Assignment.Status.REVOKED
    counters_hold()
    report = api.items_act(project, [item.pk], "discard", by=admin, reason="again")
    assert report.refused == {item.pk: "The item is already discarded."}


def test_reopen_collects_a_decided_stage_again_in_a_new_round():
    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    (item,) = make_items(project, 1)
    ann, ben = make_member(project), make_member(project)
    admin = make_member(project, Role.ADMIN)
    answer(ann, verify)
    item.refresh_from_db()
    assert item.status == Item.Status.ACCEPTED
    report = api.items_act(project, [item.pk], "reopen", by=admin, reason="a typo was fixed")
    assert report.done == [item.pk]
    row = ItemStage.objects.get(item=item)
    item.refresh_from_db()
    assert (row.state, row.round, row.submitted_count) == (ItemStage.State.OPEN, 1, 0)
    assert item.status == Item.Status.ACTIVE
    counters_hold()
    # The new round collects: anyone may answer it again, and it is decided anew.
    answer(ben, verify, "reject")
    row.refresh_from_db()
    assert row.state == ItemStage.State.DISCARDED
    event = ItemEvent.objects.get(item=item)
    assert (event.state_before, event.state_after, event.status_before) == (
        "resolved",
        "open",
        "accepted",
    )


def test_reopen_refuses_an_item_still_open():
    project = make_project()
    make_verify_stage(project, overlap=2)
    (item,) = make_items(project, 1)
    admin = make_member(project, Role.ADMIN)
    report = api.items_act(project, [item.pk], "reopen", by=admin, reason="recount")
    assert "still open in Verify" in report.refused[item.pk]
    assert not ItemEvent.objects.exists()


def test_send_back_reopens_an_earlier_stage_and_closes_the_current_one():
    project, verify, label, people = pipeline(overlap=1, items=2, annotators=1)
    admin = make_member(project, Role.ADMIN)
    first, second = Item.objects.filter(project=project).order_by("pk")
    answer(people[0], verify)
    answer(people[0], verify)
    held = lease(people[0], label)
    report = api.items_act(
        project, [first.pk, second.pk], "send_back", by=admin, stage="verify", reason="recheck"
    )
    assert report.done == [first.pk, second.pk]
    for item in (first, second):
        assert ItemStage.objects.get(item=item, stage=label).state == ItemStage.State.DISCARDED
        back = ItemStage.objects.get(item=item, stage=verify)
        assert (back.state, back.round, back.submitted_count) == (ItemStage.State.OPEN, 1, 0)
    held.refresh_from_db()
    assert held.status == Assignment.Status.REVOKED
    counters_hold()
    # Not earlier than the current stage: refused.
    report = api.items_act(project, [first.pk], "send_back", by=admin, stage="label")
    assert "not before" in report.refused[first.pk]
    assert ItemEvent.objects.filter(action="send_back").count() == 2


def test_a_bulk_call_acts_on_those_it_can_and_refuses_the_rest(stranded):
    project, verify, item, (ann, ben), admin = stranded
    (fresh,) = make_items(project, 1, prefix="fresh")
    api.items_act(project, [fresh.pk], "discard", by=admin, reason="off topic")
    report = api.items_act(project, [item.pk, fresh.pk], "discard", by=admin, reason="bulk")
    assert report.done == [item.pk]
    assert report.refused == {fresh.pk: "The item is already discarded."}
    counters_hold()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_discarding_while_annotators_submit_keeps_every_count_right(postgres):
    """Annotators submit the items they hold while an admin discards the same items: each item
    ends either answered (then discarded with its work kept) or discarded with its lease
    revoked and no answer; never an answer on a closed item stage, never a slot lost."""
    import threading

    from django.db import connection, connections

    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    items = make_items(project, 12)
    people = [make_member(project) for _ in items]
    admin = make_member(project, Role.ADMIN)
    held = [(person, lease(person, verify)) for person in people]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def submitter() -> None:
        try:
            barrier.wait()
            for person, assignment in held:
                try:
                    services.annotation_submit(
                        assignment_id=assignment.pk, annotator=person, payload={"value": "keep"}
                    )
                except ApplicationError:
                    pass  # the lease was revoked first: refused, nothing stored
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    def discarder() -> None:
        try:
            barrier.wait()
            left = [item.pk for item in reversed(items)]
            while left:
                report = api.items_act(project, left, "discard", by=admin, reason="race")
                left = [pk for pk, why in report.refused.items() if "right now" in why]
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=submitter), threading.Thread(target=discarder)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads) and not errors, errors[:3]
    connections.close_all()
    assert set(Item.objects.filter(project=project).values_list("status", flat=True)) == {
        Item.Status.DISCARDED
    }
    for row in ItemStage.objects.filter(stage=verify):
        assignment = Assignment.objects.get(item_stage=row)
        answered = row.annotations.exists()
        assert row.state in (ItemStage.State.DISCARDED, ItemStage.State.RESOLVED), row
        assert row.leased_count == 0
        assert answered == (assignment.status == Assignment.Status.SUBMITTED)
        assert row.submitted_count == int(answered)
    assert ItemEvent.objects.filter(action="discard").count() == len(items)
    counters_hold()
