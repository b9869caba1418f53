"""The evaluation page's form: which published release, which endpoint, which reading."""

from __future__ import annotations

from typing import Any

from django import forms

from llm.models import Endpoint, Evaluation
from releases.models import Release


class EvaluationStartForm(forms.Form):
    release = forms.ModelChoiceField(queryset=Release.objects.none(), empty_label=None)
    endpoint = forms.ModelChoiceField(queryset=Endpoint.objects.none(), empty_label=None)
    mode = forms.ChoiceField(choices=Evaluation.Mode.choices, initial=Evaluation.Mode.CHAT)

    def __init__(self, *args: Any, releases: Any, endpoints: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        release_field = self.fields["release"]
        endpoint_field = self.fields["endpoint"]
        assert isinstance(release_field, forms.ModelChoiceField)
        assert isinstance(endpoint_field, forms.ModelChoiceField)
        release_field.queryset = releases
        release_field.label_from_instance = lambda release: f"v{release.version}"
        endpoint_field.queryset = endpoints
        endpoint_field.label_from_instance = lambda endpoint: f"{endpoint.name} ({endpoint.model})"
