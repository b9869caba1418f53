"""Every workflow the platform hosts has a template on the New project page (studio.views
.project_new): created through the page, each project has its workflow's kind (so its tab and
release layout apply), its stages, routes and eligibility rules."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from annotation.models import Project
from annotation.navigation import project_tabs
from annotation.workflows import WORKFLOWS
from releases.layouts import layout_for_kind
from tests.factories import make_user

pytestmark = pytest.mark.django_db

#: workflow → (project kind, stages in order, the workflow's own tab or None, has a layout).
TEMPLATES = {
    "causalt5k": (
        "causalt5k",
        ["dedup", "author", "review", "score", "answer", "pressure", "pressure_check"],
        "CausalT5k",
        True,
    ),
    "meter": ("meter", ["verify", "edit", "filter", "baseline", "evidence"], "METER", True),
    "ratings": ("ratings", None, "Ratings", True),
    "carlgt": ("carlgt", ["answer"], "Graphs", True),
    "causal_narratives": ("causal_narratives", None, "Narratives", True),
    "verify_label": ("generic", ["verify", "label"], None, False),
    "generic": ("generic", [], None, False),
}


@pytest.fixture
def staff(client):
    user = make_user("staffer", is_staff=True)
    client.force_login(user)
    return user


def test_every_registered_workflow_offers_a_template_and_the_page_lists_each_with_its_words(
    client, staff
):
    assert {key for key, workflow in WORKFLOWS.items() if workflow.create} == set(TEMPLATES)
    page = html.unescape(client.get(reverse("studio:new")).content.decode())
    for key in TEMPLATES:
        workflow = WORKFLOWS[key]
        assert f'value="{key}"' in page
        assert workflow.description and workflow.description in page


@pytest.mark.parametrize("workflow", sorted(TEMPLATES))
def test_a_project_made_from_each_template_has_its_stages_tab_and_layout(client, staff, workflow):
    kind, stages, tab, has_layout = TEMPLATES[workflow]
    response = client.post(
        reverse("studio:new"), {"workflow": workflow, "slug": "made", "name": "Made here"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    project = Project.objects.get(slug="made")
    assert project.kind == kind
    made = list(project.stages.order_by("position").values_list("slug", flat=True))
    if stages is not None:
        assert made == stages
    else:
        assert made  # ready for work: at least one stage
    labels = [found["label"] for found in project_tabs(project, ["admin"])]
    assert (tab in labels) if tab else not {"CausalT5k", "METER", "Ratings"} & set(labels)
    assert (layout_for_kind(project.kind) is not None) == has_layout


def test_the_causalt5k_template_builds_the_validation_pipeline_with_its_routes_and_blind_stage(
    client, staff
):
    client.post(reverse("studio:new"), {"workflow": "causalt5k", "slug": "ct", "name": "CT"})
    project = Project.objects.get(slug="ct")
    stages = {stage.slug: stage for stage in project.stages.all()}
    review = stages["review"]
    assert review.routes["major"]["action"] == "back" and review.routes["major"]["stage"] == (
        "author"
    )
    assert review.routes["remove"]["action"] == "discard"
    assert stages["score"].routes["reject"]["action"] == "discard"
    assert stages["author"].eligibility == [{"rule": "author_if_known"}]
    answer_rules = [rule["rule"] for rule in stages["answer"].eligibility]
    assert answer_rules == ["not_author", "blind"]
    assert stages["answer"].kind == "ct5k_answer"


def test_the_verify_label_template_builds_a_generic_two_stage_pipeline(client, staff):
    client.post(reverse("studio:new"), {"workflow": "verify_label", "slug": "vl", "name": "VL"})
    project = Project.objects.get(slug="vl")
    verify, label = project.stages.order_by("position")
    assert (verify.kind, verify.overlap, label.kind) == ("verify", 3, "label")
    assert label.config["choices"] == ["causal", "temporal", "unrelated"]
