"""Releases as Hugging Face dataset folders (releases/hf_dataset.py, releases/hf_card.py): every
demo workflow's release holds ``hf_dataset/`` — Parquet files per configuration and split as the
workflow declares them, and a card whose YAML ``datasets`` reads — which ``datasets.load_dataset``
loads with the row counts, rows and features of the release's own files; every file of it is in
the manifest with its checksum."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from annotation.fixtures.demo_users import DEMO_ROLES
from annotation.management.commands.seed_demo import demo_projects_seed
from annotation.models import Item, Project
from releases.hf_card import card_metadata, size_category
from releases.hf_dataset import (
    FOLDER,
    DatasetConfig,
    DatasetLayout,
    dataset_layout_for_kind,
    safe_name,
    write_dataset_folder,
)
from releases.models import Release
from releases.services import release_publish
from releases.writers import write_jsonl
from tests.factories import make_user

datasets = pytest.importorskip("datasets")


def _expected(folder: Path, config: DatasetConfig) -> dict[str, list[dict]]:
    """The rows of each split, read from the release's own file as the declaration says."""
    from releases.hf_dataset import _source_rows, _split_of

    splits: dict[str, list[dict]] = {}
    for row in _source_rows(folder, config):
        splits.setdefault(_split_of(config, row), []).append(row)
    return splits


def _as_loaded(value, json_text: bool):
    return json.loads(value) if json_text and value is not None else value


def _same(expected, loaded) -> bool:
    """A source value and its loaded cell: equal, a struct filling absent keys with None."""
    if isinstance(expected, dict) and isinstance(loaded, dict):
        return all(_same(expected.get(key), loaded.get(key)) for key in set(expected) | set(loaded))
    if isinstance(expected, list) and isinstance(loaded, list):
        return len(expected) == len(loaded) and all(map(_same, expected, loaded))
    if isinstance(expected, int | float) and isinstance(loaded, int | float):
        return float(expected) == float(loaded)
    return expected == loaded


