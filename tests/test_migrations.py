"""A database created before the engine was split into apps migrates to the new head with every
row intact: ImportBatch, Release and AgreementSnapshot moved out of `annotation` into `imports`,
`releases` and `agreement` with their tables' names kept (annotation/migrations/0004)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE_SPLIT = [
    ("annotation", "0003_stage_agreement_refresh_state"),
    ("ratings", "0001_initial"),
    ("contenttypes", "0002_remove_content_type_name"),
    # The apps split out of `annotation` did not exist yet (their first migrations only take
    # over the tables' state; later ones add columns).
    ("imports", None),
    ("releases", None),
    ("agreement", None),
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    nodes = [target for target in targets if target[1] is not None]
    return executor.loader.project_state(nodes).apps


def _leaf_targets():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_split_keeps_every_row():
    leaves = _leaf_targets()
    old = _migrate(BEFORE_SPLIT)
    try:
        User = old.get_model("auth", "User")
        Project = old.get_model("annotation", "Project")
        Stage = old.get_model("annotation", "Stage")
        Item = old.get_model("annotation", "Item")
        ImportBatch = old.get_model("annotation", "ImportBatch")
        Release = old.get_model("annotation", "Release")
        Snapshot = old.get_model("annotation", "AgreementSnapshot")
        SentencePair = old.get_model("ratings", "SentencePair")
        ContentType = old.get_model("contenttypes", "ContentType")
        Permission = old.get_model("auth", "Permission")

        admin = User.objects.create(username="old-admin")
        project = Project.objects.create(slug="old", name="Old project")
        stage = Stage.objects.create(
            project=project, position=0, slug="verify", name="Verify", kind="verify", seed=1
        )
        batch = ImportBatch.objects.create(
            project=project, created_by=admin, filename="pairs.csv", format="csv", sha256="ab" * 32
        )
        item = Item.objects.create(project=project, external_id="p1", import_batch=batch)
        SentencePair.objects.create(
            project=project, pair_id="p1", sentence_a="A.", sentence_b="B.", import_batch=batch
        )
        release = Release.objects.create(
            project=project, version=1, status="published", created_by=admin, sha256="cd" * 32
        )
        snapshot = Snapshot.objects.create(stage=stage, metric="fleiss_kappa", value=0.78)
        batch_type = ContentType.objects.get_or_create(app_label="annotation", model="importbatch")[
            0
        ]
        permission = Permission.objects.create(
            content_type=batch_type, codename="view_importbatch_old", name="Can view (old)"
        )
    finally:
        _migrate(leaves)

    from django.contrib.auth.models import Permission as NewPermission

    from agreement.models import AgreementSnapshot
    from annotation.models import Item as NewItem
    from imports.models import ImportBatch as NewImportBatch
    from ratings.models import SentencePair as NewSentencePair
    from releases.models import Release as NewRelease

    moved_batch = NewImportBatch.objects.get(pk=batch.pk)
    assert (moved_batch.filename, moved_batch.sha256, moved_batch.created_by.username) == (
        "pairs.csv",
        "ab" * 32,
        "old-admin",
    )
    assert NewItem.objects.get(pk=item.pk).import_batch == moved_batch
    assert NewSentencePair.objects.get(project_id=project.pk).import_batch == moved_batch
    moved_release = NewRelease.objects.get(pk=release.pk)
    assert (moved_release.version, moved_release.status, moved_release.project.slug) == (
        1,
        "published",
        "old",
    )
    assert AgreementSnapshot.objects.get(pk=snapshot.pk).value == pytest.approx(0.78)
    assert AgreementSnapshot.objects.get(pk=snapshot.pk).stage.slug == "verify"
    # Permissions granted on the old models follow them to their new apps.
    assert NewPermission.objects.get(pk=permission.pk).content_type.app_label == "imports"
    # New rows get ids after the old ones (the sequences came along with the tables).
    project_model = NewItem._meta.get_field("project").related_model
    fresh = NewImportBatch.objects.create(
        project=project_model.objects.get(pk=project.pk), filename="more.csv", format="csv"
    )
    assert fresh.pk > batch.pk


BEFORE_REFRESH_STATE_MOVED = [
    ("annotation", "0008_annotation_versions"),
    ("agreement", "0001_initial"),
]


@pytest.mark.django_db(transaction=True)
def test_the_agreement_refresh_state_moves_off_the_stage_with_its_values_and_back():
    """The coalesced refresh's counters and marks lived on annotation.Stage (0003); they move to
    agreement.AgreementRefresh (agreement/migrations/0002, annotation/migrations/0009) with
    every stage's values, and migrating back restores them on the stage."""
    from datetime import UTC, datetime

    leaves = _leaf_targets()
    queued = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)
    computed = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    old = _migrate(BEFORE_REFRESH_STATE_MOVED)
    try:
        Project = old.get_model("annotation", "Project")
        Stage = old.get_model("annotation", "Stage")
        project = Project.objects.create(slug="refresh", name="Refresh state")
        busy = Stage.objects.create(
            project=project, position=0, slug="label", name="Label", kind="label",
            agreement_changes=12, agreement_computed_changes=9,
            agreement_refresh_queued_at=queued, agreement_computed_at=computed,
        )  # fmt: skip
        quiet = Stage.objects.create(
            project=project, position=1, slug="verify", name="Verify", kind="verify"
        )
    finally:
        _migrate(leaves)

    from agreement.models import AgreementRefresh
    from annotation.models import Stage as NewStage

    assert not {"agreement_changes", "agreement_refresh_queued_at"} & {
        field.name for field in NewStage._meta.get_fields()
    }
    moved = AgreementRefresh.objects.get(stage_id=busy.pk)
    assert (moved.changes, moved.computed_changes, moved.queued_at, moved.computed_at) == (
        12,
        9,
        queued,
        computed,
    )
    assert moved.stale
    untouched = AgreementRefresh.objects.get(stage_id=quiet.pk)
    assert (untouched.changes, untouched.computed_changes, untouched.queued_at) == (0, 0, None)
    AgreementRefresh.objects.filter(stage_id=busy.pk).update(changes=13)

    back = _migrate(BEFORE_REFRESH_STATE_MOVED)
    try:
        restored = back.get_model("annotation", "Stage").objects.get(pk=busy.pk)
        assert (
            restored.agreement_changes,
            restored.agreement_computed_changes,
            restored.agreement_refresh_queued_at,
            restored.agreement_computed_at,
        ) == (13, 9, queued, computed)
    finally:
        _migrate(leaves)
