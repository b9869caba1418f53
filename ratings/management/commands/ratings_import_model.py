"""Import a model's answers (ratings per item or chosen connectives) for comparison."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from annotation.errors import ApplicationError
from ratings import services
from ratings.management.commands._common import command_error, open_file, project_by_slug


class Command(BaseCommand):
    help = (
        "Store a model's answers: pair_id, order, connective, rating (per item) or pair_id, "
        "order, choice (per ordered pair); -1 or empty = no answer."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("name")
        parser.add_argument("file")
        parser.add_argument("--replace", action="store_true", help="replace a run of that name")

    def handle(self, *args, slug, name, file, replace, **options):
        project = project_by_slug(slug)
        with open_file(file) as (filename, content):
            try:
                run = services.model_run_import(
                    project=project, name=name, content=content, filename=filename, replace=replace
                )
            except ApplicationError as error:
                raise command_error(error) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Stored {run.name}: {run.n_answers:,} answers, {run.n_no_answer:,} without one."
            )
        )
