"""The shared form pieces (annotation/forms.py): one yes / no rule, whole numbers with the
services' messages, text left for the services to judge, and a form's refusal as the one
error type."""

from __future__ import annotations

import pytest
from django import forms

from annotation.errors import ApplicationError
from annotation.forms import TextField, WholeNumberField, YesNoField, form_error, parse_bool


@pytest.mark.parametrize("text", ["1", "true", "True", " on ", "yes", "YES"])
def test_yes_words_read_as_true(text):
    assert parse_bool(text) is True


@pytest.mark.parametrize("value", ["", "0", "false", "off", "no", "maybe", None, 0, False])
def test_everything_else_reads_as_false(value):
    assert parse_bool(value) is False


def test_other_values_keep_their_truth():
    assert parse_bool(True) is True and parse_bool(1) is True and parse_bool(2.5) is True


class Sample(forms.Form):
    flag = YesNoField(label="flag", default=True)
    count = WholeNumberField("count", 1, 10, default=3)
    note = TextField()


def test_fields_not_posted_take_their_defaults():
    form = Sample({})
    assert form.is_valid()
    assert form.cleaned_data == {"flag": True, "count": 3, "note": ""}


def test_posted_values_are_typed_and_text_is_kept_as_posted():
    form = Sample({"flag": "0", "count": " 7 ", "note": "  a\x00b "})
    assert form.is_valid()
    assert form.cleaned_data == {"flag": False, "count": 7, "note": "  a\x00b "}


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"count": ""}, "count", "count must be a whole number."),
        ({"count": "x"}, "count", "count must be a whole number."),
        ({"count": "11"}, "count", "count must be from 1 to 10."),
        ({"flag": "perhaps"}, "flag", "flag takes yes or no (1 / 0)."),
    ],
)
def test_a_refused_form_is_an_application_error_naming_the_field(data, field, message):
    form = Sample(data)
    assert not form.is_valid()
    error = form_error(form)
    assert isinstance(error, ApplicationError) and error.status == 400
    assert error.message == message and field in error.extra


def test_an_application_error_caught_by_a_form_is_returned_whole():
    form = Sample({})
    assert form.is_valid()
    form.application_error = ApplicationError("Taken.", {"slug": "taken"}, status=409)
    error = form_error(form)
    assert (error.message, error.extra, error.status) == ("Taken.", {"slug": "taken"}, 409)
