"""The setup pages' forms (CONTRIBUTING.md, "Thin views"): every POST of the studio app is read
by one of these, and the services get typed values. Whether a value can work (a slug free, a
role known, a stage's settings together) stays the services' and the engine's decision; a form
turns posted text into types and refuses what has none (``annotation.forms.form_error`` makes
the refusal the page's usual error).

Partial forms: the stage form changes only the settings it posts (``StageEditForm.changes``),
as the setup page's forms each post a part of a stage.
"""

from __future__ import annotations

import math
import re
from typing import Any

from django import forms

from annotation.errors import ApplicationError
from annotation.forms import TextField, WholeNumberField, YesNoField
from annotation.models import Stage
from annotation.policies import get_policy
from studio import stage_form
from studio.services import JSON_SETTINGS, MAX_INVITE_DAYS, parse_json_setting

#: The stage config key of the spot-check share: ``agreement.spot_checks.RATE_KEY`` (studio may
#: not import agreement; tests/studio/test_forms.py holds the two together).
SPOT_CHECK_RATE = "spot_check_rate"

#: Where the setup page scrolls back to after a change: a fragment naming an element.
ANCHOR = re.compile(r"#[A-Za-z][\w-]{0,80}")


class SetupForm(forms.Form):
    """A form of the setup page: each may name the ``anchor`` the page returns to (a fragment
    like ``#stage-3``; anything else is ignored, so a redirect never leaves the page)."""

    anchor = TextField()

    def clean_anchor(self) -> str:
        anchor = self.cleaned_data["anchor"].strip()
        return anchor if ANCHOR.fullmatch(anchor) else ""

    def values(self) -> dict[str, Any]:
        """The cleaned fields for the service (the anchor is the page's, not the service's)."""
        return {name: value for name, value in self.cleaned_data.items() if name != "anchor"}


class ProjectNewForm(forms.Form):
    workflow = TextField()
    slug = TextField()
    name = TextField()
    description = TextField()


class StageAddForm(SetupForm):
    slug = TextField()
    name = TextField()
    kind = TextField()
    overlap = WholeNumberField("overlap", 1, 100, default=3)


class StageMoveForm(SetupForm):
    direction = TextField()


