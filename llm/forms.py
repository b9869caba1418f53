"""The models' pages read every POST with these forms (CONTRIBUTING.md, "Thin views"): the
services get typed values; an invalid form becomes the page's error through
``annotation.forms.form_error``, naming the field.

An endpoint's form takes the *name* of the environment variable that holds its key, never a
key: ``api_key_env`` is re-shown only when it looks like a variable's name, so a key pasted
there by mistake is refused (llm.services.endpoint_check) and never echoed back.
"""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.forms import YesNoField
from llm.models import Endpoint, PromptTemplate
from llm.selectors import PREVIEW_ITEMS_DEFAULT, PREVIEW_ITEMS_MAX
from llm.services import ENV_NAME, MAX_SAMPLES


class EnvironmentNameInput(forms.TextInput):
    """A text input that re-shows a value only when it is an environment variable's name."""

    def format_value(self, value: Any) -> str | None:
        text = super().format_value(value)
        if text and not ENV_NAME.match(text):
            return None
        return text


class EndpointForm(forms.ModelForm):
    """An endpoint's settings (llm/models.py says what each means)."""

    class Meta:
        model = Endpoint
        fields = [
            "name",
            "base_url",
            "model",
            "api_key_env",
            "concurrency",
            "requests_per_minute",
            "tokens_per_minute",
            "timeout_seconds",
            "max_retries",
            "default_params",
            "json_schema_mode",
            "price_prompt_per_million",
            "price_completion_per_million",
        ]
        labels = {
            "name": "Name",
            "base_url": "Base URL",
            "model": "Model id",
            "api_key_env": "Key: the name of its environment variable",
            "requests_per_minute": "Requests per minute",
            "tokens_per_minute": "Tokens per minute",
            "timeout_seconds": "Timeout (seconds)",
            "max_retries": "Retries",
            "default_params": "Default parameters (JSON)",
            "json_schema_mode": "Ask for a JSON schema",
            "price_prompt_per_million": "Price per million prompt tokens",
            "price_completion_per_million": "Price per million completion tokens",
        }
        help_texts = {
            "name": "Letters, digits, - and _ (it names the endpoint in runs and files).",
            "base_url": "Where /chat/completions begins, e.g. http://127.0.0.1:8000/v1.",
            "api_key_env": (
                "e.g. OPENAI_API_KEY. The key itself is never stored nor shown here: set the "
                "variable on the server and the workers. Empty: no key (local servers)."
            ),
        }
        widgets = {
            "api_key_env": EnvironmentNameInput(attrs={"autocomplete": "off"}),
            "default_params": forms.Textarea(attrs={"rows": 2}),
        }


class PromptCreateForm(forms.Form):
    """A new prompt template for the kind of one of the project's stages (its version 1)."""

    name = forms.CharField(max_length=100)
    stage = forms.IntegerField(min_value=1, error_messages={"required": "Choose a stage."})
    purpose = forms.ChoiceField(
        choices=PromptTemplate.Purpose.choices, required=False, initial="rate"
    )
    system = forms.CharField(required=False, strip=False)
    user = forms.CharField(
        strip=False, error_messages={"required": "The prompt needs a user message."}
    )

    def clean_purpose(self) -> str:
        return self.cleaned_data.get("purpose") or PromptTemplate.Purpose.RATE


class PromptVersionForm(forms.Form):
    """The texts of a template's next version."""

    system = forms.CharField(required=False, strip=False)
    user = forms.CharField(
        strip=False, error_messages={"required": "The prompt needs a user message."}
    )


class PreviewForm(forms.Form):
    """A preview: a stage, a prompt version, how many real items, and optionally an endpoint
    to ask (its answers go through the ledger)."""

    stage = forms.IntegerField(min_value=1, error_messages={"required": "Choose a stage."})
    version = forms.IntegerField(
        min_value=1, error_messages={"required": "Choose a prompt version."}
    )
    items = forms.IntegerField(
        min_value=1, max_value=PREVIEW_ITEMS_MAX, required=False, initial=PREVIEW_ITEMS_DEFAULT
    )
    endpoint = forms.IntegerField(min_value=1, required=False)

    def clean_items(self) -> int:
        return self.cleaned_data.get("items") or PREVIEW_ITEMS_DEFAULT


class RaterAddForm(forms.Form):
    """A model rater in a stage: which endpoint and prompt version, how many samples at what
    temperature, and whether it fills one of the people's slots."""

    endpoint = forms.IntegerField(min_value=1, error_messages={"required": "Choose an endpoint."})
    version = forms.IntegerField(
        min_value=1, error_messages={"required": "Choose a prompt version."}
    )
    samples = forms.IntegerField(min_value=1, max_value=MAX_SAMPLES, required=False)
    temperature = forms.FloatField(min_value=0, max_value=2, required=False)
    fills_human_slot = YesNoField(label="Fills a person's slot", default=False)

    def clean_samples(self) -> int:
        return self.cleaned_data.get("samples") or 1


class RunControlForm(forms.Form):
    action = forms.ChoiceField(
        choices=[("pause", "Pause"), ("resume", "Resume"), ("cancel", "Cancel")]
    )
