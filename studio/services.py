"""Project setup services (CONTRIBUTING.md, "Services own the transaction"): a project from a
workflow's template or cloned from another's setup, stages added and edited through the engine's
own checks (annotation.services.stage_create / stage_update), members by name and their roles,
invite links, a project's licence and citation, archiving."""

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
from annotation.access import refuse_if_archived
from annotation.errors import ApplicationError, Conflict, NotFound
from annotation.models import Membership, Project, Role, Stage
from annotation.plugins import plugins_clone
from annotation.workflows import WORKFLOWS
from imports.core.readers import ImportFileError, read_json_document
from studio.licences import LICENCE_IDS
from studio.models import Invite

#: Stage settings edited as JSON on the setup page.
JSON_SETTINGS = ("config", "routes", "phases", "eligibility", "policy_options")
MAX_INVITE_DAYS = 90
#: Short names that would clash with pages under projects/.
RESERVED_SLUGS = frozenset({"new", "archived"})


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
    _check_new_project(slug=slug, name=name)
    project = chosen.create(slug=slug, name=name, description=description or "")
    engine.membership_add(project=project, user=creator, role=Role.ADMIN)
    return project


def _check_new_project(*, slug: str, name: str) -> None:
    """A new project's name and short name (slug) as a person typed them: ApplicationError
    naming the field when the name is empty or the slug malformed or reserved (a slug taken
    by another project is the engine's ``project_create``'s refusal)."""
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
    gold_every: int
    #: The cap of adaptive overlap (annotation/adaptive.py); 0 = overlap + 2.
    max_overlap: int


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
    if "max_overlap" in changes:
        _whole("max_overlap", changes["max_overlap"], 0, 100)
        overlap = changes.get("overlap", stage.overlap)
        if 0 < changes["max_overlap"] < overlap:
            raise ApplicationError(
                f"A cap of {changes['max_overlap']} is below the {overlap} annotators every "
                f"item starts with: give 0 (= {overlap} + 2) or at least {overlap}.",
                {"max_overlap": changes["max_overlap"]},
            )
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
def membership_role_change(
    *, project: Project, user_id: int, role: str, new_role: str, acting_user: User
) -> Membership:
    """Give a member ``new_role`` in place of ``role`` (one transaction: the engine's
    ``membership_add`` then ``membership_remove``, which releases an annotator's leases).

    A person who already holds ``new_role`` simply loses ``role`` (roles are a set: the
    annotator-and-reviewer combination is two memberships, added one by one). NotFound when the
    person does not hold ``role``; ApplicationError for an unknown role or when an admin would
    take their own admin role away (someone must be left to manage the project). The blindness
    rules do not depend on how roles were given: a reviewer never decides an item they
    annotated (agreement.access)."""
    if new_role not in Role.values:
        raise ApplicationError(f"Unknown role {new_role!r}.", {"role": ", ".join(Role.values)})
    held = Membership.objects.filter(project=project, user_id=user_id, role=role).first()
    if held is None:
        raise NotFound("This person does not hold that role in the project.")
    if new_role == role:
        return held
    if user_id == acting_user.pk and role == Role.ADMIN:
        raise ApplicationError("You cannot change your own admin role.", {"user": user_id})
    membership = engine.membership_add(project=project, user=held.user, role=new_role)
    engine.membership_remove(project=project, user_id=user_id, role=role)
    return membership


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
    (saying why) for one revoked, expired or used up, or of an archived project."""
    invite = Invite.objects.select_related("project").filter(token=str(token)[:64]).first()
    if invite is None:
        raise NotFound("This invite link is not valid. Ask the project's admins for a new one.")
    if invite.revoked_at is not None:
        raise Conflict("This invite link was withdrawn. Ask the project's admins for a new one.")
    if invite.expires_at <= timezone.now():
        raise Conflict("This invite link has expired. Ask the project's admins for a new one.")
    if invite.max_uses and invite.uses >= invite.max_uses:
        raise Conflict("This invite link has been used up. Ask the project's admins for a new one.")
    # Joining changes the members: an archived project takes no one (annotation/access.py).
    refuse_if_archived(invite.project)
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


#: Stage settings that may name other stages (a route's target, a phase's or an eligibility
#: rule's stage): a clone sets them once every stage exists.
STAGE_LINKS = ("routes", "phases", "eligibility")
#: Stage columns a clone does not copy: the row's identity and owner (the rest is its setup).
STAGE_NOT_COPIED = frozenset({"id", "project"})


def _stage_setup(stage: Stage) -> dict[str, Any]:
    """Every setting of ``stage`` (its columns but id and project) by field name."""
    return {
        field.name: getattr(stage, field.attname)
        for field in Stage._meta.concrete_fields
        if field.name not in STAGE_NOT_COPIED
    }


@transaction.atomic
def project_clone(
    *, source: Project, slug: str, name: str, with_members: bool, creator: User
) -> tuple[Project, list[str]]:
    """A new project with ``source``'s setup and none of its data.

    Copied: the workflow (``kind``), description, guidelines, project settings, licence and
    citation; every stage in order with every setting (kind, task options, instructions,
    overlap, lease, policy and its options, routes, phases, eligibility, order, seed, open or
    closed), created through the engine's ``stage_create`` and ``stage_update`` so that each
    is checked as if typed on the setup page (links to other stages are set once all exist);
    with ``with_members``, every membership (the roles; skills and pauses are not copied). Not
    copied: items, imports, answers, decisions, releases, invite links. Then each plug-in's
    ``clone`` hook copies its own setup (``annotation.plugins.plugins_clone``; llm: prompts
    with their versions and model raters). The creator becomes an admin of the copy. Slug and
    name are checked as for a new project (ApplicationError naming the field); nothing is
    written when anything is refused. Returns the copy and what the plug-ins said they copied."""
    slug, name = (slug or "").strip(), (name or "").strip()
    _check_new_project(slug=slug, name=name)
    project = engine.project_create(
        slug=slug,
        name=name,
        kind=source.kind,
        description=source.description,
        guidelines=source.guidelines,
        settings=source.settings or {},
    )
    engine.project_publication_update(
        project=project, license=source.license, citation=source.citation
    )
    created: list[tuple[Stage, dict[str, Any]]] = []
    for stage in source.stages.order_by("position"):
        setup = _stage_setup(stage)
        links = {key: setup.pop(key) for key in STAGE_LINKS}
        copy = engine.stage_create(
            project=project,
            slug=setup.pop("slug"),
            name=setup.pop("name"),
            kind=setup.pop("kind"),
            overlap=setup.pop("overlap"),
            config=setup.pop("config"),
            **setup,
        )
        created.append((copy, links))
    for copy, links in created:
        if any(value not in (None, [], {}) for value in links.values()):
            engine.stage_update(stage=copy, **links)
    if with_members:
        for membership in source.memberships.select_related("user"):
            engine.membership_add(project=project, user=membership.user, role=membership.role)
    engine.membership_add(project=project, user=creator, role=Role.ADMIN)
    stages = {
        original.pk: copy
        for original, (copy, _links) in zip(
            source.stages.order_by("position"), created, strict=True
        )
    }
    copied = plugins_clone(source=source, copy=project, stages=stages, by=creator)
    return project, copied


def project_publication_set(*, project: Project, license: str, citation: str) -> Project:
    """The licence (one of ``studio.licences.LICENCES``' SPDX identifiers, or "" for none
    stated) and the BibTeX citation written into the project's release datasheets; the
    engine's ``project_publication_update`` stores them."""
    license = (license or "").strip()
    if license and license not in LICENCE_IDS:
        raise ApplicationError(
            f"{license!r} is not a licence offered here; choose one from the list.",
            {"license": "an SPDX identifier from the list"},
        )
    return engine.project_publication_update(project=project, license=license, citation=citation)


def project_archive(*, project: Project, archived: bool) -> Project:
    """Archive (``archived``) or restore a project: the engine's ``project_archive_set``
    (hidden from home lists, no new work handed out; nothing deleted)."""
    return engine.project_archive_set(project=project, archived=archived)
