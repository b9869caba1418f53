"""The Graphs tab of a CARL-GT project (CONTRIBUTING.md, "Thin views"): people's answers scored
the way the paper scores models, per task and graph size, with two figures (graphs.plots); the
questions per task; the per-question view (every question hardest first, and one question with
its graph and answers: graphs.questions); for admins, d-separation questions generated from an
uploaded edge list."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import MANAGE, MONITOR, ProjectAccess
from annotation.errors import ApplicationError
from annotation.forms import form_error
from annotation.navigation import project_tabs
from annotation.web import page, page_of
from graphs import plots, services
from graphs.access import access_graphs_project
from graphs.forms import DsepGenerateForm, QuestionFilterForm, QuestionsImportForm
from graphs.questions import TASK_FILTERS, question_detail, question_rows

MAX_EDGE_LIST_BYTES = services.MAX_EDGE_LIST_BYTES
QUESTIONS_PER_PAGE = 50


def _context(access: ProjectAccess, **extra):
    project = access.project
    rows = question_rows(project)
    return {
        "accuracy_svg": plots.accuracy_svg(rows),
        "difficulty_svg": plots.difficulty_svg(rows),
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "scores": services.project_scores(project),
        "agreement": services.project_agreement(project),
        "counts": services.question_counts(project),
        "can_manage": access.holds(MANAGE),
        **extra,
    }


@require_GET
@page
def scores(request, slug: str):
    access = access_graphs_project(request.user, slug, MONITOR)
    return render(request, "graphs/scores.html", _context(access))


@require_POST
@page
def generate(request, slug: str):
    access = access_graphs_project(request.user, slug, MANAGE)
    project = access.project
    form = DsepGenerateForm(request.POST, request.FILES)
    if not form.is_valid():
        raise form_error(form)
    upload = form.cleaned_data["file"]
    try:
        created = services.dsep_generate(
            project=project,
            data=upload.read(),
            filename=upload.name,
            graph_name=form.cleaned_data["graph_name"],
            max_given=form.cleaned_data["max_given"],
            limit=form.cleaned_data["limit"],
            seed=form.cleaned_data["seed"],
        )
    except ApplicationError as error:
        return render(
            request,
            "graphs/scores.html",
            _context(access, error=error, filename=upload.name, posted=form.cleaned_data),
            status=400,
        )
    messages.success(
        request, f"Added {created} d-separation question{pluralize(created)} with their answers."
    )
    return redirect("graphs:scores", slug=project.slug)


@require_GET
@page
def questions(request, slug: str):
    """Every question with its final answers, the hardest first, filtered by task."""
    access = access_graphs_project(request.user, slug, MONITOR)
    project = access.project
    task = QuestionFilterForm(request.GET).selected()
    found = page_of(request, question_rows(project, task=task), QUESTIONS_PER_PAGE)
    context = {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "page": found,
        "task": task,
        "filters": TASK_FILTERS,
    }
    return render(request, "graphs/questions.html", context)


@require_GET
@page
def question(request, slug: str, item_id: int):
    """One question: its graph, its known answer and every final answer."""
    access = access_graphs_project(request.user, slug, MONITOR)
    project = access.project
    row, graph_svg = question_detail(project, item_id)
    context = {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "row": row,
        "graph_svg": graph_svg,
    }
    return render(request, "graphs/question_detail.html", context)


@require_http_methods(["GET", "POST"])
@page
def import_page(request, slug: str):
    """Import CARL-GT questions (admins): a refused file's problems at the top (file:line:
    field: what to fix; nothing imported), the upload form, what a row needs (the column table
    and sample files of ``graphs.carlgt.QUESTION_SCHEMA``) and the questions so far."""
    access = access_graphs_project(request.user, slug, MANAGE)
    project = access.project
    context = {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "counts": services.question_counts(project),
    }
    if request.method == "GET":
        return render(request, "graphs/import.html", context)
    form = QuestionsImportForm(request.POST, request.FILES)
    if not form.is_valid():
        context.update(problems=[str(error) for error in form.errors.get("file", [])])
        return render(request, "graphs/import.html", context, status=400)
    upload = form.cleaned_data["file"]
    report = services.carlgt_file_import(
        project=project, fileobj=upload, filename=upload.name or "questions.csv"
    )
    if not report.ok:
        context.update(problems=report.problems, filename=upload.name)
        return render(request, "graphs/import.html", context, status=400)
    messages.success(
        request,
        f"Imported {report.created} question{pluralize(report.created)} with their answers.",
    )
    return redirect("graphs:import", slug=project.slug)
