"""Many annotators at once on real PostgreSQL: no slot handed out twice, overlap never exceeded,
no submission lost."""

from __future__ import annotations

import random
import threading
from collections import Counter

import pytest
from django.db import connection, connections
from django.db.models import Count

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation, Assignment, ItemStage
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ANNOTATORS = 32
ITEMS = 90
OVERLAP = 3


def test_32_annotators_hammering_next_and_submit(postgres):
    project = make_project()
    stage = make_verify_stage(project, overlap=OVERLAP)
    make_items(project, ITEMS)
    people = [make_member(project) for _ in range(ANNOTATORS)]
    barrier = threading.Barrier(ANNOTATORS)
    stored: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def annotator_loop(user, seed: int) -> None:
        rng = random.Random(seed)
        try:
            barrier.wait()
            while True:
                access = access_stage_for_annotator(user=user, stage_id=stage.pk)
                assignment = services.assignment_next(annotator=user, stage=access)
                if assignment is None:
                    return
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
        except BaseException as error:  # surfaced below with the thread's failure
            errors.append(error)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=annotator_loop, args=(person, index))
        for index, person in enumerate(people)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not any(thread.is_alive() for thread in threads), "an annotator thread hung"
    assert not errors, errors[:3]
    connections.close_all()

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
