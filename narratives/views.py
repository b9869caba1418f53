"""The Narratives tab of a CausalNarratives project (CONTRIBUTING.md, "Thin views"): the human
baseline beside the paper's 98 %, per chain length and direction, agreement between annotators,
a figure, every narrative with its answers (drill-down to single answers); for admins, an upload
of narrative files."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods

from annotation.access import MANAGE, MONITOR, ProjectAccess
from annotation.errors import ApplicationError
from annotation.navigation import project_tabs
from annotation.web import page
from narratives import plots, services
from narratives.access import access_narrative, access_narratives_project
from narratives.reader import humanise

MAX_UPLOAD_BYTES = 8 << 20
ITEM_ROWS = 200


def _items(rows):
    """One line per narrative with answers, hardest first (fewest exact answers)."""
    items: dict[int, dict] = {}
    for row in rows:
        entry = items.setdefault(
            row["item_id"],
            {
                "item_id": row["item_id"],
                "external_id": row["external_id"],
                "key": row["key"],
                "structure": row["structure"],
                "length": row["length"],
                "direction": row["direction"],
                "source": row["source"],
                "answers": 0,
                "exact": 0,
            },
        )
        entry["answers"] += 1
        entry["exact"] += bool(row["exact"])
    return sorted(items.values(), key=lambda i: (i["exact"] / i["answers"], i["key"]))


def _context(access: ProjectAccess, **extra):
    project = access.project
    report = services.baseline(project)
    items = _items(report["rows"])
    return {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "report": report,
        "items": items[:ITEM_ROWS],
        "items_total": len(items),
        "counts": services.item_counts(project),
        "plot": mark_safe(  # noqa: S308 — matplotlib's SVG of numbers and fixed labels
            plots.exact_by_length_svg(
                report["by_length_direction"], paper=report["paper"]["exact_rate"]
            )
        ),
        "can_manage": access.holds(MANAGE),
        **extra,
    }


@require_GET
@page
def baseline(request, slug: str):
    access = access_narratives_project(request.user, slug, MONITOR)
    return render(request, "narratives/baseline.html", _context(access))


@require_GET
@page
def item_answers(request, slug: str, item_id: int):
    access = access_narratives_project(request.user, slug, MONITOR)
    project = access.project
    item = access_narrative(project, item_id)
    rows = services.answers(project, item_id=item.pk)
    gold = item.payload["gold"]
    truth = gold.get("order") or []
    for row in rows:
        order = (row["answer"] or {}).get("order") or []
        row["steps"] = [
            {"label": humanise(node), "right": index < len(truth) and truth[index] == node}
            for index, node in enumerate(order)
        ]
        row["edge_labels"] = [
            f"{humanise(a)} → {humanise(b)}" for a, b in (row["answer"] or {}).get("edges") or []
        ]
    return render(
        request,
        "narratives/item.html",
        {
            "project": project,
            "project_tabs": project_tabs(project, access.roles),
            "item": item,
            "payload": item.payload,
            "truth": [humanise(n) for n in truth],
            "true_edges": [f"{humanise(a)} → {humanise(b)}" for a, b in gold.get("edges") or []],
            "true_svg": _graph_svg(gold),
            "rows": rows,
        },
    )


def _graph_svg(gold):
    """The true graph drawn as SVG (graphs.svg, the project's one DAG drawing); None for chains."""
    if not gold.get("edges"):
        return None
    from graphs.svg import dag_svg

    return mark_safe(  # noqa: S308 — dag_svg escapes every label
        dag_svg(gold["edges"], gold.get("nodes"), title="True causal graph")
    )


@require_http_methods(["GET", "POST"])
@page
def upload(request, slug: str):
    """The import page (admins): what a line needs (NARRATIVE_SCHEMA's column table and a JSON
    Lines sample), the upload form, and a refused file's problems (file, line, what to fix) at
    the top with nothing imported."""
    access = access_narratives_project(request.user, slug, MANAGE)
    project = access.project
    context = {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "counts": services.item_counts(project),
    }
    if request.method == "GET":
        return render(request, "narratives/import.html", context)
    upload = request.FILES.get("file")
    if upload is None:
        raise ApplicationError("Choose a narratives file (JSON Lines).", {"file": "required"})
    if upload.size > MAX_UPLOAD_BYTES:
        raise ApplicationError(
            f"A narratives file is at most {MAX_UPLOAD_BYTES >> 20} MiB.", {"file": upload.name}
        )
    report = services.narratives_import(
        project=project, data=upload.read(), filename=upload.name or "upload.jsonl"
    )
    if not report.ok:
        context.update(problems=report.problems[:100], filename=upload.name)
        return render(request, "narratives/import.html", context, status=400)
    messages.success(request, f"Imported {report.created} narrative{pluralize(report.created)}.")
    return redirect("narratives:baseline", slug=project.slug)
