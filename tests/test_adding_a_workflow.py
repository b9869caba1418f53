"""The worked example of docs/adding-a-workflow.md, run: a "triage" workflow added purely from
outside the engine — a kind with a structured vote, a policy, routes, an eligibility rule and a
workflow, declared as one plug-in, none of them known to annotation/. It uses the engine's
public modules only (``annotation.api`` and the extension-point modules), as the ``engine-api``
import contract holds every plug-in to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from django.contrib.auth.models import User

from annotation import api as services
from annotation.access import access_stage_for_annotator
from annotation.api import Decision, item_payload_for_annotator
from annotation.eligibility import RULES, Condition, Rule, conditions
from annotation.errors import ApplicationError
from annotation.kinds import KINDS, AgreementSpec, KindContext, TaskKind
from annotation.models import Item, ItemRevision, ItemStage, Resolution
from annotation.navigation import ProjectTab, project_tabs
from annotation.plugins import Plugin, registered_plugins, temporarily_registered
from annotation.policies import POLICIES, Policy
from annotation.workflows import WORKFLOWS, Workflow
from imports.core.schema import SCHEMAS, FieldSpec, RowSchema, schema_for_kind
from tests.factories import make_member, make_project

pytestmark = pytest.mark.django_db

# --- 1. The kind: keep/drop plus a 1–5 severity, one structured vote ---------------------------


class SeverityKind(TaskKind):
    key = "severity"
    label = "Triage (verdict + severity)"
    template = "annotation/kinds/verify.html#form"  # a real app ships its own partial
    policies = ("severity_gate",)
    default_policy = "severity_gate"
    vote_field = None
    vote_fields = {"verdict": "verdict", "severity": "severity"}
    agreement = AgreementSpec("nominal", field="verdict")
    default_visible_fields = ("report",)

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        verdict, severity = payload.get("verdict"), payload.get("severity")
        if verdict not in ("keep", "drop"):
            raise ApplicationError("Keep or drop the report.", {"verdict": "keep or drop"})
        if verdict == "keep" and severity not in range(1, context.config.get("max", 5) + 1):
            raise ApplicationError("Rate the severity.", {"severity": "a whole number 1–5"})
        # The kind sees the item: a report already marked urgent cannot be rated below 3.
        if verdict == "keep" and context.item.payload.get("urgent") and severity < 3:
            raise ApplicationError("Urgent reports are 3 or more.", {"severity": "3 or more"})
        return {"verdict": verdict, "severity": severity if verdict == "keep" else None}

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        clean = super().validate_config(config)
        if not isinstance(clean.get("max", 5), int) or clean.get("max", 5) < 2:
            raise ApplicationError("max must be a whole number of at least 2.", {"max": "2+"})
        return clean


# --- 2. The policy: any drop discards; a low mean severity asks for a revision ------------------


class SeverityGate(Policy):
    key = "severity_gate"
    label = "Drop on any drop; revise below the severity floor"
    outcomes = ("accept", "reject", "revise")

    def validate_settings(self, settings):
        if not isinstance(settings.options.get("min_severity", 1), int | float):
            raise ValueError("min_severity must be a number.")

    def decide(self, ballots, settings) -> Decision:
        votes = [ballot.vote for ballot in ballots if ballot.vote]
        if len(votes) < settings.required:
            return Decision(None, "insufficient", "pending", False)
        if any(vote["verdict"] == "drop" for vote in votes):
            return Decision("drop", "majority", "reject", False, reason="someone dropped it")
        mean = sum(vote["severity"] for vote in votes) / len(votes)
        if mean >= settings.options.get("min_severity", 1):
            return Decision(mean, "mean", "accept", False)
        revised = {**ballots[0].payload, "needs_detail": True}
        return Decision(mean, "mean", "revise", False, revision=revised, reason="too vague")


# --- 3. An eligibility rule: only members who are not the report's filer ------------------------


class NotFiler(Rule):
    name = "not_filer"
    description = "never the person named in the report's filer field"

    def sql(self, spec, names):
        i, u = names.alias("i"), names.alias("u")
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {names.table(Item)} {i} JOIN {names.table(User)} {u}"
            f' ON {u}."id" = {names.annotator} WHERE {i}."id" = {names.column("item_id")}'
            f' AND {i}."source" = {u}."username")',
            {},
        )


# --- 4. The plug-in: everything above, declared once ---------------------------------------------

TRIAGE_SCHEMA = RowSchema(
    name="triage",
    external_id_field="id",
    fields=(
        FieldSpec("id", required=True, max_length=255, help="the tracker's id of the report"),
        FieldSpec("report", required=True, help="the bug report as filed"),
    ),
)


def triage_plugin() -> Plugin:
    """What a triage app's ``AppConfig.ready()`` would pass to ``register_plugin``."""
    return Plugin(
        name="triage",
        kinds=[SeverityKind()],
        policies=[SeverityGate()],
        eligibility_rules=[NotFiler()],
        workflows=[Workflow("triage", "Bug-report triage")],
        import_schemas={"triage": TRIAGE_SCHEMA},
        project_tabs=[ProjectTab("Triage", "annotation:project", ("admin",), kinds=("triage",))],
    )


@pytest.fixture
def triage():
    # An installed app registers once, in ready(); the test puts the registries back after.
    with temporarily_registered(triage_plugin()):
        yield