@pytest.mark.django_db
def test_every_demo_release_loads_as_a_dataset_equal_to_its_files(
    django_capture_on_commit_callbacks, tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path / "media"
    users = {name: make_user(f"hf-{name}") for name in DEMO_ROLES}
    with django_capture_on_commit_callbacks(execute=True):
        demo_projects_seed(users)
    projects = list(Project.objects.order_by("slug"))
    assert len(projects) >= 7
    declared_configs = set()
    for project in projects:
        Item.objects.filter(project=project, status=Item.Status.ACTIVE).update(
            status=Item.Status.ACCEPTED
        )
        with django_capture_on_commit_callbacks(execute=True):
            release = release_publish(project=project, user=None)
        release = Release.objects.get(pk=release.pk)
        assert release.status == "published", (project.slug, release.message)
        out = tmp_path / project.slug
        with zipfile.ZipFile(release.archive.path) as archive:
            archive.extractall(out)
        folder = out / f"{project.slug}-v{release.version}"
        manifest = {entry["name"]: entry for entry in release.manifest["files"]}
        dataset_files = sorted(name for name in manifest if name.startswith(f"{FOLDER}/"))
        assert f"{FOLDER}/README.md" in dataset_files, project.slug
        for name in dataset_files:
            data = (folder / name).read_bytes()
            assert manifest[name]["sha256"] == hashlib.sha256(data).hexdigest(), name
        card = (folder / FOLDER / "README.md").read_text(encoding="utf-8")
        metadata = yaml.safe_load(card.split("---\n")[1])
        assert metadata["pretty_name"] == project.name
        assert metadata["license"] == "cc-by-4.0" or project.license != "CC-BY-4.0"
        assert "@" in card.split("---\n", 2)[2]  # the datasheet's BibTeX citation
        layout = dataset_layout_for_kind(project.kind)
        written = {config["config_name"]: config for config in metadata["configs"]}
        assert written, project.slug
        assert release.stats["dataset"][0]["name"] == metadata["configs"][0]["config_name"]
        for config in layout.configs:
            name = safe_name(config.name)
            expected = _expected(folder, config)
            if not expected:
                assert name not in written
                continue
            declared_configs.add((project.kind, name))
            loaded = datasets.load_dataset(
                str(folder / FOLDER), name, cache_dir=str(tmp_path / "cache")
            )
            assert sorted(loaded) == sorted(expected), (project.slug, name)
            info = next(i for i in metadata["dataset_info"] if i["config_name"] == name)
            card_features = datasets.Features._from_yaml_list(info["features"])
            for split, rows in expected.items():
                part = loaded[split]
                assert part.num_rows == len(rows), (project.slug, name, split)
                assert part.features == card_features, (project.slug, name)
                shard = next((folder / FOLDER / "data" / name).glob(f"{split}-*.parquet"))
                schema = pq.read_schema(shard)
                json_columns = {
                    field.name
                    for field in schema
                    if (field.metadata or {}).get(b"encoding") == b"json"
                }
                assert set(part.column_names) == {key for row in rows for key in row}
                for want, got in zip(rows, part, strict=True):
                    for key, value in got.items():
                        cell = _as_loaded(value, key in json_columns)
                        assert _same(want.get(key), cell), (project.slug, name, split, key)
    kinds = {kind for kind, _ in declared_configs}
    assert {"meter", "causalt5k", "carlgt", "causal_narratives"} <= kinds, declared_configs
    assert ("meter", "questions") in declared_configs


def test_a_split_over_the_shard_size_is_written_as_numbered_shards(tmp_path):
    rows = [{"id": n, "text": f"row {n}", "group": "a" if n % 3 else "b"} for n in range(10)]
    write_jsonl(rows, tmp_path / "rows.jsonl")
    layout = DatasetLayout([DatasetConfig("rows", "rows.jsonl", split=lambda r: r["group"])])
    dataset = write_dataset_folder(tmp_path, layout, shard_rows=3)
    names = sorted(Path(entry.name).name for entry in dataset.entries)
    assert names == [
        "a-00000-of-00002.parquet",
        "a-00001-of-00002.parquet",
        "b-00000-of-00002.parquet",
        "b-00001-of-00002.parquet",
    ]
    loaded = datasets.load_dataset(
        "parquet",
        data_files={"a": str(tmp_path / FOLDER / "data/rows/a-*.parquet")},
        cache_dir=str(tmp_path / "cache"),
    )
    assert [row["id"] for row in loaded["a"]] == [n for n in range(10) if n % 3]


def test_columns_whose_rows_disagree_hold_json_text(tmp_path):
    rows = [
        {"id": "x", "answer": "yes", "votes": [1, 2], "extra": {"a": 1}},
        {"id": "y", "answer": 3, "votes": ["a"], "extra": {"b": "text"}},
    ]
    write_jsonl(rows, tmp_path / "rows.jsonl")
    dataset = write_dataset_folder(tmp_path, DatasetLayout([DatasetConfig("d", "rows.jsonl")]))
    schema = dataset.configs[0].schema
    assert str(schema.field("id").type) == "string"
    assert schema.field("answer").metadata == {b"encoding": b"json"}
    assert schema.field("votes").metadata == {b"encoding": b"json"}
    assert str(schema.field("extra").type) == "struct<a: int64, b: string>"
    metadata = card_metadata(dataset, {"name": "Demo", "license": "Unlisted-1.0"})
    assert metadata["license"] == "other" and metadata["license_name"] == "unlisted-1.0"
    assert metadata["size_categories"] == ["n<1K"]
    assert size_category(1_000_000) == "1M<n<10M"


def _dataset_bytes(folder: Path, layout: DatasetLayout) -> dict[str, str]:
    dataset = write_dataset_folder(folder, layout)
    return {
        entry.name: hashlib.sha256((folder / entry.name).read_bytes()).hexdigest()
        for entry in dataset.entries
    }


@pytest.mark.parametrize("count", [3, 4095, 4096, 9000, 40_000])
def test_the_arrow_pass_writes_the_bytes_of_the_python_pass(tmp_path, monkeypatch, count):
    """One fixed split of a JSON Lines file is read by Arrow's JSON reader in the second pass;
    its Parquet file is byte for byte the one rows parsed by Python give: nested objects with
    keys absent here and there, lists, nulls, whole and fractional numbers in one column,
    text that JSON escapes, row counts around the 4,096-row tables and the row groups."""
    from releases import hf_dataset

    rows = [
        {
            "external_id": f"case-{n:07d}",
            "text": ["=1+1", 'line\nbreak, "quoted"', "ünï 因果 🧪 \u2028", ""][n % 4],
            "score": n if n % 3 else n + 0.25,
            "flag": None if n % 5 == 0 else n % 2 == 0,
            "payload": {"a": n % 7, "b": None if n % 4 else "x"} | ({"c": [1, 2]} if n % 6 else {}),
            "stages": {"verify": {"votes": {"keep": 2, "reject": 1}, "agreement": 0.666667}}
            if n % 9
            else {},
            "tags": [f"t{n % 3}"] * (n % 3),
        }
        for n in range(count)
    ]
    write_jsonl(rows, tmp_path / "items.jsonl")
    layout = DatasetLayout([DatasetConfig("default", "items.jsonl")])
    read_by_arrow = []
    original = hf_dataset._read_by_arrow

    def spy(*args):
        read_by_arrow.append(original(*args))
        return read_by_arrow[-1]

    monkeypatch.setattr(hf_dataset, "_read_by_arrow", spy)
    by_arrow = _dataset_bytes(tmp_path, layout)
    assert read_by_arrow == [True]
    monkeypatch.setattr(hf_dataset, "_read_by_arrow", lambda *args: False)
    assert _dataset_bytes(tmp_path, layout) == by_arrow
    table = pq.read_table(tmp_path / next(iter(by_arrow)))
    assert table.num_rows == count
    assert table.slice(count - 1).to_pylist()[0]["external_id"] == rows[-1]["external_id"]


def test_columns_of_json_text_keep_the_python_pass(tmp_path, monkeypatch):
    from releases import hf_dataset

    write_jsonl([{"id": "x", "answer": "yes"}, {"id": "y", "answer": 3}], tmp_path / "r.jsonl")
    calls = []
    original = hf_dataset._read_by_arrow
    monkeypatch.setattr(
        hf_dataset, "_read_by_arrow", lambda *args: calls.append(original(*args)) or calls[-1]
    )
    dataset = write_dataset_folder(tmp_path, DatasetLayout([DatasetConfig("d", "r.jsonl")]))
    assert calls == [False]
    rows = pq.read_table(tmp_path / dataset.entries[0].name).to_pylist()
    assert [row["answer"] for row in rows] == ['"yes"', "3"]
