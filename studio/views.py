"""Project setup pages (CONTRIBUTING.md, "Thin views"): new project from a template (staff),
the setup page of a project (its admins: pipeline, members, invites), and invite links."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import MANAGE, access_project
from annotation.api import TIE_POLICIES
from annotation.errors import ApplicationError, NotFound, PermissionDenied
from annotation.kinds import KINDS
from annotation.models import Item, Membership, Role
from annotation.navigation import project_tabs
from annotation.policies import POLICIES
from annotation.views import page
from studio import services, stage_form
from studio.models import Invite


def _setup_context(request, project, *, error=None, posted=None, **extra):
    """The setup page's context; after a refused stage form, that stage's form shows what was
    posted, with the error beside the field it names (``stage_form.field_errors``)."""
    stages = list(project.stages.order_by("position"))
    posted_stage = (posted or {}).get("stage", "")
    errors = (
        stage_form.field_errors(error.extra, error.message)
        if error is not None and posted_stage
        else {}
    )
    stage_forms = [
        stage_form.stage_view(
            stage,
            stages,
            kinds=KINDS,
            policies=POLICIES,
            posted=posted if posted_stage == str(stage.pk) else None,
            errors=errors if posted_stage == str(stage.pk) else None,
        )
        for stage in stages
    ]
    members = (
        Membership.objects.filter(project=project)
        .select_related("user")
        .order_by("role", "user__username")
    )
    return {
        "project": project,
        "project_tabs": project_tabs(project, project.user_roles),
        "stages": stages,
        "stage_forms": stage_forms,
        "kinds": sorted((key, kind.label) for key, kind in KINDS.items()),
        "tie_policies": TIE_POLICIES,
        "members": members,
        "roles": Role.choices,
        "invites": Invite.objects.filter(project=project)[:50],
        "invite_base": request.build_absolute_uri(reverse("studio:join", args=["TOKEN"])),
        "error": error,
        "posted": posted or {},
        **extra,
    }


@require_http_methods(["GET", "POST"])
@page
def project_new(request):
    """A project from a workflow's template; staff only (they become its admin)."""
    if not request.user.is_staff:
        raise PermissionDenied("Only staff create projects; ask an administrator of this site.")
    context = {"templates": services.workflow_templates(), "posted": request.POST}
    if request.method == "POST":
        try:
            project = services.project_from_template(
                workflow=request.POST.get("workflow", ""),
                slug=request.POST.get("slug", ""),
                name=request.POST.get("name", ""),
                description=request.POST.get("description", ""),
                creator=request.user,
            )
        except ApplicationError as error:
            return render(
                request, "studio/new.html", {**context, "error": error}, status=error.status
            )
        messages.success(request, f"Created {project.name}. Invite people and import items next.")
        return redirect("studio:setup", slug=project.slug)
    return render(request, "studio/new.html", context)


@require_http_methods(["GET"])
@page
def setup(request, slug: str):
    project = access_project(request.user, slug, MANAGE)
    return render(request, "studio/setup.html", _setup_context(request, project))


def _setup_action(request, slug: str, action, success: str):
    project = access_project(request.user, slug, MANAGE)
    try:
        action(project)
    except ApplicationError as error:
        context = _setup_context(request, project, error=error, posted=request.POST)
        return render(request, "studio/setup.html", context, status=error.status)
    messages.success(request, success)
    return redirect(reverse("studio:setup", args=[project.slug]) + request.POST.get("anchor", ""))


@require_POST
@page
def stage_edit(request, slug: str, stage_id: int):
    def act(project):
        services.stage_edit(stage=_project_stage(project, stage_id), data=request.POST.dict())

    return _setup_action(request, slug, act, "Stage saved.")


def _project_stage(project, stage_id: int):
    stage = project.stages.filter(pk=stage_id).first()
    if stage is None:  # unknown and other projects' ids answer alike
        raise NotFound("There is no such stage in this project.")
    return stage


@require_POST
@page
def stage_move(request, slug: str, stage_id: int):
    direction = request.POST.get("direction", "")

    def act(project):
        services.stage_move(stage=_project_stage(project, stage_id), direction=direction)

    return _setup_action(request, slug, act, f"Stage moved {direction}.")


@require_POST
@page
def stage_remove(request, slug: str, stage_id: int):
    def act(project):
        services.stage_remove(stage=_project_stage(project, stage_id))

    return _setup_action(request, slug, act, "Stage removed.")


@require_GET
@page
def stage_policy(request, slug: str, stage_id: int):
    """The policy's parameters and a route per outcome, for the policy chosen in the stage form
    (htmx swaps them in when the select changes, sending the form's fields so that the
    options and the routes of outcomes both policies decide keep what was typed; nothing is
    saved)."""
    project = access_project(request.user, slug, MANAGE)
    stage = _project_stage(project, stage_id)
    chosen = request.GET.get("resolution_policy", "")
    view = stage_form.stage_view(
        stage,
        list(project.stages.order_by("position")),
        kinds=KINDS,
        policies=POLICIES,
        # The form's fields as they stand (htmx includes them), so nothing typed is lost.
        posted=request.GET if request.GET.get("stage_form") else None,
        policy_override=chosen if chosen in POLICIES else None,
    )
    context = {"project": project, "form": view, "tie_policies": TIE_POLICIES}
    return render(request, "studio/setup.html#policy", context)


