"""Crowd studies (CONTRIBUTING.md, "Services own the transaction"): a study created on a stage and
its settings changed; its practice items and attention checks are raised to every participant
(``EVERYONE`` slots). Participants need nothing on the stages: the crowd annotator gate
(crowd/gate.py) applies the ``crowd`` eligibility rule (crowd/eligibility.py) to them in every
stage of the project."""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict, Unpack

from django.db import transaction

from annotation.api import EVERYONE, clean_text, item_stages_target_set
from annotation.errors import ApplicationError, NotFound
from annotation.forms import parse_bool
from annotation.models import Item, Project, Stage
from crowd.models import Study

logger = logging.getLogger(__name__)

#: Study fields a researcher edits, with their parsers.
TEXT_FIELDS = {
    "name": 200,
    "platform_study_id": 100,
    "consent_text": 20_000,
    "instructions": 20_000,
    "completion_code": 64,
    "screenout_code": 64,
    "excluded_ids": 200_000,
}
INT_FIELDS = ("places", "quota", "time_limit_minutes", "max_check_failures")
#: Every setting of a study (study_create / study_update, the Crowd tab's study forms).
STUDY_SETTINGS = frozenset(
    {*TEXT_FIELDS, *INT_FIELDS, "too_fast_seconds", "platform", "practice_rule", "on_return"}
    | {"is_open", "signed_links"}
)


class StudySettings(TypedDict, total=False):
    """A study's settings as ``study_create`` and ``study_update`` take them (each optional:
    an edit changes what it names; crowd.forms.StudyForm reads the Crowd tab's forms). The
    services check every value (ranges, choices, required texts) whoever calls them."""

    name: str
    platform_study_id: str
    consent_text: str
    instructions: str
    completion_code: str
    screenout_code: str
    excluded_ids: str
    places: int
    quota: int
    time_limit_minutes: int
    max_check_failures: int
    too_fast_seconds: float
    platform: str
    practice_rule: str
    on_return: str
    is_open: bool
    signed_links: bool


#: Chosen when a study is created, fixed afterwards.
STUDY_STAGES = ("stage", "practice_stage")


def shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters (a cell may be 128 Ki characters)."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def study_fields_check(names: Iterable[str], *, creating: bool) -> None:
    """Refuse, naming it, a field that is not a study setting (STUDY_SETTINGS; the stages too
    when ``creating``). Views call it before passing a form's fields on as keyword arguments,
    so a posted ``project`` or ``study`` is a form error, not a clash of arguments."""
    for name in names:
        if name in STUDY_SETTINGS or (creating and name in STUDY_STAGES):
            continue
        if name in STUDY_STAGES:
            message = f"{name}: a study's stages cannot change once it exists."
        else:
            message = f"The study form has no field {shown(name)}: remove it."
        raise ApplicationError(message, {name[:60]: "not a study setting"})


def _clean_fields(data: Mapping[str, Any], *, partial: bool) -> dict[str, Any]:
    study_fields_check(data, creating=False)
    clean: dict[str, Any] = {}
    for name, limit in TEXT_FIELDS.items():
        if name in data:
            clean[name] = clean_text(str(data[name] or ""), field=name, max_length=limit)
    for name in INT_FIELDS:
        if name in data:
            try:
                value = int(str(data[name]).strip())
            except ValueError:
                raise ApplicationError(
                    f"{name} must be a whole number.", {name: data[name]}
                ) from None
            if value < (0 if name == "max_check_failures" else 1) or value > 1_000_000:
                raise ApplicationError(f"{name} is out of range.", {name: value})
            clean[name] = value
    if "too_fast_seconds" in data:
        try:
            seconds = float(str(data["too_fast_seconds"]).strip())
        except ValueError:
            seconds = -1.0
        if not (math.isfinite(seconds) and 0 <= seconds <= 3600):
            raise ApplicationError(
                "too_fast_seconds must be between 0 and 3600.", {"too_fast_seconds": seconds}
            )
        clean["too_fast_seconds"] = seconds
    for name, choices in (
        ("platform", Study.Platform.values),
        ("practice_rule", Study.PracticeRule.values),
        ("on_return", Study.OnReturn.values),
    ):
        if name in data:
            if data[name] not in choices:
                raise ApplicationError(
                    f"{name} must be one of {', '.join(choices)}.", {name: data[name]}
                )
            clean[name] = data[name]
    for flag in ("is_open", "signed_links"):
        if flag in data:
            clean[flag] = parse_bool(data[flag])
    required = ("name", "consent_text", "completion_code")
    missing = [name for name in required if (name in clean or not partial) and not clean.get(name)]
    if missing:
        name = missing[0]
        raise ApplicationError(f"Give the study's {name.replace('_', ' ')}.", {name: "required"})
    return clean


