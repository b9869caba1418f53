"""Ratings' files go through registered schemas of the import core: one report, line and
field, whatever the file's line ends."""

from __future__ import annotations

import json

import pytest

from imports.core.schema import schema_for_kind
from ratings import import_schemas, importing
from ratings.connectives import EXPLICA_CONNECTIVES
from ratings.importing import ImportRejected


def test_the_ratings_app_registers_its_file_schemas():
    for name, schema in import_schemas.SCHEMAS.items():
        assert schema_for_kind(name) is schema
    assert import_schemas.PAIRS_SCHEMA.external_id_field == "pair_id"
    assert import_schemas.RATINGS_SCHEMA.derived_id == "row"


def test_a_nested_value_in_a_pair_row_is_named_by_line_and_field():
    rows = [
        {"pair_id": 1, "sentence_a": "A.", "sentence_b": "B."},
        {"pair_id": 2, "sentence_a": {"text": "A."}, "sentence_b": "B."},
    ]
    text = "\n".join(json.dumps(row) for row in rows) + "\n"
    with pytest.raises(ImportRejected) as caught:
        importing.parse_pairs(importing.read_rows(text, "p.jsonl"), EXPLICA_CONNECTIVES)
    [error] = caught.value.errors
    assert (error.line, error.field, error.code) == (2, "sentence_a", "nested_value")
    assert importing.describe(error).startswith(
        'line 2, sentence_a: Field "sentence_a" holds an object'
    )


def test_old_mac_line_ends_are_read_like_any_other():
    text = "pair_id\rsentence_a\rsentence_b".replace("\r", ",") + "\r1,A.,B.\r2,C.,D.\r"
    parsed = importing.parse_pairs(importing.read_rows(text, "p.csv"), EXPLICA_CONNECTIVES)
    assert [(pair.line, pair.pair_id) for pair in parsed.pairs] == [(2, "1"), (3, "2")]


def test_a_rating_row_lists_every_problem_in_field_order():
    text = "pair_id,order,connective,rating\n1,AC,since,11\n"
    with pytest.raises(ImportRejected) as caught:
        importing.parse_ratings(
            importing.read_rows(text, "r.csv"), EXPLICA_CONNECTIVES, scale=(1, 10)
        )
    assert [(error.line, error.field) for error in caught.value.errors] == [
        (2, "order"),
        (2, "connective"),
        (2, "rating"),
    ]


def test_a_value_of_the_wrong_type_carries_the_core_message():
    text = "pair_id,sentence_a,sentence_b,purpose,connective,expected_min\np,A.,B.,practice,so,x\n"
    with pytest.raises(ImportRejected) as caught:
        importing.parse_pairs(importing.read_rows(text, "p.csv"), EXPLICA_CONNECTIVES)
    [error] = caught.value.errors
    assert (error.line, error.field, error.code) == (2, "expected_min", "wrong_type")
    assert error.message == "Field \"expected_min\" must be a number; found 'x'."


def test_a_pair_id_repeated_on_a_row_with_other_problems_is_reported_too():
    text = "pair_id,sentence_a,sentence_b\n1,A.,B.\n1,,B.\n"
    with pytest.raises(ImportRejected) as caught:
        importing.parse_pairs(importing.read_rows(text, "p.csv"), EXPLICA_CONNECTIVES)
    assert [(error.line, error.field) for error in caught.value.errors] == [
        (3, "pair_id"),
        (3, "sentence_a"),
    ]
