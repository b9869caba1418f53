"""Blind where it must be, on every page there is and every page still to come.

The walker reads every URL pattern from Django's resolver (so a page is covered the day it is
added), fills its parameters from a seeded site — every demo project (seed_demo: each workflow
with work in every stage, a crowd study) plus open, final and waiting-for-a-reviewer votes on the
plain verify → label project, a release, an import, an invite — and GETs it as each role, once
plainly and, where the page answered 200, again as htmx (``HX-Request``), reading pages,
partials, CSV, JSON, SVG and the files inside zips. Every response is searched for markers the
seed planted where a role must not look:

* ``OPENVOTE_MARKER_…``: the comment of every answer still open (its item stage's current round
  still collecting or changing answers, annotation.versions.CHANGEABLE_STATES);
* ``FINALVOTE_MARKER_…``: the comment of every final answer (decided, discarded, waiting for a
  reviewer, or of an earlier round);
* ``GOLD_MARKER_…``: known answers, in the item payload's ``gold`` (the engine's field, read
  per stage when an item enters one) and in ``ItemStage.gold``;
* ``HIDDEN_MARKER_…``: a payload field no kind lets annotators see (``walker_note``);
* ``NAME_MARKER_…``: the username, first and last name of everyone who annotates.

Answers of a phase that a later phase shows (annotation.phases ``shows``, e.g. METER's edits
voted on) are shown to the next phase's annotators by design and carry no marker; so are
narrative structures and other ``gold`` a workflow already keeps (the walker does not overwrite
them).

What each role may see (``yes``: may appear; ``no``: a marker there fails the test):

============================  ==========  ===========  ====  ======  =====
role                          open votes  final votes  gold  hidden  names
============================  ==========  ===========  ====  ======  =====
annotator                     no          no           no    no      no
annotator who also reviews    no          yes          no    yes     no
reviewer                      no          yes          no    yes     no
researcher                    no          yes          yes   yes     yes
admin (of the project)        no          yes          yes   yes     yes
crowd participant             no          no           no    no      no
anonymous                     no          no           no    no      no
============================  ==========  ===========  ====  ======  =====

Open votes are seen by their author alone, whatever the role (the engine's rule,
annotation.selectors.annotations_visible); a reviewer weighs answers, not people, so reviewers
see final votes without names, as the adjudication page pseudonymises them; gold is for those who
measure annotators (researchers, admins). README.md, "Nothing leaked", has the same table.

A URL pattern whose parameters the walker cannot fill fails the test (teach ``FILLERS`` the
parameter); ``EXCLUDED`` lists the few patterns not walked, each with its reason. Parameter
values are samples chosen where leaks would be: per project the first stage with open answers
and the first with final ones, an item and an item stage per state (open, waiting for a
reviewer, decided), the tables and figures that carry people or votes. About 4,000 requests:
close to three minutes on a 2-core machine, most of it the researchers' and admins' pages.
"""

from __future__ import annotations

import io
import itertools
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import Q
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.factories import PASSWORD, make_user, prolific_ids

pytestmark = pytest.mark.django_db

TAG = "7f3a"
OPEN, FINAL, GOLD, HIDDEN, NAME = (
    f"OPENVOTE_MARKER_{TAG}",
    f"FINALVOTE_MARKER_{TAG}",
    f"GOLD_MARKER_{TAG}",
    f"HIDDEN_MARKER_{TAG}",
    f"NAME_MARKER_{TAG}",
)
EVERYTHING = frozenset({OPEN, FINAL, GOLD, HIDDEN, NAME})

#: role → the markers it must never meet (the table in the docstring).
FORBIDDEN: dict[str, frozenset[str]] = {
    "annotator": EVERYTHING,
    "annotator+reviewer": frozenset({OPEN, GOLD, NAME}),
    "reviewer": frozenset({OPEN, GOLD, NAME}),
    "researcher": frozenset({OPEN}),
    "admin": frozenset({OPEN}),
    "participant": EVERYTHING,
    "anonymous": EVERYTHING,
}

