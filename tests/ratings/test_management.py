"""The ratings management commands: create a project, import pairs, ratings and model answers."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Annotation, Item, Project
from ratings.models import ModelRun, RatingsSetup
from tests.ratings.conftest import csv_text, pairs_csv

pytestmark = pytest.mark.django_db


def test_create_import_and_compare_from_the_command_line(tmp_path, capsys):
    connectives = tmp_path / "connectives.json"
    connectives.write_text(
        json.dumps(
            {
                "connectives": [
                    {"word": "so", "relation": "causal", "order": "iconic"},
                    {"word": "then", "relation": "temporal", "order": "iconic"},
                ]
            }
        )
    )
    call_command(
        "ratings_create_project",
        "cli",
        "CLI ratings",
        "--connectives",
        str(connectives),
        "--scale",
        "1",
        "7",
        "--overlap",
        "5",
        "--seed",
        "3",
    )
    setup = RatingsSetup.objects.get(project__slug="cli")
    assert (
        setup.rating_stage.overlap,
        setup.rating_stage.config["max"],
        setup.rating_stage.seed,
    ) == (5, 7, 3)
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(pairs_csv())
    call_command("ratings_import_pairs", "cli", str(pairs))
    assert "3 pairs → 12 items" in capsys.readouterr().out
    assert Item.objects.filter(project__slug="cli").count() == 12
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text(
        "\n".join(
            json.dumps(
                {"pair_id": "p1", "order": "AB", "connective": "so", "rater": f"r{n}", "rating": n}
            )
            for n in range(1, 8)
        )
    )
    call_command("ratings_import_ratings", "cli", str(ratings))
    assert Annotation.objects.filter(item_stage__stage__project__slug="cli").count() == 7
    model = tmp_path / "model.csv"
    model.write_text(
        csv_text(
            ["pair_id", "order", "connective", "rating"],
            [["p1", "AB", "so", "7"], ["p1", "BA", "then", "-1"]],
        )
    )
    call_command("ratings_import_model", "cli", "tiny", str(model))
    assert ModelRun.objects.get(project__slug="cli").n_no_answer == 1  # fmt: skip


def test_bad_files_fail_with_every_row_listed_and_nothing_kept(tmp_path):
    call_command("ratings_create_project", "cli2", "CLI 2")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(
        pairs_csv(
            [
                ("a", "A.", "", "", "", ""),
                ("b", "B.", "C.", "", "", ""),
                ("a", "D.", "E.", "", "", ""),
            ]
        )
    )
    with pytest.raises(CommandError) as caught:
        call_command("ratings_import_pairs", "cli2", str(pairs))
    message = str(caught.value)
    assert "line 2, sentence_b: missing sentence B" in message
    assert "line 4, pair_id: pair id 'a' already used on line 2" in message
    assert not Item.objects.filter(project__slug="cli2").exists()
    with pytest.raises(CommandError, match="no project"):
        call_command("ratings_import_pairs", "nope", str(pairs))
    with pytest.raises(CommandError, match="already exists"):
        call_command("ratings_create_project", "cli2", "Again")
    assert Project.objects.filter(slug="cli2").count() == 1
