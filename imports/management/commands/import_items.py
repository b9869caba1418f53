"""Import a CSV, JSON Lines or JSON file of items into a project (the same service as the UI).

    manage.py import_items demo items.jsonl
    manage.py import_items demo items.csv --duplicates update --user admin
    manage.py import_items demo v1-items.jsonl --layout release
    manage.py import_items demo big.jsonl --background      # run as a Celery task

Exit status 0 when the import succeeded (or was queued), 1 when it failed; the errors are printed
with their line numbers.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.models import Project
from imports.core.pipeline import DUPLICATE_POLICIES
from imports.core.readers import FORMATS
from imports.models import ImportBatch
from imports.services import import_batch_create, import_batch_errors, import_batch_start


class Command(BaseCommand):
    help = "Import items from a CSV, JSON Lines or JSON file into a project."

    def add_arguments(self, parser):
        parser.add_argument("project", help="the project's slug")
        parser.add_argument("path", help="the file to import")
        parser.add_argument("--format", choices=FORMATS, help="default: from the file name")
        parser.add_argument(
            "--duplicates",
            choices=DUPLICATE_POLICIES,
            default="reject",
            help="ids already in the project: reject the file, or update those items",
        )
        parser.add_argument("--layout", choices=("rows", "release"), default="rows")
        parser.add_argument("--group-field", help="column whose value groups items")
        parser.add_argument(
            "--purpose-field", help="column holding regular/practice/attention_check"
        )
        parser.add_argument("--user", help="username recorded as the importer")
        parser.add_argument(
            "--background", action="store_true", help="queue a Celery task instead of waiting"
        )
        parser.add_argument("--max-errors", type=int, default=20, help="errors to print")

    def handle(self, *args, **options):
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"There is no project {options['project']!r}.")
        path = Path(options["path"])
        if not path.is_file():
            raise CommandError(f"There is no file {path}.")
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"There is no user {options['user']!r}.")
        batch_options = {
            "duplicate_policy": options["duplicates"],
            "layout": options["layout"],
            "group_field": options["group_field"],
            "purpose_field": options["purpose_field"],
        }
        try:
            with open(path, "rb") as handle:
                batch = import_batch_create(
                    project=project,
                    user=user,
                    fileobj=handle,
                    filename=path.name,
                    fmt=options["format"],
                    options=batch_options,
                )
            batch = import_batch_start(batch=batch, run_inline=not options["background"])
        except ApplicationError as error:
            raise CommandError(error.message) from None
        if batch.status == ImportBatch.Status.PENDING:
            self.stdout.write(f"Import #{batch.pk} queued ({batch.file_size:,} bytes).")
            return
        if batch.status == ImportBatch.Status.SUCCEEDED:
            self.stdout.write(self.style.SUCCESS(f"Import #{batch.pk}: {batch.message}"))
            return
        self.stderr.write(self.style.ERROR(f"Import #{batch.pk} failed: {batch.message}"))
        for row_error in import_batch_errors(batch)[: options["max_errors"]]:
            self.stderr.write(f"  {row_error}")
        shown = min(len(batch.errors), options["max_errors"])
        if batch.error_count > shown:
            self.stderr.write(f"  … and {batch.error_count - shown:,} more.")
        raise CommandError(f"{batch.error_count:,} problems; nothing was imported.", returncode=1)
