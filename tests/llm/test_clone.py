"""Cloning a project's setup copies its prompts and model raters (llm/clone.py, through the
plug-in hook studio's clone calls): every prompt version as it is, each active rater on the copy
of its stage with its own identity, the extra raters' reserved slots once — never runs, calls
or answers, and nothing of an endpoint's key."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Membership, Project, Role
from llm.models import Endpoint, ModelRater, PromptTemplate, PromptVersion, Run
from llm.services import prompt_template_create, prompt_version_add, rater_add, rater_remove
from studio.services import project_clone
from tests.factories import make_label_stage, make_project, make_user

pytestmark = pytest.mark.django_db

CHOICES = ("causal", "temporal", "none")


@pytest.fixture
def source():
    """A project whose label stage has an extra model rater (a reserved slot), a model in a
    person's slot, a removed rater, two prompts (one with two versions) and a run."""
    project = make_project(slug="models-source")
    stage = make_label_stage(project, overlap=2, choices=CHOICES)
    make_label_stage(project, slug="second", overlap=1, choices=CHOICES)
    endpoint = Endpoint.objects.create(
        name="local-model",
        base_url="http://127.0.0.1:9/v1",
        model="m",
        api_key_env="SOURCE_ONLY_KEY_NAME",
    )
    other = Endpoint.objects.create(name="other-model", base_url="http://127.0.0.1:9/v1", model="o")
    first = prompt_template_create(
        project=project, name="label", kind="label", system_text="Be brief.", user_text="{{ text }}"
    )
    second = prompt_version_add(
        template=first.template, user_text="Label: {{ text }}", system_text="Be brief."
    )
    judge = prompt_template_create(
        project=project, name="judge", kind="label", user_text="Judge {{ text }}", purpose="judge"
    )
    extra = rater_add(stage=stage, endpoint=endpoint, prompt=second, samples=3, temperature=0.7)
    in_slot = rater_add(stage=stage, endpoint=other, prompt=first, fills_human_slot=True)
    gone = rater_add(stage=stage, endpoint=other, prompt=judge)
    rater_remove(rater=gone)
    Run.objects.create(project=project, purpose="rate", rater=extra)
    stage.refresh_from_db()
    return project, stage, extra, in_slot


def test_prompts_and_active_raters_are_copied_with_their_settings(source):
    project, stage, extra, in_slot = source
    admin = make_user("cloner")
    copy, copied = project_clone(
        source=project, slug="models-copy", name="Copy", with_members=False, creator=admin
    )
    assert copied == ["2 prompts, 2 model raters"]
    texts = lambda p: sorted(  # noqa: E731
        PromptVersion.objects.filter(template__project=p).values_list(
            "template__name", "template__kind", "template__purpose", "number", "system", "user",
            "checksum",
        )
    )  # fmt: skip
    assert texts(copy) == texts(project) and len(texts(copy)) == 3
    copied_stage = copy.stages.get(slug=stage.slug)
    raters = ModelRater.objects.filter(stage__project=copy).order_by("pk")
    assert [
        (r.stage_id, r.endpoint.name, r.prompt.template.name, r.prompt.number, r.samples,
         r.temperature, r.fills_human_slot, r.active)
        for r in raters
    ] == [
        (copied_stage.pk, "local-model", "label", 2, 3, 0.7, False, True),
        (copied_stage.pk, "other-model", "label", 1, 1, None, True, True),
    ]  # fmt: skip
    # Their own annotator identities in the copy, none of the source's.
    assert not {r.user_id for r in raters} & {extra.user_id, in_slot.user_id}
    for rater in raters:
        assert Membership.objects.filter(project=copy, user=rater.user, role=Role.ANNOTATOR)
        assert not rater.user.has_usable_password() and not rater.user.is_active
    # The extra rater's reserved slot once, not twice; the rule that keeps it, once.
    copied_stage.refresh_from_db()
    assert copied_stage.overlap == stage.overlap == 3
    assert copied_stage.eligibility == stage.eligibility
    assert [r["rule"] for r in copied_stage.eligibility].count("model_slots") == 1
    # Setup only: no runs; the source is untouched; endpoints are shared, never copied.
    assert not Run.objects.filter(project=copy).exists()
    assert Endpoint.objects.count() == 2
    assert PromptTemplate.objects.filter(project=project).count() == 2
    assert ModelRater.objects.filter(stage__project=project).count() == 3


def test_a_project_without_models_clones_as_before(source):
    plain = make_project(slug="plain")
    make_label_stage(plain, overlap=2, choices=CHOICES)
    copy, copied = project_clone(
        source=plain, slug="plain-copy", name="Plain copy", with_members=False,
        creator=make_user("cloner"),
    )  # fmt: skip
    assert copied == []
    assert not PromptTemplate.objects.filter(project=copy).exists()


def test_the_setup_page_says_what_the_clone_copied(client, source):
    project = source[0]
    staff = make_user("staffer", is_staff=True)
    Membership.objects.create(project=project, user=staff, role=Role.ADMIN)
    client.force_login(staff)
    response = client.post(
        reverse("studio:clone", args=[project.slug]),
        {"slug": "page-copy", "name": "Page copy"},
        follow=True,
    )
    body = response.content.decode()
    assert "(with 2 prompts, 2 model raters), without its data" in body
    copy = Project.objects.get(slug="page-copy")
    assert ModelRater.objects.filter(stage__project=copy).count() == 2
    # The key's variable name travels with the shared endpoint, never a key.
    assert "SOURCE_ONLY_KEY_NAME" not in body
