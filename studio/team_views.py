"""What a team changes once a project runs (CONTRIBUTING.md, "Thin views"): a member's role,
the project's licence and citation, archiving and restoring it, cloning its setup into a new
project, and the list of archived projects. Each POST is read by a form of studio.forms and
calls one service of studio.services; a refusal re-renders the setup page with the error at
its top (studio.views._setup_action)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.errors import ApplicationError, PermissionDenied
from annotation.forms import form_error
from annotation.web import page
from studio import forms, selectors, services
from studio.access import access_project_setup
from studio.views import _setup_action, _setup_context


@require_POST
@page
def member_role(request, slug: str):
    """Change one member's role (the role select of the Members table)."""

    def act(project, form):
        values = form.values()
        services.membership_role_change(
            project=project,
            user_id=values["user"],
            role=values["role"],
            new_role=values["new_role"],
            acting_user=request.user,
        )

    return _setup_action(request, slug, forms.MemberRoleForm, act, "Role changed.")


@require_POST
@page
def project_publication(request, slug: str):
    """The licence and citation the project's releases carry."""

    def act(project, form):
        services.project_publication_set(project=project, **form.values())

    return _setup_action(
        request,
        slug,
        forms.PublicationForm,
        act,
        "Licence and citation saved for the next release.",
    )


@require_POST
@page
def project_archive(request, slug: str):
    """Archive the project (``archived=1``) or restore it (``archived=0``)."""
    archived = forms.ArchiveForm(request.POST)
    archiving = archived.is_valid() and archived.cleaned_data["archived"]

    def act(project, form):
        services.project_archive(project=project, archived=form.cleaned_data["archived"])

    done = (
        "Project archived: hidden from home lists, no new work handed out. Restore it here."
        if archiving
        else "Project restored: it is listed again and work is handed out."
    )
    # Restoring is the one change an archived project takes (annotation/access.py).
    return _setup_action(request, slug, forms.ArchiveForm, act, done, while_archived=True)


@require_POST
@page
def project_clone(request, slug: str):
    """A new project with this one's setup (staff who admin this project; they admin the
    copy), then its setup page."""
    # Cloning reads this project and writes a new one: open to archived projects too.
    access = access_project_setup(request.user, slug, while_archived=True)
    form = forms.ProjectCloneForm(request.POST)
    try:
        if not request.user.is_staff:
            raise PermissionDenied("Only staff create projects; ask an administrator of this site.")
        if not form.is_valid():
            raise form_error(form)
        clone, copied = services.project_clone(
            source=access.project, **form.values(), creator=request.user
        )
    except ApplicationError as error:
        context = _setup_context(request, access, error=error, posted=request.POST)
        return render(request, "studio/setup.html", context, status=error.status)
    also = f" (with {'; '.join(copied)})" if copied else ""
    messages.success(
        request, f"Created {clone.name} from {access.project.name}'s setup{also}, without its data."
    )
    return redirect("studio:setup", slug=clone.slug)


@require_GET
@page
def archived(request):
    """The archived projects the user administers (all of them for superusers), each with a
    link to its setup page, where it is restored."""
    return render(
        request, "studio/archived.html", {"projects": selectors.archived_projects(request.user)}
    )
