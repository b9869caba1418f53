"""The small-sample warning (agreement/small_sample.py): one rule, shown beside κ / α on every
page that shows them over fewer than SMALL_SAMPLE_ITEMS items."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.test import Client
from django.urls import reverse

from agreement.models import AgreementSnapshot
from agreement.small_sample import SMALL_SAMPLE_ITEMS, small_sample_warning
from annotation.models import Role
from tests.factories import PASSWORD, make_label_stage, make_member, make_project


def test_the_rule():
    assert (
        small_sample_warning(2)
        == f"Only 2 items: too few to read (fewer than {SMALL_SAMPLE_ITEMS})."
    )
    assert small_sample_warning(1).startswith("Only one item:")
    assert small_sample_warning(SMALL_SAMPLE_ITEMS) == ""
    assert small_sample_warning(None) == ""  # unknown: nothing claimed


def test_the_template_tag_renders_a_note_or_nothing():
    template = Template("{% load research_ui %}[{% small_sample n %}]")
    assert 'role="note">Only 3 items' in template.render(Context({"n": 3}))
    assert template.render(Context({"n": 500})) == "[]"
    assert template.render(Context({"n": None})) == "[]"


@pytest.mark.django_db
@pytest.mark.parametrize(("n_items", "warned"), [(3, True), (40, False)])
def test_the_stage_page_and_the_dashboard_warn_over_few_items(settings, n_items, warned):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    project = make_project(slug="few")
    stage = make_label_stage(project)
    AgreementSnapshot.objects.create(
        stage=stage, metric="fleiss_kappa", value=1.0, ci_low=None, ci_high=None,
        n_items=n_items, n_annotators=3, n_annotations=3 * n_items,
    )  # fmt: skip
    researcher = make_member(project, Role.RESEARCHER, username="rita")
    client = Client()
    assert client.login(username=researcher.username, password=PASSWORD)
    for url in (
        reverse("agreement:stage", args=[project.slug, stage.slug]),
        reverse("agreement:dashboard", args=[project.slug]),
    ):
        html = client.get(url).content.decode()
        assert (f"Only {n_items} items: too few to read" in html) is warned, url
