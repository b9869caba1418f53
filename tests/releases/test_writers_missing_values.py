"""No released file holds a missing value spelled as text: every demo project
(annotation/management/commands/seed_demo.py and every app's demo) is released and every file
of every release is read as a reader would — CSV cells, JSON values — looking for ``NaN``,
``Infinity``, ``None`` and ``nan`` where an empty cell or ``null`` belongs (releases/writers.py:
a missing number is an empty cell in CSV and ``null`` in JSON)."""

from __future__ import annotations

import csv
import io
import json
import math
import zipfile

import pytest

from annotation.fixtures.demo_users import DEMO_ROLES
from annotation.management.commands.seed_demo import demo_projects_seed
from annotation.models import Item, Project
from releases.models import Release
from releases.services import release_publish
from tests.factories import make_user

pytestmark = pytest.mark.django_db

#: What a missing value must never be written as (case matters: "none" is a label some demo
#: stages offer; "None" is Python's missing value printed).
MISSING_AS_TEXT = {"NaN", "nan", "None", "Infinity", "-Infinity", "inf", "-inf", "undefined"}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def _missing_in_json(value, where):
    if isinstance(value, float) and not math.isfinite(value):
        yield where, value
    elif isinstance(value, str) and value.strip() in MISSING_AS_TEXT:
        yield where, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _missing_in_json(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _missing_in_json(inner, f"{where}[{index}]")


def _refuse_constant(name):
    return float("nan")  # json.loads calls this for NaN / Infinity: reported as non-finite


def missing_values(name: str, text: str) -> list[tuple[str, object]]:
    """Every place in file ``name`` where a missing value is spelled as text."""
    found: list[tuple[str, object]] = []
    if name.endswith(".csv") or name.endswith(".tsv"):
        reader = csv.reader(io.StringIO(text), delimiter="\t" if name.endswith(".tsv") else ",")
        for line, row in enumerate(reader, start=1):
            found += [
                (f"line {line}, column {column}", cell)
                for column, cell in enumerate(row, start=1)
                if cell.strip() in MISSING_AS_TEXT
            ]
    elif name.endswith(".jsonl"):
        for line, raw in enumerate(text.splitlines(), start=1):
            if raw.strip():
                value = json.loads(raw, parse_constant=_refuse_constant)
                found += list(_missing_in_json(value, f"line {line}"))
    elif name.endswith(".json"):
        found += list(_missing_in_json(json.loads(text, parse_constant=_refuse_constant), "$"))
    return found


def test_the_scan_finds_what_it_looks_for():
    assert missing_values("a.csv", "a,b\n1,NaN\n") == [("line 2, column 2", "NaN")]
    assert missing_values("a.jsonl", '{"x": NaN}\n') != []
    assert missing_values("a.json", '{"x": [1, "None"]}') == [("$.x[1]", "None")]
    assert missing_values("a.csv", "a,b\n1,\n") == []


def test_no_file_of_any_demo_release_spells_a_missing_value_as_text(
    django_capture_on_commit_callbacks,
):
    users = {name: make_user(f"demo-{name}") for name in DEMO_ROLES}
    with django_capture_on_commit_callbacks(execute=True):
        demo_projects_seed(users)
    projects = list(Project.objects.order_by("slug"))
    assert len(projects) >= 7  # every demo project, each released below
    found = []
    scanned = 0
    for project in projects:
        # Items still in the pipeline are released as accepted, so that every demo item is in
        # a file scanned (the layouts' derived values included).
        Item.objects.filter(project=project, status=Item.Status.ACTIVE).update(
            status=Item.Status.ACCEPTED
        )
        with django_capture_on_commit_callbacks(execute=True):
            release = release_publish(project=project, user=None)
        release = Release.objects.get(pk=release.pk)
        assert release.status == "published", (project.slug, release.message)
        with zipfile.ZipFile(release.archive.path) as archive:
            for name in archive.namelist():
                if name.endswith(".parquet"):
                    continue  # binary copies of the JSONL rows (tests/releases/test_parquet.py)
                text = archive.read(name).decode("utf-8")
                scanned += 1
                found += [(project.slug, name, *hit) for hit in missing_values(name, text)]
    assert scanned > 7 * 5
    assert found == [], "\n".join(map(str, found))