def build_project():
    project = make_project(kind="triage")
    services.stage_create(project=project, slug="screen", name="Screen", kind="verify", overlap=1)
    triage_stage = services.stage_create(
        project=project,
        slug="triage",
        name="Triage",
        kind="severity",
        overlap=2,
        config={"max": 5},
        policy_options={"min_severity": 3},
        routes={
            "revise": {
                "action": "revise",
                "then": {"action": "back", "stage": "triage", "max_loops": 1},
            },
        },
        eligibility=[{"rule": "not_filer"}],
    )
    return project, triage_stage


def work(stage, people, answer, capture):
    with capture(execute=True):
        for person in people:
            lease = services.assignment_next(
                annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
            )
            assert lease is not None
            services.annotation_submit(
                assignment_id=lease.pk, annotator=person, payload=answer(person)
            )


def test_a_low_severity_report_is_revised_and_looped_once(
    triage, django_capture_on_commit_callbacks
):
    project, stage = build_project()
    item = Item.objects.create(
        project=project, external_id="bug-1", payload={"report": "It broke.", "gold": "x"}
    )
    services.item_stages_open(items=[item], stage=stage)
    people = [make_member(project) for _ in range(4)]

    # Annotators see only the allow-listed field, never "gold".
    assert item_payload_for_annotator(item, stage) == {"report": "It broke."}

    work(
        stage,
        people[:2],
        lambda person: {"verdict": "keep", "severity": 1},
        django_capture_on_commit_callbacks,
    )
    item.refresh_from_db()
    item_stage = ItemStage.objects.get(stage=stage)
    # The structured votes reached the policy: mean 1 < 3, so "revise": a new revision, then
    # back into the same stage for one more round.
    assert item.version == 2 and item.payload["needs_detail"] is True
    assert ItemRevision.objects.get(item=item, number=2).diff["needs_detail"] == {
        "old": None,
        "new": True,
    }
    assert (item_stage.round, item_stage.state) == (1, "open")

    work(
        stage,
        people[2:],
        lambda person: {"verdict": "keep", "severity": 4},
        django_capture_on_commit_callbacks,
    )
    item.refresh_from_db()
    assert item.status == "accepted"
    assert Resolution.objects.get(item_stage__stage=stage).value == 4


def test_one_drop_discards_and_the_kind_checks_against_the_item(
    triage, django_capture_on_commit_callbacks
):
    project, stage = build_project()
    item = Item.objects.create(
        project=project, external_id="bug-2", payload={"report": "Data lost!", "urgent": True}
    )
    services.item_stages_open(items=[item], stage=stage)
    alice, bob = make_member(project), make_member(project)
    lease = services.assignment_next(
        annotator=alice, stage=access_stage_for_annotator(user=alice, stage_id=stage.pk)
    )
    with pytest.raises(ApplicationError, match="Urgent reports"):
        services.annotation_submit(
            assignment_id=lease.pk, annotator=alice, payload={"verdict": "keep", "severity": 1}
        )
    answers = {alice.pk: {"verdict": "keep", "severity": 5}, bob.pk: {"verdict": "drop"}}
    work(stage, [alice, bob], lambda person: answers[person.pk], django_capture_on_commit_callbacks)
    item.refresh_from_db()
    assert item.status == "discarded"


def test_bad_settings_are_refused_with_the_setting_named(triage):
    project, _ = build_project()
    with pytest.raises(ApplicationError, match="max must be"):
        services.stage_create(
            project=project, slug="t2", name="T2", kind="severity", config={"max": 1}
        )
    with pytest.raises(ApplicationError, match="min_severity must be a number"):
        services.stage_create(
            project=project,
            slug="t3",
            name="T3",
            kind="severity",
            policy_options={"min_severity": "high"},
        )
    with pytest.raises(ApplicationError, match="never decides 'maybe'"):
        services.stage_create(
            project=project,
            slug="t4",
            name="T4",
            kind="severity",
            routes={"maybe": {"action": "finish"}},
        )


def test_the_rule_is_sql_with_named_parameters(triage):
    (condition,) = conditions([{"rule": "not_filer"}])
    assert "%(annotator)s" in condition.sql and condition.params == {}


def test_the_plugin_registers_everything_it_declares_and_nothing_else():
    before = {name: set(registry) for name, registry in registries().items()}
    with temporarily_registered(triage_plugin()):
        project = make_project(kind="triage")
        assert KINDS["severity"].key == "severity"
        assert POLICIES["severity_gate"].key == "severity_gate"
        assert RULES["not_filer"].name == "not_filer"
        assert WORKFLOWS["triage"].label == "Bug-report triage"
        # An extension point of an app above the engine (imports) got the schema too.
        assert schema_for_kind("triage") is TRIAGE_SCHEMA
        assert "Triage" in [tab["label"] for tab in project_tabs(project, ["admin"])]
        assert "triage" in [plugin.name for plugin in registered_plugins()]
    assert {name: set(registry) for name, registry in registries().items()} == before
    assert "triage" not in [plugin.name for plugin in registered_plugins()]


def registries():
    return {
        "kinds": KINDS,
        "policies": POLICIES,
        "rules": RULES,
        "workflows": WORKFLOWS,
        "schemas": SCHEMAS,
    }
