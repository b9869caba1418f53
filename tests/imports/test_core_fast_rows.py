"""The compiled check of the simplest records (imports/core/fast_rows.py) gives exactly what
``RowSchema.validate_row`` gives, or declines: it never accepts a record the general check
refuses, never changes a clean row, and answers for the records large files are made of."""

from __future__ import annotations

import pytest

from imports.core import FieldSpec, RowSchema, generic_schema
from imports.core.fast_rows import fast_row_check
from imports.services.mapping import (
    MappedSchema,
    _ShownFieldsSchema,
    default_item_mapper,
    map_row,
    schema_fast_check,
)

TWO_TEXTS = RowSchema(
    name="two-texts",
    external_id_field="id",
    fields=(FieldSpec("id", max_length=10), FieldSpec("Text", aliases=("body",), max_length=20)),
)

SCHEMAS = {
    "generic": generic_schema(),
    "generic-reject": generic_schema(extra_fields="reject"),
    "generic-ignore": generic_schema(extra_fields="ignore"),
    "two-texts": TWO_TEXTS,
    "shown": _ShownFieldsSchema(
        name="generic",
        fields=generic_schema().fields,
        external_id_field="external_id",
        shown=("text", "question"),
    ),
}

#: Records of every kind the general check treats specially, and the plain ones.
RECORDS = [
    {"id": "a-1", "text": "plain", "n": 3, "x": 1.5, "ok": True, "none": None},
    {"external_id": "b", "text": "ünïcode ✓"},
    {"id": "solo-1"},
    {"item_id": "solo-2"},
    {"case_id": " solo-3 "},
    {"item_id": "  padded  ", "text": "t"},
    {"id": "c", "Text": "upper-case key"},
    {"ID": "d", "text": "upper-case id key"},
    {" id ": "e", "text": "spaced id key"},
    {"id": "f", "external_id": "g", "text": "two spellings of the id"},
    {"id": "", "external_id": "h", "text": "a blank first spelling"},
    {"id": "   ", "text": "blank id"},
    {"id": None, "text": "null id"},
    {"text": "no id"},
    {"id": 12, "text": "a number as id"},
    {"id": "i", "text": "nested", "meta": {"a": [1, 2]}},
    {"id": "j", "text": "a list", "tags": ["x"]},
    {"id": "k", "text": "NUL \x00 inside"},
    {"id": "l\x00", "text": "NUL in the id"},
    {"id": "m", "text": "lone surrogate \ud800"},
    {"id": "n", "bad \ud800 key": 1},
    {"id": "o", "text": "infinite", "x": float("inf")},
    {"id": "p", "text": "huge", "n": 2**14000},
    {"id": "q" * 300, "text": "id too long for everyone"},
    {"id": "r" * 11, "body": "id too long for two-texts"},
    {"id": "s", "body": "alias of Text"},
    {"id": "t", "Text": "x" * 21},
    {"id": "u", "text": "", "question": "shown by question"},
    {"id": "v", "other": "shows nothing"},
    {"id": "w", "text": "bool", "flag": False},
    {"id": "w2", "text": None, "question": 0},
    {"id": "w3", "question": False, "text": ""},
    {"id": "w4", "text": "", "question": None, "other": "shows nothing either"},
    {1: "not a text key", "id": "x"},
    ["not", "an", "object"],
    "a string record",
    None,
]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_compiled_check_agrees_with_validate_row(name):
    schema = SCHEMAS[name]
    check = schema_fast_check(schema)
    assert check is not None
    answered = 0
    for record in RECORDS:
        fast = check(record)
        clean, errors = schema.validate_row(record, 1)
        if fast is None:
            continue
        answered += 1
        assert errors == [] and clean is not None, (name, record)
        assert list(fast.items()) == list(clean.items()), (name, record)
    assert answered >= 3, "the plain records are answered by the compiled check"


def test_the_same_keys_are_planned_once_and_each_value_still_checked():
    check = fast_row_check(generic_schema())
    assert check is not None
    assert check({"id": "a", "text": "fine"}) == {"external_id": "a", "text": "fine"}
    # Same keys as above (a cached plan): the values are still checked, one by one.
    assert check({"id": "b", "text": "bad \x00"}) is None
    assert check({"id": " ", "text": "fine"}) is None
    assert check({"id": "c", "text": {"nested": 1}}) is None


def test_schemas_it_cannot_compile_have_no_compiled_check():
    typed = RowSchema(
        name="typed", external_id_field="id", fields=(FieldSpec("id"), FieldSpec("n", "int"))
    )
    checked = generic_schema().with_checks(lambda clean: None)
    derived = RowSchema(name="rows", derived_id="row", fields=(FieldSpec("text"),))
    for schema in (typed, checked, derived):
        assert fast_row_check(schema) is None


def test_a_record_shows_something_under_each_of_its_key_orders():
    """``shown`` is planned per key sequence, but every record's values are still asked."""
    check = schema_fast_check(SCHEMAS["shown"])
    assert check is not None
    assert check({"id": "a", "text": "", "question": "q"}) == {
        "external_id": "a",
        "text": "",
        "question": "q",
    }
    assert check({"id": "b", "text": "", "question": ""}) is None  # same keys, nothing shown
    assert check({"id": "c", "question": "q", "text": ""}) is not None  # another order
    assert check({"id": "d", "other": "x"}) is None  # keys that can show nothing


@pytest.mark.parametrize(
    "options",
    [{}, {"source": "survey 2026"}, {"source": "s" * 300}, {"purpose_field": "kind"},
     {"gold_field": "answer"}, {"group_field": "g", "source_field": "origin"}],
)  # fmt: skip
def test_the_mapped_schema_maps_every_row_as_the_default_mapper_does(options):
    """MappedSchema works the default mapper's options out once when they name no column;
    what it keeps for each row is exactly what ``map_row`` with ``default_item_mapper`` gives."""
    schema = SCHEMAS["generic"]
    mapped = MappedSchema(schema, default_item_mapper, options)
    rows = [*RECORDS, {"id": "y", "kind": "gold", "answer": "yes", "g": "g1", "origin": "o"}]
    accepted = 0
    for record in rows:
        clean, errors = mapped.validate_row(record, 1)
        if clean is None:
            continue
        accepted += 1
        expected = map_row(clean, schema, default_item_mapper, options)
        assert mapped.mapped == expected, record
        assert list(mapped.mapped.payload) == list(expected.payload), record  # same key order
    assert accepted >= 10