#: Patterns not walked, by the start of their route, each with why.
EXCLUDED = {
    "admin/": "the Django admin: staff only (every role here is refused, checked below); "
    "superusers see every row there by design",
    "accounts/logout/": "signs the walker out (and answers GET with 405 anyway)",
}

MARKER = re.compile(rf"((?:OPENVOTE|FINALVOTE|GOLD|HIDDEN|NAME)_MARKER_{TAG})\w*")


# --- The seeded site --------------------------------------------------------------------------


@dataclass
class Site:
    projects: list[Any]
    stages: dict[int, list[Any]] = field(default_factory=dict)
    items: dict[int, list[int]] = field(default_factory=dict)
    item_stages: dict[int, list[int]] = field(default_factory=dict)
    annotators: dict[int, list[int]] = field(default_factory=dict)
    studies: dict[int, list[Any]] = field(default_factory=dict)
    invites: dict[int, list[Any]] = field(default_factory=dict)
    batches: dict[int, list[int]] = field(default_factory=dict)
    releases: dict[int, list[int]] = field(default_factory=dict)
    model_runs: dict[int, list[int]] = field(default_factory=dict)
    llm_endpoints: list[int] = field(default_factory=list)
    llm_prompts: dict[int, list[int]] = field(default_factory=dict)
    llm_raters: dict[int, list[int]] = field(default_factory=dict)
    llm_runs: dict[int, list[int]] = field(default_factory=dict)
    assignments: list[int] = field(default_factory=list)
    annotations: list[int] = field(default_factory=list)
    users: dict[str, Any] = field(default_factory=dict)


def _vote(person, stage, value) -> None:
    from annotation import services
    from annotation.access import access_stage_for_annotator

    assignment = services.assignment_next(
        annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
    )
    services.annotation_submit(
        assignment_id=assignment.pk, annotator=person, payload={"value": value}
    )


def _work_on_the_plain_demo(capture) -> None:
    """seed_demo leaves the verify → label project untouched: one item decided, one with two
    of its three answers, one tied three ways (sent to a reviewer)."""
    from annotation.models import Project, Role, Stage

    project = Project.objects.get(slug="demo")
    verify = Stage.objects.get(project=project, slug="verify")
    label = Stage.objects.get(project=project, slug="label")
    people = [
        m.user for m in project.memberships.filter(role=Role.ANNOTATOR).select_related("user")
    ][:3]
    with capture(execute=True):
        for person in people:
            _vote(person, verify, "keep")  # the first item: decided, on to label
        for person in people[:2]:
            _vote(person, verify, "keep")  # the second: two of three, open
    with capture(execute=True):
        for person, value in zip(people, ["causal", "temporal", "unrelated"], strict=True):
            _vote(person, label, value)  # tied: waits for a reviewer


def _shown_phases(stage) -> set[int]:
    from annotation.phases import stage_phases

    if not stage.phases:
        return set()
    phases = stage_phases(stage)
    shown = {name for phase in phases for name in phase.shows}
    return {phase.index for phase in phases if phase.name in shown}


