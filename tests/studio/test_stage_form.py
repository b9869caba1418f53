"""The stage form's translation between stored settings and form fields (studio.stage_form):
every route the engine knows survives a round trip; values typed are read as JSON when they
are JSON; errors land on the field they name."""

from __future__ import annotations

import pytest

from annotation.errors import ApplicationError
from studio import stage_form

ROUTES = [
    {"action": "next"},
    {"action": "finish"},
    {"action": "keep"},
    {"action": "escalate"},
    {"action": "discard"},
    {"action": "discard", "reason": "off topic"},
    {"action": "stage", "stage": "label"},
    {"action": "back", "stage": "verify", "max_loops": 3, "otherwise": {"action": "escalate"}},
    {
        "action": "back",
        "stage": "verify",
        "max_loops": 1,
        "otherwise": {"action": "discard", "reason": "looped"},
    },
    {"action": "revise", "then": {"action": "stage", "stage": "label"}},
    {
        "action": "revise",
        "then": {
            "action": "back",
            "stage": "verify",
            "max_loops": 2,
            "otherwise": {"action": "keep"},
        },
    },
]


def as_form(row: stage_form.RouteRow) -> dict[str, str]:
    prefix = f"route-{row.outcome}"
    fields = {
        prefix: row.target,
        f"{prefix}-reason": row.reason,
        f"{prefix}-loops": str(row.loops),
        f"{prefix}-otherwise": row.otherwise,
        f"{prefix}-otherwise-reason": row.otherwise_reason,
    }
    if row.revise:
        fields[f"{prefix}-revise"] = "1"
    return fields


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: str(route)[:60])
def test_every_route_round_trips_through_the_form(route):
    row = stage_form.route_row("accept", route, "the next stage")
    posted = as_form(row)
    back = stage_form.route_from_form(lambda name, default="": posted.get(name, default), "accept")
    expected = dict(route)
    if expected.get("action") == "back":
        expected["otherwise"] = dict(expected["otherwise"])
    assert back == expected


def test_an_empty_target_is_the_default_route_and_is_not_listed():
    get = {"route-accept": "", "route-reject": "keep"}.get
    assert stage_form.routes_from_form(
        lambda name, default="": get(name, default), ("accept", "reject")
    ) == {"reject": {"action": "keep"}}


def test_typed_values_read_as_json_when_they_are_json():
    assert stage_form.typed_value("0.5") == 0.5
    assert stage_form.typed_value("true") is True
    assert stage_form.typed_value('["a", 1]') == ["a", 1]
    assert stage_form.typed_value(" keep ") == "keep"
    assert stage_form.typed_value("") is None
    deep = "[" * 100_000  # beyond the nesting limit: stays text, never a RecursionError
    assert stage_form.typed_value(deep) == deep
    for value in ("keep", 0.5, True, ["a"], {"x": 1}, "12 apples"):
        assert stage_form.typed_value(stage_form.shown_value(value)) == value
    assert stage_form.shown_value("7") == '"7"'  # text that would read as a number is quoted


def test_option_rows_become_options_and_a_nameless_value_is_refused():
    posted = {
        "option-name-0": "gate",
        "option-value-0": "2",
        "option-name-1": "",
        "option-value-1": "",
    }
    get = lambda name, default="": posted.get(name, default)  # noqa: E731
    assert stage_form.options_from_form(get, 2) == {"gate": 2}
    posted["option-value-1"] = "3"
    with pytest.raises(ApplicationError) as refused:
        stage_form.options_from_form(get, 2)
    assert refused.value.extra == {"option-name-1": "required"}
    assert stage_form.field_errors(refused.value.extra, "x") == {"options": "x"}


def test_engine_errors_map_to_the_fields_that_show_them():
    errors = stage_form.field_errors(
        {"routes.accept.otherwise": "loop", "overlap": 0}, "Something is wrong."
    )
    assert errors == {"route-accept": "Something is wrong.", "overlap": "Something is wrong."}
