"""The setup page's forms (studio/forms.py): typed values for the services, and an anchor that
never takes a redirect off the page."""

from __future__ import annotations

import pytest

from studio import forms


@pytest.mark.parametrize(
    ("posted", "kept"),
    [
        ("#stage-12", "#stage-12"),
        ("#pipeline", "#pipeline"),
        ("", ""),
        ("https://elsewhere.example/", ""),
        ("//elsewhere.example", ""),
        ("#a b", ""),
        ("@elsewhere.example", ""),
    ],
)
def test_the_anchor_is_a_fragment_or_nothing(posted, kept):
    form = forms.NoFieldsForm({"anchor": posted})
    assert form.is_valid()
    assert form.cleaned_data["anchor"] == kept


def test_an_invite_form_types_its_numbers_and_fills_defaults():
    form = forms.InviteCreateForm({"role": "annotator"})
    assert form.is_valid()
    assert form.cleaned_data == {"anchor": "", "role": "annotator", "days": 14, "max_uses": 0}
    refused = forms.InviteCreateForm({"role": "annotator", "days": "400"})
    assert not refused.is_valid() and "days must be from 1 to 90." in refused.errors["days"]


def test_the_forms_spot_check_key_is_the_agreement_apps():
    from agreement.spot_checks import RATE_KEY
    from studio.forms import SPOT_CHECK_RATE

    assert SPOT_CHECK_RATE == RATE_KEY
