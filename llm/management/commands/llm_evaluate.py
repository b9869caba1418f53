"""``manage.py llm_evaluate <project> --release N --endpoint NAME``: evaluate a published
release with one endpoint in this process (no worker needed) and print the model's figures
beside the release's human baseline. The evaluation is stored as the page and the API's are
(llm/evaluation/services.py); running it again adds one."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.models import Project
from llm.evaluation.services import (
    evaluation_execute,
    evaluation_start,
    evaluation_table,
)
from llm.models import Endpoint, Evaluation, Run
from releases.models import Release


def _figure(value: Any, low: Any, high: Any) -> str:
    if value is None:
        return "—"
    if low is None or high is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def format_table(rows: list[dict[str, Any]]) -> str:
    """The evaluation's table as aligned text: group, figure, model, n, people, n."""
    lines = [("group", "figure", "model [95% CI]", "n", "people [95% CI]", "n")]
    for row in rows:
        lines.append(
            (
                row["group"],
                row["metric"],
                _figure(row["model"], row["model_low"], row["model_high"]),
                str(row["model_n"]),
                _figure(row["human"], row["human_low"], row["human_high"]),
                "" if row["human_n"] is None else str(row["human_n"]),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


class Command(BaseCommand):
    help = "Evaluate a published release with a model endpoint and print the figures."

    def add_arguments(self, parser) -> None:
        parser.add_argument("project", help="the project's slug")
        parser.add_argument("--release", type=int, required=True, help="the release's version")
        parser.add_argument("--endpoint", required=True, help="the endpoint's name")
        parser.add_argument("--mode", choices=Evaluation.Mode.values, default=Evaluation.Mode.CHAT)

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project {options['project']!r}.")
        release = Release.objects.filter(project=project, version=options["release"]).first()
        if release is None:
            raise CommandError(f"{project.slug} has no release v{options['release']}.")
        endpoint = Endpoint.objects.filter(name=options["endpoint"]).first()
        if endpoint is None:
            names = ", ".join(Endpoint.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"No endpoint {options['endpoint']!r} (registered: {names}).")
        try:
            evaluation = evaluation_start(
                release=release, endpoint=endpoint, mode=options["mode"], enqueue=False
            )
        except ApplicationError as error:
            raise CommandError(error.message) from error
        evaluation = evaluation_execute(evaluation_id=evaluation.pk)
        run = evaluation.run
        run.refresh_from_db()
        if run.status != Run.Status.DONE:
            raise CommandError(f"Evaluation {evaluation.pk} {run.status}: {run.error}")
        self.stdout.write(
            f"Evaluation {evaluation.pk}: {project.slug} v{release.version} "
            f"(sha256 {evaluation.release_sha256[:12]}…) by {endpoint.name}; "
            f"{evaluation.answered} of {evaluation.questions} questions answered, "
            f"{run.failed} failed, cost {run.cost}."
        )
        self.stdout.write(format_table(evaluation_table(evaluation)))
