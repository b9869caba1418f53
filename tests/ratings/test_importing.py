"""Reading and checking ratings import files: every bad row is reported with its line and field."""

from __future__ import annotations

import io
import json

import pytest

from ratings import importing
from ratings.connectives import EXPLICA_CONNECTIVES
from ratings.importing import ImportRejected
from tests.ratings.conftest import csv_text


def errors_of(call) -> list[tuple[int, str]]:
    with pytest.raises(ImportRejected) as caught:
        call()
    return [(error.line, error.field) for error in caught.value.errors]


def pairs(text, filename="pairs.csv", **options):
    return importing.parse_pairs(
        importing.read_rows(text, filename), EXPLICA_CONNECTIVES, **options
    )


# --- Reading ----------------------------------------------------------------------------------


def test_csv_rows_carry_the_line_they_start_on_even_after_a_multi_line_cell():
    text = 'pair_id,sentence_a,sentence_b\n1,"A first\nsentence.",B one.\n\n2,A two.,B two.\n'
    rows = importing.read_rows(text, "x.csv")
    assert [(line, row["pair_id"]) for line, row in rows] == [(2, "1"), (5, "2")]
    assert rows[0][1]["sentence_a"] == "A first\nsentence."


def test_headers_are_normalised_and_tabs_sniffed_and_a_bom_dropped():
    text = "\ufeffPair ID\tSentence_A\tSentence B\n7\tThe kettle boiled.\tNadia made tea.\n"
    [(line, row)] = importing.read_rows(text.encode("utf-8"), "pairs.tsv")
    assert line == 2
    assert row == {
        "pair_id": "7",
        "sentence_a": "The kettle boiled.",
        "sentence_b": "Nadia made tea.",
    }


def test_jsonl_lines_are_numbered_and_bad_json_is_located():
    good = json.dumps({"pair_id": 1, "sentence_a": "A.", "sentence_b": "B."})
    rows = importing.read_rows(f"{good}\n\n{good}\n", "pairs.jsonl")
    assert [line for line, _ in rows] == [1, 3]
    assert errors_of(lambda: importing.read_rows(f'{good}\n{{"pair_id": 2,\n[1]\n', "p.jsonl")) == [
        (2, ""),
        (3, ""),
    ]


def test_non_utf8_bytes_are_rejected_with_the_line():
    content = b"pair_id,sentence_a,sentence_b\n1,Caf" + b"\xe9,B.\n"
    assert errors_of(lambda: importing.read_rows(content, "p.csv")) == [(2, "")]


def test_rows_longer_than_the_header_and_duplicate_columns_are_errors():
    assert errors_of(lambda: importing.read_rows("pair_id,sentence_a\n1,A,extra\n", "p.csv")) == [
        (2, "")
    ]
    assert errors_of(lambda: importing.read_rows("pair_id,Pair ID\n1,2\n", "p.csv")) == [
        (1, "pair_id")
    ]


def test_a_json_file_may_hold_a_json_array_or_json_lines():
    good = {"pair_id": 1, "sentence_a": "A.", "sentence_b": "B."}
    as_array = importing.Rows(json.dumps([good, {**good, "pair_id": 2}]), "pairs.json")
    assert [row["pair_id"] for _, row in as_array] == [1, 2] and as_array.fmt == "json"
    as_lines = importing.Rows(json.dumps(good) + "\n" + json.dumps(good) + "\n", "pairs.json")
    assert [line for line, _ in as_lines] == [1, 2] and as_lines.fmt == "jsonl"
    with pytest.raises(ImportRejected) as caught:
        importing.read_rows('[{"pair_id": 1},\n 2]', "pairs.json")
    [error] = caught.value.errors
    assert (error.line, error.field, error.code) == (2, "", "not_an_object")
    assert error.message == "each element of the array must be a JSON object"


def test_unnamed_columns_short_rows_and_blank_rows_of_a_spreadsheet_export_are_read():
    # pandas' to_csv writes its index as a column without a name; spreadsheets drop trailing
    # empty cells and leave rows of empty cells at the end.
    text = ",pair_id,sentence_a,sentence_b\n0,1,A.,B.\n1,2,A.\n,,,\n"
    assert importing.read_rows(text, "p.csv") == [
        (2, {"pair_id": "1", "sentence_a": "A.", "sentence_b": "B."}),
        (3, {"pair_id": "2", "sentence_a": "A.", "sentence_b": ""}),
    ]


def test_rows_are_read_as_they_are_consumed_not_the_whole_file_first():
    body = b"".join(b"%d,A sentence.,B sentence.\n" % number for number in range(200_000))
    upload = io.BytesIO(b"pair_id,sentence_a,sentence_b\n" + body)
    rows = iter(importing.Rows(upload, "pairs.csv"))
    assert next(rows) == (
        2,
        {"pair_id": "0", "sentence_a": "A sentence.", "sentence_b": "B sentence."},
    )
    assert upload.tell() < len(upload.getvalue()) // 10
    assert sum(1 for _ in rows) == 199_999


