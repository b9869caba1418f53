"""Simulated annotators on a METER project's verify (or filter) stage, with set accuracies.

    manage.py meter_simulate my-meter --stage verify --accuracy 0.9 0.85 0.8 [--prevalence 0.6]

Creates the annotators (sim1, sim2, …; unusable passwords) when missing, answers every open item
through the real services, refreshes the stage's agreement and prints Fleiss' κ with its CI
beside the value the planted accuracies imply when they are all equal
(review.meter.simulate).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agreement.selectors import latest_snapshots
from agreement.services import stage_agreement_refresh
from annotation import api as engine
from annotation.models import Project, Role
from review.meter.services import WORKFLOW
from review.meter.simulate import expected_kappa, simulate_binary_stage


class Command(BaseCommand):
    help = "Simulate METER annotators of set accuracies on a verify or filter stage."

    def add_arguments(self, parser):
        parser.add_argument("project")
        parser.add_argument("--stage", default="verify", choices=("verify", "filter"))
        parser.add_argument("--accuracy", type=float, nargs="+", default=[0.9, 0.9, 0.9])
        parser.add_argument("--prevalence", type=float, default=0.6)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, project, stage, accuracy, prevalence, seed, **options):
        found = Project.objects.filter(slug=project, kind=WORKFLOW).first()
        if found is None:
            raise CommandError(f"There is no METER project {project!r}.")
        if not all(0 <= a <= 1 for a in accuracy) or not 0 <= prevalence <= 1:
            raise CommandError("Accuracies and the prevalence are shares from 0 to 1.")
        target = found.stages.get(slug=stage)
        User = get_user_model()
        people = []
        for number in range(1, len(accuracy) + 1):
            user, created = User.objects.get_or_create(username=f"sim{number}")
            if created:
                user.set_unusable_password()
                user.save(update_fields=["password"])
            engine.membership_add(project=found, user=user, role=Role.ANNOTATOR)
            people.append(user)
        count = simulate_binary_stage(target, people, accuracy, prevalence=prevalence, seed=seed)
        stage_agreement_refresh(stage_id=target.pk, force=True)
        kappa = latest_snapshots(target, metrics=["fleiss_kappa"]).get("fleiss_kappa")
        self.stdout.write(f"{count} annotations on {target.name}.")
        if kappa is not None and kappa.value is not None:
            self.stdout.write(
                f"Fleiss' κ {kappa.value:.3f} [{kappa.ci_low:.3f}, {kappa.ci_high:.3f}] "
                f"over {kappa.n_items} items"
            )
        if len(set(accuracy)) == 1:
            self.stdout.write(f"Planted: κ = {expected_kappa(accuracy[0], prevalence):.3f}")
