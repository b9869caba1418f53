"""The Graphs tab's generator form (graphs/forms.py): defaults for absent numbers, each number
in its range with a refusal naming the field, an edge list required and bounded."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.forms import form_error
from graphs import services
from graphs.forms import DsepGenerateForm


def _form(data, content=b"cause,effect\nA,B\n"):
    files = {"file": SimpleUploadedFile("g.csv", content)} if content is not None else {}
    return DsepGenerateForm(data, files)


def test_absent_numbers_take_their_defaults():
    form = _form({"graph_name": " g1 "})
    assert form.is_valid(), form.errors
    assert (form.cleaned_data["max_given"], form.cleaned_data["limit"]) == (1, 20)
    assert (form.cleaned_data["seed"], form.cleaned_data["graph_name"]) == (0, "g1")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_given", "-1"),
        ("limit", "0"),
        ("limit", str(services.MAX_QUESTIONS + 1)),
        ("seed", "x"),
    ],
)
def test_a_number_out_of_range_is_refused_naming_the_field(field, value):
    form = _form({field: value})
    assert not form.is_valid()
    error = form_error(form)
    assert field in error.extra and error.status == 400
    assert error.message.startswith(f"{field} is a whole number from")


def test_an_edge_list_is_required_and_bounded():
    missing = _form({}, content=None)
    assert not missing.is_valid()
    assert form_error(missing).extra == {"file": "required"}
    big = _form({}, content=b"x" * (services.MAX_EDGE_LIST_BYTES + 1))
    assert not big.is_valid()
    assert "at most" in form_error(big).message
