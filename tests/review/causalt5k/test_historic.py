"""The release's own reviewer scores as the historic phase (review.causalt5k.historic): two
rounds per case written into an inactive stage, resolved at the gate, their agreement on the
tab — apart from the scores given in Rungwise, and never offered to an annotator."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, ItemStage, Membership, Resolution, Role
from review.causalt5k.figures import score_agreement
from review.causalt5k.historic import historic_scores_import, historic_summary
from review.causalt5k.pipeline import causalt5k_project_create
from tests.factories import make_member, make_user

pytestmark = pytest.mark.django_db

RUBRIC = {"detailed_scores": {"clarity": 9, "realism": 8}, "recommendation": "ACCEPT"}


def project_with_reviews():
    project = causalt5k_project_create(slug="historic", name="H", seed=1)
    pairs = [(9.5, 9.0), (8.0, 9.5), (9.0, None), (6.0, 7.0), (10.0, 9.5), (9.0, 9.0)]
    rows = []
    for n, (first, second) in enumerate(pairs):
        reviews = [{"round": 1, "reviewer": "contributor-001", "score": first, "rubric": RUBRIC}]
        if second is not None:
            reviews.append({"round": 2, "reviewer": "contributor-002", "score": second})
        if n == 0:  # a second round-1 score from another merged record: counted, not written
            reviews.append({"round": 1, "reviewer": "contributor-003", "score": 4.0})
        rows.append({"external_id": f"C{n}", "payload": {"case_id": f"C{n}", "tier": 1,
                                                         "reviews": reviews}})  # fmt: skip
    rows.append({"external_id": "C9", "payload": {"case_id": "C9", "tier": 1, "reviews": [
        {"round": 1, "reviewer": "contributor-004", "score": None}]}})  # fmt: skip
    engine.items_create(project=project, rows=rows, open_first_stage=False)
    return project


def test_the_two_rounds_become_the_historic_phase_resolved_at_the_gate():
    project = project_with_reviews()
    statuses = dict(Item.objects.filter(project=project).values_list("external_id", "status"))
    counts = historic_scores_import(project=project)
    assert counts == {"cases": 6, "scores": 11, "extra": 1}
    stage = project.stages.get(slug="historic")
    assert not stage.is_active and stage.kind == "ct5k_score"
    first = Annotation.objects.filter(
        item_stage__stage=stage, item_stage__item__external_id="C0"
    ).order_by("pk")
    assert [(a.external_rater, a.payload["composite"]) for a in first] == [
        ("round1", 9.5),
        ("round2", 9.0),
    ]
    assert first[0].payload["rubric"] == RUBRIC and first[0].assignment_id is None
    assert "contributor" not in str(list(first.values_list("external_rater", "payload")))
    outcomes = dict(
        Resolution.objects.filter(item_stage__stage=stage).values_list(
            "item_stage__item__external_id", "outcome"
        )
    )
    assert outcomes == {"C0": "accept", "C1": "reject", "C2": "accept", "C3": "reject",
                        "C4": "accept", "C5": "accept"}  # fmt: skip
    # The cases themselves are untouched, and nobody is offered the historic stage.
    assert dict(Item.objects.filter(project=project).values_list("external_id", "status")) == (
        statuses
    )
    person = make_member(project)
    with pytest.raises(ApplicationError):
        from annotation.access import access_stage_for_annotator

        access_stage_for_annotator(user=person, stage_id=stage.pk)
    summary = historic_summary(project)
    assert (summary["cases"], summary["two_scores"], summary["kept"], summary["kept_two"]) == (
        6,
        5,
        4,
        3,
    )
    agreement = summary["agreement"]
    assert agreement["n_items"] == 5
    assert agreement["icc"].n_items == 5 and agreement["icc"].value is not None
    assert agreement["alpha"].value is not None
    # Kept apart: the Rungwise scoring stage has no scores.
    assert score_agreement(project) == {"n_items": 0, "third_reviewer": 0, "third_done": 0}
    assert ItemStage.objects.filter(stage__slug="score").count() == 0
    with pytest.raises(ApplicationError, match="imported already"):
        historic_scores_import(project=project)


def test_the_tab_shows_the_historic_phase(client):
    project = project_with_reviews()
    researcher = make_user("historic-researcher")
    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    client.force_login(researcher)
    url = reverse("causalt5k:report", args=[project.slug])
    assert "causalt5k_historic_scores" in client.get(url).content.decode()
    historic_scores_import(project=project)
    page = client.get(url).content.decode()
    assert 'id="historic-agreement"' in page and "6 cases with the release" in page
