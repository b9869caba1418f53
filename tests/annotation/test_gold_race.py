"""Silent gold under concurrent annotators on real PostgreSQL (annotation/gold.py): every
annotator's sequence keeps the rate and never starts with gold, each annotator gets a gold item
at most once, regular items still end with exactly k answers, and gold answers never reach them.
Each annotator also sends two requests at once now and then (two tabs): one lease, one sequence."""

from __future__ import annotations

import random
import threading
from collections import Counter

import pytest
from django.db import connection

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation, Assignment, Item, ItemStage, Resolution
from annotation.slots import EVERYONE
from tests.factories import make_items, make_member, make_project, make_verify_stage
from tests.threads import run_annotators

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ANNOTATORS = 12
ITEMS = 40
GOLD = 6
OVERLAP = 3
EVERY = 3


def test_annotators_racing_through_a_gold_stage_keep_every_invariant(postgres):
    project = make_project()
    stage = make_verify_stage(project, overlap=OVERLAP, gold_every=EVERY)
    make_items(project, ITEMS)
    services.items_create(
        project=project,
        rows=[
            {"external_id": f"check-{n}", "payload": {"text": f"Check {n}.", "gold": "keep"},
             "purpose": "gold"}
            for n in range(GOLD)
        ],
    )  # fmt: skip
    people = [make_member(project) for _ in range(ANNOTATORS)]
    barrier = threading.Barrier(ANNOTATORS)

    def next_for(user):
        try:
            access = access_stage_for_annotator(user=user, stage_id=stage.pk)
            return services.assignment_next(annotator=user, stage=access)
        finally:
            connection.close()

    def annotator_loop(user, seed: int) -> None:
        rng = random.Random(seed)
        barrier.wait()
        while True:
            twin = None
            if rng.random() < 0.2:  # a second tab asks at the same moment
                twin = threading.Thread(target=next_for, args=(user,))
                twin.start()
            access = access_stage_for_annotator(user=user, stage_id=stage.pk)
            assignment = services.assignment_next(annotator=user, stage=access)
            if twin is not None:
                twin.join()
            if assignment is None:
                return
            services.annotation_submit(
                assignment_id=assignment.pk,
                annotator=user,
                payload={"value": rng.choice(["keep", "reject"])},
            )

    run_annotators(annotator_loop, people, timeout=300)

    golds = set(
        ItemStage.objects.filter(stage=stage, item__purpose=Item.Purpose.GOLD).values_list(
            "pk", flat=True
        )
    )
    served_gold = 0
    for person in people:
        sequence = [
            item_stage_id in golds
            for item_stage_id in Assignment.objects.filter(annotator=person, stage=stage)
            .order_by("pk")
            .values_list("item_stage_id", flat=True)
        ]
        if not sequence:
            continue
        assert not sequence[0], "a gold item came first"
        for start in range(len(sequence)):
            assert sum(sequence[start : start + EVERY]) <= 1, sequence
        served_gold += sum(sequence)
    assert served_gold > 0
    assert not Assignment.objects.filter(status=Assignment.Status.ACTIVE).exists()
    per_item = Counter(
        Annotation.objects.filter(item_stage__stage=stage)
        .exclude(item_stage_id__in=golds)
        .values_list("item_stage_id", flat=True)
    )
    assert len(per_item) == ITEMS and set(per_item.values()) == {OVERLAP}
    for item_stage in ItemStage.objects.filter(stage=stage):
        assert item_stage.leased_count == 0
        if item_stage.pk in golds:
            assert item_stage.state == ItemStage.State.OPEN
            assert item_stage.target_count == EVERYONE
            assert (
                item_stage.submitted_count
                == Annotation.objects.filter(item_stage=item_stage).count()
            )
        else:
            assert item_stage.submitted_count == OVERLAP
    assert not Resolution.objects.filter(item_stage_id__in=golds).exists()
