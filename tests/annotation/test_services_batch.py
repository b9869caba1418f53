"""A wave of leases and submits in one transaction (annotation/services/batch.py): the engine's
rules hold as for one item at a time, an error rolls the whole wave back, a retried wave stores
nothing twice, and waves racing people and each other on PostgreSQL neither over-assign a slot
nor lose one."""

from __future__ import annotations

import random
import threading
from collections import Counter
from unittest.mock import patch

import pytest
from django.db import connection, connections
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.api import (
    annotations_submit_ready,
    annotations_submit_wave,
    reached_by,
    ready_path_open,
)
from annotation.errors import ApplicationError
from annotation.models import Annotation, Assignment, ItemStage, Membership
from tests.factories import make_items, make_member, make_project, make_verify_stage
from tests.threads import run_annotators


def _keep(item_stage):
    return {"value": "keep"}


@pytest.mark.django_db
def test_a_wave_submits_the_next_items_in_the_sweep_order_and_moves_the_slots():
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 5)
    bot = make_member(project)

    wave = annotations_submit_wave(annotator=bot, stage=stage, after=0, answer=_keep, limit=3)

    ids = sorted(ItemStage.objects.filter(stage=stage).values_list("pk", flat=True))
    assert [done.assignment.item_stage_id for done in wave.submitted] == ids[:3]
    assert all(done.created for done in wave.submitted)
    assert wave.cursor == ids[2] and wave.held is None and not wave.exhausted
    counts = dict(ItemStage.objects.values_list("pk", "submitted_count"))
    assert [counts[pk] for pk in ids] == [1, 1, 1, 0, 0]
    assert not Assignment.objects.filter(status=Assignment.Status.ACTIVE).exists()

    rest = annotations_submit_wave(
        annotator=bot, stage=stage, after=wave.cursor, answer=_keep, limit=10
    )
    assert [done.assignment.item_stage_id for done in rest.submitted] == ids[3:]
    assert rest.exhausted


@pytest.mark.django_db
def test_an_item_without_an_answer_ends_the_wave_with_its_lease_held():
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 4)
    bot = make_member(project)
    ids = sorted(ItemStage.objects.filter(stage=stage).values_list("pk", flat=True))

    wave = annotations_submit_wave(
        annotator=bot,
        stage=stage,
        after=0,
        answer=lambda item_stage: None if item_stage.pk == ids[1] else {"value": "keep"},
        limit=4,
    )

    assert len(wave.submitted) == 1
    assert wave.held is not None and wave.held.item_stage_id == ids[1]
    held = Assignment.objects.get(pk=wave.held.pk)
    assert held.status == Assignment.Status.ACTIVE
    assert ItemStage.objects.get(pk=ids[1]).leased_count == 1
    # asking again returns the held lease, as for any annotator
    again = services.assignment_next(annotator=bot, stage=stage, after=wave.cursor)
    assert again.pk == held.pk


@pytest.mark.django_db(transaction=True)
def test_an_error_rolls_the_whole_wave_back_and_its_retry_stores_each_item_once():
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 4)
    bot = make_member(project)
    recorded: list[int] = []
    ids = sorted(ItemStage.objects.filter(stage=stage).values_list("pk", flat=True))

    def refused_third(item_stage):
        return {"value": "not-a-choice"} if item_stage.pk == ids[2] else {"value": "keep"}

    with pytest.raises(ApplicationError):
        annotations_submit_wave(
            annotator=bot,
            stage=stage,
            after=0,
            answer=refused_third,
            limit=4,
            on_submitted=lambda done: recorded.extend(d.annotation.pk for d in done),
        )
    assert not Annotation.objects.exists() and not Assignment.objects.exists()
    assert set(ItemStage.objects.values_list("leased_count", "submitted_count")) == {(0, 0)}
    assert recorded == []

    def record(done):
        recorded.extend(d.annotation.pk for d in done)

    first = annotations_submit_wave(
        annotator=bot, stage=stage, after=0, answer=_keep, limit=4, on_submitted=record
    )
    # the same wave sent again (a worker that died before it heard the commit): nothing twice
    retried = annotations_submit_wave(
        annotator=bot, stage=stage, after=0, answer=_keep, limit=4, on_submitted=record
    )
    assert len(first.submitted) == 4 and retried.submitted == [] and retried.exhausted
    assert sorted(recorded) == sorted(Annotation.objects.values_list("pk", flat=True))
    assert Annotation.objects.count() == 4
    # every item stage filled and resolution was enqueued for it after the commit
    assert set(ItemStage.objects.values_list("submitted_count", "leased_count")) == {(1, 0)}
    assert not ItemStage.objects.filter(state=ItemStage.State.OPEN).exists()


