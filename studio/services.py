"""Project setup services (CONTRIBUTING.md, "Services own the transaction"): a project from a
workflow's template, stages added and edited through the engine's own checks
(annotation.services.stage_create / stage_update), members by name, invite links."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any, TypedDict, Unpack

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
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
    *, workflow: str, slug: str, name: str, description: str = "", creator: User
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


class StageChanges(TypedDict, total=False):
    """The settings ``stage_edit`` changes (each optional: a form changes what it posts), typed
    as the engine's ``stage_update`` takes them (studio.forms.StageEditForm reads the page)."""

    name: str
    instructions: str
    overlap: int
    lease_seconds: int
    resolution_policy: str
    tie_policy: str
    is_active: bool
    config: Any
    routes: Any
    phases: Any
    eligibility: Any
    policy_options: Any
    tie_default: Any


@transaction.atomic
def stage_edit(*, stage: Stage, **changes: Unpack[StageChanges]) -> Stage:
    """Change ``stage``'s settings through engine.stage_update: every setting is checked with
    the ones it keeps, and nothing changes when one is wrong."""
    if "name" in changes and not changes["name"].strip():
        raise ApplicationError("A stage needs a name.", {"name": "required"})
    if "overlap" in changes:
        _whole("overlap", changes["overlap"], 1, 100)
    if "lease_seconds" in changes:
        _whole("lease_seconds", changes["lease_seconds"], 30, 86_400)
    return engine.stage_update(stage=stage, **changes)


def stage_move(*, stage: Stage, direction: str) -> Stage:
    """Swap ``stage`` with its neighbour ("up" or "down"): the engine's
    ``annotation.services.stages.stage_move``, which checks every stage in the new order and
    moves nothing when a setting no longer works."""
    return engine.stage_move(stage=stage, direction=direction)


def stage_remove(*, stage: Stage) -> None:
    """Delete a stage no item has entered yet: the engine's
    ``annotation.services.stages.stage_remove`` (a stage with items is closed instead)."""
    engine.stage_remove(stage=stage)


@transaction.atomic
def stage_add(*, project: Project, slug: str, name: str, kind: str, overlap: int = 3) -> Stage:
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
    *, project: Project, role: str, days: int, max_uses: int, created_by: User
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
def invite_accept(*, token: str, user: User) -> Membership:
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
def invite_sign_up(*, token: str, username: str, password: str) -> User:
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