class StageEditForm(SetupForm):
    """One stage's settings as the setup page posts them; only the posted ones change.

    The field-by-field part (``stage_form`` posted: policy options, tie default, a route per
    outcome) is read by ``studio.stage_form`` for the policy chosen in the same form."""

    name = TextField()
    instructions = TextField()
    overlap = WholeNumberField("overlap", 1, 100)
    lease_seconds = WholeNumberField("lease_seconds", 30, 86_400)
    resolution_policy = TextField()
    tie_policy = TextField()
    is_active = YesNoField(label="is_active")
    config = TextField()
    routes = TextField()
    phases = TextField()
    eligibility = TextField()
    policy_options = TextField()
    stage_form = TextField()
    option_rows = WholeNumberField("option-rows", 0, 50, default=0)
    # Silent gold's rate (annotation/gold.py): the engine refuses 1.
    gold_every = WholeNumberField("gold_every", 0, 1000)
    # The stage's spot-check share (agreement/spot_checks.py), kept in its config.
    spot_check_rate = TextField()

    def __init__(self, data: Any, *, stage: Stage) -> None:
        # "option-rows" is not a Python name; the field reads it under its posted name.
        posted = data.copy() if hasattr(data, "copy") else dict(data)
        if "option-rows" in posted:
            posted["option_rows"] = posted["option-rows"]
        super().__init__(posted)
        self.stage = stage
        self.application_error: ApplicationError | None = None

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if "name" in self.data and not name:
            raise forms.ValidationError("A stage needs a name.", code="required")
        return name[:200]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        try:
            for name in JSON_SETTINGS:
                if name in self.data:
                    cleaned[name] = parse_json_setting(name, cleaned[name])
            if cleaned.get("stage_form"):
                cleaned.update(self._field_by_field(cleaned))
        except ApplicationError as error:
            self.application_error = error
            raise forms.ValidationError(error.message, code="invalid") from None
        return cleaned

    def _field_by_field(self, cleaned: dict[str, Any]) -> dict[str, Any]:
        data = self.data

        def get(name: str, default: str = "") -> str:
            return str(data.get(name, default))

        policy = get_policy(str(data.get("resolution_policy") or self.stage.resolution_policy))
        return {
            "policy_options": stage_form.options_from_form(get, cleaned["option_rows"]),
            "tie_default": stage_form.typed_value(get("tie_default")),
            "routes": stage_form.routes_from_form(get, policy.outcomes),
        }

    def changes(self) -> dict[str, Any]:
        """The settings posted, typed, for ``studio.services.stage_edit``."""
        names = [
            "name",
            "instructions",
            "overlap",
            "lease_seconds",
            "resolution_policy",
            "tie_policy",
            "is_active",
            *JSON_SETTINGS,
            "gold_every",
        ]
        found = {name: self.cleaned_data[name] for name in names if name in self.data}
        if self.cleaned_data.get("stage_form"):
            for name in ("policy_options", "tie_default", "routes"):
                found[name] = self.cleaned_data[name]
        found.update(self.adaptive_changes(found))
        if SPOT_CHECK_RATE in self.data:
            found["config"] = self._config_with_spot_checks(found.get("config"))
        return found

    # --- Adaptive overlap (annotation/adaptive.py): the confidence target and the cap -------
    # Shown as two fields of their own; the target is stored as the policy option "confidence"
    # (the option rows leave it out, studio.stage_form.ADAPTIVE_OPTION), the cap as max_overlap.

    adaptive_confidence = TextField()
    max_overlap = WholeNumberField("max_overlap", 0, 100)

    def clean_adaptive_confidence(self) -> float | None:
        text = self.cleaned_data["adaptive_confidence"].strip()
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            raise forms.ValidationError(
                "The confidence target must be a number such as 0.85, or empty for a fixed "
                "overlap.",
                code="invalid",
            ) from None

    def adaptive_changes(self, found: dict[str, Any]) -> dict[str, Any]:
        """The adaptive fields posted, as ``policy_options["confidence"]`` (merged into the
        options posted, or the stored ones) and ``max_overlap``; an empty target turns
        adaptive overlap off."""
        changes: dict[str, Any] = {}
        if "adaptive_confidence" in self.data:
            options = dict(found.get("policy_options", self.stage.policy_options) or {})
            options.pop(stage_form.ADAPTIVE_OPTION, None)
            target = self.cleaned_data["adaptive_confidence"]
            if target is not None:
                options[stage_form.ADAPTIVE_OPTION] = target
            else:
                options.pop("confidence_measure", None)
            changes["policy_options"] = options
        if "max_overlap" in self.data:
            changes["max_overlap"] = self.cleaned_data["max_overlap"]
        return changes

    # --- The spot-check rate: a field of its own, stored in the stage's config ---------------

    def clean_spot_check_rate(self) -> float | None:
        """A share from 0 to 1 (a comma as the decimal mark is read too); None when empty."""
        raw = self.cleaned_data["spot_check_rate"].strip().replace(",", ".")
        if not raw:
            return None
        try:
            rate = float(raw)
        except ValueError:
            rate = math.nan
        if not (0 <= rate <= 1):
            raise forms.ValidationError(
                f"The spot-check rate is a share from 0 to 1 (0.1: one settled item in ten); "
                f"got {raw[:40]!r}.",
                code="a number from 0 to 1",
            )
        return rate

    def _config_with_spot_checks(self, config: Any) -> dict[str, Any]:
        """``config`` (as posted, or the stage's) with the rate field's value: set, or removed
        when the field is empty. The field wins over the same key in the config JSON."""
        merged = dict(config if isinstance(config, dict) else self.stage.config or {})
        rate = self.cleaned_data.get("spot_check_rate")
        if rate is None:
            merged.pop(SPOT_CHECK_RATE, None)
        else:
            merged[SPOT_CHECK_RATE] = int(rate) if rate in (0, 1) else rate
        return merged


class MemberAddForm(SetupForm):
    username = TextField()
    role = TextField()


class MemberRemoveForm(SetupForm):
    user = forms.IntegerField(
        error_messages={"required": "Choose a member.", "invalid": "Choose a member."}
    )
    role = TextField()


class MemberRoleForm(SetupForm):
    """A member's role changed on the setup page (``role`` held now, ``new_role`` wanted)."""

    user = forms.IntegerField(
        error_messages={"required": "Choose a member.", "invalid": "Choose a member."}
    )
    role = TextField()
    new_role = TextField()


class ProjectCloneForm(SetupForm):
    slug = TextField()
    name = TextField()
    with_members = YesNoField(label="with_members")


class PublicationForm(SetupForm):
    license = TextField()
    citation = TextField()


class ArchiveForm(SetupForm):
    archived = YesNoField(label="archived")


class InviteCreateForm(SetupForm):
    role = TextField()
    days = WholeNumberField("days", 1, MAX_INVITE_DAYS, default=14)
    max_uses = WholeNumberField("max_uses", 0, 100_000, default=0)


class GuidelinesForm(forms.Form):
    instructions = TextField()


class NoFieldsForm(SetupForm):
    """A POST that carries nothing but its CSRF token (remove a stage, withdraw an invite)."""
