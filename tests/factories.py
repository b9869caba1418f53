"""Test data builders (one place for all tests)."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model

from annotation import services
from annotation.models import Project, Role, Stage

_counter = itertools.count(1)
PASSWORD = "correct-horse-battery"


def make_user(username: str | None = None, **extra):
    username = username or f"user{next(_counter)}"
    return get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)


def make_member(project: Project, role: str = Role.ANNOTATOR, username: str | None = None):
    user = make_user(username)
    services.membership_add(project=project, user=user, role=role)
    return user


def make_project(*, slug: str | None = None, kind: str = "generic", **extra) -> Project:
    slug = slug or f"project-{next(_counter)}"
    return services.project_create(
        slug=slug, name=slug.replace("-", " ").title(), kind=kind, **extra
    )


def make_verify_stage(project: Project, *, overlap: int = 3, **extra) -> Stage:
    extra.setdefault("slug", "verify")
    extra.setdefault("name", "Verify")
    return services.stage_create(project=project, kind="verify", overlap=overlap, **extra)


def make_label_stage(
    project: Project, *, overlap: int = 3, choices=("causal", "temporal", "none"), **extra
) -> Stage:
    extra.setdefault("slug", "label")
    extra.setdefault("name", "Label")
    return services.stage_create(
        project=project, kind="label", overlap=overlap, config={"choices": list(choices)}, **extra
    )


def make_items(project: Project, count: int, *, prefix: str = "item", group_size: int = 0):
    rows = [
        {
            "external_id": f"{prefix}-{index:05d}",
            "payload": {"text": f"Sentence {index}: the rain fell, so the river rose."},
            "group": f"g{index // group_size}" if group_size else "",
        }
        for index in range(count)
    ]
    return services.items_create(project=project, rows=rows)


def pipeline(overlap: int = 3, items: int = 6, annotators: int = 3):
    """A two-stage project (verify → label) with items and annotators."""
    project = make_project()
    verify = make_verify_stage(project, overlap=overlap)
    label = make_label_stage(project, overlap=overlap)
    make_items(project, items)
    people = [make_member(project) for _ in range(annotators)]
    return project, verify, label, people


def annotate_stage(stage: Stage, people, choose, *, seconds=None) -> int:
    """The people take turns, one item each, until nobody gets an item of `stage`, submitting
    {"value": choose(person, item)}; returns the number of annotations. Run inside
    django_capture_on_commit_callbacks(execute=True) (or a transactional test) so that the
    on-commit resolution runs."""
    from annotation.access import access_stage_for_annotator

    count = 0
    active = list(people)
    while active:
        for person in list(active):
            access = access_stage_for_annotator(user=person, stage_id=stage.pk)
            assignment = services.assignment_next(annotator=person, stage=access)
            if assignment is None:
                active.remove(person)
                continue
            services.annotation_submit(
                assignment_id=assignment.pk,
                annotator=person,
                payload={"value": choose(person, assignment.item_stage.item)},
                seconds_spent=seconds(person) if seconds else None,
            )
            count += 1
    return count


def make_crowd_study(
    *,
    regular: int = 10,
    practice: int = 2,
    checks: int = 2,
    overlap: int = 3,
    project: Project | None = None,
    **fields,
):
    """A label stage with regular items, practice items and attention checks (gold "causal"),
    and a crowd study on it (crowd.services.study_create; ``fields`` override its settings)."""
    from crowd import services as crowd_services

    project = project or make_project()
    stage = make_label_stage(project, overlap=overlap)
    rows = [
        {"external_id": f"r-{index:03d}", "payload": {"text": f"Regular sentence {index}."}}
        for index in range(regular)
    ]
    rows += [
        {
            "external_id": f"p-{index:03d}",
            "payload": {"text": f"Practice sentence {index}."},
            "purpose": "practice",
        }
        for index in range(practice)
    ]
    rows += [
        {
            "external_id": f"c-{index:03d}",
            "payload": {"text": f"Check {index}: choose causal.", "gold": {"label": "causal"}},
            "purpose": "attention_check",
        }
        for index in range(checks)
    ]
    services.items_create(project=project, rows=rows)
    settings = {
        "name": "Pilot study",
        "consent_text": "You agree that your answers are used for research.",
        "instructions": "Choose the relation between the two events.",
        "completion_code": "C0MPLETE",
        "screenout_code": "SCREEN0UT",
        "places": 5,
        "quota": 4,
        "platform": "prolific",
        **fields,
    }
    return crowd_services.study_create(project=project, stage=stage, **settings)


def prolific_ids(number: int) -> dict[str, str]:
    """Prolific's parameters for the ``number``-th test participant (24 hexadecimal digits)."""
    return {
        "PROLIFIC_PID": f"{number:024x}",
        "STUDY_ID": "5" * 24,
        "SESSION_ID": f"{number + 10**6:024x}",
    }


def took_seconds(annotations, seconds: float) -> None:
    """Make the server's clock say each of ``annotations`` (a queryset) took ``seconds`` from
    its lease to its submit: the lease moved back from the submit time."""
    from datetime import timedelta

    from django.db.models import F

    from annotation.models import Assignment

    Assignment.objects.filter(pk__in=annotations.values("assignment_id")).update(
        created_at=F("finished_at") - timedelta(seconds=seconds)
    )