def _plant_markers() -> None:
    """Comments on every answer, gold and a hidden field on every regular item, markers in the
    names of everyone who annotates."""
    from django.contrib.auth import get_user_model

    from annotation.models import Annotation, Item, ItemStage, Membership, Role, Stage
    from annotation.versions import CHANGEABLE_STATES

    shown = {stage.pk: _shown_phases(stage) for stage in Stage.objects.all()}
    changed = []
    for annotation in Annotation.all_versions.select_related("item_stage"):
        item_stage = annotation.item_stage
        if annotation.phase in shown[item_stage.stage_id]:
            continue
        still_open = item_stage.state in CHANGEABLE_STATES and annotation.round >= item_stage.round
        marker = OPEN if still_open else FINAL
        annotation.payload = {**(annotation.payload or {}), "comment": f"{marker}_a{annotation.pk}"}
        changed.append(annotation)
    Annotation.all_versions.bulk_update(changed, ["payload"], batch_size=500)
    items = []
    for item in Item.objects.filter(purpose=Item.Purpose.REGULAR):
        payload = dict(item.payload or {})
        payload["walker_note"] = f"{HIDDEN}_i{item.pk}"
        if "gold" not in payload:
            slugs = item.project.stages.values_list("slug", flat=True)
            payload["gold"] = {slug: f"{GOLD}_i{item.pk}" for slug in slugs}
        item.payload = payload
        items.append(item)
    Item.objects.bulk_update(items, ["payload"], batch_size=500)
    gold = []
    for item_stage in ItemStage.objects.filter(
        gold__isnull=True, item__purpose=Item.Purpose.REGULAR
    ):
        item_stage.gold = f"{GOLD}_s{item_stage.pk}"
        gold.append(item_stage)
    ItemStage.objects.bulk_update(gold, ["gold"], batch_size=500)
    annotating = set(
        Membership.objects.filter(role=Role.ANNOTATOR).values_list("user_id", flat=True)
    ) | set(Annotation.all_versions.values_list("annotator_id", flat=True))
    for user in get_user_model().objects.filter(pk__in=annotating):
        user.username = f"{NAME}_u{user.pk}"
        user.first_name = f"{NAME}_f{user.pk}"
        user.last_name = f"{NAME}_l{user.pk}"
        user.save(update_fields=["username", "first_name", "last_name"])


def _seed(capture) -> Site:
    from annotation import services
    from annotation.models import Annotation, Assignment, ItemStage, Project, Role
    from crowd.models import Study
    from imports.models import ImportBatch
    from imports.services import import_batch_create
    from llm.models import Endpoint, ModelRater, PromptTemplate
    from llm.models import Run as LlmRun
    from ratings.models import ModelRun
    from releases.models import Release
    from releases.services import release_publish
    from studio.models import Invite
    from studio.services import invite_create

    call_command("seed_demo", password=PASSWORD, stdout=io.StringIO())
    _work_on_the_plain_demo(capture)
    _plant_markers()
    demo = Project.objects.get(slug="demo")
    admin = demo.memberships.filter(role=Role.ADMIN).first().user
    invite_create(project=demo, role=Role.ANNOTATOR, days=7, max_uses=0, created_by=admin)
    import_batch_create(
        project=demo,
        user=admin,
        fileobj=io.BytesIO(b"external_id,text\nx-1,A short sentence.\n"),
        filename="walker.csv",
    )
    # A release of the decided item (the label stage sent it to a reviewer; say it was kept).
    demo.items.filter(item_stages__state="adjudication").update(status="accepted")
    with capture(execute=True):
        release = release_publish(project=demo, user=admin)
    _evaluation_of(release)

    site = Site(projects=list(Project.objects.order_by("pk")))
    roles = {
        "annotator": [Role.ANNOTATOR],
        "annotator+reviewer": [Role.ANNOTATOR, Role.REVIEWER],
        "reviewer": [Role.REVIEWER],
        "researcher": [Role.RESEARCHER],
        "admin": [Role.ADMIN],
    }
    for name, held in roles.items():
        user = make_user(f"walker-{name.replace('+', '-')}")
        for project in site.projects:
            for role in held:
                services.membership_add(project=project, user=user, role=role)
        site.users[name] = user

    open_states = ("open", "resolving")
    for project in site.projects:
        stages = list(project.stages.order_by("position"))
        # Two stages per project keep the walk short: the first with open votes and the first
        # with final ones (or the first stage).
        annotations = Annotation.objects.filter(item_stage__stage__project=project)
        picked_stages = [
            annotations.filter(condition).values_list("item_stage__stage_id", flat=True).first()
            for condition in (
                Q(item_stage__state__in=open_states),
                ~Q(item_stage__state__in=open_states),
            )
        ]
        site.stages[project.pk] = [
            stage for stage in stages if stage.pk in picked_stages
        ] or stages[:1]
        item_stages = ItemStage.objects.filter(stage__project=project, annotations__isnull=False)
        picked: list[int] = []
        for state in ("open", "adjudication", "resolved"):
            picked += list(
                item_stages.filter(state=state).distinct().values_list("pk", flat=True)[:1]
            )
        site.item_stages[project.pk] = picked
        site.items[project.pk] = list(
            ItemStage.objects.filter(pk__in=picked).values_list("item_id", flat=True).distinct()
        ) or list(project.items.values_list("pk", flat=True)[:1])
        site.annotators[project.pk] = list(
            project.memberships.filter(role=Role.ANNOTATOR).values_list("user_id", flat=True)[:1]
        )
        site.studies[project.pk] = list(Study.objects.filter(project=project))
        site.invites[project.pk] = list(Invite.objects.filter(project=project))
        site.batches[project.pk] = list(
            ImportBatch.objects.filter(project=project).values_list("pk", flat=True)[:1]
        )
        site.releases[project.pk] = list(
            Release.objects.filter(project=project).values_list("version", flat=True)
        )
        site.model_runs[project.pk] = list(
            ModelRun.objects.filter(project=project).values_list("pk", flat=True)[:1]
        )
        # The Models tab's prompts, raters and runs (the demo's model steps, llm/demo.py).
        site.llm_prompts[project.pk] = list(
            PromptTemplate.objects.filter(project=project).values_list("pk", flat=True)[:1]
        )
        site.llm_raters[project.pk] = list(
            ModelRater.objects.filter(stage__project=project).values_list("pk", flat=True)[:1]
        )
        site.llm_runs[project.pk] = list(
            LlmRun.objects.filter(project=project).values_list("pk", flat=True)[:1]
        )
    site.llm_endpoints = list(Endpoint.objects.values_list("pk", flat=True))
    site.assignments = list(
        Assignment.objects.filter(item_stage__state__in=open_states).values_list("pk", flat=True)[
            :2
        ]
    )
    site.annotations = list(
        Annotation.objects.filter(item_stage__state__in=open_states).values_list("pk", flat=True)[
            :2
        ]
    )
    return site


