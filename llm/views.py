"""The models' pages (CONTRIBUTING.md, "Thin views"; llm/README.md, "Pages"): model endpoints
(shared by every project) and a project's Models tab — prompt templates and their versions,
a preview on real items, model raters per stage with a cost estimate, runs with live progress,
their control, their report and a CSV of their calls.

Each view parses with a form from llm/forms.py, fetches through llm/access.py, calls one
service (llm/services.py) or selector (llm/selectors.py) and renders. htmx requests get the
page's named partial (the run's progress, an endpoint's test result, the preview's results);
every ``hx-*`` sits beside a real ``href`` or form ``action``, so the pages work without JS.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.errors import ApplicationError
from annotation.forms import form_error
from annotation.navigation import project_tabs
from annotation.web import PageRequest, csv_response, page, page_of
from llm import access, forms, selectors, services
from llm.models import Endpoint, PromptTemplate, Run

CALLS_PER_PAGE = 50


def _tab(request: PageRequest, models: access.ModelsProject, **extra: Any) -> dict[str, Any]:
    project = models.project
    return {
        "project": project,
        "project_tabs": project_tabs(project, models.roles),
        "can_write": models.can_write,
        "may_manage_endpoints": access.may_manage_endpoints(request.user),
        **extra,
    }


# --- Endpoints --------------------------------------------------------------------------------


def _endpoints_page(
    request: PageRequest,
    *,
    form: forms.EndpointForm,
    editing: Endpoint | None = None,
    error: ApplicationError | None = None,
    ping: selectors.PingResult | None = None,
    pinged: Endpoint | None = None,
) -> HttpResponse:
    context = {
        "rows": selectors.endpoint_rows(),
        "form": form,
        "editing": editing,
        "error": error,
        "ping": ping,
        "pinged": pinged,
    }
    return render(request, "llm/endpoints.html", context, status=error.status if error else 200)


def _endpoint_save(request: PageRequest, editing: Endpoint | None) -> HttpResponse:
    form = forms.EndpointForm(request.POST, instance=editing)
    try:
        if not form.is_valid():
            raise form_error(form)
        endpoint = services.endpoint_save(endpoint=form.save(commit=False))
    except ApplicationError as error:
        return _endpoints_page(request, form=form, editing=editing, error=error)
    messages.success(request, f"Saved the endpoint {endpoint.name}.")
    return redirect("llm:endpoints")


@require_http_methods(["GET", "POST"])
@page
def endpoints(request: PageRequest) -> HttpResponseBase:
    """Every endpoint, whether its key variable is set here, and a form for a new one."""
    access.access_endpoints(request.user)
    if request.method == "POST":
        return _endpoint_save(request, None)
    return _endpoints_page(request, form=forms.EndpointForm())


@require_http_methods(["GET", "POST"])
@page
def endpoint_edit(request: PageRequest, endpoint_id: int) -> HttpResponseBase:
    endpoint = access.access_endpoint(request.user, endpoint_id)
    if request.method == "POST":
        return _endpoint_save(request, endpoint)
    return _endpoints_page(request, form=forms.EndpointForm(instance=endpoint), editing=endpoint)


@require_POST
@page
def endpoint_test(request: PageRequest, endpoint_id: int) -> HttpResponseBase:
    """One tiny request to the endpoint; its answer or its error's kind and message, shown in
    the endpoint's row (the row's partial for htmx, the whole page otherwise)."""
    endpoint = access.access_endpoint(request.user, endpoint_id)
    ping = selectors.endpoint_ping(endpoint)
    if request.htmx:
        return render(request, "llm/endpoints.html#ping", {"ping": ping, "pinged": endpoint})
    return _endpoints_page(request, form=forms.EndpointForm(), ping=ping, pinged=endpoint)


# --- The Models tab ---------------------------------------------------------------------------


def _models_page(
    request: PageRequest,
    models: access.ModelsProject,
    *,
    error: ApplicationError | None = None,
    error_at: str = "",
    error_stage: int | None = None,
    posted: Any = None,
) -> HttpResponse:
    """The tab; ``error`` a refused write, shown at ``error_at`` (``prompt``) or at the stage
    ``error_stage``, with what was typed (``posted``)."""
    context = _tab(
        request,
        models,
        tab=selectors.models_tab(models.project, estimates=models.can_write),
        error=error,
        error_at=error_at,
        error_stage=error_stage,
        posted=posted or {},
        purposes=PromptTemplate.Purpose.choices,
    )
    return render(request, "llm/models.html", context, status=error.status if error else 200)


@require_GET
@page
def models(request: PageRequest, slug: str) -> HttpResponseBase:
    """The Models tab: prompts, model raters per stage, recent runs."""
    return _models_page(request, access.access_models_project(request.user, slug))


@require_POST
@page
def prompt_create(request: PageRequest, slug: str) -> HttpResponseBase:
    """A new prompt template for the kind of the chosen stage, with its version 1."""
    models = access.access_models_admin(request.user, slug)
    form = forms.PromptCreateForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        data = form.cleaned_data
        stage = access.access_stage(models.project, data["stage"])
        version = services.prompt_template_create(
            project=models.project,
            name=data["name"],
            kind=stage.kind,
            purpose=data["purpose"],
            system_text=data["system"],
            user_text=data["user"],
            by=request.user,
        )
    except ApplicationError as error:
        return _models_page(request, models, error=error, error_at="prompt", posted=request.POST)
    messages.success(request, f"Created the prompt {version.template.name} (version 1).")
    return redirect("llm:prompt", slug=models.project.slug, template_id=version.template_id)


@require_http_methods(["GET", "POST"])
@page
def prompt(request: PageRequest, slug: str, template_id: int) -> HttpResponseBase:
    """A prompt template: every version with its text, and (admins) a form for the next."""
    if request.method == "POST":
        models = access.access_models_admin(request.user, slug)
    else:
        models = access.access_models_project(request.user, slug)
    template = access.access_template(models.project, template_id)
    error = None
    if request.method == "POST":
        form = forms.PromptVersionForm(request.POST)
        try:
            if not form.is_valid():
                raise form_error(form)
            latest = template.latest()
            version = services.prompt_version_add(
                template=template,
                system_text=form.cleaned_data["system"],
                user_text=form.cleaned_data["user"],
                by=request.user,
            )
        except ApplicationError as failure:
            error = failure
        else:
            if latest is not None and version.pk == latest.pk:
                messages.info(request, "The texts are those of the latest version: nothing added.")
            else:
                messages.success(request, f"Added version {version.number}.")
            return redirect("llm:prompt", slug=models.project.slug, template_id=template.pk)
    versions = selectors.template_versions(template)
    context = _tab(
        request,
        models,
        template=template,
        versions=versions,
        latest=versions[0] if versions else None,
        error=error,
        posted=request.POST if error else {},
    )
    return render(request, "llm/prompt.html", context, status=error.status if error else 200)


@require_http_methods(["GET", "POST"])
@page
def preview(request: PageRequest, slug: str) -> HttpResponseBase:
    """A prompt version on real items of a stage: the messages a model would get, the
    allow-listed fields (and the variables the item lacks), and with an endpoint the model's
    raw and parsed answer or its error. POST only for admins: it may call the model."""
    if request.method == "POST":
        models = access.access_models_admin(request.user, slug)
    else:
        models = access.access_models_project(request.user, slug)
    project = models.project
    previews = None
    error = None
    chosen: dict[str, Any] = {"items": selectors.PREVIEW_ITEMS_DEFAULT}
    if request.method == "POST":
        form = forms.PreviewForm(request.POST)
        try:
            if not form.is_valid():
                raise form_error(form)
            data = form.cleaned_data
            chosen = dict(data)
            stage = access.access_stage(project, data["stage"])
            version = access.access_version(project, data["version"])
            if version.template.kind != stage.kind:
                raise ApplicationError(
                    f"The prompt {version.template.name} asks for {version.template.kind!r} "
                    f"answers; stage {stage.name} takes {stage.kind!r}.",
                    {"version": version.template.kind},
                )
            endpoint = None
            if data["endpoint"]:
                endpoint = access.access_endpoint(request.user, data["endpoint"])
            previews = services.prompt_preview(
                version=version,
                stage=stage,
                item_ids=selectors.preview_item_ids(stage, data["items"]),
                endpoint=endpoint,
            )
        except ApplicationError as failure:
            error = failure
    context = _tab(
        request,
        models,
        tab=selectors.models_tab(project, estimates=False),
        previews=previews,
        error=error,
        chosen=chosen,
        max_items=selectors.PREVIEW_ITEMS_MAX,
    )
    status = error.status if error else 200
    if request.htmx and request.method == "POST":
        return render(request, "llm/preview.html#results", context, status=status)
    return render(request, "llm/preview.html", context, status=status)


@require_POST
@page
def rater_add(request: PageRequest, slug: str, stage_id: int) -> HttpResponseBase:
    """A model rater in the stage (llm.services.rater_add)."""
    models = access.access_models_admin(request.user, slug)
    stage = access.access_stage(models.project, stage_id)
    form = forms.RaterAddForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        data = form.cleaned_data
        rater = services.rater_add(
            stage=stage,
            endpoint=access.access_endpoint(request.user, data["endpoint"]),
            prompt=access.access_version(models.project, data["version"]),
            samples=data["samples"],
            temperature=data["temperature"],
            fills_human_slot=data["fills_human_slot"],
        )
    except ApplicationError as error:
        return _models_page(request, models, error=error, error_stage=stage.pk, posted=request.POST)
    messages.success(request, f"{rater} now rates in {stage.name}. Start a run when ready.")
    return redirect(f"{_models_url(models)}#stage-{stage.pk}")


def _models_url(models: access.ModelsProject) -> str:
    return reverse("llm:models", args=[models.project.slug])


@require_POST
@page
def rater_remove(request: PageRequest, slug: str, rater_id: int) -> HttpResponseBase:
    """Stop a model rater: its live run is cancelled, its answers stay."""
    models = access.access_models_admin(request.user, slug)
    rater = services.rater_remove(rater=access.access_rater(models.project, rater_id))
    messages.success(request, f"Removed {rater} from {rater.stage.name}; its answers stay.")
    return redirect(f"{_models_url(models)}#stage-{rater.stage_id}")


@require_POST
@page
def run_start(request: PageRequest, slug: str, rater_id: int) -> HttpResponseBase:
    """A new run of the rater, then its page."""
    models = access.access_models_admin(request.user, slug)
    rater = access.access_rater(models.project, rater_id)
    try:
        run = services.run_start(rater=rater, by=request.user)
    except ApplicationError as error:
        return _models_page(request, models, error=error, error_stage=rater.stage_id)
    return redirect("llm:run", slug=models.project.slug, model_run_id=run.pk)


def _run_context(request: PageRequest, models: access.ModelsProject, run: Run) -> dict[str, Any]:
    return _tab(
        request,
        models,
        run=run,
        progress=selectors.run_progress(run),
    )


@require_GET
@page
def run(request: PageRequest, slug: str, model_run_id: int) -> HttpResponseBase:
    """A run: its progress (polled by htmx while it works: ``?poll=1`` answers the partial,
    and reloads the page once the run has finished), its controls, the items it failed on
    with their errors, and its calls, paged."""
    models = access.access_models_project(request.user, slug)
    current = access.access_run(models.project, model_run_id)
    context = _run_context(request, models, current)
    if request.htmx and request.GET.get("poll"):
        response = render(request, "llm/run.html#progress", context)
        if context["progress"].finished:
            response["HX-Refresh"] = "true"  # once: the whole page shows the report
        return response
    context["failures"] = selectors.run_failures(current)
    context["calls"] = page_of(request, selectors.run_calls(current), CALLS_PER_PAGE)
    return render(request, "llm/run.html", context)


@require_POST
@page
def run_control(request: PageRequest, slug: str, model_run_id: int) -> HttpResponseBase:
    """Pause, resume or cancel a run; htmx gets the progress partial, others the run page."""
    models = access.access_models_admin(request.user, slug)
    current = access.access_run(models.project, model_run_id)
    form = forms.RunControlForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        current = services.run_control(run=current, action=form.cleaned_data["action"])
    except ApplicationError as error:
        if request.htmx:
            context = _run_context(request, models, current)
            context["control_error"] = error
            return render(request, "llm/run.html#progress", context, status=error.status)
        raise
    if request.htmx:
        return render(request, "llm/run.html#progress", _run_context(request, models, current))
    messages.success(request, f"Run {current.pk}: {current.get_status_display().lower()}.")
    return redirect("llm:run", slug=models.project.slug, model_run_id=current.pk)


@require_GET
@page
def run_calls_csv(request: PageRequest, slug: str, model_run_id: int) -> HttpResponseBase:
    """Every call of the run as CSV (spreadsheet-safe cells: annotation.web.csv_response)."""
    models = access.access_models_project(request.user, slug)
    current = access.access_run(models.project, model_run_id)
    return csv_response(
        f"{models.project.slug}-run-{current.pk}-calls.csv",
        selectors.CALLS_CSV_HEADER,
        selectors.run_calls_csv(current),
    )
