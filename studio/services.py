"""Project setup services (CONTRIBUTING.md, "Services own the transaction"): a project from a
workflow's template, stages added and edited through the engine's own checks
(annotation.services.stage_create / stage_update), members by name, invite links."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotation import api as engine
from annotation.errors import ApplicationError, Conflict, NotFound
from annotation.models import Membership, Project, Role, Stage
from annotation.workflows import WORKFLOWS
from imports.core.readers import ImportFileError, read_json_document
from studio.models import Invite

#: Stage settings edited as JSON on the setup page.
JSON_SETTINGS = ("config", "routes", "phases", "eligibility", "policy_options")
MAX_INVITE_DAYS = 90
#: Short names that would clash with pages under projects/.
RESERVED_SLUGS = frozenset({"new"})


def workflow_templates() -> list[Any]:
    """The workflows that offer a template, generic ("From scratch") last."""
    found = [w for w in WORKFLOWS.values() if w.create is not None]
    return sorted(found, key=lambda w: (w.key == "generic", w.label))


@transaction.atomic
def project_from_template(
    *, workflow: str, slug: str, name: str, description: str = "", creator: AbstractBaseUser
) -> Project:
    """A new project built by ``workflow``'s template; its creator becomes its admin."""
    chosen = WORKFLOWS.get(workflow)
    if chosen is None or chosen.create is None:
        raise ApplicationError(
            f"There is no template {workflow!r}.",
            {"workflow": ", ".join(w.key for w in workflow_templates())},
        )
    slug = (slug or "").strip()
    name = (name or "").strip()
    if not name:
        raise ApplicationError("Give the project a name.", {"name": "required"})
    try:
        validate_slug(slug)
    except ValidationError:
        raise ApplicationError(
            "The short name (slug) takes letters, digits, - and _ only.", {"slug": slug[:64]}
        ) from None
    if slug in RESERVED_SLUGS:
        raise ApplicationError(
            f"{slug!r} is taken by a page; choose another short name.", {"slug": slug}
        )
    project = chosen.create(slug=slug, name=name, description=description or "")
    engine.membership_add(project=project, user=creator, role=Role.ADMIN)
    return project


def parse_json_setting(name: str, text: str) -> Any:
    """A stage setting typed as JSON on the setup page; ApplicationError naming it otherwise."""
    text = (text or "").strip()
    if not text:
        return None if name in ("routes", "phases", "eligibility") else {}
    try:
        return read_json_document(text)
    except ImportFileError as refused:  # the imports' rules: syntax, nesting, storable text
        error = refused.error
        what = "not valid JSON" if error.code == "json_syntax" else "cannot be used"
        raise ApplicationError(f"{name}: {what} ({error.message}).", {name: "valid JSON"}) from None


def _whole(name: str, raw: Any, low: int, high: int) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ApplicationError(f"{name} must be a whole number.", {name: str(raw)[:20]}) from None
    if not low <= value <= high:
        raise ApplicationError(f"{name} must be from {low} to {high}.", {name: value})
    return value


@transaction.atomic
def stage_edit(*, stage: Stage, data: dict[str, Any]) -> Stage:
    """Apply the setup page's stage form (texts as posted) through engine.stage_update: every
    setting is checked with the ones it keeps, and nothing changes when one is wrong."""
    changes: dict[str, Any] = {}
    if "name" in data:
        name = str(data["name"]).strip()
        if not name:
            raise ApplicationError("A stage needs a name.", {"name": "required"})
        changes["name"] = name[:200]
    if "instructions" in data:
        changes["instructions"] = str(data["instructions"])
    if "overlap" in data:
        changes["overlap"] = _whole("overlap", data["overlap"], 1, 100)
    if "lease_seconds" in data:
        changes["lease_seconds"] = _whole("lease_seconds", data["lease_seconds"], 30, 86_400)
    if "resolution_policy" in data:
        changes["resolution_policy"] = str(data["resolution_policy"])
    if "tie_policy" in data:
        changes["tie_policy"] = str(data["tie_policy"])
    if "is_active" in data:
        changes["is_active"] = str(data["is_active"]).lower() in ("1", "true", "on", "yes")
    for name in JSON_SETTINGS:
        if name in data:
            changes[name] = parse_json_setting(name, data[name])
    if data.get("stage_form"):
        changes.update(_stage_form_settings(stage, data))
    return engine.stage_update(stage=stage, **changes)