# --- Filling a pattern's parameters -----------------------------------------------------------


def _plots() -> list[str]:
    """The per-annotator figure only: the one that could name people (figures draw their text
    as outlines, and each costs about a second)."""
    from agreement.views import PLOTS

    return [plot for plot in PLOTS if plot == "annotators"]


def _agreement_tables() -> list[str]:
    """The tables with people and votes in them (the others are figures over time)."""
    from agreement.views import CSV_TABLES

    return [table for table in CSV_TABLES if table in ("annotators", "disagreements")]


def _ratings_tables() -> list[str]:
    from ratings.report import TABLE_TITLES

    return list(TABLE_TITLES)


#: parameter → values, given the site, the project being walked (None for patterns without a
#: project slug) and the pattern's qualified name. An empty list: nothing to fill it with there.
Filler = Callable[[Site, Any, str], list[Any]]


def _per_project(attribute: str, convert: Callable[[Any], Any] = lambda value: value) -> Filler:
    def fill(site: Site, project, name: str) -> list[Any]:
        projects = [project] if project is not None else site.projects
        return [convert(value) for p in projects for value in getattr(site, attribute)[p.pk]]

    return fill


def _token(site: Site, project, name: str) -> list[str]:
    if name.startswith("crowd:"):
        return [study.token for p in site.projects for study in site.studies[p.pk]]
    if name == "studio:join":
        return [invite.token for p in site.projects for invite in site.invites[p.pk]]
    if name == "password_reset_confirm":
        from django.contrib.auth.tokens import default_token_generator

        return [default_token_generator.make_token(_mail_user(site))]
    if name == "email_change_confirm":
        from rungwise.accounts import email_change_link

        return [email_change_link(user=_mail_user(site), email="walker@example.org")]
    return []


