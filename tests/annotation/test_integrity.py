"""Nothing lost: slots come back when people or leases disappear, annotations outlive their
authors' accounts, counters can be recounted from the rows, and a repair sweep does not stop at
the first bad row."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError
from annotation.models import Annotation, Assignment, ItemStage, Stage
from annotation.tasks import repair_counters, sweep_unresolved
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


def lease(person, stage):
    return services.assignment_next(
        annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
    )


def test_removing_a_person_keeps_their_annotations_and_returns_their_leased_slots():
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 1)
    alice, bob = make_member(project), make_member(project)
    done = lease(alice, stage)
    services.annotation_submit(assignment_id=done.pk, annotator=alice, payload={"value": "keep"})
    held = lease(bob, stage)
    assert ItemStage.objects.get().leased_count == 1

    services.user_remove(user=bob)
    services.user_remove(user=alice)

    item_stage = ItemStage.objects.get()
    assert (item_stage.submitted_count, item_stage.leased_count) == (1, 0)
    annotation = Annotation.objects.get()
    assert annotation.annotator_id == alice.pk and annotation.payload["value"] == "keep"
    alice.refresh_from_db()
    assert (alice.username, alice.is_active, alice.has_usable_password()) == (
        f"removed-{alice.pk}",
        False,
        False,
    )
    assert Assignment.objects.get(pk=held.pk).status == "revoked"
    # The row itself cannot be deleted while it has work attached (PROTECT).
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        get_user_model().objects.filter(pk=alice.pk).delete()


def test_removing_an_annotator_from_a_project_releases_their_leases():
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 1)
    alice, bob = make_member(project), make_member(project)
    lease(alice, stage)
    assert lease(bob, stage) is None  # the only slot is Alice's
    services.membership_remove(project=project, user_id=alice.pk)
    assert ItemStage.objects.get().leased_count == 0
    assert lease(bob, stage) is not None


def test_an_annotation_cannot_be_deleted_by_deleting_its_assignment():
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 1)
    alice = make_member(project)
    done = lease(alice, stage)
    services.annotation_submit(assignment_id=done.pk, annotator=alice, payload={"value": "keep"})
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        Assignment.objects.filter(pk=done.pk).delete()
    assert Annotation.objects.count() == 1


def test_deleting_an_active_lease_in_bulk_is_repaired_by_the_recount():
    project = make_project()
    stage = make_verify_stage(project, overlap=3)
    make_items(project, 2)
    people = [make_member(project) for _ in range(3)]
    for person in people:
        lease(person, stage)
    Assignment.objects.filter(annotator=people[0]).delete()  # e.g. from a shell or the admin
    assert sum(ItemStage.objects.values_list("leased_count", flat=True)) == 3  # drifted

    assert services.item_stage_counters_repair() == 1
    assert sum(ItemStage.objects.values_list("leased_count", flat=True)) == 2
    assert repair_counters() == 0  # nothing left to repair


def test_the_unresolved_sweep_goes_past_an_item_it_cannot_resolve(caplog):
    project = make_project()
    good = make_verify_stage(project, overlap=1)
    make_items(project, 2)
    alice = make_member(project)
    for _ in range(2):
        assignment = lease(alice, good)
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=alice, payload={"value": "keep"}
        )
    first, second = ItemStage.objects.order_by("pk")
    # One item stage's stage got an unknown policy (e.g. saved around the checks).
    broken = Stage.objects.create(
        project=project, position=9, slug="broken", name="Broken", kind="verify", seed=1,
        resolution_policy="no_such_policy",
    )  # fmt: skip
    ItemStage.objects.filter(pk=first.pk).update(stage=broken)
    ItemStage.objects.update(state="resolving", completed_at="2000-01-01T00:00:00Z")

    assert sweep_unresolved(older_than_seconds=0) == 1
    second.refresh_from_db()
    assert second.state == "resolved"
    assert "could not resolve item stage" in caplog.text


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), 11, 0, 6.5, True])
def test_a_numeric_adjudication_must_be_a_value_the_kind_accepts(value):
    project = make_project()
    stage = services.stage_create(
        project=project, slug="rate", name="Rate", kind="rate", overlap=1, config={}
    )
    make_items(project, 1)
    item_stage = ItemStage.objects.get(stage=stage)
    ItemStage.objects.filter(pk=item_stage.pk).update(state="adjudication")
    reviewer = make_member(project, role="reviewer")
    with pytest.raises(ApplicationError) as refused:
        services.item_stage_adjudicate(
            item_stage_id=item_stage.pk, reviewer=reviewer, value=value, reason="checked"
        )
    assert "value" in refused.value.extra
    item_stage.refresh_from_db()
    assert item_stage.state == "adjudication"
    decided = services.item_stage_adjudicate(
        item_stage_id=item_stage.pk, reviewer=reviewer, value=7, reason="checked"
    )
    assert decided.value == 7


@pytest.mark.parametrize("leaves", ["paused", "removed", "stage_closed", "project_closed"])
def test_a_submit_is_refused_once_the_annotator_may_no_longer_annotate(leaves):
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 1)
    alice = make_member(project)
    held = lease(alice, stage)
    if leaves == "paused":
        services.membership_set_paused(project=project, user_id=alice.pk, paused=True)
    elif leaves == "removed":
        services.membership_remove(project=project, user_id=alice.pk)
    elif leaves == "stage_closed":
        Stage.objects.filter(pk=stage.pk).update(is_active=False)
    else:
        type(project).objects.filter(pk=project.pk).update(is_active=False)
    with pytest.raises(ApplicationError) as refused:
        services.annotation_submit(
            assignment_id=held.pk, annotator=alice, payload={"value": "keep"}
        )
    assert refused.value.status in (403, 409)
    assert not Annotation.objects.exists()
    item_stage = ItemStage.objects.get()
    assert item_stage.submitted_count == 0
    if leaves in ("paused", "removed"):
        assert Assignment.objects.get(pk=held.pk).status == "revoked"
        assert "withdrawn" in refused.value.message


# --- Judgements of one version never published as another ----------------------------------


def test_each_annotation_records_the_version_it_judged_and_revisions_wait_for_open_work(
    django_capture_on_commit_callbacks, settings, tmp_path
):
    from annotation.errors import Conflict
    from annotation.models import Item
    from releases.services import release_annotation_rows

    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    (item,) = make_items(project, 1)
    alice, bob = make_member(project), make_member(project)
    first = lease(alice, stage)
    assert first.item_version == 1

    # A lease is out: the item cannot change under the annotator.
    with pytest.raises(Conflict, match="being annotated in"):
        services.item_revise(item=item, payload={"text": "v2"}, author=None, reason="typo")
    with django_capture_on_commit_callbacks(execute=True):
        services.annotation_submit(
            assignment_id=first.pk, annotator=alice, payload={"value": "keep"}
        )
    # One of two judgements is in: still open work.
    with pytest.raises(Conflict):
        services.item_revise(item=item, payload={"text": "v2"}, author=None, reason="typo")
    with django_capture_on_commit_callbacks(execute=True):
        second = lease(bob, stage)
        services.annotation_submit(
            assignment_id=second.pk, annotator=bob, payload={"value": "keep"}
        )
    assert ItemStage.objects.get().state == ItemStage.State.RESOLVED
    services.item_revise(item=item, payload={"text": "v2"}, author=None, reason="typo")

    item.refresh_from_db()
    assert item.version == 2 and item.status == Item.Status.ACCEPTED
    assert set(Annotation.objects.values_list("item_version", flat=True)) == {1}
    exported = list(release_annotation_rows(project))
    assert [row["item_version"] for row in exported] == [1, 1]


def test_an_update_import_refuses_items_being_annotated_and_changes_nothing(settings, tmp_path):
    import io
    import json

    from annotation.models import Item
    from imports.models import ImportBatch
    from imports.services import import_batch_create, import_batch_run

    settings.MEDIA_ROOT = tmp_path
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    items = make_items(project, 3)
    alice = make_member(project)
    held = lease(alice, stage)
    rows = [{"id": item.external_id, "text": f"new text {n}"} for n, item in enumerate(items)]
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(data), filename="update.jsonl",
        options={"duplicate_policy": "update"},
    )  # fmt: skip
    batch = import_batch_run(batch_id=batch.pk)

    assert batch.status == ImportBatch.Status.FAILED
    busy = held.item_stage.item.external_id
    line = 1 + [item.external_id for item in items].index(busy)
    assert busy in batch.message
    assert [(error["line"], error["code"]) for error in batch.errors] == [(line, "open_work")]
    assert set(Item.objects.values_list("version", flat=True)) == {1}
    assert not any(
        text.startswith("new text") for text in Item.objects.values_list("payload__text", flat=True)
    )
