"""The METER page of a project (CONTRIBUTING.md, "Thin views"): the cascade, κ per stage beside
METER's published figures, the filter's criteria, distractor-category changes; the generation
export and the entries import (admins)."""

from __future__ import annotations

import json

from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_GET, require_POST

from agreement.sections import project_sections
from agreement.selectors import latest_snapshots_by_stage
from annotation.access import MANAGE, MONITOR, ProjectAccess, access_workflow_project
from annotation.errors import ApplicationError
from annotation.navigation import project_tabs
from annotation.web import csv_response, page
from llm.generation import generation_form, generation_start_from_form
from review.meter import plots, services
from review.meter.entries import CATEGORIES, CRITERIA

GENERATION_COLUMNS = ["pair_id", "source", "context", "cause", "effect", "triggers"]


def _meter_project(request, roles) -> ProjectAccess:
    slug = request.resolver_match.kwargs["slug"]
    return access_workflow_project(
        request.user, slug, workflow=services.WORKFLOW, label="METER", roles=roles
    )


def _context(request, access: ProjectAccess, **extra):
    project = access.project
    stages = list(project.stages.order_by("position"))
    latest = latest_snapshots_by_stage(stages, metrics=["fleiss_kappa"])
    kappas = []
    for stage in stages:
        snapshot = latest.get(stage.pk, {}).get("fleiss_kappa")
        kappas.append(
            {
                "stage": stage,
                "value": snapshot.value if snapshot else None,
                "ci_low": snapshot.ci_low if snapshot else None,
                "ci_high": snapshot.ci_high if snapshot else None,
                "n_items": snapshot.n_items if snapshot else 0,
                "published": services.PUBLISHED_KAPPA.get(stage.kind),
            }
        )
    steps = services.cascade(project)
    changes = services.category_changes(project)
    return {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "steps": steps,
        "cascade_svg": plots.cascade_svg(steps),
        "kappas": kappas,
        "criteria": services.criterion_agreement(project),
        "categories": CATEGORIES,
        "changes": [
            {"from": CATEGORIES[old], "cells": [row[new] for new in CATEGORIES]}
            for old, row in changes.items()
        ],
        "can_manage": access.holds(MANAGE),
        "criteria_labels": CRITERIA,
        "baseline": services.baseline_accuracy(project),
        "evidence": services.evidence_agreement(project),
        "has_evidence": project.stages.filter(kind="meter_spans").exists(),
        "has_baseline": project.stages.filter(kind="meter_answer").exists(),
        "stage_sections": project_sections(stages),
        "generation": generation_form(project, "meter_entries"),
        **extra,
    }


@require_GET
@page
def meter(request, slug: str):
    access = _meter_project(request, MONITOR)
    return render(request, "review/meter/dashboard.html", _context(request, access))


@require_GET
@page
def generation_export(request, slug: str, fmt: str):
    """The verified pairs without an entry, for the team's generator (JSONL or CSV)."""
    project = _meter_project(request, MONITOR).project
    if fmt not in ("csv", "jsonl"):
        raise ApplicationError("Download as .csv or .jsonl.", {"format": fmt[:20]})
    rows = services.generation_rows(project)
    if fmt == "csv":
        return csv_response(
            f"{project.slug}-for-generation.csv",
            GENERATION_COLUMNS,
            (
                ["; ".join(row[c]) if c == "triggers" else row[c] for c in GENERATION_COLUMNS]
                for row in rows
            ),
        )
    lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    response = StreamingHttpResponse(lines, content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-for-generation.jsonl"'
    return response


@require_POST
@page
def entries_upload(request, slug: str):
    access = _meter_project(request, MANAGE)
    project = access.project
    upload = request.FILES.get("file")
    if upload is None:
        raise ApplicationError("Choose a file of generated entries.", {"file": "required"})
    report = services.entries_import(project=project, fileobj=upload, filename=upload.name)
    if report.ok:
        from django.contrib import messages

        messages.success(
            request,
            f"Imported {report.created} entr{pluralize(report.created, 'y,ies')} into Check, edit "
            "and vote.",
        )
        return redirect("meter:meter", slug=project.slug)
    return render(
        request,
        "review/meter/dashboard.html",
        _context(request, access, report=report, filename=upload.name),
        status=400,
    )


@require_POST
@page
def sample_open(request, slug: str):
    """Open a seeded sample of kept entries in the human-baseline stage, or with
    ``stage=evidence`` in the evidence-spans stage (admins)."""
    project = _meter_project(request, MANAGE).project
    raw = request.POST.get("sample", "100")
    try:
        sample = int(raw)
    except ValueError:
        raise ApplicationError(
            f"The sample is a whole number of entries (got {raw[:20]!r}).", {"sample": raw[:20]}
        ) from None
    which = request.POST.get("stage", "baseline")
    if which == "evidence":
        opened = services.evidence_open(project=project, sample=sample, seed=sample)
    else:
        opened = services.baseline_open(project=project, sample=sample, seed=sample)
    from django.contrib import messages

    name = "evidence spans" if which == "evidence" else "human baseline"
    messages.success(
        request, f"Opened {opened} kept entr{pluralize(opened, 'y,ies')} in the {name}."
    )
    return redirect("meter:meter", slug=project.slug)


@require_POST
@page
def generate(request, slug: str):
    """Start a generation run of METER's entries (admins; llm/generation.py)."""
    project = _meter_project(request, MANAGE).project
    run = generation_start_from_form(
        project=project, generator="meter_entries", data=request.POST, by=request.user
    )
    from django.contrib import messages

    messages.success(
        request, f"Generation run {run.pk} started: entries go to Check, edit and vote."
    )
    return redirect("meter:meter", slug=project.slug)