def _mail_user(site: Site):
    """The account whose mailed links (password reset, e-mail change) the walker opens."""
    return next(iter(site.users.values()))


def _reset_uid(site: Site, project, name: str) -> list[str]:
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    return [urlsafe_base64_encode(force_bytes(_mail_user(site).pk))]


def _table(site: Site, project, name: str) -> list[str]:
    if name == "agreement:csv":
        return _agreement_tables()
    if name == "ratings:table":
        # Three of the ratings report's tables: the raters (who), the attention checks (gold)
        # and the item means; each of the others costs a second and reads the same frame.
        return [table for table in _ratings_tables() if table in RATINGS_TABLES]
    return []


RATINGS_TABLES = ("raters", "attention_checks", "items")


def _evaluation_of(release) -> None:
    """A finished evaluation of ``release`` (llm/evaluation), written as a worker leaves one:
    the walked project's kind has no scorer, so the rows are made here."""
    from django.utils import timezone

    from llm.models import Endpoint, Evaluation, Run

    release.refresh_from_db()
    endpoint, _ = Endpoint.objects.get_or_create(
        name="walker-model", defaults={"base_url": "http://127.0.0.1:9/v1", "model": "walker"}
    )
    run = Run.objects.create(
        project=release.project, purpose=Run.Purpose.EVALUATE, status=Run.Status.DONE
    )
    figure = {"group": "all", "metric": "accuracy", "n": 1, "value": 1.0, "low": 0.2, "high": 1.0}
    Evaluation.objects.create(
        release=release,
        release_sha256=release.sha256,
        workflow=release.project.kind,
        endpoint=endpoint,
        run=run,
        questions=1,
        answered=1,
        results=[figure],
        baseline=[figure],
        finished_at=timezone.now(),
    )


def _evaluations(project) -> list[int]:
    """The project's release evaluations (llm/evaluation), where the seed made any."""
    from llm.models import Evaluation

    return list(Evaluation.objects.filter(release__project=project).values_list("pk", flat=True))


FILLERS: dict[str, Filler] = {
    "slug": lambda site, project, name: [project.slug],
    "stage_id": _per_project("stages", lambda stage: stage.pk),
    "stage_slug": _per_project("stages", lambda stage: stage.slug),
    "item_id": _per_project("items"),
    "item_stage_id": _per_project("item_stages"),
    "user_id": _per_project("annotators"),
    "study_id": _per_project("studies", lambda study: study.pk),
    "invite_id": _per_project("invites", lambda invite: invite.pk),
    "batch_id": _per_project("batches"),
    "version": _per_project("releases"),
    "run_id": _per_project("model_runs"),
    "endpoint_id": lambda site, project, name: site.llm_endpoints,
    "template_id": _per_project("llm_prompts"),
    "rater_id": _per_project("llm_raters"),
    "model_run_id": _per_project("llm_runs"),
    "evaluation_id": lambda site, project, name: _evaluations(project),
    "action": lambda site, project, name: ["pause"],
    "token": _token,
    "uidb64": _reset_uid,
    "plot": lambda site, project, name: _plots(),
    "table": _table,
    "name": lambda site, project, name: ["distributions", "means", "model_scatter"],
    "fmt": lambda site, project, name: ["csv", "jsonl"],
    # A registered import schema's sample (imports:schema_sample): one per workflow page.
    "schema": lambda site, project, name: [
        "ratings.pairs",
        "ratings.ratings",
        "graphs.carlgt_question",
        "narratives.narrative",
    ],
    "assignment_id": lambda site, project, name: site.assignments,
    "annotation_id": lambda site, project, name: site.annotations,
    # The project's webhooks (webhooks/; seed_demo makes one on the engine's demo project).
    "webhook_id": lambda site, project, name: _webhooks(project),
}


def _webhooks(project) -> list[int]:
    from webhooks.models import Webhook

    return list(Webhook.objects.filter(project=project).values_list("pk", flat=True))


