"""Changing one's answer (annotation.services.annotation_revise, annotation.versions): a new
immutable version that supersedes the old one, counted once, read by resolution as the answer,
refused once the item is decided, idempotent when retried, race-safe against resolution."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError, Conflict, NotFound
from annotation.models import Annotation, ItemStage, Resolution
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


def answer(user, stage, value="keep"):
    assignment = services.assignment_next(
        annotator=user, stage=access_stage_for_annotator(user=user, stage_id=stage.pk)
    )
    annotation, _ = services.annotation_submit(
        assignment_id=assignment.pk, annotator=user, payload={"value": value}
    )
    return annotation


def change(user, annotation, value):
    return services.annotation_revise(
        annotation_id=annotation.pk, annotator=user, payload={"value": value}
    )


def test_a_change_is_a_new_version_that_supersedes_and_keeps_the_old_one():
    _, verify, _, (alice, *_) = pipeline(overlap=3)
    first = answer(alice, verify, "keep")
    revised, created = change(alice, first, "reject")
    assert created and revised.pk != first.pk
    assert (revised.version, revised.supersedes_id, revised.is_current) == (2, first.pk, True)
    assert revised.assignment_id == first.assignment_id
    old = Annotation.all_versions.get(pk=first.pk)
    assert old.payload["value"] == "keep" and not old.is_current
    assert list(Annotation.objects.filter(item_stage=first.item_stage_id)) == [revised]
    assert Annotation.all_versions.filter(item_stage=first.item_stage_id).count() == 2


def test_a_changed_answer_is_counted_once():
    _, verify, _, (alice, *_) = pipeline(overlap=3)
    first = answer(alice, verify, "keep")
    change(alice, first, "reject")
    item_stage = ItemStage.objects.get(pk=first.item_stage_id)
    assert (item_stage.submitted_count, item_stage.leased_count) == (1, 0)
    # the counter repair recounts from the rows: one current answer, nothing to fix
    assert services.item_stage_counters_repair() == 0
    assert item_stage.annotations.count() == 1


def test_resolution_reads_the_current_version():
    _, verify, _, (alice, bob, carol) = pipeline(overlap=3, items=1)
    first = answer(alice, verify, "keep")
    change(alice, first, "reject")
    answer(bob, verify, "reject")
    answer(carol, verify, "keep")
    resolution = Resolution.objects.get(item_stage=first.item_stage_id)
    assert resolution.value == "reject"
    assert resolution.votes == {"reject": 2, "keep": 1}
    assert resolution.n_annotations == 3


def test_a_change_is_refused_once_the_item_is_decided():
    _, verify, _, (alice, bob, carol) = pipeline(overlap=3, items=1)
    first = answer(alice, verify, "keep")
    answer(bob, verify, "keep")
    answer(carol, verify, "keep")
    assert ItemStage.objects.get(pk=first.item_stage_id).state == ItemStage.State.RESOLVED
    with pytest.raises(Conflict, match="decided") as refused:
        change(alice, first, "reject")
    assert refused.value.status == 409
    assert Annotation.all_versions.filter(item_stage=first.item_stage_id).count() == 3


def test_a_change_is_refused_while_a_reviewer_decides_and_in_a_closed_stage():
    _, verify, _, (alice, bob, *_) = pipeline(overlap=2, items=2)
    first = answer(alice, verify, "keep")
    answer(bob, verify, "reject")  # a tie: adjudication
    assert ItemStage.objects.get(pk=first.item_stage_id).state == ItemStage.State.ADJUDICATION
    with pytest.raises(Conflict, match="reviewer"):
        change(alice, first, "reject")
    second = answer(alice, verify, "keep")
    verify.is_active = False
    verify.save(update_fields=["is_active"])
    with pytest.raises(Conflict, match="closed"):
        change(alice, second, "reject")


def test_a_retried_change_creates_one_version():
    _, verify, _, (alice, *_) = pipeline(overlap=3)
    first = answer(alice, verify, "keep")
    revised, created = change(alice, first, "reject")
    again, created_again = change(alice, first, "reject")
    assert created and not created_again and again.pk == revised.pk
    assert Annotation.all_versions.filter(assignment=first.assignment_id).count() == 2


def test_a_change_of_an_out_of_date_version_with_another_answer_is_refused():
    project = make_project()
    stage = make_verify_stage(project, overlap=3)
    make_items(project, 1)
    alice = make_member(project)
    first = answer(alice, stage, "keep")
    change(alice, first, "reject")
    with pytest.raises(Conflict, match="changed since"):
        change(alice, first, "keep")  # a second tab still showing version 1
    assert Annotation.all_versions.filter(assignment=first.assignment_id).count() == 2


def test_the_same_answer_again_creates_nothing_and_bad_answers_change_nothing():
    _, verify, _, (alice, *_) = pipeline(overlap=3)
    first = answer(alice, verify, "keep")
    same, created = change(alice, first, "keep")
    assert not created and same.pk == first.pk
    with pytest.raises(ApplicationError) as invalid:
        change(alice, first, "maybe")
    assert invalid.value.status == 400
    assert Annotation.all_versions.filter(assignment=first.assignment_id).count() == 1


def test_only_ones_own_answer_can_be_changed():
    _, verify, _, (alice, bob, _) = pipeline(overlap=3)
    first = answer(alice, verify, "keep")
    with pytest.raises(NotFound) as foreign:
        change(bob, first, "reject")
    with pytest.raises(NotFound) as unknown:
        services.annotation_revise(annotation_id=10**12, annotator=bob, payload={"value": "x"})
    assert foreign.value.message == unknown.value.message
    assert Annotation.all_versions.filter(assignment=first.assignment_id).count() == 1


def test_a_withdrawal_removes_every_version():
    project, verify, _, (alice, *_) = pipeline(overlap=3)
    first = answer(alice, verify, "keep")
    change(alice, first, "reject")
    withdrawn, kept = services.annotations_withdraw(
        annotator_id=alice.pk, project=project, reason="left the study"
    )
    assert (withdrawn, kept) == (1, 0)
    assert not Annotation.all_versions.filter(assignment=first.assignment_id).exists()
    assert ItemStage.objects.get(pk=first.item_stage_id).submitted_count == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_change_racing_the_resolution_is_either_counted_or_refused(postgres, monkeypatch):
    """Two connections, the real services on both. A change that holds the item stage's row
    lock when the resolution starts is what the decision reads; a resolution that holds it
    when a change arrives makes the change wait, find the item decided and be refused."""
    from django.db import transaction

    from annotation.services import submit

    # Items complete without resolving at once: this test runs the resolution itself.
    monkeypatch.setattr(submit, "enqueue_on_commit", lambda *args, **kwargs: None)
    _, verify, _, (alice, bob, carol) = pipeline(overlap=3, items=2)

    def complete_one_item():
        mine = answer(alice, verify, "keep")
        answer(bob, verify, "reject")
        answer(carol, verify, "keep")
        assert ItemStage.objects.get(pk=mine.item_stage_id).state == ItemStage.State.RESOLVING
        return mine

    def race(first, second):
        """Run first() in a transaction that stays open until second() has started waiting."""
        results: dict[str, object] = {}
        holding = threading.Event()

        def run_first():
            try:
                with transaction.atomic():
                    results["first"] = first()
                    holding.set()
                    # second() runs on its own connection meanwhile and must wait for this lock
                    waited.wait(2)
            except BaseException as error:
                results["first"] = error
                holding.set()
            finally:
                connection.close()

        def run_second():
            holding.wait(10)
            try:
                results["second"] = second()
            except BaseException as error:
                results["second"] = error
            finally:
                connection.close()

        waited = threading.Event()
        threads = [threading.Thread(target=run_first), threading.Thread(target=run_second)]
        for thread in threads:
            thread.start()
        holding.wait(10)
        # give second() time to reach the lock; it cannot finish before first() commits
        threads[1].join(0.5)
        assert threads[1].is_alive(), "the second transaction did not wait for the row lock"
        waited.set()
        for thread in threads:
            thread.join(30)
        connections.close_all()
        return results

    # The change first: the decision counts the changed answer.
    mine = complete_one_item()
    results = race(
        lambda: change(alice, mine, "reject"),
        lambda: services.item_stage_resolve(item_stage_id=mine.item_stage_id),
    )
    revised, created = results["first"]
    assert created
    resolution = Resolution.objects.get(item_stage_id=mine.item_stage_id)
    assert resolution.votes == {"reject": 2, "keep": 1}, "the decision read the old answer"

    # The resolution first: the change waits, finds the item decided and is refused.
    mine = complete_one_item()
    results = race(
        lambda: services.item_stage_resolve(item_stage_id=mine.item_stage_id),
        lambda: change(alice, mine, "reject"),
    )
    assert isinstance(results["second"], Conflict), results["second"]
    assert Annotation.objects.get(assignment=mine.assignment_id).pk == mine.pk
    assert Resolution.objects.get(item_stage_id=mine.item_stage_id).votes == {
        "keep": 2,
        "reject": 1,
    }


def test_a_changed_answer_keeps_its_place_among_the_ballots():
    from annotation.kinds import get_kind
    from annotation.services.outcomes import _ballots

    _, verify, _, (alice, bob, _) = pipeline(overlap=3, items=1)
    first = answer(alice, verify, "keep")
    answer(bob, verify, "keep")
    change(alice, first, "reject")
    item_stage = ItemStage.objects.get(pk=first.item_stage_id)
    ballots, advisory = _ballots(item_stage, item_stage.stage, get_kind("verify"))
    assert advisory == 0
    assert [(ballot.vote, ballot.annotator) for ballot in ballots] == [("reject", 1), ("keep", 2)]


def test_a_paused_annotator_cannot_change_an_answer():
    project, verify, _, (alice, *_) = pipeline(overlap=3)
    first = answer(alice, verify, "keep")
    services.membership_set_paused(project=project, user_id=alice.pk, paused=True, reason="check")
    with pytest.raises(Conflict, match="paused"):
        change(alice, first, "reject")
    assert Annotation.all_versions.filter(assignment=first.assignment_id).count() == 1


def test_final_votes_say_the_same_in_python_and_in_the_database_in_every_state():
    """The rule of final votes is written twice (annotation.versions): for one row in Python
    (votes_final) and as database conditions (item_stages_with_final_votes on item stages,
    final_votes on annotations). In every state, for the current round, they agree; an answer
    of an earlier round is final whatever the state."""
    from annotation.versions import final_votes, item_stages_with_final_votes, votes_final

    _, verify, _, (alice, *_) = pipeline(overlap=3, items=1)
    mine = answer(alice, verify)
    item_stage = ItemStage.objects.get(pk=mine.item_stage_id)
    for state in ItemStage.State.values:
        ItemStage.objects.filter(pk=item_stage.pk).update(state=state)
        item_stage.refresh_from_db()
        in_python = votes_final(item_stage)
        as_item_stage = item_stages_with_final_votes(
            ItemStage.objects.filter(pk=item_stage.pk)
        ).exists()
        as_annotation = Annotation.objects.filter(pk=mine.pk).filter(final_votes()).exists()
        assert in_python == as_item_stage == as_annotation, state
    ItemStage.objects.filter(pk=item_stage.pk).update(
        state=ItemStage.State.OPEN, round=item_stage.round + 1
    )
    assert Annotation.objects.filter(pk=mine.pk).filter(final_votes()).exists()
