"""The evaluation page's form: which published release, which endpoint, which reading."""

from __future__ import annotations

from typing import Any

from django import forms

from llm.models import Endpoint, Evaluation
from releases.models import Release


class ReleaseChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"v{obj.version}"


class EndpointChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} ({obj.model})"


class EvaluationStartForm(forms.Form):
    release = ReleaseChoice(queryset=Release.objects.none(), empty_label=None)
    endpoint = EndpointChoice(queryset=Endpoint.objects.none(), empty_label=None)
    mode = forms.ChoiceField(choices=Evaluation.Mode.choices, initial=Evaluation.Mode.CHAT)

    def __init__(self, *args: Any, releases: Any, endpoints: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        release_field = self.fields["release"]
        endpoint_field = self.fields["endpoint"]
        assert isinstance(release_field, ReleaseChoice)
        assert isinstance(endpoint_field, EndpointChoice)
        release_field.queryset = releases
        endpoint_field.queryset = endpoints