@dataclass
class Pattern:
    route: str
    name: str | None
    parameters: list[str]


def url_patterns() -> Iterator[Pattern]:
    """Every URL pattern of every app, its route, qualified name and parameters."""

    def walk(resolver, prefix: str, namespace: str) -> Iterator[Pattern]:
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
                yield from walk(entry, prefix + str(entry.pattern), inner)
            elif isinstance(entry, URLPattern):
                route = prefix + str(entry.pattern)
                parameters = re.findall(r"<(?:\w+:)?(\w+)>", route) + re.findall(
                    r"\(\?P<(\w+)>", route
                )
                name = f"{namespace}{entry.name}" if entry.name else None
                yield Pattern(route, name, parameters)

    yield from walk(get_resolver(), "", "")


def excluded(pattern: Pattern) -> bool:
    return any(pattern.route.startswith(start) for start in EXCLUDED)


def urls_of(pattern: Pattern, site: Site) -> list[str]:
    """The URLs the walker opens for `pattern`: one per combination of parameter values."""
    projects = site.projects if "slug" in pattern.parameters else [None]
    urls = []
    for project in projects:
        values = [FILLERS[p](site, project, pattern.name) for p in pattern.parameters]
        for combination in itertools.product(*values):
            urls.append(
                reverse(
                    pattern.name, kwargs=dict(zip(pattern.parameters, combination, strict=True))
                )
            )
    return list(dict.fromkeys(urls))


# --- Reading responses ------------------------------------------------------------------------


