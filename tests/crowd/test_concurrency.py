"""64 participants opening one study's URL at once on real PostgreSQL (threads with their own
connections): the study's places and each participant's quota are never exceeded, a platform id
sent twice at once is one participant, and the slot counters hold."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.db import connection
from django.db.models import Count, F

from annotation.errors import Conflict
from annotation.gates import GateRefused
from annotation.models import Annotation, Assignment, ItemStage
from crowd import services
from crowd.entry import parse_entry
from crowd.models import Participant
from tests.crowd.test_services import answer, enter, next_item, ready
from tests.factories import make_crowd_study, prolific_ids

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 64
PLACES = 20
QUOTA = 5


def test_64_participants_joining_at_once_never_exceed_places_or_quota(postgres):
    study = make_crowd_study(
        regular=40, practice=1, checks=2, overlap=3, places=PLACES, quota=QUOTA,
        max_check_failures=5,
    )  # fmt: skip
    barrier = threading.Barrier(THREADS)
    outcomes: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def participant(index: int) -> None:
        # eight platform ids arrive twice at the same moment (a double click on Prolific)
        number = index if index < THREADS - 8 else index - (THREADS - 8)
        try:
            entry = parse_entry(study, prolific_ids(number))
            barrier.wait()
            try:
                person, _created = services.participant_enter(study=study, entry=entry)
            except Conflict:
                with lock:
                    outcomes.append("full")
                return
            services.participant_consent(participant=person, accepted=True)
            services.participant_instructions_read(participant=person)
            person = services.participant_refresh(participant=person)
            misses = 0
            while person.status == Participant.Status.ACTIVE and misses < 100:
                assignment = next_item(person)
                if assignment is None:
                    # The practice item and the checks are shared by everyone: while another
                    # participant's transaction holds such a row, the search skips it (SKIP
                    # LOCKED) and may find nothing; the participant asks again (a reload).
                    misses += 1
                    time.sleep(0.01)
                    continue
                try:
                    person = answer(person, assignment)
                except GateRefused:
                    # The same participant's other request (the double click) met the quota
                    # meanwhile: this submit stored nothing; the pages send them to the end.
                    person = services.participant_refresh(participant=person)
            with lock:
                outcomes.append(person.status)
        except BaseException as error:  # surfaced below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=participant, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
    participants = Participant.objects.filter(study=study)
    assert participants.count() == PLACES
    assert len(set(participants.values_list("platform_id", flat=True))) == PLACES
    assert len(outcomes) == THREADS
    # 56 distinct ids for 20 places: 36 are turned away (their twins may be too)
    assert Counter(outcomes)["full"] >= THREADS - 8 - PLACES
    per_person = Counter(
        Annotation.objects.filter(item_stage__stage=study.stage)
        .exclude(item_stage__item__purpose="practice")
        .values_list("annotator_id", flat=True)
    )
    assert max(per_person.values()) <= QUOTA
    assert set(participants.values_list("status", flat=True)) == {"completed"}
    assert all(per_person[p.user_id] == QUOTA for p in participants)
    # the engine's invariants
    assert not ItemStage.objects.filter(
        submitted_count__gt=F("target_count") - F("leased_count")
    ).exists()
    assert not Assignment.objects.filter(status="active").exists()
    twice = (
        Annotation.objects.values("item_stage", "annotator").annotate(n=Count("pk")).filter(n__gt=1)
    )
    assert not twice.exists()


def test_a_participants_second_request_cannot_pass_the_quota_while_the_first_answers(
    postgres, monkeypatch
):
    """The race the 64-participant test met once under load: request B of a participant has
    counted their items (one below the quota) and chosen a candidate, and before B stores its
    lease, request A of the same participant leases and answers another item. Both would pass
    the quota. The crowd rule declares ``counts_own_work``, so A's search waits for B's
    transaction and then finds the quota reached."""
    from annotation.services import next_item as work

    study = make_crowd_study(regular=12, practice=0, checks=0, overlap=1, places=5, quota=2)
    person = enter(study, 1)
    person = ready(person)
    first = next_item(person)
    person = answer(person, first)  # one of two done

    insert_lease = work._insert_lease
    b_chose, release_b = threading.Event(), threading.Event()
    results: dict[str, object] = {}

    def held_insert(assignment):
        if threading.current_thread().name == "B":
            b_chose.set()
            release_b.wait(10)
        return insert_lease(assignment)

    monkeypatch.setattr(work, "_insert_lease", held_insert)

    def request_b():
        try:
            results["B"] = next_item(person)
        finally:
            connection.close()

    def request_a():
        try:
            got = next_item(person)
            if got is not None:
                answer(person, got)
            results["A"] = got
        finally:
            connection.close()

    b = threading.Thread(target=request_b, name="B")
    b.start()
    assert b_chose.wait(10)
    a = threading.Thread(target=request_a, name="A")
    a.start()
    a.join(1.5)  # without the per-person lock A leases and answers here, past B's count
    release_b.set()
    b.join(10)
    a.join(10)
    taken = Assignment.objects.filter(
        annotator=person.user, status__in=("active", "submitted")
    ).count()
    assert taken <= 2, results
    assert results["B"] is not None and results["A"] is None
