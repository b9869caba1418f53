"""An import and the data manager's search (annotation/search.py): every imported item is
found from the moment the import commits (queued, read directly) and after the indexing task
the import sends on commit; an update by import is found by its new content. SQLite runs the
two-pass pipeline, PostgreSQL the one-pass staged one (imports/services/run.py)."""

from __future__ import annotations

import io

import pytest

from annotation.models import Item, ItemSearch, ItemSearchPending
from imports.models import ImportBatch
from imports.services import import_batch_create, import_batch_run
from studio.data_manager import selectors
from studio.data_manager.forms import ItemQuery
from tests.factories import make_project, make_verify_stage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def _import(project, data: bytes, **options) -> ImportBatch:
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(data), filename="rows.csv", options=options
    )
    return import_batch_run(batch_id=batch.pk)


def _search(project, text: str) -> set[str]:
    """What the data manager lists for a search, every page."""
    found: set[str] = set()
    for batch in selectors.items_in_batches(project, ItemQuery(q=text), viewer=None, named=True):
        found |= {item.external_id for item in batch}
    return found


def test_imported_items_are_found_right_after_the_import_and_after_the_indexing(
    django_capture_on_commit_callbacks,
):
    project = make_project()
    make_verify_stage(project)
    rows = "".join(f"row-{index:03d},Text {index} about a kingfisher\r\n" for index in range(40))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        batch = _import(project, f"external_id,text\r\n{rows}".encode())
    assert batch.status == ImportBatch.Status.SUCCEEDED, batch.message
    every = {f"row-{index:03d}" for index in range(40)}
    # Committed, not indexed yet: the search reads the queued items themselves.
    assert ItemSearchPending.objects.count() == 40 and not ItemSearch.objects.exists()
    assert _search(project, "KINGFISHER") == every
    assert _search(project, "row-01") == {f"row-01{index}" for index in range(10)}
    # The import sent the indexing task on commit; run what it sent.
    for callback in callbacks:
        callback()
    assert not ItemSearchPending.objects.exists()
    assert ItemSearch.objects.filter(project_id=project.pk).count() == 40
    assert _search(project, "KINGFISHER") == every
    assert _search(project, "row-01") == {f"row-01{index}" for index in range(10)}

    # An update by import: found by its new text at once, the old text no longer matches.
    with django_capture_on_commit_callbacks(execute=True):
        update = _import(
            project, b"external_id,text\r\nrow-007,A heron now\r\n", duplicate_policy="update"
        )
    assert update.status == ImportBatch.Status.SUCCEEDED, update.message
    assert update.items_updated == 1
    assert not ItemSearchPending.objects.exists()  # indexed by the task sent on commit
    assert "row-007" not in _search(project, "kingfisher")
    assert _search(project, "heron") == {"row-007"}
    assert Item.objects.filter(project=project).count() == 40
