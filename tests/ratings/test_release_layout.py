"""A ratings release carries the ExpliCa layout: per ordered pair the four connective means,
the preferred connective and the label; per item the mean and its interval."""

from __future__ import annotations

import csv
import io
import zipfile

import pytest

from annotation.models import Item
from ratings import services
from ratings.models import SentencePair
from releases.services import release_build, release_publish
from tests.factories import make_member
from tests.ratings.conftest import csv_text

pytestmark = pytest.mark.django_db


def _publish(ratings_project):
    """Import ratings of p1 and p3 (A→B), finish those items, build a release; return the
    layout's two tables and the manifest."""
    # p1 A→B: "so" rated highest (causal, iconic); p3 A→B: nothing above 6 and a low mean.
    ratings = {("p1", "AB", "so"): [9, 8, 10], ("p1", "AB", "because"): [2, 3, 1],
               ("p1", "AB", "then"): [6, 5, 6], ("p1", "AB", "after"): [2, 2, 3],
               ("p3", "AB", "so"): [2, 1, 3], ("p3", "AB", "because"): [1, 2, 1],
               ("p3", "AB", "then"): [3, 2, 2], ("p3", "AB", "after"): [1, 1, 2]}  # fmt: skip
    rows = [
        [pair, order, word, f"r{index}", str(value)]
        for (pair, order, word), values in ratings.items()
        for index, value in enumerate(values)
    ]
    services.historic_ratings_import(
        project=ratings_project,
        content=csv_text(["pair_id", "order", "connective", "rater", "rating"], rows),
        filename="old.csv",
    )
    # Which items a release holds is the engine's business (finished items); here every rated
    # item is finished.
    Item.objects.filter(project=ratings_project, external_id__regex=r"^p[13]:AB:").update(
        status=Item.Status.ACCEPTED
    )
    admin = make_member(ratings_project, "admin")
    release = release_build(release_id=release_publish(project=ratings_project, user=admin).pk)
    assert release.status == "published", release.message
    with zipfile.ZipFile(release.archive.path) as archive:
        names = set(archive.namelist())
        pairs = list(
            csv.DictReader(
                io.StringIO(archive.read(_one(names, "explica_ordered_pairs.csv")).decode())
            )
        )
        means = list(
            csv.DictReader(
                io.StringIO(archive.read(_one(names, "explica_item_means.csv")).decode())
            )
        )
        manifest = archive.read(_one(names, "manifest.json")).decode()
    return pairs, means, manifest


def test_a_ratings_release_has_the_explica_layout(ratings_project, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    pairs, means, manifest = _publish(ratings_project)
    by_pair = {(row["pair_id"], row["order"]): row for row in pairs}
    p1 = by_pair[("p1", "AB")]
    assert float(p1["mean_so"]) == pytest.approx(9.0)
    assert float(p1["mean_because"]) == pytest.approx(2.0)
    assert (p1["preferred_connective"], p1["label"]) == ("so", "causal-iconic")
    assert p1["first_sentence"] == "The pipe burst."
    p3 = by_pair[("p3", "AB")]
    assert (p3["preferred_connective"], p3["label"]) == ("", "unrelated")
    so = next(row for row in means if row["item_key"] == "p1:AB:so")
    assert (int(so["n"]), float(so["mean"])) == (3, pytest.approx(9.0))
    assert "explica_ordered_pairs.csv" in manifest


HYPERLINK = '=HYPERLINK("http://x")'


def test_formulas_come_out_inert_in_the_layout_csvs(ratings_project, settings, tmp_path):
    """A sentence a spreadsheet would run as a formula gets a leading quote; the means (numbers,
    negative ones too) stay numbers."""
    settings.MEDIA_ROOT = tmp_path
    SentencePair.objects.filter(project=ratings_project, pair_id="p1").update(
        sentence_a=HYPERLINK, subset="@subset"
    )
    pairs, means, _ = _publish(ratings_project)
    p1 = next(row for row in pairs if (row["pair_id"], row["order"]) == ("p1", "AB"))
    assert p1["first_sentence"] == "'" + HYPERLINK and p1["subset"] == "'@subset"
    assert float(p1["mean_so"]) == pytest.approx(9.0)
    for table in (pairs, means):
        for row in table:
            for cell in row.values():
                assert not cell or cell[0] not in "=+-@\t\r" or float(cell) < 0, cell


def _one(names: set[str], suffix: str) -> str:
    (name,) = [name for name in names if name.endswith(suffix)]
    return name
