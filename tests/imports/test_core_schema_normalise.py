"""A schema field that maps a source's spellings onto one canonical value (``FieldSpec.normalise``,
imports/core/schema.py "Normalising values"): mapped values are reported, unmapped ones refused
or reported as the field declares, and the core's report counts them."""

from __future__ import annotations

import pytest

from imports.core import FieldSpec, ImportReport, Normalisation, RowSchema

LEVELS = {"L1": "L1", "rung 1": "L1", "association": "L1", "L2": "L2", "Intervention": "L2"}


def schema(**options) -> RowSchema:
    return RowSchema(
        name="levels",
        derived_id="row",
        fields=(FieldSpec("level", "str", aliases=("rung",), normalise=LEVELS, **options),),
    )


def test_a_mapping_matches_exactly_then_ignoring_case_and_spaces_and_reports_each_change():
    found: list[Normalisation] = []
    rows = [{"level": "L1"}, {"rung": " RUNG 1 "}, {"level": "intervention"}]
    clean = [schema().validate_row(row, n, normalised=found)[0] for n, row in enumerate(rows, 1)]
    assert clean == [{"level": "L1"}, {"level": "L1"}, {"level": "L2"}]
    assert [(n.field, n.spelling, n.canonical, n.line) for n in found] == [
        ("level", "L1", "L1", 1),
        ("level", " RUNG 1 ", "L1", 2),
        ("level", "intervention", "L2", 3),
    ]


def test_an_unknown_spelling_is_refused_by_default_naming_the_field():
    found: list[Normalisation] = []
    clean, errors = schema().validate_row({"level": "rung 7"}, 4, normalised=found)
    assert clean is None
    assert [(e.code, e.field, e.line, e.found) for e in errors] == [
        ("unknown_choice", "level", 4, "'rung 7'")
    ]
    assert found == []


def test_an_unknown_spelling_is_reported_and_left_out_when_the_field_says_report():
    found: list[Normalisation] = []
    clean, errors = schema(unmapped="report").validate_row(
        {"level": "rung 7", "other": 1}, 4, normalised=found
    )
    assert (clean, errors) == ({"other": 1}, [])
    assert found == [Normalisation("level", "rung 7", None, line=4)]


def test_a_callable_normaliser_sees_the_typed_value_and_runs_before_the_check():
    seen = []

    def normalise(value):
        seen.append(value)
        return value * 10

    spec = FieldSpec("n", "int", normalise=normalise, check=lambda v: "too big" if v > 50 else None)
    rows = RowSchema(name="n", derived_id="row", fields=(spec,))
    assert rows.validate_row({"n": "3"}, 1, text_values=True) == ({"n": 30}, [])
    clean, errors = rows.validate_row({"n": 6}, 2)
    assert clean is None and [e.message for e in errors] == ["too big"]
    assert seen == [3, 6]


def test_the_core_report_counts_normalisations_by_field_spelling_and_value():
    report = ImportReport()
    for normalisation in (
        Normalisation("level", "rung 1", "L1", line=1),
        Normalisation("level", "rung 1", "L1", line=5),
        Normalisation("level", "rung 7", None, line=6),
    ):
        report.add_normalisation(normalisation)
    stored = report.to_dict()
    assert stored["normalised"] == [
        {"field": "level", "spelling": "rung 1", "canonical": "L1", "count": 2},
        {"field": "level", "spelling": "rung 7", "canonical": "", "count": 1},
    ]
    assert ImportReport.from_dict(stored).normalised == report.normalised


def test_a_mapping_is_data_and_a_callable_is_not():
    mapped = schema(unmapped="report")
    again = RowSchema.from_dict(mapped.to_dict())
    assert again.field("level").normalise == LEVELS
    assert again.field("level").unmapped == "report"
    assert again.validate_row({"level": "ASSOCIATION"}, 1) == ({"level": "L1"}, [])
    by_code = FieldSpec("n", "int", normalise=abs)
    assert "normalise" not in by_code.to_dict()


def test_an_unknown_unmapped_policy_is_refused():
    with pytest.raises(ValueError, match="unmapped"):
        FieldSpec("level", normalise=LEVELS, unmapped="guess")  # type: ignore[arg-type]


def test_a_number_is_looked_up_by_its_text_and_a_boolean_never_matches():
    rungs = RowSchema(
        name="rungs",
        derived_id="row",
        fields=(FieldSpec("rung", "json", normalise={"2": "L2", "True": "L1"}),),
    )
    assert rungs.validate_row({"rung": 2}, 1) == ({"rung": "L2"}, [])
    clean, errors = rungs.validate_row({"rung": True}, 2)
    assert clean is None and [e.code for e in errors] == ["unknown_choice"]