def _stage_form_settings(stage: Stage, data: dict[str, Any]) -> dict[str, Any]:
    """The settings the stage form posts field by field (studio.stage_form): the policy's
    options and tie default, and a route per outcome of the policy chosen in the same form
    (routes of outcomes it does not decide are dropped with it)."""
    from annotation.policies import get_policy
    from studio import stage_form

    def get(name: str, default: str = "") -> str:
        return str(data.get(name, default))

    rows = _whole("option-rows", data.get("option-rows", "0"), 0, 50)
    policy = get_policy(str(data.get("resolution_policy") or stage.resolution_policy))
    return {
        "policy_options": stage_form.options_from_form(get, rows),
        "tie_default": stage_form.typed_value(get("tie_default")),
        "routes": stage_form.routes_from_form(get, policy.outcomes),
    }


def _pipeline_check(project: Project) -> None:
    """Every stage's settings checked again in the pipeline's current order and membership
    (``engine.stage_settings_clean``), after a stage moved or went: a 'back' route now
    pointing forward, a route or a rule naming a removed stage, raise ApplicationError naming
    the stage and the setting; the caller's transaction then leaves everything as it was."""
    for stage in project.stages.order_by("position"):
        try:
            engine.stage_settings_clean(
                project=project,
                slug=stage.slug,
                kind=stage.kind,
                overlap=stage.overlap,
                settings={key: getattr(stage, key) for key in engine.STAGE_SETTINGS},
            )
        except ApplicationError as error:
            raise ApplicationError(
                f"{stage.name}: {error.message} Change that stage's settings first.",
                {f"{stage.slug}.{key}": value for key, value in error.extra.items()},
                status=error.status,
            ) from None


@transaction.atomic
def stage_move(*, stage: Stage, direction: str) -> Stage:
    """Swap ``stage`` with its neighbour (``direction`` "up" or "down"), then check every
    stage in the new order; refused (nothing moved) when a setting no longer works, e.g. a
    'back' route that would point to a later stage."""
    if direction not in ("up", "down"):
        raise ApplicationError("Move a stage up or down.", {"direction": direction[:10]})
    project = Project.objects.select_for_update().get(pk=stage.project_id)
    stages = list(project.stages.select_for_update().order_by("position"))
    index = next(n for n, other in enumerate(stages) if other.pk == stage.pk)
    neighbour_index = index - 1 if direction == "up" else index + 1
    if not 0 <= neighbour_index < len(stages):
        raise ApplicationError(
            f"{stage.name} is already the {'first' if direction == 'up' else 'last'} stage.",
            {"direction": direction},
        )
    moving, neighbour = stages[index], stages[neighbour_index]
    spare = max(other.position for other in stages) + 1  # (project, position) is unique
    first, second = moving.position, neighbour.position
    Stage.objects.filter(pk=moving.pk).update(position=spare)
    Stage.objects.filter(pk=neighbour.pk).update(position=first)
    Stage.objects.filter(pk=moving.pk).update(position=second)
    _pipeline_check(project)
    moving.refresh_from_db()
    return moving


@transaction.atomic
def stage_remove(*, stage: Stage) -> None:
    """Delete a stage no item has entered yet (one with items is closed instead: its work is
    kept), then check the others without it: a route or a rule that names it refuses the
    removal and names itself."""
    from django.db.models import ProtectedError

    from annotation.models import ItemStage

    locked = Stage.objects.select_for_update().get(pk=stage.pk)
    if ItemStage.objects.filter(stage=locked).exists():
        raise Conflict(
            f"Items have entered {locked.name}; close it (Open for work: Closed) instead of "
            f"removing it, so that their work is kept.",
            {"stage": locked.slug},
        )
    project = locked.project
    try:
        locked.delete()
    except ProtectedError:
        raise Conflict(
            f"{locked.name} is used elsewhere (a crowd study runs on it); remove that first.",
            {"stage": locked.slug},
        ) from None
    _pipeline_check(project)


@transaction.atomic
def stage_add(*, project: Project, slug: str, name: str, kind: str, overlap: Any) -> Stage:
    """A new stage at the end of the pipeline, with the kind's defaults."""
    from annotation.kinds import get_kind

    task_kind = get_kind(kind)
    return engine.stage_create(
        project=project,
        slug=(slug or "").strip(),
        name=(name or "").strip() or slug,
        kind=kind,
        overlap=_whole("overlap", overlap, 1, 100),
        resolution_policy=task_kind.default_policy,
    )