def response_text(response) -> str:
    """Everything a response carries: headers, body (streamed or not), and the files of a zip."""
    body = b"".join(response.streaming_content) if response.streaming else response.content
    parts = [str(dict(response.headers))]
    if body[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            parts += [archive.read(name).decode("utf-8", "replace") for name in archive.namelist()]
    else:
        parts.append(body.decode("utf-8", "replace"))
    return "\n".join(parts)


def participant_client(site: Site) -> Client:
    """A Prolific participant who entered the crowd demo's study, consented and read the
    instructions."""
    client = Client(raise_request_exception=False)
    study = next(study for p in site.projects for study in site.studies[p.pk])
    entered = client.get(reverse("crowd:enter", args=[study.token]), prolific_ids(4242))
    assert entered.status_code == 302, entered.content[:500]
    client.post(reverse("crowd:consent", args=[study.token]), {"agree": "1"})
    client.post(reverse("crowd:instructions", args=[study.token]))
    return client


def clients(site: Site) -> dict[str, Client]:
    found = {"anonymous": Client(raise_request_exception=False)}
    found["participant"] = participant_client(site)
    for role, user in site.users.items():
        found[role] = Client(raise_request_exception=False)
        found[role].force_login(user)
    return found


# --- The tests --------------------------------------------------------------------------------


def test_every_url_pattern_can_be_walked():
    """Every parameter of every pattern has a filler: a new page with a new parameter fails
    here until FILLERS is taught how to fill it."""
    unknown = [
        f"{pattern.route} ({pattern.name}): no filler for {', '.join(missing)}"
        for pattern in url_patterns()
        if not excluded(pattern)
        if (missing := [p for p in pattern.parameters if p not in FILLERS]) or not pattern.name
    ]
    assert not unknown, (
        "Teach tests/test_blindness.py's walker these URL patterns (FILLERS, or EXCLUDED with "
        "a reason):\n" + "\n".join(unknown)
    )


@pytest.mark.timeout(600)
def test_no_role_meets_what_it_must_not_see(django_capture_on_commit_callbacks, tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path)
    site = _seed(django_capture_on_commit_callbacks)
    patterns = [pattern for pattern in url_patterns() if not excluded(pattern)]
    unfilled, leaks, errors, walked = [], [], [], 0
    opened: set[tuple[str, str]] = set()
    by_role = clients(site)
    for pattern in patterns:
        urls = urls_of(pattern, site)
        if not urls:
            unfilled.append(f"{pattern.route} ({pattern.name})")
            continue
        for role, client in by_role.items():
            for index, url in enumerate(urls):
                responses = [client.get(url)]
                # The htmx variant of the first URL a pattern fills (partials render the same
                # selectors; every URL would double the walk).
                if (
                    index == 0
                    and responses[0].status_code == 200
                    and "html" in responses[0].get("Content-Type", "")
                ):
                    responses.append(client.get(url, HTTP_HX_REQUEST="true"))
                for number, response in enumerate(responses):
                    walked += 1
                    if response.status_code == 200:
                        opened.add((role, pattern.name))
                    if response.status_code >= 500:
                        errors.append(f"{role:<18} {response.status_code} {url}")
                    found = {
                        match.group(0)
                        for match in MARKER.finditer(response_text(response))
                        if match.group(1) in FORBIDDEN[role]
                    }
                    if found:
                        how = "htmx" if number else "GET"
                        leaks.append(
                            f"{role:<18} {how:<4} {response.status_code} {url}: "
                            + ", ".join(sorted(found)[:4])
                        )
    assert not unfilled, (
        "The walker could not fill these URL patterns from the seeded site; teach it "
        "(tests/test_blindness.py, _seed and FILLERS):\n" + "\n".join(unfilled)
    )
    # The walk reached the pages that matter, not only refusals.
    expected = {
        *((role, "studio:item") for role in ("annotator+reviewer", "reviewer", "researcher")),
        ("admin", "studio:item"),
        ("reviewer", "agreement:adjudicate"),
        ("researcher", "agreement:disagreements"),
        ("annotator", "annotation:project"),
    }
    assert walked > 1000 and expected <= opened, sorted(expected - opened)
    assert not errors, "These pages failed (5xx):\n" + "\n".join(errors)
    assert not leaks, f"{len(leaks)} responses show a role what it must not see:\n" + "\n".join(
        leaks
    )


def test_the_django_admin_refuses_every_role_walked(client):
    for user in (None, make_user("walker-plain")):
        if user is not None:
            client.force_login(user)
        response = client.get("/admin/annotation/annotation/")
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.django_db
def test_a_participant_meets_no_staff_chrome(client):
    """A crowd participant's item screen (full page and htmx) shows the work only: no site or
    project menu, no item id, no lease time, no link to the project's other pages; a practice
    item is marked as one. A staff annotator of the same stage sees all of them."""
    from annotation.models import Assignment, Role
    from tests.factories import make_crowd_study, make_member

    study = make_crowd_study(regular=3, practice=1, checks=0, quota=2, overlap=2)
    client.get(reverse("crowd:enter", args=[study.token]), prolific_ids(77))
    client.post(reverse("crowd:consent", args=[study.token]), {"agree": "1"})
    client.post(reverse("crowd:instructions", args=[study.token]))
    stage_url = reverse("annotation:stage", args=[study.practice_stage_id or study.stage_id])
    ready = client.get(stage_url).content.decode()
    leased = client.post(stage_url, HTTP_HX_REQUEST="true").content.decode()
    full = client.get(stage_url).content.decode()
    held = Assignment.objects.get(status="active").item_stage.item

    assert held.purpose == "practice"
    for page in (ready, leased, full):
        for chrome in (
            'class="menu',  # the site's Projects and account menus
            "project-tabs",
            "My projects",
            "My recent answers",
            "Back to ",
            "is yours for",  # the lease time
            "minutes",
            held.external_id,
            f"/projects/{study.project.slug}",
        ):
            assert chrome not in page, chrome
    for page in (leased, full):
        assert "data-practice-item" in page and "Practice item" in page

    staff = Client()
    staff.force_login(make_member(study.project, Role.ANNOTATOR))
    own = staff.get(reverse("annotation:stage", args=[study.stage_id])).content.decode()
    assert 'class="menu' in own and "My projects" in own and "is yours for" in own
