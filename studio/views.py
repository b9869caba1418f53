"""Project setup pages (CONTRIBUTING.md, "Thin views"): new project from a template (staff),
the setup page of a project (its admins: pipeline, members, invites), and invite links."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import ProjectAccess
from annotation.api import TIE_POLICIES, membership_remove
from annotation.errors import ApplicationError, PermissionDenied
from annotation.forms import form_error
from annotation.kinds import KINDS
from annotation.models import Role
from annotation.navigation import project_tabs
from annotation.policies import POLICIES
from annotation.web import page, render_error
from studio import forms, selectors, services, stage_form
from studio.access import (
    access_project_setup,
    access_setup_stage,
)
from studio.licences import LICENCES


def _setup_context(request, access: ProjectAccess, *, error=None, posted=None, **extra):
    """The setup page's context; after a refused stage form, that stage's form shows what was
    posted, with the error beside the field it names (``stage_form.field_errors``)."""
    project = access.project
    stages = selectors.project_stages(project)
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
    return {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "stages": stages,
        "stage_forms": stage_forms,
        "kinds": sorted((key, kind.label) for key, kind in KINDS.items()),
        "tie_policies": TIE_POLICIES,
        **_members_shown(request, project),
        "roles": Role.choices,
        "invites": selectors.project_invites(project),
        "licences": LICENCES,
        "invite_base": request.build_absolute_uri(reverse("studio:join", args=["TOKEN"])),
        "error": error,
        "posted": posted or {},
        **extra,
    }


#: Members listed on the setup page before "Show all" (each row holds two forms: 200 rows were
#: 300 kB of HTML, most of the page's time; benchmarks/README.md, "Pages at scale").
MEMBERS_SHOWN = 25


def _members_shown(request, project) -> dict:
    """The setup page's members table: the first ``MEMBERS_SHOWN`` by role then name, or all
    of them with ``?members=all`` (the caption then links back to the first ones); and how
    many there are."""
    members = selectors.project_members(project)
    total = members.count()
    every = request.GET.get("members") == "all"
    return {
        "members": list(members if every else members[:MEMBERS_SHOWN]),
        "members_total": total,
        "members_every": every,
        "members_first": MEMBERS_SHOWN,
    }


@require_http_methods(["GET", "POST"])
@page
def project_new(request):
    """A project from a workflow's template; staff only (they become its admin)."""
    if not request.user.is_staff:
        raise PermissionDenied("Only staff create projects; ask an administrator of this site.")
    context = {"templates": services.workflow_templates(), "posted": request.POST}
    if request.method == "POST":
        form = forms.ProjectNewForm(request.POST)
        try:
            if not form.is_valid():
                raise form_error(form)
            project = services.project_from_template(**form.cleaned_data, creator=request.user)
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
    access = access_project_setup(request.user, slug)
    return render(request, "studio/setup.html", _setup_context(request, access))


def _setup_action(
    request,
    slug: str,
    form_class,
    action,
    success: str,
    *,
    while_archived: bool = False,
    **form_options,
):
    """Read the POST with ``form_class``, then ``action(project, form)``; a refused
    form or action re-renders the setup page with what was posted and the error.
    ``while_archived``: the action works on an archived project too (restoring it)."""
    access = access_project_setup(request.user, slug, while_archived=while_archived)
    project = access.project
    try:
        form = form_class(request.POST, **{k: v(project) for k, v in form_options.items()})
        if not form.is_valid():
            raise form_error(form)
        action(project, form)
    except ApplicationError as error:
        context = _setup_context(request, access, error=error, posted=request.POST)
        return render(request, "studio/setup.html", context, status=error.status)
    messages.success(request, success)
    return redirect(reverse("studio:setup", args=[project.slug]) + form.cleaned_data["anchor"])


@require_POST
@page
def stage_edit(request, slug: str, stage_id: int):
    def act(project, form):
        services.stage_edit(stage=form.stage, **form.changes())

    return _setup_action(
        request,
        slug,
        forms.StageEditForm,
        act,
        "Stage saved.",
        stage=lambda project: access_setup_stage(project, stage_id),
    )


@require_POST
@page
def stage_move(request, slug: str, stage_id: int):
    def act(project, form):
        stage = access_setup_stage(project, stage_id)
        services.stage_move(stage=stage, direction=form.cleaned_data["direction"])

    direction = str(request.POST.get("direction", ""))
    return _setup_action(request, slug, forms.StageMoveForm, act, f"Stage moved {direction}.")


@require_POST
@page
def stage_remove(request, slug: str, stage_id: int):
    def act(project, form):
        services.stage_remove(stage=access_setup_stage(project, stage_id))

    return _setup_action(request, slug, forms.NoFieldsForm, act, "Stage removed.")


@require_GET
@page
def stage_policy(request, slug: str, stage_id: int):
    """The policy's parameters and a route per outcome, for the policy chosen in the stage form
    (htmx swaps them in when the select changes, sending the form's fields so that the
    options and the routes of outcomes both policies decide keep what was typed; nothing is
    saved)."""
    project = access_project_setup(request.user, slug).project
    stage = access_setup_stage(project, stage_id)
    chosen = request.GET.get("resolution_policy", "")
    view = stage_form.stage_view(
        stage,
        selectors.project_stages(project),
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
    access = access_project_setup(request.user, slug)
    project = access.project
    form = forms.GuidelinesForm(request.POST)
    text = form.cleaned_data["instructions"] if form.is_valid() else ""
    context = {
        "project": project,
        "text": text,
        "project_tabs": project_tabs(project, access.roles),
    }
    if request.htmx:
        return render(request, "studio/setup.html#preview", context)
    return render(request, "studio/preview.html", context)


@require_POST
@page
def stage_add(request, slug: str):
    def act(project, form):
        services.stage_add(project=project, **form.values())

    return _setup_action(
        request, slug, forms.StageAddForm, act, "Stage added at the end of the pipeline."
    )


@require_POST
@page
def member_add(request, slug: str):
    def act(project, form):
        services.member_add_by_name(project=project, **form.values())

    return _setup_action(request, slug, forms.MemberAddForm, act, "Member added.")


@require_POST
@page
def member_remove(request, slug: str):
    def act(project, form):
        user_id, role = form.cleaned_data["user"], form.cleaned_data["role"]
        if user_id == request.user.pk and role == Role.ADMIN:
            raise ApplicationError("You cannot remove your own admin role.", {"user": user_id})
        membership_remove(project=project, user_id=user_id, role=role)

    return _setup_action(request, slug, forms.MemberRemoveForm, act, "Member removed.")


@require_POST
@page
def invite_create(request, slug: str):
    def act(project, form):
        services.invite_create(project=project, **form.values(), created_by=request.user)

    return _setup_action(
        request, slug, forms.InviteCreateForm, act, "Invite link created: copy it from the list."
    )


@require_POST
@page
def invite_revoke(request, slug: str, invite_id: int):
    return _setup_action(
        request,
        slug,
        forms.NoFieldsForm,
        lambda project, form: services.invite_revoke(project=project, invite_id=invite_id),
        "Invite link withdrawn.",
    )


@require_http_methods(["GET", "POST"])
def join(request, token: str):
    """An invite link: signed-in people join with one click; others create an account here
    (or sign in) and join. Errors (expired, used up, withdrawn) are said plainly."""
    try:
        invite = services.invite_usable(token)
    except ApplicationError as error:
        return render_error(request, error)
    form: UserCreationForm | None = None
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
