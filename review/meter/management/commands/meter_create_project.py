"""Create a METER project (verify → check, edit and vote → filter).

    manage.py meter_create_project my-meter "My METER study" [--overlap 3]

Then import the pairs with ``manage.py import_items my-meter pairs.csv`` (review/README.md).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from review.meter.services import meter_project_create


class Command(BaseCommand):
    help = "Create a METER-style project with its three stages."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("name")
        parser.add_argument("--description", default="")
        parser.add_argument("--overlap", type=int, default=3, help="annotators per item (3)")

    def handle(self, *args, slug, name, description, overlap, **options):
        try:
            project = meter_project_create(
                slug=slug, name=name, description=description, overlap=overlap
            )
        except ApplicationError as error:
            raise CommandError(str(error)) from None
        stages = ", ".join(project.stages.order_by("position").values_list("name", flat=True))
        self.stdout.write(self.style.SUCCESS(f"Created {project.slug}: {stages}."))
