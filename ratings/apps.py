from __future__ import annotations

from django.apps import AppConfig

DEMO_SLUG = "ratings-demo"
#: The project kind of ratings projects (annotation.workflows).
RATINGS_WORKFLOW = "ratings"


class RatingsConfig(AppConfig):
    name = "ratings"
    verbose_name = "Acceptability ratings (ExpliCa-style)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.models import Role
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin
        from annotation.workflows import Workflow
        from ratings import import_schemas
        from ratings.kinds import RateKind
        from ratings.release_layout import EXPLICA_DATASET, explica_layout
        from ratings.release_scorer import ExplicaScorer
        from ratings.selectors import stage_headlines
        from ratings.services import analyses_item_stages_resolved
        from ratings.stopping import answers_stored as stopping_answers_stored

        register_plugin(
            Plugin(
                name=self.name,
                kinds=[RateKind()],
                workflows=[
                    Workflow(
                        RATINGS_WORKFLOW,
                        "Acceptability ratings (ExpliCa-style)",
                        "Sentence pairs × connectives × orders rated 1–10 by 15 raters, with "
                        "practice items and attention checks; labels per ordered pair.",
                        create=_template,
                        import_pages=(("pairs and ratings", "ratings:import"),),
                    )
                ],
                # The rows of its pairs, ratings and model-answer files (ratings/importing.py).
                import_schemas=import_schemas.SCHEMAS,
                release_layouts={RATINGS_WORKFLOW: explica_layout},
                release_datasets={RATINGS_WORKFLOW: EXPLICA_DATASET},
                release_scorers={RATINGS_WORKFLOW: ExplicaScorer()},
                # Tabs on every page of a ratings project, not only its own.
                project_tabs=[
                    ProjectTab(
                        "Ratings",
                        "ratings:dashboard",
                        (Role.ADMIN, Role.RESEARCHER),
                        order=35,
                        kinds=(RATINGS_WORKFLOW,),
                    ),
                    ProjectTab(
                        "Import ratings",
                        "ratings:import",
                        (Role.ADMIN,),
                        order=65,
                        kinds=(RATINGS_WORKFLOW,),
                    ),
                ],
                # The researcher page's stored analysis is recomputed when items resolve.
                on_item_stages_resolved=[analyses_item_stages_resolved],
                # Live stopping (ratings/stopping.py): a run after answers are stored.
                on_answers_stored=[stopping_answers_stored],
                # The Agreement page's figure for the rating and historic stages is this app's α.
                headline_providers=[stage_headlines],
                demo=self.demo_seed,
            )
        )

    def demo_seed(self, *, users: dict) -> None:
        """The demo ratings project: 16 pairs (128 items) open for live rating with overlap 3,
        3 practice items, 3 attention checks, a simulated 15-rater pilot study as historic
        ratings and a simulated model run; and *Live stopping (demo)*
        (ratings/fixtures/stopping_demo.py). Safe to run again (memberships are re-added)."""
        from django.db import transaction

        from annotation.fixtures.demo_users import demo_members_add
        from annotation.models import Item, Project
        from ratings import services
        from ratings.fixtures import demo

        with transaction.atomic():
            project = Project.objects.filter(slug=DEMO_SLUG).first()
            if project is None:
                project = services.ratings_project_create(
                    slug=DEMO_SLUG,
                    name="Connective acceptability (demo)",
                    description="ExpliCa-style 1–10 ratings of sentence pairs joined by so, "
                    "because, then and after; with a simulated pilot study to analyse.",
                    overlap=3,
                    seed=20250601,
                )
                services.pairs_import(
                    project=project, content=demo.pairs_csv(), filename="demo-pairs.csv"
                )
                items = [
                    item.payload
                    for item in Item.objects.filter(project=project, purpose=Item.Purpose.REGULAR)
                ]
                services.historic_ratings_create(
                    project=project,
                    ratings=_rating_rows(demo.simulated_ratings(items), project),
                    source="simulated pilot study",
                )
                services.model_run_create(
                    project=project,
                    name="demo-model (simulated)",
                    rows=list(enumerate(demo.simulated_model_ratings(items), start=2)),
                    filename="simulated",
                )
            demo_members_add(project, users)
        # Live stopping (ratings/stopping.py): its own study, already rated by simulated raters.
        from ratings.fixtures import stopping_demo

        stopping_demo.seed(users=users)


def _template(*, slug: str, name: str, description: str = ""):
    """The studio's ratings template: ExpliCa's defaults (ratings.services)."""
    from ratings.services import ratings_project_create

    return ratings_project_create(slug=slug, name=name, description=description)


def _rating_rows(rows, project):
    from ratings import importing
    from ratings.connectives import connective_set_from_json
    from ratings.models import RatingsSetup

    setup = RatingsSetup.objects.get(project=project)
    return importing.parse_ratings(
        list(enumerate(rows, start=2)),
        connective_set_from_json(setup.connective_set),
        scale=(setup.rating_stage.config["min"], setup.rating_stage.config["max"]),
    )
