"""annotation/gates.py: an annotator gate governs the people its SQL names, on every stage of the
project (also stages added later) and inside every write; people it does not govern are left
alone."""

from __future__ import annotations

import pytest

from annotation import gates, services
from annotation.access import (
    _stage_for_annotator_sql,
    access_stage_for_annotator,
    stage_for_annotator_select,
)
from annotation.errors import ApplicationError
from annotation.models import Annotation, Membership
from annotation.services import leases
from api.views import annotate_lean
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


class Fenced(gates.AnnotatorGate):
    """Governs members tagged ``fenced``: no item in any stage (a rule asking for a tag nobody
    has), no submit, skip or change."""

    name = "test-fenced"
    rules = ({"rule": "skill", "tag": "never-given"},)

    def governs(self, *, annotator, project):
        return (
            f"EXISTS (SELECT 1 FROM {Membership._meta.db_table} gm WHERE gm.user_id = {annotator}"
            f" AND gm.project_id = {project} AND gm.skills LIKE '%%fenced%%')"
        )

    def check(self, *, annotator_id, stage, action, answer=None):
        return None if action == gates.NEXT else "Fenced: nothing was saved."


@pytest.fixture
def fenced():
    def clear():
        _stage_for_annotator_sql.cache_clear()
        stage_for_annotator_select.cache_clear()
        leases._locked_assignment_sql.cache_clear()
        leases.assignment_read_select.cache_clear()
        annotate_lean._next_read_sql.cache_clear()
        annotate_lean._submit_read_sql.cache_clear()

    known = list(gates.ANNOTATOR_GATES)
    gates.register_annotator_gate(Fenced())
    clear()
    yield
    gates.ANNOTATOR_GATES[:] = known
    clear()


def test_a_gate_governs_its_people_on_every_stage_and_every_write(fenced):
    project = make_project()
    earlier = make_verify_stage(project, overlap=3)
    make_items(project, 3)
    first = services.stage_create(project=project, slug="first", name="First", kind="verify")
    services.item_stages_open(items=list(project.items.all()), stage=first)
    governed, free = make_member(project), make_member(project)
    # an item taken before the fence goes up, to be submitted behind it
    held = services.assignment_next(
        annotator=governed, stage=access_stage_for_annotator(user=governed, stage_id=earlier.pk)
    )
    Membership.objects.filter(user=governed).update(skills="fenced")
    later = services.stage_create(project=project, slug="later", name="Later", kind="verify")
    services.item_stages_open(items=list(project.items.all()), stage=later)
    for stage in (first, later):
        access = access_stage_for_annotator(user=governed, stage_id=stage.pk)
        assert access.governed
        assert services.assignment_next(annotator=governed, stage=access) is None
        access = access_stage_for_annotator(user=free, stage_id=stage.pk)
        assert not access.governed
        assert services.assignment_next(annotator=free, stage=access) is not None
    with pytest.raises(ApplicationError) as refused:
        services.annotation_submit(
            assignment_id=held.pk, annotator=governed, payload={"value": "keep"}
        )
    assert refused.value.status == 403 and "Fenced" in refused.value.message
    assert not Annotation.objects.filter(annotator=governed).exists()
