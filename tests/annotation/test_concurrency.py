"""Many annotators at once on real PostgreSQL: no slot handed out twice, overlap never exceeded,
no submission lost."""

from __future__ import annotations

import random
import threading
from collections import Counter

import pytest
from django.db import connection
from django.db.models import Count

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation, Assignment, ItemStage
from tests.factories import make_items, make_member, make_project, make_verify_stage
from tests.threads import run_annotators

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ANNOTATORS = 32
ITEMS = 90
OVERLAP = 3


@pytest.mark.parametrize("sweep", [False, True], ids=["stage-order", "sweep"])
def test_32_annotators_hammering_next_and_submit(postgres, sweep):
    project = make_project()
    stage = make_verify_stage(project, overlap=OVERLAP)
    make_items(project, ITEMS)
    people = [make_member(project) for _ in range(ANNOTATORS)]
    barrier = threading.Barrier(ANNOTATORS)
    stored: list[int] = []
    lock = threading.Lock()

    def annotator_loop(user, seed: int) -> None:
        rng = random.Random(seed)
        barrier.wait()
        cursor = 0  # the sweep order's (machine raters'): every rule must hold the same
        while True:
            access = access_stage_for_annotator(user=user, stage_id=stage.pk)
            assignment = services.assignment_next(
                annotator=user, stage=access, after=cursor if sweep else None
            )
            if assignment is None:
                return
            cursor = assignment.item_stage_id
            if rng.random() < 0.05:
                services.assignment_skip(
                    assignment_id=assignment.pk, annotator=user, reason="not sure"
                )
                continue
            # a third of the submits are sent twice, as a flaky network would
            for _ in range(2 if rng.random() < 0.33 else 1):
                annotation, _ = services.annotation_submit(
                    assignment_id=assignment.pk,
                    annotator=user,
                    payload={"value": rng.choice(["keep", "reject"])},
                )
            with lock:
                stored.append(annotation.pk)

    run_annotators(annotator_loop, people, timeout=240)

    # every item ends with exactly k annotations, never more
    per_item = Counter(
        Annotation.objects.filter(item_stage__stage=stage).values_list("item_stage_id", flat=True)
    )
    assert len(per_item) == ITEMS
    assert set(per_item.values()) == {OVERLAP}
    # no annotator has two annotations for one item
    doubled = (
        Annotation.objects.values("item_stage_id", "annotator_id")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not doubled.exists()
    # every successful submit is stored (retries returned the same row)
    assert set(stored) == set(Annotation.objects.values_list("pk", flat=True))
    assert len(set(stored)) == ITEMS * OVERLAP
    # counters agree with the rows, and no lease is left behind
    for item_stage in ItemStage.objects.filter(stage=stage):
        assert item_stage.submitted_count == OVERLAP
        assert item_stage.leased_count == 0
        assert item_stage.state in {ItemStage.State.RESOLVED, ItemStage.State.DISCARDED}
    assert not Assignment.objects.filter(status=Assignment.Status.ACTIVE).exists()


def test_one_annotator_asking_twice_at_once_gets_one_lease(postgres):
    project = make_project()
    stage = make_verify_stage(project, overlap=3)
    make_items(project, 20)
    alice = make_member(project)
    barrier = threading.Barrier(8)
    got: list[int] = []

    def ask() -> None:
        try:
            barrier.wait()
            access = access_stage_for_annotator(user=alice, stage_id=stage.pk)
            got.append(services.assignment_next(annotator=alice, stage=access).pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8 and len(set(got)) == 1
    assert Assignment.objects.filter(annotator=alice, status="active").count() == 1
    assert sum(ItemStage.objects.values_list("leased_count", flat=True)) == 1


def test_one_submit_sent_eight_times_at_once_is_stored_once(postgres):
    """The submit without a transaction (one conditional write): eight copies of one submit
    racing each other store one annotation, all eight answer with it, and the slot moves once."""
    project = make_project()
    stage = make_verify_stage(project, overlap=3)
    make_items(project, 5)
    alice = make_member(project)
    access = access_stage_for_annotator(user=alice, stage_id=stage.pk)
    lease = services.assignment_next(annotator=alice, stage=access)
    barrier = threading.Barrier(8)
    answers: list[tuple[int, bool]] = []
    errors: list[BaseException] = []

    def submit() -> None:
        try:
            barrier.wait()
            annotation, created = services.annotation_submit(
                assignment_id=lease.pk, annotator=alice, payload={"value": "keep"}
            )
            answers.append((annotation.pk, created))
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
    assert len({pk for pk, _ in answers}) == 1 and len(answers) == 8
    assert [created for _, created in answers].count(True) == 1
    assert Annotation.objects.filter(assignment_id=lease.pk).count() == 1
    item_stage = ItemStage.objects.get(pk=lease.item_stage_id)
    assert (item_stage.submitted_count, item_stage.leased_count) == (1, 0)


def test_submits_racing_the_expiry_sweep_keep_the_counters_true(postgres):
    """Leases past their time are submitted while the sweep expires them: each submit either
    lands before the sweep (stored, slot moved) or after it (an expired lease is accepted while
    its slot is free); never both, never neither, and the counters equal a recount."""
    from datetime import timedelta

    from django.utils import timezone

    project = make_project()
    stage = make_verify_stage(project, overlap=3)
    make_items(project, 30)
    people = [make_member(project) for _ in range(16)]
    leases = []
    for person in people:  # one lease each (a second ask returns the one held)
        access = access_stage_for_annotator(user=person, stage_id=stage.pk)
        leases.append((person, services.assignment_next(annotator=person, stage=access).pk))
    Assignment.objects.filter(pk__in=[pk for _, pk in leases]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    barrier = threading.Barrier(len(people) + 1)
    errors: list[BaseException] = []

    def submit_all(person) -> None:
        try:
            barrier.wait()
            for owner, pk in leases:
                if owner == person:
                    services.annotation_submit(
                        assignment_id=pk, annotator=person, payload={"value": "keep"}
                    )
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    def sweep() -> None:
        try:
            barrier.wait()
            for _ in range(20):
                services.leases_reclaim_expired(stage_id=stage.pk)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit_all, args=(p,)) for p in people]
    threads.append(threading.Thread(target=sweep))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # An expired lease's submit is refused only once its slot is taken: nobody leases here.
    assert not errors, errors[:3]
    assert Annotation.objects.filter(item_stage__stage=stage).count() == len(leases)
    for item_stage in ItemStage.objects.filter(stage=stage):
        submitted = Annotation.objects.filter(item_stage=item_stage).count()
        active = Assignment.objects.filter(item_stage=item_stage, status="active").count()
        assert item_stage.submitted_count == submitted, item_stage.pk
        assert item_stage.leased_count == active == 0, item_stage.pk