def _check_signing(study: Study) -> None:
    """Signed links are Prolific's option, and need the key set that verifies them."""
    if not study.signed_links:
        return
    if study.platform != Study.Platform.PROLIFIC:
        raise ApplicationError(
            "Signed links are Prolific's option: turn them off for this platform.",
            {"signed_links": "prolific only"},
        )
    from crowd.signing import key_set

    key_set()  # KeySetMissing (503) names PROLIFIC_JWKS when the site cannot check signatures


def _stage_of(project: Project, stage: Stage | int | str | None, field: str) -> Stage | None:
    if stage in (None, ""):
        return None
    if isinstance(stage, Stage):
        found = stage if stage.project_id == project.pk else None
    else:
        found = Stage.objects.filter(
            project=project, pk=int(stage) if str(stage).isdigit() else -1
        ).first()
    if found is None:
        raise ApplicationError(f"There is no such stage in {project.name}.", {field: stage})
    return found


def _prepare_stages(study: Study) -> None:
    """Practice items and attention checks for everyone. (Which stages participants work on is
    the crowd annotator gate's rule, crowd/gate.py, whatever stages exist or are added.)"""
    item_stages_target_set(
        stage=study.practice_stage or study.stage,
        purpose=Item.Purpose.PRACTICE,
        target_count=EVERYONE,
    )
    item_stages_target_set(
        stage=study.stage, purpose=Item.Purpose.ATTENTION_CHECK, target_count=EVERYONE
    )


@transaction.atomic
def study_create(
    *,
    project: Project,
    stage: Stage | int | str,
    practice_stage: Stage | int | str | None = None,
    **settings: Unpack[StudySettings],
) -> Study:
    """A new study on ``stage`` of ``project`` (fields: see crowd.models.Study)."""
    work_stage = _stage_of(project, stage, "stage")
    if work_stage is None:
        raise ApplicationError("Choose the stage participants work on.", {"stage": "required"})
    practice = _stage_of(project, practice_stage, "practice_stage")
    if practice is not None and practice.pk == work_stage.pk:
        practice = None
    study = Study(
        project=project,
        stage=work_stage,
        practice_stage=practice,
        token=secrets.token_urlsafe(12),
        **_clean_fields(settings, partial=False),
    )
    _check_signing(study)
    study.save()
    _prepare_stages(study)
    return study


@transaction.atomic
def study_update(*, study: Study, **settings: Unpack[StudySettings]) -> Study:
    """Change a study's settings; its stages cannot change once it exists."""
    locked = Study.objects.select_for_update().get(pk=study.pk)
    clean = _clean_fields(settings, partial=True)
    if clean.get("platform", locked.platform) != locked.platform and locked.participants.exists():
        raise ApplicationError(
            "People have entered this study: its platform cannot change.", {"platform": "fixed"}
        )
    for name, value in clean.items():
        setattr(locked, name, value)
    _check_signing(locked)
    locked.save()
    _prepare_stages(locked)
    return locked


def study_token_lookup(token: str) -> Study:
    study = Study.objects.select_related("project", "stage").filter(token=token).first()
    if study is None:
        raise NotFound("There is no such study: check the link you followed.")
    return study