def test_a_reading_problem_late_in_the_file_rejects_it_naming_the_line():
    text = "pair_id,sentence_a,sentence_b\n" + "1,A.,B.\n" * 3 + '4,"A.,B.\n'
    with pytest.raises(ImportRejected) as caught:
        pairs(text)
    [error] = caught.value.errors
    assert (error.line, error.field, error.code) == (5, "", "csv_syntax")
    assert "never closed" in error.message and "line 5: a quoted cell" in str(caught.value)


# --- Pairs ------------------------------------------------------------------------------------


def test_pairs_keep_subset_origin_flags_and_other_columns():
    text = csv_text(
        ["pair_id", "sentence_a", "sentence_b", "subset", "origin", "flags", "frequency"],
        [["7", "Ted had a hangover.", "He drank water.", "Causal", "e-CARE", "socially challenging; rare", "12"]],
    )  # fmt: skip
    parsed = pairs(text)
    [pair] = parsed.pairs
    assert (pair.line, pair.pair_id, pair.subset, pair.origin) == (2, "7", "causal", "e-CARE")
    assert pair.flags == ("socially challenging", "rare")
    assert pair.extra == {"frequency": "12"}
    assert parsed.singles == [] and parsed.rows_total == 1


def test_every_bad_pair_row_is_reported_at_once_with_line_and_field():
    text = csv_text(
        ["pair_id", "sentence_a", "sentence_b", "purpose", "connective", "expected_max"],
        [
            ["1", "A.", "B.", "", "", ""],
            ["", "A.", "B.", "", "", ""],  # line 3: no id
            ["2", "", "B.", "", "", ""],  # line 4: no sentence A
            ["1", "A.", "B.", "", "", ""],  # line 5: duplicate id
            ["3", "A.", " ", "", "", ""],  # line 6: blank sentence B
            ["4", "A.", "B.", "", "so", ""],  # line 7: connective on a pair row
            ["5", "A.", "B.", "attention_check", "since", "3"],  # line 8: unknown connective
            ["6", "A.", "B.", "warmup", "", ""],  # line 9: unknown purpose
            ["7", "A.", "B.", "attention_check", "so", ""],  # line 10: no expected range
            ["8", "A.", "B.", "attention_check", "so", "11"],  # line 11: outside the scale
            ["9", "A.", "B.", "existing", "", ""],  # line 12: unknown purpose (again)
            ["old", "A.", "B.", "", "", ""],  # line 13: already in the project
        ],
    )
    found = errors_of(lambda: pairs(text, existing_ids={"old"}))
    assert found == [
        (3, "pair_id"),
        (4, "sentence_a"),
        (5, "pair_id"),
        (6, "sentence_b"),
        (7, "connective"),
        (8, "connective"),
        (9, "purpose"),
        (10, "expected_max"),
        (11, "expected_max"),
        (12, "purpose"),
        (13, "pair_id"),
    ]


def test_error_messages_name_what_to_fix():
    text = csv_text(["pair_id", "sentence_a", "sentence_b"], [["1", "A.", "B."], ["1", "C.", "D."]])
    with pytest.raises(ImportRejected) as caught:
        pairs(text)
    assert "already used on line 2" in caught.value.errors[0].message
    assert "Nothing was imported" in str(caught.value)


def test_practice_and_attention_rows_become_single_items():
    text = csv_text(
        ["pair_id", "sentence_a", "sentence_b", "purpose", "connective", "order", "expected_min", "expected_max", "feedback"],
        [
            ["pr1", "The glass fell.", "It broke.", "practice", "So", "", "7", "10", "Falling causes breaking."],
            ["ch1", "He was born.", "He graduated.", "attention check", "after", "AB", "", "3", ""],
        ],
    )  # fmt: skip
    parsed = pairs(text)
    practice, check = parsed.singles
    assert (practice.purpose, practice.connective, practice.order) == ("practice", "so", "AB")
    assert (practice.expected_min, practice.expected_max) == (7, 10)
    assert practice.feedback == "Falling causes breaking."
    assert (check.purpose, check.expected_min, check.expected_max) == ("attention_check", None, 3)


def test_an_inverted_expected_range_is_an_error():
    text = csv_text(
        ["pair_id", "sentence_a", "sentence_b", "purpose", "connective", "expected_min", "expected_max"],
        [["c", "A.", "B.", "attention_check", "so", "8", "3"]],
    )  # fmt: skip
    assert errors_of(lambda: pairs(text)) == [(2, "expected_min")]


def test_an_empty_file_is_an_error():
    assert errors_of(lambda: importing.read_rows("  \n", "p.csv")) == [(0, "")]
    assert errors_of(lambda: pairs("pair_id,sentence_a,sentence_b\n")) == [(0, "")]


# --- Ratings ----------------------------------------------------------------------------------


KNOWN = {"1:AB:so", "1:AB:because", "1:BA:so"}


