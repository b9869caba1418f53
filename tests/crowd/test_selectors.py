"""crowd/selectors.py: the participants' review table decides "too fast" by the server's clock
(lease → submit), with the browser's figure kept beside it."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from crowd.selectors import participant_rows
from tests.crowd.test_services import answer, enter, next_item, ready
from tests.factories import make_crowd_study, took_seconds

pytestmark = pytest.mark.django_db


def test_too_fast_reads_the_servers_lease_to_submit_time_not_the_browsers():
    study = make_crowd_study(regular=6, practice=0, checks=0, quota=2, too_fast_seconds=2)
    hurried, careful = (ready(enter(study, number)) for number in (1, 2))
    for person in (hurried, careful):
        while person.status == "active":
            person = answer(person, next_item(person))
    hurried_answers = Annotation.objects.filter(annotator=hurried.user)
    careful_answers = Annotation.objects.filter(annotator=careful.user)
    # the hurried browser claims 30 s per item, the server saw 0.5 s; the other way round
    hurried_answers.update(seconds_spent=30)
    took_seconds(hurried_answers, 0.5)
    careful_answers.update(seconds_spent=0.5)
    took_seconds(careful_answers, 12)
    rows = {row["participant"].pk: row for row in participant_rows(study)}
    assert rows[hurried.pk]["suggestion"] == "reject"
    assert "too fast" in rows[hurried.pk]["reason"]
    assert rows[hurried.pk]["median_seconds"] == pytest.approx(0.5)
    assert rows[hurried.pk]["median_client_seconds"] == pytest.approx(30)
    assert rows[careful.pk]["suggestion"] == "approve"
    assert rows[careful.pk]["median_seconds"] == pytest.approx(12)
    assert rows[careful.pk]["median_client_seconds"] == pytest.approx(0.5)
