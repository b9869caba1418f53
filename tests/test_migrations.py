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