def ratings(text, filename="ratings.csv", scale=(1, 10)):
    return importing.parse_ratings(
        importing.read_rows(text, filename), EXPLICA_CONNECTIVES, scale=scale, known_items=KNOWN
    )


def test_one_rating_per_row_with_raters():
    text = csv_text(
        ["pair_id", "order", "connective", "rater", "rating"],
        [
            ["1", "AB", "so", "r1", "8"],
            ["1", "ab", "Because", "r1", "3"],
            ["1", "BA", "so", "", "10"],
        ],
    )
    parsed = ratings(text)
    assert [(r.item_key, r.rater, r.rating) for r in parsed] == [
        ("1:AB:so", "r1", 8),
        ("1:AB:because", "r1", 3),
        ("1:BA:so", "", 10),
    ]


def test_a_list_of_anonymous_ratings_per_row_like_explica_accept_answers():
    text = csv_text(
        ["pair_id", "order", "connective", "ratings"], [["1", "AB", "so", "['8', '9', '10']"]]
    )
    parsed = ratings(text)
    assert [(r.line, r.rating, r.rater) for r in parsed] == [(2, 8, ""), (2, 9, ""), (2, 10, "")]


def test_bad_rating_rows_are_located():
    text = csv_text(
        ["pair_id", "order", "connective", "rater", "rating"],
        [
            ["1", "AB", "so", "r1", "11"],  # line 2: outside the scale
            ["1", "AB", "since", "r1", "5"],  # line 3: unknown connective
            ["1", "AC", "so", "r2", "5"],  # line 4: bad order
            ["1", "AB", "so", "r3", ""],  # line 5: missing rating
            ["1", "AB", "so", "r4", "7.5"],  # line 6: not whole
            ["2", "AB", "so", "r1", "5"],  # line 7: no such item
            ["1", "AB", "so", "r5", "seven"],  # line 8: not a number
            ["1", "AB", "so", "r6", "0"],  # line 9: outside the scale
            ["1", "AB", "so", "r7", "4"],
            ["1", "AB", "so", "r7", "5"],  # line 11: r7 rated this item already
        ],
    )
    assert errors_of(lambda: ratings(text)) == [
        (2, "rating"),
        (3, "connective"),
        (4, "order"),
        (5, "rating"),
        (6, "rating"),
        (7, "pair_id"),
        (8, "rating"),
        (9, "rating"),
        (11, "rater"),
    ]


def test_the_scale_comes_from_the_project():
    header = ["pair_id", "order", "connective", "rating"]
    assert [
        r.rating for r in ratings(csv_text(header, [["1", "AB", "so", "0"]]), scale=(0, 6))
    ] == [0]
    with pytest.raises(ImportRejected) as caught:
        ratings(csv_text(header, [["1", "BA", "so", "7"]]), scale=(0, 6))
    assert "outside the scale 0–6" in caught.value.errors[0].message


# --- Model answers ----------------------------------------------------------------------------


def model(text, filename="model.csv"):
    return importing.parse_model_answers(
        importing.read_rows(text, filename),
        EXPLICA_CONNECTIVES,
        scale=(1, 10),
        known_items=KNOWN,
        known_pairs={"1"},
    )


def test_model_ratings_with_minus_one_or_empty_as_no_answer():
    text = csv_text(
        ["pair_id", "order", "connective", "rating"],
        [["1", "AB", "so", "9"], ["1", "AB", "because", "-1"], ["1", "BA", "so", ""]],
    )
    parsed = model(text)
    assert parsed.answer_kind == "ratings"
    assert parsed.answers == {"1:AB:so": 9.0, "1:AB:because": None, "1:BA:so": None}
    assert parsed.n_no_answer == 2


def test_model_choices_by_word_index_unrelated_or_none():
    text = csv_text(["pair_id", "order", "choice"], [["1", "AB", "Because"], ["1", "BA", "-1"]])
    assert model(text).answers == {"1|AB": "because", "1|BA": None}
    by_index = csv_text(
        ["pair_id", "order", "choice"], [["1", "AB", "2"], ["1", "BA", "unrelated"]]
    )
    assert model(by_index).answers == {"1|AB": "then", "1|BA": "unrelated"}


def test_bad_model_rows_are_located():
    text = csv_text(
        ["pair_id", "order", "connective", "rating"],
        [["1", "AB", "so", "12"], ["1", "AB", "whereas", "3"], ["1", "AB", "because", "4"], ["1", "AB", "because", "5"]],
    )  # fmt: skip
    assert errors_of(lambda: model(text)) == [(2, "rating"), (3, "connective"), (5, "pair_id")]
    choices = csv_text(["pair_id", "order", "choice"], [["1", "AB", "whereas"], ["9", "AB", "so"]])
    assert errors_of(lambda: model(choices)) == [(2, "choice"), (3, "pair_id")]
    assert errors_of(
        lambda: model(csv_text(["pair_id", "order", "answer"], [["1", "AB", "so"]]))
    ) == [(1, "rating")]
