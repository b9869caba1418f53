"""No release names a person (releases/identities.py): every demo project
(annotation/management/commands/seed_demo.py and every app's demo) seeded for a cast with
distinctive names, released, and every file of every release searched for every member's
username, first name and last name; the identity rule removes or pseudonymises the declared
paths, spelled alike in Python and in SQL (the COPY export)."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.db import connection

from annotation.fixtures.demo_users import DEMO_ROLES
from annotation.management.commands.seed_demo import demo_projects_seed
from annotation.models import Annotation, Item, ItemStage, Membership, Project
from releases import identities
from releases.copy_export import copy_annotations_jsonl
from releases.identities import IdentityRule, name_pseudonym
from releases.models import Release
from releases.parquet import parquet_text
from releases.services import (
    RELEASED_STATUSES,
    release_annotation_rows,
    release_publish,
    release_publish_refusal,
)
from tests.factories import make_items, make_label_stage, make_member, make_project, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def test_no_file_of_any_demo_release_names_a_member(django_capture_on_commit_callbacks):
    users = {
        name: make_user(
            f"zqv{name}wex",
            first_name=f"Quillonar{number}",
            last_name=f"Brackwaterby{number}",
        )
        for number, name in enumerate(DEMO_ROLES)
    }
    with django_capture_on_commit_callbacks(execute=True):
        demo_projects_seed(users)
    members = Membership.objects.select_related("user").values_list(
        "user__username", "user__first_name", "user__last_name"
    )
    needles = {value.casefold() for member in members for value in member if value}
    assert {user.get_username().casefold() for user in users.values()} <= needles
    projects = list(Project.objects.order_by("slug"))
    assert len(projects) >= 7  # every demo project, each released below
    found = []
    for project in projects:
        # Items still in the pipeline are released as accepted, so that every payload a demo
        # holds (a case written by a member, waiting for review) is in a file searched.
        Item.objects.filter(project=project, status=Item.Status.ACTIVE).update(
            status=Item.Status.ACCEPTED
        )
        assert release_publish_refusal(project) is None
        with django_capture_on_commit_callbacks(execute=True):
            release = release_publish(project=project, user=None)
        release = Release.objects.get(pk=release.pk)
        assert release.status == "published", (project.slug, release.error)
        with zipfile.ZipFile(release.archive.path) as archive:
            for name in archive.namelist():
                data = archive.read(name)
                text = (
                    parquet_text(data)
                    if name.endswith(".parquet")
                    else data.decode("utf-8", errors="replace")
                ).casefold()
                found += [(project.slug, name, n) for n in sorted(needles) if n in text]
    assert found == []


# --- One rule, spelled in Python and in SQL --------------------------------------------------

PAYLOADS = [
    {"text": "no names here"},
    {"author": "Ada Lovelace", "text": "a case"},
    {"author": None, "reviews": "not a list"},
    {"author": {"name": "a nested value"}, "reviews": [{"reviewer": "Grace Hopper", "score": 9}]},
    {"reviews": [{"reviewer": "Alan Turing"}, "a bare string", {"score": 8}, {"reviewer": 7}]},
    {"reviews": []},
    {"panel": {"names": ["Emmy Noether", 3, "Kurt Gödel"]}},
    ["a", "list", "payload"],
    "a string payload",
]
RULES = [
    IdentityRule(paths=("author", "reviews[].reviewer", "panel.names"), treatment="remove"),
    IdentityRule(paths=("author", "reviews[].reviewer", "panel.names[]"), treatment="pseudonym"),
]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.treatment)
def test_the_python_rule_removes_or_pseudonymises_every_declared_name(rule):
    salt = "s" * 64
    released = json.dumps([rule.apply(payload, salt) for payload in PAYLOADS])
    for name in ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Emmy Noether", "Kurt Gödel"):
        assert name not in released
        if rule.treatment == "pseudonym":
            assert name_pseudonym(name, salt) in released
    assert "no names here" in released and "a nested value" not in released
    assert PAYLOADS[1] == {"author": "Ada Lovelace", "text": "a case"}  # the input is unchanged


@pytest.mark.postgres
@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.treatment)
def test_the_sql_rule_is_the_python_rule(postgres, rule):
    salt = "0123abcd" * 8
    with connection.cursor() as cursor:
        for payload in PAYLOADS:
            cursor.execute(
                f"SELECT ({rule.sql('x.p', salt_param='salt')})::text"
                " FROM (SELECT CAST(%(payload)s AS jsonb) AS p) x",
                {"payload": json.dumps(payload), "salt": salt},
            )
            assert json.loads(cursor.fetchone()[0]) == rule.apply(payload, salt), payload


@pytest.mark.postgres
def test_the_copy_export_applies_the_kinds_rule_as_python_does(postgres, tmp_path, monkeypatch):
    """Answers' payloads that name people come out of COPY as out of the Python writer: names
    pseudonymised under a kind that declares so."""
    monkeypatch.setitem(identities.RULES, "named", RULES[1])
    project = make_project(kind="named")
    stage = make_label_stage(project, overlap=1)
    (item,) = make_items(project, 1)
    Item.objects.filter(pk=item.pk).update(status=Item.Status.ACCEPTED)
    person = make_member(project)
    item_stage = ItemStage.objects.get(item=item, stage=stage)
    for payload in PAYLOADS[1:5]:
        Annotation.objects.create(
            item_stage=item_stage, annotator=person, payload={"value": "causal", **payload}
        )
    copy_annotations_jsonl(project, tmp_path / "copy.jsonl", statuses=RELEASED_STATUSES)
    copied = [json.loads(line) for line in (tmp_path / "copy.jsonl").read_text().splitlines()]
    python = list(release_annotation_rows(project))
    assert [row["payload"] for row in copied] == [row["payload"] for row in python]
    text = (tmp_path / "copy.jsonl").read_text()
    assert "Ada Lovelace" not in text and "Grace Hopper" not in text and "Alan Turing" not in text
    assert name_pseudonym("Ada Lovelace", identities.salt_for(project)) in text
