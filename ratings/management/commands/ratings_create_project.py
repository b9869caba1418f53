"""Create an ExpliCa-style ratings project (connectives, scale, label rule, rating stage)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from ratings import services
from ratings.management.commands._common import command_error


class Command(BaseCommand):
    help = (
        "Create a ratings project. Defaults are ExpliCa's: so/because/then/after, a 1–10 scale, "
        "15 ratings per item and the label rule that reproduces the published labels."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("name")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--connectives",
            help="JSON file of a connective set (ratings.connectives.ConnectiveSet.to_json): "
            '{"connectives": [{"word", "relation", "order", "template"?}, …], …}',
        )
        parser.add_argument("--label-rule", help="JSON file of ratings.stats.LabelRule fields")
        parser.add_argument("--scale", nargs=2, type=int, metavar=("MIN", "MAX"), default=(1, 10))
        parser.add_argument("--overlap", type=int, default=15, help="ratings per item")
        parser.add_argument("--no-cannot-judge", action="store_true")
        parser.add_argument("--seed", type=int, help="seeds every rater's item order")

    def handle(
        self,
        *args,
        slug,
        name,
        description,
        connectives,
        label_rule,
        scale,
        overlap,
        no_cannot_judge,
        seed,
        **options,
    ):
        options_ = {}
        for key, path in (("connective_set", connectives), ("label_rule", label_rule)):
            if path:
                try:
                    options_[key] = json.loads(Path(path).read_text(encoding="utf-8"))
                except (OSError, json.JSONDecodeError) as error:
                    raise CommandError(f"Cannot read {path}: {error}") from None
        try:
            project = services.ratings_project_create(
                slug=slug,
                name=name,
                description=description,
                scale=tuple(scale),
                overlap=overlap,
                allow_cannot_judge=not no_cannot_judge,
                seed=seed,
                **options_,
            )
        except ApplicationError as error:
            raise command_error(error) from None
        self.stdout.write(self.style.SUCCESS(f"Created ratings project {project.slug}."))