@transaction.atomic
def member_add_by_name(*, project: Project, username: str, role: str) -> Membership:
    """An existing user added with a role (by user name; case as typed or not)."""
    User = get_user_model()
    user = User.objects.filter(username__iexact=(username or "").strip()).first()
    if user is None:
        raise NotFound(f"There is no user named {username!r}; send them an invite link instead.")
    return engine.membership_add(project=project, user=user, role=role)


@transaction.atomic
def invite_create(
    *, project: Project, role: str, days: Any, max_uses: Any, created_by: AbstractBaseUser
) -> Invite:
    if role not in Role.values:
        raise ApplicationError(f"Unknown role {role!r}.", {"role": ", ".join(Role.values)})
    return Invite.objects.create(
        project=project,
        role=role,
        token=secrets.token_urlsafe(24),
        created_by=created_by,
        expires_at=timezone.now() + timedelta(days=_whole("days", days, 1, MAX_INVITE_DAYS)),
        max_uses=_whole("max_uses", max_uses, 0, 100_000),
    )


def invite_usable(token: str) -> Invite:
    """The invite of ``token`` if it can still be used: NotFound for an unknown token, Conflict
    (saying why) for one revoked, expired or used up."""
    invite = Invite.objects.select_related("project").filter(token=str(token)[:64]).first()
    if invite is None:
        raise NotFound("This invite link is not valid. Ask the project's admins for a new one.")
    if invite.revoked_at is not None:
        raise Conflict("This invite link was withdrawn. Ask the project's admins for a new one.")
    if invite.expires_at <= timezone.now():
        raise Conflict("This invite link has expired. Ask the project's admins for a new one.")
    if invite.max_uses and invite.uses >= invite.max_uses:
        raise Conflict("This invite link has been used up. Ask the project's admins for a new one.")
    return invite


def _invite_locked(token: str) -> Invite:
    """The usable invite of ``token`` with its row locked until the caller's transaction ends,
    checked again under the lock (another use may have committed while this one waited):
    whoever holds the lock sees the true count of uses. NotFound / Conflict as
    ``invite_usable``."""
    invite = invite_usable(token)
    Invite.objects.select_for_update().filter(pk=invite.pk).values_list("pk").first()
    return invite_usable(token)


@transaction.atomic
def invite_accept(*, token: str, user: AbstractBaseUser) -> Membership:
    """Make ``user`` a member through an invite (once per person: a second visit is a no-op
    and uses nothing). The use counter is checked and bumped under a row lock."""
    invite = _invite_locked(token)
    existing = Membership.objects.filter(
        project=invite.project, user=user, role=invite.role
    ).first()
    if existing is not None:
        return existing
    Invite.objects.filter(pk=invite.pk).update(uses=F("uses") + 1)
    return engine.membership_add(project=invite.project, user=user, role=invite.role)


@transaction.atomic
def invite_sign_up(*, token: str, username: str, password: str) -> AbstractBaseUser:
    """Create an account through an invite and make it a member, in one transaction: the
    invite's row is locked and its limits (revoked, expired, ``max_uses``) checked before the
    account exists, then the account, its membership and the use are written together. So
    sign-ups racing on a link with one use left create one account; the others get the
    Conflict ("used up") and no account. ``username`` and ``password`` come checked by the
    caller (the join page's ``UserCreationForm``); a username someone took meanwhile is a
    Conflict naming it. Nothing is written when it raises. Returns the new user."""
    invite = _invite_locked(token)
    try:
        with transaction.atomic():  # a savepoint: the duplicate username is reported, not a 500
            user = get_user_model().objects.create_user(username=username, password=password)
    except IntegrityError:
        raise Conflict(
            f"The username {username!r} was taken a moment ago. Choose another.",
            {"username": "taken"},
        ) from None
    Invite.objects.filter(pk=invite.pk).update(uses=F("uses") + 1)
    engine.membership_add(project=invite.project, user=user, role=invite.role)
    return user


@transaction.atomic
def invite_revoke(*, project: Project, invite_id: int) -> Invite:
    invite = Invite.objects.filter(project=project, pk=invite_id).first()
    if invite is None:
        raise NotFound("There is no such invite in this project.")
    invite.revoked_at = invite.revoked_at or timezone.now()
    invite.save(update_fields=["revoked_at"])
    return invite
