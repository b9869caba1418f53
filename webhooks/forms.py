"""The Webhooks tab's form (CONTRIBUTING.md, "Thin views"): a hook's settings as typed values.
Whether a URL may be used is the service's check (webhooks/addresses.py)."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.events import PROJECT_EVENT_KINDS


class WebhookForm(forms.Form):
    """Name, URL, the events to send and the pace a receiver can take."""

    name = forms.CharField(max_length=100, error_messages={"required": "Give the hook a name."})
    url = forms.CharField(
        max_length=2000, error_messages={"required": "Give the URL that receives the events."}
    )
    events = forms.MultipleChoiceField(
        choices=list(PROJECT_EVENT_KINDS.items()),
        error_messages={
            "required": "Choose at least one event to send.",
            "invalid_choice": "%(value)s is not an event Rungwise sends.",
        },
    )
    batch_size = forms.IntegerField(
        min_value=1,
        max_value=1000,
        initial=100,
        error_messages={
            "required": "Say how many events one request may carry (1–1,000).",
            "invalid": "Events per request must be a whole number.",
            "min_value": "Events per request: at least 1.",
            "max_value": "Events per request: at most 1,000.",
        },
    )
    requests_per_minute = forms.IntegerField(
        min_value=1,
        max_value=6000,
        initial=60,
        error_messages={
            "required": "Say how many requests a minute the receiver takes (1–6,000).",
            "invalid": "Requests a minute must be a whole number.",
            "min_value": "Requests a minute: at least 1.",
            "max_value": "Requests a minute: at most 6,000.",
        },
    )

    def settings(self) -> dict[str, Any]:
        """The cleaned settings as the services' keyword arguments."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "url": data["url"],
            "events": list(data["events"]),
            "batch_size": data["batch_size"],
            "requests_per_minute": data["requests_per_minute"],
        }
