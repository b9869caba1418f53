"""The token page's forms (api/pages.py): posted text turned into types; whether a name or a
life is allowed is ``api.services``' decision."""

from __future__ import annotations

from django import forms

from annotation.forms import TextField, WholeNumberField
from api.services import MAX_TOKEN_DAYS


class TokenCreateForm(forms.Form):
    name = TextField()
    days = WholeNumberField("days", 1, MAX_TOKEN_DAYS, default=30)


class TokenRevokeForm(forms.Form):
    token = forms.IntegerField(
        error_messages={"required": "Choose a token.", "invalid": "Choose a token."}
    )