ITEMS = 60
OVERLAP = 3


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_waves_racing_people_never_over_assign_a_slot_nor_lose_one(postgres):
    """Four machine raters in waves of 8 and eight people one item at a time, all at once, on
    a stage of overlap 3: every item ends with exactly 3 answers, nobody answers an item twice,
    every stored answer is counted and no lease is left behind."""
    project = make_project()
    stage = make_verify_stage(project, overlap=OVERLAP)
    make_items(project, ITEMS)
    bots = [make_member(project) for _ in range(4)]
    people = [make_member(project) for _ in range(8)]
    barrier = threading.Barrier(len(bots) + len(people))
    stored: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def machine(user) -> None:
        try:
            barrier.wait()
            cursor = 0
            while True:
                wave = annotations_submit_wave(
                    annotator=user, stage=stage, after=cursor, answer=_keep, limit=8
                )
                cursor = wave.cursor
                with lock:
                    stored.extend(done.annotation.pk for done in wave.submitted)
                if wave.exhausted:
                    return
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    def person(user, seed: int) -> None:
        rng = random.Random(seed)
        try:
            barrier.wait()
            while True:
                access = access_stage_for_annotator(user=user, stage_id=stage.pk)
                assignment = services.assignment_next(annotator=user, stage=access)
                if assignment is None:
                    return
                annotation, _ = services.annotation_submit(
                    assignment_id=assignment.pk,
                    annotator=user,
                    payload={"value": rng.choice(["keep", "reject"])},
                )
                with lock:
                    stored.append(annotation.pk)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=machine, args=(bot,)) for bot in bots] + [
        threading.Thread(target=person, args=(user, index)) for index, user in enumerate(people)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    assert not errors, errors[:3]
    connections.close_all()

    per_item = Counter(
        Annotation.objects.filter(item_stage__stage=stage).values_list("item_stage_id", flat=True)
    )
    assert len(per_item) == ITEMS and set(per_item.values()) == {OVERLAP}
    doubled = (
        Annotation.objects.values("item_stage_id", "annotator_id")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not doubled.exists()
    assert sorted(stored) == sorted(Annotation.objects.values_list("pk", flat=True))
    for item_stage in ItemStage.objects.filter(stage=stage):
        assert (item_stage.submitted_count, item_stage.leased_count) == (OVERLAP, 0)
    assert not Assignment.objects.filter(status=Assignment.Status.ACTIVE).exists()
    # the machines took part: waves really raced the people
    machine_answers = Annotation.objects.filter(annotator__in=bots).count()
    assert 0 < machine_answers < ITEMS * OVERLAP


# A wave of answers ready before the lease, in one statement (annotations_submit_ready).


def _ready(stage, user):
    return reached_by(stage, user.pk)


def _answers(item_stages, value="keep"):
    return [(item_stage, {"value": value}) for item_stage in item_stages]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ready_answers_are_leased_and_submitted_in_one_statement(postgres):
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 5)
    bot = make_member(project)
    item_stages = list(ItemStage.objects.filter(stage=stage).order_by("pk"))
    assert ready_path_open(_ready(stage, bot))

    with CaptureQueriesContext(connection) as queries:
        stored = annotations_submit_ready(
            annotator=bot,
            stage=_ready(stage, bot),
            answers=_answers(item_stages[:3]),
            client_info={"model": "m"},
        )

    writes = [q["sql"] for q in queries.captured_queries if "INSERT" in q["sql"]]
    assert len(writes) == 1  # the leases, the slots and the annotations: one statement
    assert [done.item_stage_id for done in stored] == [s.pk for s in item_stages[:3]]
    for done in stored:
        assignment = Assignment.objects.get(pk=done.assignment_id)
        annotation = Annotation.objects.get(pk=done.annotation_id)
        assert assignment.status == Assignment.Status.SUBMITTED and assignment.finished_at
        assert assignment.annotator_id == bot.pk == annotation.annotator_id
        assert annotation.assignment_id == assignment.pk and annotation.payload["value"] == "keep"
        assert annotation.client_info == {"model": "m"}
    counts = dict(ItemStage.objects.values_list("pk", "submitted_count"))
    assert [counts[s.pk] for s in item_stages] == [1, 1, 1, 0, 0]
    assert set(ItemStage.objects.values_list("leased_count", flat=True)) == {0}
    # the same as the one-item services leave: the sweep then offers only the rest
    rest = annotations_submit_wave(annotator=bot, stage=stage, after=0, answer=_keep, limit=10)
    assert [done.assignment.item_stage_id for done in rest.submitted] == [
        s.pk for s in item_stages[3:]
    ]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ready_answers_leave_items_the_search_would_not_offer_and_a_retry_stores_nothing(
    postgres,
):
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 5)
    bot, person, other = make_member(project), make_member(project), make_member(project)
    held = services.assignment_next(annotator=person, stage=stage).item_stage  # its one slot
    free = [s for s in ItemStage.objects.filter(stage=stage).order_by("pk") if s.pk != held.pk]
    full, answered, fresh, stale = free
    done = services.assignment_next(annotator=other, stage=stage, after=full.pk - 1)
    services.annotation_submit(assignment_id=done.pk, annotator=other, payload={"value": "keep"})
    assert done.item_stage_id == full.pk
    first = annotations_submit_ready(
        annotator=bot, stage=_ready(stage, bot), answers=_answers([answered])
    )
    assert [d.item_stage_id for d in first] == [answered.pk]
    stale.round = 1  # the caller's copy of a round the item stage is not in

    stored = annotations_submit_ready(
        annotator=bot,
        stage=_ready(stage, bot),
        answers=_answers([held, full, answered, fresh, stale]),
    )

    assert [d.item_stage_id for d in stored] == [fresh.pk]
    assert Annotation.objects.filter(annotator=bot).count() == 2
    assert ItemStage.objects.get(pk=held.pk).leased_count == 1  # the person's lease untouched
    again = annotations_submit_ready(
        annotator=bot, stage=_ready(stage, bot), answers=_answers([answered, fresh])
    )
    assert again == [] and Annotation.objects.filter(annotator=bot).count() == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ready_answers_fill_an_item_stage_and_its_resolution_waits_for_the_commit(postgres):
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 2)
    bot = make_member(project)
    item_stages = list(ItemStage.objects.filter(stage=stage).order_by("pk"))
    recorded = []

    with patch("annotation.tasks.resolve_item_stage.delay") as resolve:
        stored = annotations_submit_ready(
            annotator=bot,
            stage=_ready(stage, bot),
            answers=_answers(item_stages),
            on_submitted=lambda done: recorded.extend(
                (d.item_stage_id, resolve.call_count) for d in done
            ),
        )
    assert len(stored) == 2
    assert recorded == [(s.pk, 0) for s in item_stages]  # in the wave's transaction
    assert sorted(call.args[0] for call in resolve.call_args_list) == [s.pk for s in item_stages]
    for item_stage in ItemStage.objects.filter(stage=stage):
        assert item_stage.state == ItemStage.State.RESOLVING and item_stage.completed_at


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ready_answers_refused_by_the_kind_the_caller_or_a_pause_store_nothing(postgres):
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 2)
    bot = make_member(project)
    item_stages = list(ItemStage.objects.filter(stage=stage).order_by("pk"))

    with pytest.raises(ApplicationError):
        annotations_submit_ready(
            annotator=bot,
            stage=_ready(stage, bot),
            answers=[(item_stages[0], {"value": "keep"}), (item_stages[1], {"value": "nope"})],
        )
    assert not Assignment.objects.exists()

    def fails(done):
        raise RuntimeError("the caller's rows could not be written")

    with pytest.raises(RuntimeError):
        annotations_submit_ready(
            annotator=bot,
            stage=_ready(stage, bot),
            answers=_answers(item_stages),
            on_submitted=fails,
        )
    assert not Assignment.objects.exists() and not Annotation.objects.exists()
    assert set(ItemStage.objects.values_list("submitted_count", flat=True)) == {0}
    Membership.objects.filter(user=bot).update(is_paused=True)
    stored = annotations_submit_ready(
        annotator=bot, stage=_ready(stage, bot), answers=_answers(item_stages)
    )
    assert stored == [] and not Assignment.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ready_waves_racing_people_and_each_other_never_over_assign_nor_answer_twice(postgres):
    """Three machine raters, each on two threads sending the same ready answers at once, and
    six people one item at a time, on a stage of overlap 3: every item ends with exactly 3
    answers, nobody answers an item twice, no lease is left behind."""
    project = make_project()
    stage = make_verify_stage(project, overlap=OVERLAP)
    make_items(project, ITEMS)
    bots = [make_member(project) for _ in range(3)]
    people = [make_member(project) for _ in range(6)]
    item_stages = list(ItemStage.objects.filter(stage=stage).order_by("pk"))
    barrier = threading.Barrier(2 * len(bots) + len(people))
    stored: list[int] = []
    lock = threading.Lock()

    def loop(who, index: int) -> None:
        user, machine = who
        barrier.wait()
        if machine:
            for start in range(0, ITEMS, 8):
                done = annotations_submit_ready(
                    annotator=user,
                    stage=_ready(stage, user),
                    answers=_answers(item_stages[start : start + 8]),
                )
                with lock:
                    stored.extend(d.annotation_id for d in done)
            return
        rng = random.Random(index)
        while True:
            access = access_stage_for_annotator(user=user, stage_id=stage.pk)
            assignment = services.assignment_next(annotator=user, stage=access)
            if assignment is None:
                return
            annotation, _ = services.annotation_submit(
                assignment_id=assignment.pk,
                annotator=user,
                payload={"value": rng.choice(["keep", "reject"])},
            )
            with lock:
                stored.append(annotation.pk)

    with patch("annotation.tasks.resolve_item_stage.delay"):
        run_annotators(
            loop,
            [(bot, True) for bot in bots for _ in range(2)]
            + [(person, False) for person in people],
        )

    per_item = Counter(
        Annotation.objects.filter(item_stage__stage=stage).values_list("item_stage_id", flat=True)
    )
    assert len(per_item) == ITEMS and set(per_item.values()) == {OVERLAP}
    doubled = (
        Annotation.objects.values("item_stage_id", "annotator_id")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not doubled.exists()
    assert sorted(stored) == sorted(Annotation.objects.values_list("pk", flat=True))
    for item_stage in ItemStage.objects.filter(stage=stage):
        assert (item_stage.submitted_count, item_stage.leased_count) == (OVERLAP, 0)
    assert not Assignment.objects.filter(status=Assignment.Status.ACTIVE).exists()
    machine_answers = Annotation.objects.filter(annotator__in=bots).count()
    assert 0 < machine_answers < ITEMS * OVERLAP


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ready_answers_tell_the_stored_answer_listeners_after_commit_as_every_submit_does(
    postgres,
):
    from annotation.plugins import Plugin, temporarily_registered

    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 3)
    bot = make_member(project)
    item_stages = list(ItemStage.objects.filter(stage=stage).order_by("pk"))
    heard: list[tuple[int, list[int]]] = []

    def listener(stage_read, item_stage_ids):
        heard.append((stage_read.pk, sorted(item_stage_ids)))

    with temporarily_registered(Plugin(name="stored-listener", on_answers_stored=[listener])):
        annotations_submit_ready(
            annotator=bot,
            stage=_ready(stage, bot),
            answers=_answers(item_stages),
            on_submitted=lambda done: heard.append(("in the transaction", len(done))),
        )
        again = annotations_submit_ready(  # a retry stores nothing and tells no one
            annotator=bot, stage=_ready(stage, bot), answers=_answers(item_stages)
        )
    assert again == []
    assert heard == [("in the transaction", 3), (stage.pk, [s.pk for s in item_stages])]
