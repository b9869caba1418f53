"""Importing narrative files: every failure class reported by file and line with the database
unchanged (bad JSON, a wrong sentence count, empty nodes, duplicate nodes, bad graph edges, a
second import); the real CausalNarratives files with the counts of their SOURCE.md (skipped when
../shared is absent)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Item
from narratives import services
from narratives.reader import read_lines, read_narratives
from tests.conftest import shared_dir

ROOT = shared_dir() / "datasets" / "CausalNarratives" / "real_world_graphs" / "narratives"
CHAIN = {"nodes": ["a", "b", "c"], "sentences": ["a made b", "b made c"]}


def lines(*records) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


def write_tree(base: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return base


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"nodes": ["a", "b"], "sentences": ["x"', "not JSON"),
        # What used to stop the upload with a 500 (a RecursionError) or reach the database:
        ('{"nodes": ' + "[" * 100_000, "not JSON: line 2, column 74: nested more than 64 levels"),
        ('{"nodes": ["a\\u0000", "b"], "sentences": ["x"]}', "nodes[0] holds a NUL character"),
        ('{"nodes": ["a", "b"], "sentences": ["\\udc00"]}', "sentences[0] holds an unpaired"),
        ({"nodes": ["a", "b", "c"], "sentences": ["only one"]}, "1 sentences for 3 nodes"),
        ({"nodes": [], "sentences": []}, "nodes is empty"),
        ({"nodes": ["a", "b", "a"], "sentences": ["x", "y"]}, "duplicate node 'a'"),
        ({"nodes": ["a", " "], "sentences": ["x"]}, "nodes[1] is empty"),
        (["a", "b"], "expected a JSON object"),
        ({"sentences": ["x"]}, 'no "nodes"'),
        (
            {"nodes": ["a", "b"], "edges": [["a", "z"]], "sentences": ["x"]},
            "edges[0] names 'z', not a node",
        ),
        (
            {"nodes": ["a", "b"], "edges": [["a", "b"], ["b", "a"]], "sentences": ["x"]},
            "not acyclic",
        ),
        ({"nodes": ["a", "b"], "edges": [["a", "a"]], "sentences": ["x"]}, "a causes itself"),
        (
            {"nodes": ["a", "b"], "edges": [["a", "b"], ["a", "b"]], "sentences": ["x"]},
            "edges[1] repeats a → b",
        ),
    ],
)
def test_every_failure_class_is_named_by_file_and_line(bad, message):
    reading = read_lines(lines(CHAIN, bad, CHAIN), file="real_world_forward/x_size=3.txt")
    assert [str(p) for p in reading.problems if message in p.message], reading.problems
    assert all(
        p.file == "real_world_forward/x_size=3.txt" and p.line == 2 for p in reading.problems
    )
    assert len(reading.narratives) == 2


def test_a_file_in_a_directory_that_is_not_utf8_is_named_by_line_column_and_byte(tmp_path):
    """Files read from a directory follow the imports' encoding rule, as uploads do: the first
    byte that is not UTF-8 by line, column and offset; a byte-order mark is dropped."""
    write_tree(tmp_path, {"real_world_forward/t_narrative_size=3.txt": lines(CHAIN)})
    bad = tmp_path / "real_world_reverse" / "t_narrative_size=3.txt"
    bad.parent.mkdir()
    bad.write_bytes(lines(CHAIN).encode() + b'{"nodes": ["caf\xe9"]}\n')
    (tmp_path / "real_world_forward" / "bom.txt").write_bytes(
        b"\xef\xbb\xbf" + lines(CHAIN).encode()
    )
    reading = read_narratives(tmp_path)
    assert [str(problem) for problem in reading.problems] == [
        "real_world_reverse/t_narrative_size=3.txt: line 2, column 16: not UTF-8 (byte 0xE9 at "
        "offset 81); save the file as UTF-8. It looks like Windows-1252 or Latin-1 text, where "
        "that byte is 'é'."
    ]
    assert len(reading.narratives) == 2  # the good file and the one with a byte-order mark


@pytest.mark.django_db
def test_a_directory_with_one_bad_line_imports_nothing(tmp_path):
    write_tree(
        tmp_path,
        {
            "real_world_forward/t_narrative_size=3.txt": lines(CHAIN, CHAIN),
            "real_world_reverse/t_narrative_size=3.txt": lines(
                CHAIN, {"nodes": ["p", "q", "r"], "sentences": ["q made r"]}
            ),
        },
    )
    project = services.narratives_project_create(slug="n", name="N")
    report = services.narratives_import(project=project, path=tmp_path)
    assert report.problems == [
        "real_world_reverse/t_narrative_size=3.txt:2: 1 sentences for 3 nodes (a chain of n "
        "nodes has n − 1 sentences, one per edge)"
    ]
    assert Item.objects.filter(project=project).count() == 0
    with pytest.raises(CommandError, match="1 problem"):
        call_command("narratives_import", "n", str(tmp_path))
    assert Item.objects.filter(project=project).count() == 0


@pytest.mark.django_db
def test_a_good_directory_keeps_direction_and_source_and_hides_nothing_it_should_not(tmp_path):
    write_tree(
        tmp_path,
        {
            "real_world_forward/t_narrative_size=3.txt": lines(CHAIN),
            "semi_synthetic_reverse/t_narrative.txt": lines(
                {"nodes": ["a", "b", "c", "d"], "sentences": ["c made d", "b made c", "a made b"]}
            ),
        },
    )
    project = services.narratives_project_create(slug="n", name="N")
    report = services.narratives_import(project=project, path=tmp_path)
    assert report.ok and report.created == 2
    items = {i.payload["key"]: i.payload for i in Item.objects.filter(project=project)}
    forward = items["real_world_forward-size3-l1"]
    reverse = items["semi_synthetic_reverse-l1"]
    assert (forward["direction"], forward["source"]) == ("forward", "real_world")
    assert (reverse["direction"], reverse["source"]) == ("reverse", "semi_synthetic")
    assert reverse["sentences"] == ["c made d", "b made c", "a made b"]  # the file's order
    assert reverse["gold"] == {"order": ["a", "b", "c", "d"]}
    for payload in items.values():
        truth = payload["gold"]["order"]
        assert sorted(payload["events"]) == sorted(truth)
        assert payload["events"] not in (truth, truth[::-1])
    # Importing the same files again is refused, naming the items, and adds nothing.
    again = services.narratives_import(project=project, path=tmp_path)
    assert "already exist" in again.problems[0] and again.created == 0
    assert Item.objects.filter(project=project).count() == 2


@pytest.mark.shared_data
@pytest.mark.skipif(not ROOT.is_dir(), reason=f"shared CausalNarratives not found at {ROOT}")
def test_the_real_files_match_their_source_notes():
    reading = read_narratives(ROOT)
    assert reading.ok, reading.problems[:5]
    assert reading.counts() == {
        "real_world_forward": 266,
        "real_world_reverse": 210,
        "semi_synthetic_forward": 266,
        "semi_synthetic_reverse": 210,
    }
    lengths = Counter(n.length for n in reading.narratives)
    assert min(lengths) == 3 and max(lengths) == 15
    for narrative in reading.narratives:
        assert len(narrative.sentences) == narrative.length - 1
        if narrative.folder.startswith("real_world"):
            assert f"size={narrative.length}.txt" in narrative.file
    # The semi-synthetic chains are the same node chains as the real-world ones.
    real = {n.nodes for n in reading.narratives if n.folder == "real_world_forward"}
    semi = {n.nodes for n in reading.narratives if n.folder == "semi_synthetic_forward"}
    assert real == semi


@pytest.mark.shared_data
@pytest.mark.django_db
@pytest.mark.skipif(not ROOT.is_dir(), reason=f"shared CausalNarratives not found at {ROOT}")
def test_the_real_files_import_as_952_items_with_a_sample_option():
    project = services.narratives_project_create(slug="real", name="Real")
    report = services.narratives_import(project=project, path=ROOT)
    assert report.ok and report.created == 952
    directions = Counter(
        (p["source"], p["direction"]) for p in project.items.values_list("payload", flat=True)
    )
    assert directions == {
        ("real_world", "forward"): 266,
        ("real_world", "reverse"): 210,
        ("semi_synthetic", "forward"): 266,
        ("semi_synthetic", "reverse"): 210,
    }
    sample = services.narratives_project_create(slug="sample", name="Sample")
    assert services.narratives_import(project=sample, path=ROOT, limit=1).created == 4 * 13
    # The cards' shuffled order is fixed per item: the same in both projects.
    events = dict(sample.items.values_list("external_id", "payload__events"))
    again = dict(
        project.items.filter(external_id__in=list(events)).values_list(
            "external_id", "payload__events"
        )
    )
    assert events == again
    # An annotator of the real data gets the sentences and the cards, never the chain.
    from tests.api.test_views import client_for
    from tests.factories import make_member

    stage = sample.stages.get()
    seen = client_for(make_member(sample)).post(f"/api/stages/{stage.pk}/next/").json()
    item = sample.items.get(external_id=seen["item"]["external_id"])
    assert seen["item"]["payload"]["sentences"] == item.payload["sentences"]
    assert "gold" not in json.dumps(seen) and "real_world" not in json.dumps(seen)
    assert seen["item"]["payload"]["events"] != item.payload["gold"]["order"]


def test_lines_are_checked_by_the_registered_schema_and_any_line_end_works():
    from imports.core.schema import schema_for_kind
    from narratives.reader import NARRATIVE_SCHEMA

    assert schema_for_kind("narratives.narrative") is NARRATIVE_SCHEMA
    text = lines(CHAIN, CHAIN).replace("\n", "\r")
    reading = read_lines(text, file="old-mac.txt")
    assert reading.ok and [narrative.line for narrative in reading.narratives] == [1, 2]


def test_a_nested_value_where_a_flat_one_belongs_is_named_by_line_and_field():
    graph = {"nodes": ["a", "b"], "edges": [["a", "b"]], "sentences": ["x"], "id": {"n": 1}}
    reading = read_lines(lines(CHAIN, graph), file="g.jsonl")
    [problem] = reading.problems
    assert (problem.file, problem.line) == ("g.jsonl", 2)
    assert problem.message.startswith('Field "id" holds an object')


def test_a_file_that_turns_out_not_utf8_gives_no_narratives():
    reading = read_lines(lines(CHAIN).encode() + b'{"nodes": ["caf\xe9"]}\n', file="x.txt")
    assert reading.narratives == []
    assert [str(problem) for problem in reading.problems] == [
        "x.txt: line 2, column 16: not UTF-8 (byte 0xE9 at offset 81); save the file as UTF-8. "
        "It looks like Windows-1252 or Latin-1 text, where that byte is 'é'."
    ]