@require_POST
@page
def guidelines_preview(request, slug: str):
    """Guidelines as annotators will see them: the item screen's own renderer and sanitiser
    (the ``guidelines`` filter of annotation_ui), nothing stored."""
    project = access_project(request.user, slug, MANAGE)
    text = request.POST.get("instructions", "")
    context = {
        "project": project,
        "text": text,
        "project_tabs": project_tabs(project, project.user_roles),
    }
    if request.htmx:
        return render(request, "studio/setup.html#preview", context)
    return render(request, "studio/preview.html", context)


@require_POST
@page
def stage_add(request, slug: str):
    def act(project):
        services.stage_add(
            project=project,
            slug=request.POST.get("slug", ""),
            name=request.POST.get("name", ""),
            kind=request.POST.get("kind", ""),
            overlap=request.POST.get("overlap", "3"),
        )

    return _setup_action(request, slug, act, "Stage added at the end of the pipeline.")


@require_POST
@page
def member_add(request, slug: str):
    def act(project):
        services.member_add_by_name(
            project=project,
            username=request.POST.get("username", ""),
            role=request.POST.get("role", ""),
        )

    return _setup_action(request, slug, act, "Member added.")


@require_POST
@page
def member_remove(request, slug: str):
    from annotation.api import membership_remove

    def act(project):
        try:
            user_id = int(request.POST.get("user", ""))
        except ValueError:
            raise ApplicationError("Choose a member.", {"user": "required"}) from None
        if user_id == request.user.pk and request.POST.get("role") == Role.ADMIN:
            raise ApplicationError("You cannot remove your own admin role.", {"user": user_id})
        membership_remove(project=project, user_id=user_id, role=request.POST.get("role", ""))

    return _setup_action(request, slug, act, "Member removed.")


@require_POST
@page
def invite_create(request, slug: str):
    def act(project):
        services.invite_create(
            project=project,
            role=request.POST.get("role", ""),
            days=request.POST.get("days", "14"),
            max_uses=request.POST.get("max_uses", "0"),
            created_by=request.user,
        )

    return _setup_action(request, slug, act, "Invite link created: copy it from the list.")


@require_POST
@page
def invite_revoke(request, slug: str, invite_id: int):
    return _setup_action(
        request,
        slug,
        lambda project: services.invite_revoke(project=project, invite_id=invite_id),
        "Invite link withdrawn.",
    )


@require_http_methods(["GET", "POST"])
def join(request, token: str):
    """An invite link: signed-in people join with one click; others create an account here
    (or sign in) and join. Errors (expired, used up, withdrawn) are said plainly."""
    from annotation.views import render_error

    try:
        invite = services.invite_usable(token)
    except ApplicationError as error:
        return render_error(request, error)
    form = None
    if request.method == "POST":
        try:
            if request.user.is_authenticated:
                services.invite_accept(token=token, user=request.user)
            else:
                form = UserCreationForm(request.POST)
                if not form.is_valid():
                    return render(
                        request, "studio/join.html", {"invite": invite, "form": form}, status=400
                    )
                # The account is created by the service, under the invite's lock, only while
                # the link still has a use left.
                user = services.invite_sign_up(
                    token=token,
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password1"],
                )
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        except ApplicationError as error:
            return render_error(request, error)
        messages.success(request, f"You joined {invite.project.name} as {invite.role}.")
        return redirect("annotation:project", slug=invite.project.slug)
    if not request.user.is_authenticated:
        form = UserCreationForm()
    return render(request, "studio/join.html", {"invite": invite, "form": form})


BROWSE_ROLES = (Role.ADMIN, Role.RESEARCHER, Role.REVIEWER)


@require_http_methods(["GET"])
@page
def items(request, slug: str):
    """The item browser: search, filter by stage and state or status, 50 per page."""
    from django.core.paginator import Paginator

    from studio import selectors

    project = access_project(request.user, slug, BROWSE_ROLES)
    filters = {key: request.GET.get(key, "") for key in ("q", "stage", "state", "status")}
    found = selectors.items_browse(project, **filters)
    listing = Paginator(found, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "studio/items.html",
        {
            "project": project,
            "project_tabs": project_tabs(project, project.user_roles),
            "items": listing,
            "filters": filters,
            "stages": project.stages.order_by("position"),
            "states": selectors.ITEM_STATES,
            "statuses": Item.Status.choices,
            "query": request.GET.copy(),
        },
    )


@require_http_methods(["GET"])
@page
def item_detail(request, slug: str, item_id: int):
    from studio import selectors

    project = access_project(request.user, slug, BROWSE_ROLES)
    return render(
        request,
        "studio/item.html",
        {
            "project": project,
            "project_tabs": project_tabs(project, project.user_roles),
            **selectors.item_history(
                project, item_id, viewer=request.user, roles=project.user_roles
            ),
        },
    )
