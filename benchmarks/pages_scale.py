"""Every researcher page at research scale, over HTTP to the web server as deployed (granian).

    scripts/with-services.sh .venv/bin/python benchmarks/pages_scale.py [--small] [--seed 1]
        [--repeat 5] [--only agreement] [--workers 2] [--explain]

Builds once, in a PostgreSQL database of its own whose name carries the scale and the seed
(``bench_pages_full_1``, in a cluster of its own under ``--data-dir`` that outlives the run;
reused when present, migrated on each run; durability off, as the test suite's), with set-based SQL
(``INSERT … SELECT`` over ``generate_series``, hashes for the draws, so the same seed gives the
same rows):

* a three-stage pipeline (screen → label → check, label kind, overlap 3) over 300,000 items
  (``--small``: 3,000), about 1,000,000 annotations by 200 annotators: unanimous, majority and
  three-way splits (sent to a reviewer), items still collecting, annotations spread over 30
  days; every stage's agreement refreshed once, as the worker would have;
* a ratings project (ExpliCa's connectives) with 1,000,000 historic ratings (12,500 pairs,
  100,000 items, 10 ratings each; ``--small``: 250 pairs), its stored analysis computed once;
* a researcher who signs in (a session row; the server reads it as any browser's).

Then it serves the app as deployed (``tests.processes.web_command``: granian, ``--workers``
processes) with ``RUNGWISE_QUERY_COUNT_HEADER`` on (the ``X-SQL-Statements`` header of
``rungwise/middleware.py``, off in production) and requests every researcher and admin page
and htmx partial: the project home, the Agreement tab, each stage's page, its live and
annotators partials, its figures and CSV tables, its disagreement list, the adjudication queue,
the Items tab (the data manager) with each filter and sort, an item's page, Setup, Imports,
Releases, the ratings dashboard's parts, figures and tables, and the API's list endpoints. Each
page is requested once cold (right after the server started: nothing cached in the workers)
and ``--repeat`` times warm; the script prints p50 / p95 of the warm requests, the cold time,
the time to the first byte (CSV downloads stream), bytes and SQL statements, and flags every
page above the target (300 ms). METER and CausalT5k tabs are not built here: their projects
are imported from their benchmarks' released files, which this script does not fetch.

CPU time is what a shared machine measures fairly; the load average is printed beside the
figures. Not a test: it prints figures (CONTRIBUTING.md, "Benchmarks are scripts").
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")

SLUG = "bench-pages"
RATINGS_SLUG = "bench-pages-ratings"
RESEARCHER = "bench-pages-researcher"
ANNOTATORS = 200
CATEGORIES = ["category-0", "category-1", "category-2", "category-3"]
TARGET_MS = 300.0


@dataclass(frozen=True)
class Scale:
    name: str
    items: int
    pairs: int
    ratings_per_item: int


FULL = Scale("full", 300_000, 12_500, 10)
SMALL = Scale("small", 3_000, 250, 10)


def load_average() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


_TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int | None) -> float:
    """User + system CPU seconds of process ``root`` and every process below it, ended ones
    reaped within the tree included (from ``/proc``): the web server's workers, or the
    PostgreSQL cluster's backends. On a
    machine shared with other work this is the fair figure; wall time measures the others."""
    if root is None:
        return 0.0
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        # utime + stime, and cutime + cstime: the children it reaped (PostgreSQL's postmaster
        # reaps each backend that ends, so a connection closed after its request still counts).
        times[int(entry)] = sum(int(value) for value in fields[11:15]) / _TICKS
    total = 0.0
    for pid, seconds in times.items():
        ancestor = pid
        while ancestor not in (root, 0, 1) and ancestor in parents:
            ancestor = parents[ancestor]
        if ancestor == root:
            total += seconds
    return total


# --- The database -------------------------------------------------------------------------------


def use_database(name: str, directory: Path):
    """Start the benchmark's own PostgreSQL cluster in ``directory`` (made on the first run,
    kept afterwards: the built data outlive the throwaway services), create the database
    ``name`` when absent and point Django at it. Returns (the cluster, the database's URL)."""
    from django.db import connection

    from tests.processes import Postgres

    cluster = Postgres(directory=directory)
    if (cluster.data / "PG_VERSION").exists():
        cluster.start()
    else:
        cluster.directory.mkdir(parents=True, exist_ok=True)
        cluster.init()
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT=str(cluster.port), NAME="postgres")
    connection.settings_dict.update(USER="postgres", PASSWORD="")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    connection.close()
    connection.settings_dict["NAME"] = name
    return cluster, cluster.url(name)


def build(scale: Scale, seed: int) -> None:
    """Write both projects (skipped when the pipeline's last step is already there)."""
    from django.core.management import call_command

    from annotation.models import Project

    call_command("migrate", verbosity=0)
    if Project.objects.filter(slug=SLUG, description="complete").exists():
        print(f"reusing the {scale.name} database", flush=True)
        _stored_pages(Project.objects.get(slug=SLUG), missing_only=True)
        return
    if Project.objects.filter(slug__in=[SLUG, RATINGS_SLUG]).exists():
        # A build that stopped half-way: start from an empty database (deleting 300,000 items
        # through the ORM's cascade takes longer than building them).
        _recreate_database()
        call_command("migrate", verbosity=0)
    started = time.perf_counter()
    people = _people()
    project = _pipeline(scale, seed, people)
    print(f"pipeline written ({time.perf_counter() - started:.0f} s)", flush=True)
    _ratings(scale, seed, people)
    print(f"ratings written ({time.perf_counter() - started:.0f} s)", flush=True)
    _derived(project)
    print(f"derived figures stored ({time.perf_counter() - started:.0f} s)", flush=True)
    Project.objects.filter(pk=project.pk).update(description="complete")
    print(f"built in {time.perf_counter() - started:.0f} s", flush=True)


def _recreate_database() -> None:
    from django.db import connection

    name = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = "postgres"
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    connection.close()
    connection.settings_dict["NAME"] = name


def _people() -> dict[str, list[int]]:
    from django.contrib.auth import get_user_model

    User = get_user_model()
    researcher, _ = User.objects.get_or_create(username=RESEARCHER)
    researcher.set_password("bench-pages-password")
    researcher.save()
    existing = set(
        User.objects.filter(username__startswith="bench-pages-annotator-").values_list(
            "username", flat=True
        )
    )
    User.objects.bulk_create(
        [
            User(username=f"bench-pages-annotator-{k:03d}")
            for k in range(ANNOTATORS)
            if f"bench-pages-annotator-{k:03d}" not in existing
        ]
    )
    annotators = list(
        User.objects.filter(username__startswith="bench-pages-annotator-")
        .order_by("username")
        .values_list("pk", flat=True)
    )
    return {"researcher": [researcher.pk], "annotators": annotators}


def _members(project, people: dict[str, list[int]]) -> None:
    from annotation.models import Membership, Role

    Membership.objects.bulk_create(
        [Membership(project=project, user_id=people["researcher"][0], role=Role.ADMIN)]
        + [
            Membership(project=project, user_id=pk, role=Role.ANNOTATOR)
            for pk in people["annotators"]
        ],
        ignore_conflicts=True,
    )


def _pipeline(scale: Scale, seed: int, people: dict[str, list[int]]):
    """The three-stage project, written with INSERT … SELECT (hashes of ids for every draw)."""
    from django.db import connection, transaction

    from annotation import services
    from annotation.models import Annotation, Item, ItemStage, Resolution

    with transaction.atomic():
        project = services.project_create(slug=SLUG, name="Pages at scale (benchmark)")
        stages = [
            services.stage_create(
                project=project,
                slug=slug,
                name=name,
                kind="label",
                overlap=3,
                config={"choices": CATEGORIES},
            )
            for slug, name in (("screen", "Screen"), ("label", "Label"), ("check", "Check"))
        ]
        _members(project, people)
    items, item_stages = Item._meta.db_table, ItemStage._meta.db_table
    annotations, resolutions = Annotation._meta.db_table, Resolution._meta.db_table
    words = "rain river flood drought harvest market price storm wind fire smoke city road".split()
    annotator_array = "ARRAY[" + ",".join(str(pk) for pk in people["annotators"]) + "]::bigint[]"
    word_array = "(ARRAY[" + ",".join(f"'{word}'" for word in words) + "])"
    with connection.cursor() as cursor:
        # h(x, k): a seeded draw in [0, 1000) for row x and purpose k.
        cursor.execute(
            "CREATE OR REPLACE FUNCTION pg_temp.h(x bigint, k int) RETURNS int"
            f" LANGUAGE sql IMMUTABLE AS $$ SELECT abs(hashint8(x * 1000003 + k * 7919 + {seed})) % 1000 $$"
        )
        cursor.execute(
            f'INSERT INTO {items} (project_id, external_id, payload, source, "group", purpose,'
            " status, version, created_at)"
            f" SELECT %(project)s, 'bench-' || lpad(g::text, 7, '0'),"
            " jsonb_build_object('text', "
            f"{word_array}[1 + pg_temp.h(g, 1) %% 13] || ' ' || {word_array}[1 + pg_temp.h(g, 2) %% 13]"
            f" || ' ' || {word_array}[1 + pg_temp.h(g, 3) %% 13] || ' near '"
            f" || {word_array}[1 + pg_temp.h(g, 4) %% 13]"
            " || CASE WHEN g %% 1000 = 7 THEN ' quokka' ELSE '' END,"
            " 'meta', jsonb_build_object('lang', 'en')),"
            " 'benchmark', '', 'regular', 'active', 1,"
            " now() - make_interval(mins => 43200 - (g::bigint * 43200 / %(n)s)::int)"
            " FROM generate_series(1, %(n)s) AS g",
            {"project": project.pk, "n": scale.items},
        )
        # Statistics before the next statement: the foreign-key checks of the rows that
        # follow are planned from them (without, a sequential scan per row).
        cursor.execute(f"ANALYZE {items}")
        # Which items reach which stage, and how far: screen takes every item; 55 %% resolved,
        # 5 %% split three ways (waiting for a reviewer), 15 %% with one answer, the rest none.
        # label takes the screen's resolved items (70 %% resolved, 10 %% one answer); check takes
        # label's resolved items (15 %% resolved, 10 %% one answer).
        plans = [
            (stages[0], None, 550, 600, 750),
            (stages[1], stages[0], 700, 700, 800),
            (stages[2], stages[1], 150, 150, 250),
        ]
        for number, (stage, previous, resolved, split, one) in enumerate(plans):
            source = (
                f"SELECT id AS item_id FROM {items} WHERE project_id = {project.pk}"
                if previous is None
                else f"SELECT item_id FROM {item_stages} WHERE stage_id = {previous.pk}"
                " AND state = 'resolved'"
            )
            cursor.execute(
                f"INSERT INTO {item_stages} (item_id, stage_id, state, target_count,"
                " submitted_count, leased_count, random_key, spread_rank, group_size, phase,"
                " round, opened_at, completed_at, resolved_at)"
                " SELECT item_id, %(stage)s, d.state, 3, d.submitted, 0,"
                " abs(hashint8(item_id + %(salt)s)) %% 2147483647, 0, 1, 0, 0, d.at - interval '1 day',"
                " CASE WHEN d.submitted = 3 THEN d.at END,"
                " CASE WHEN d.state = 'resolved' THEN d.at END"
                f" FROM ({source}) AS s, LATERAL (SELECT"
                "  CASE WHEN pg_temp.h(item_id, %(k)s) < %(resolved)s THEN 'resolved'"
                "   WHEN pg_temp.h(item_id, %(k)s) < %(split)s THEN 'adjudication' ELSE 'open' END"
                "   AS state,"
                "  CASE WHEN pg_temp.h(item_id, %(k)s) < %(split)s THEN 3"
                "   WHEN pg_temp.h(item_id, %(k)s) < %(one)s THEN 1 ELSE 0 END AS submitted,"
                "  now() - make_interval(mins => pg_temp.h(item_id, %(k)s + 1) * 40 + %(number)s * 60)"
                "   AS at) AS d",
                {
                    "stage": stage.pk,
                    "salt": seed + number,
                    "k": 10 + 10 * number,
                    "resolved": resolved,
                    "split": split,
                    "one": one,
                    "number": number,
                },
            )
            cursor.execute(f"ANALYZE {item_stages}")
            # Votes: the item's true category t; unanimous (65 %% of resolved), majority
            # (slot 2 votes t + 1), three ways for the split ones (t, t + 1, t + 2).
            cursor.execute(
                f"INSERT INTO {annotations} (item_stage_id, annotator_id, external_rater, payload,"
                " seconds_spent, client_info, created_at)"
                " SELECT s.id,"
                f" ({annotator_array})[1 + (pg_temp.h(s.item_id, %(k)s + 2) %% 200 + slot * 67) %% 200],"
                " '', jsonb_build_object('value', 'category-' || ((pg_temp.h(s.item_id, 5) %% 4"
                "  + CASE WHEN s.state = 'adjudication' THEN slot"
                "    WHEN slot = 2 AND pg_temp.h(s.item_id, %(k)s + 3) >= 650 THEN 1 ELSE 0 END) %% 4),"
                "  'comment', ''),"
                " 5 + pg_temp.h(s.item_id, slot + 40) %% 60,"
                " '{}'::jsonb, coalesce(s.completed_at, now() - interval '1 hour')"
                "  - make_interval(mins => (2 - slot) * 7)"
                f" FROM {item_stages} AS s, generate_series(0, 2) AS slot"
                " WHERE s.stage_id = %(stage)s AND slot < s.submitted_count",
                {"stage": stage.pk, "k": 10 + 10 * number},
            )
            cursor.execute(f"ANALYZE {annotations}")
            cursor.execute(
                f"INSERT INTO {resolutions} (item_stage_id, value, status, outcome, votes,"
                " n_annotations, policy, reason, computed_at)"
                " SELECT s.id, CASE WHEN s.state = 'resolved' THEN to_jsonb(c.top) END,"
                " CASE WHEN s.state = 'adjudication' THEN 'tie'"
                "  WHEN c.split THEN 'majority' ELSE 'unanimous' END,"
                " CASE WHEN s.state = 'resolved' THEN 'accept' ELSE 'pending' END,"
                " c.votes, 3, 'majority', '', s.completed_at"
                f" FROM {item_stages} AS s, LATERAL (SELECT"
                "  'category-' || (pg_temp.h(s.item_id, 5) %% 4) AS top,"
                "  pg_temp.h(s.item_id, %(k)s + 3) >= 650 AS split,"
                "  CASE WHEN s.state = 'adjudication' THEN jsonb_build_object("
                "    'category-' || (pg_temp.h(s.item_id, 5) %% 4), 1,"
                "    'category-' || ((pg_temp.h(s.item_id, 5) + 1) %% 4), 1,"
                "    'category-' || ((pg_temp.h(s.item_id, 5) + 2) %% 4), 1)"
                "   WHEN pg_temp.h(s.item_id, %(k)s + 3) >= 650 THEN jsonb_build_object("
                "    'category-' || (pg_temp.h(s.item_id, 5) %% 4), 2,"
                "    'category-' || ((pg_temp.h(s.item_id, 5) + 1) %% 4), 1)"
                "   ELSE jsonb_build_object('category-' || (pg_temp.h(s.item_id, 5) %% 4), 3) END"
                "   AS votes) AS c"
                " WHERE s.stage_id = %(stage)s AND s.submitted_count = 3",
                {"stage": stage.pk, "k": 10 + 10 * number},
            )
            print(f"  stage {stage.slug} written", flush=True)
        for table in (items, item_stages, annotations, resolutions):
            cursor.execute(f"VACUUM ANALYZE {table}")
    return project


def _ratings(scale: Scale, seed: int, people: dict[str, list[int]]) -> None:
    """The ratings project: pairs through the app's own service, then the historic ratings
    with INSERT … SELECT into its historic stage, as ratings/historic.py would store them."""
    from django.db import connection, transaction

    from annotation.models import Annotation, ItemStage, Project, Resolution
    from ratings import project_setup
    from ratings.importing import PairRow
    from ratings.pairs import pairs_create

    with transaction.atomic():
        project = project_setup.ratings_project_create(
            slug=RATINGS_SLUG, name="Ratings at scale (benchmark)", seed=seed
        )
        _members(project, people)
    rows = [
        PairRow(
            line=number + 2,
            pair_id=f"p{number:05d}",
            sentence_a=f"The river rose for the {number}th time",
            sentence_b=f"the fields were flooded on day {number}",
            subset=("causal", "temporal", "unrelated")[number % 3],
        )
        for number in range(scale.pairs)
    ]
    pairs_create(project=project, pairs=rows, open_for_rating=False)
    setup = project_setup._setup(Project.objects.get(pk=project.pk))
    with transaction.atomic():
        historic = project_setup._historic_stage(setup)
    item_stages, annotations = ItemStage._meta.db_table, Annotation._meta.db_table
    resolutions = Resolution._meta.db_table
    per_item = scale.ratings_per_item
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {item_stages} (item_id, stage_id, state, target_count,"
            " submitted_count, leased_count, random_key, spread_rank, group_size, phase, round,"
            " opened_at, completed_at, resolved_at)"
            f" SELECT id, %(stage)s, 'resolved', {per_item}, {per_item}, 0,"
            " abs(hashint8(id)) %% 2147483647, 0, 1, 0, 0, now(), now(), now()"
            " FROM annotation_item WHERE project_id = %(project)s AND purpose = 'regular'",
            {"stage": historic.pk, "project": project.pk},
        )
        cursor.execute(f"ANALYZE {item_stages}")
        cursor.execute(
            f"INSERT INTO {annotations} (item_stage_id, annotator_id, external_rater, payload,"
            " seconds_spent, client_info, created_at)"
            " SELECT s.id, NULL, 'rater-' || ((abs(hashint8(s.item_id)) %% 40 + slot * 3) %% 40),"
            " jsonb_build_object('value', 1 + abs(hashint8(s.item_id * 17 + slot + %(seed)s)) %% 10),"
            f" NULL, '{{}}'::jsonb, now() - interval '30 days'"
            f" FROM {item_stages} AS s, generate_series(0, {per_item - 1}) AS slot"
            " WHERE s.stage_id = %(stage)s",
            {"stage": historic.pk, "seed": seed},
        )
        cursor.execute(f"ANALYZE {annotations}")
        cursor.execute(
            f"INSERT INTO {resolutions} (item_stage_id, value, status, outcome, votes,"
            " n_annotations, policy, reason, computed_at)"
            " SELECT s.id, to_jsonb(avg((a.payload->>'value')::int)::float), 'mean', 'accept',"
            f" '{{}}'::jsonb, count(*), 'mean', '', now()"
            f" FROM {item_stages} AS s JOIN {annotations} AS a ON a.item_stage_id = s.id"
            " WHERE s.stage_id = %(stage)s GROUP BY s.id",
            {"stage": historic.pk},
        )
        for table in (item_stages, annotations, resolutions):
            cursor.execute(f"VACUUM ANALYZE {table}")


def _stored_pages(project, *, missing_only: bool = False) -> None:
    """Each stage's stored page (agreement/stored.py), as the worker stores it once a page of
    a large stage asked; skipped on a checkout without it."""
    try:
        from agreement import stored
    except ImportError:
        return
    for stage in project.stages.order_by("position"):
        if (
            missing_only
            and stored.StoredStagePage.objects.filter(
                pk=stage.pk, stored_at__isnull=False, counts__has_key="disagreements"
            ).exists()
        ):
            continue
        started = time.perf_counter()
        stored.stage_page_store(stage_id=stage.pk)
        print(f"  stored page of {stage.slug}: {time.perf_counter() - started:.1f} s", flush=True)
    _stored_pipeline(project)  # PA's block: "Stored pipeline counts and CPU per request"
    _search_indexed()  # DM's block: "The data manager's search index"
    _stored_ratings_counts()  # RD's block: "The ratings page's stored counts"


def _derived(project) -> None:
    """What the worker would have stored by the time a researcher looks: each stage's
    agreement figures (and, where the app has them, its stored counts and figures), the
    ratings project's stored analysis."""
    from agreement import services as agreement_services
    from annotation.models import Project
    from ratings import selectors as ratings_selectors
    from ratings import services as ratings_services

    for stage in project.stages.order_by("position"):
        started = time.perf_counter()
        agreement_services.stage_agreement_refresh(stage_id=stage.pk, force=True)
        print(f"  agreement of {stage.slug}: {time.perf_counter() - started:.1f} s", flush=True)
    _stored_pages(project)
    ratings = Project.objects.get(slug=RATINGS_SLUG)
    if os.environ.get("BENCH_PAGES_SKIP_ANALYSIS"):
        print("  ratings analysis left to the page (BENCH_PAGES_SKIP_ANALYSIS)", flush=True)
        return
    for source in ratings_selectors.SOURCES:
        started = time.perf_counter()
        ratings_services.analysis_refresh(project_id=ratings.pk, source=source, run_id=None)
        print(f"  ratings analysis ({source}): {time.perf_counter() - started:.1f} s", flush=True)


# --- The pages ----------------------------------------------------------------------------------


def session_cookie() -> str:
    """A signed-in session of the researcher, as the sign-in page would have made it."""
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils.module_loading import import_string

    user = get_user_model().objects.get(username=RESEARCHER)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = next(
        path
        for path in settings.AUTHENTICATION_BACKENDS
        if hasattr(import_string(path), "get_user")
    )
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def api_token() -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    token, _ = Token.objects.get_or_create(user=get_user_model().objects.get(username=RESEARCHER))
    return token.key


def pages() -> list[tuple[str, str, dict[str, str]]]:
    """(name, path, extra headers) of every page measured."""
    from annotation.models import Item, Project

    project = Project.objects.get(slug=SLUG)
    ratings = Project.objects.get(slug=RATINGS_SLUG)
    htmx = {"HX-Request": "true"}
    found: list[tuple[str, str, dict[str, str]]] = [
        ("project home", f"/projects/{SLUG}/", {}),
        ("Agreement tab", f"/projects/{SLUG}/agreement/", {}),
        ("Adjudication queue", f"/projects/{SLUG}/adjudication/", {}),
    ]
    for stage in project.stages.order_by("position"):
        base = f"/projects/{SLUG}/agreement/{stage.slug}/"
        found += [
            (f"{stage.slug}: page", base, {}),
            (f"{stage.slug}: live partial", base + "?part=live", htmx),
            (f"{stage.slug}: annotators partial", base + "?part=annotators", htmx),
            (f"{stage.slug}: disagreements", base + "disagreements/", {}),
        ]
        found += [
            (f"{stage.slug}: {plot}.svg", base + f"figures/{plot}.svg", {})
            for plot in ("agreement", "progress", "annotators")
        ]
        found += [
            (f"{stage.slug}: {table}.csv", base + f"tables/{table}.csv", {})
            for table in ("agreement", "annotators", "labels", "progress", "disagreements")
        ]
    items = f"/projects/{SLUG}/items/"
    filters = [
        ("newest", {}),
        ("search a word", {"q": "quokka"}),
        ("search an id", {"q": "bench-0001234"}),
        ("search nothing", {"q": "platypus"}),
        ("stage", {"stage": "label"}),
        ("state=resolved", {"state": "resolved"}),
        ("search + stage", {"q": "flood", "stage": "check"}),
        (
            "stage+state+decision",
            {"stage": "screen", "state": "resolved", "decision": "category-1"},
        ),
        ("not unanimous", {"disagreement": "on"}),
        ("annotator", {"annotator": "bench-pages-annotator-007"}),
        ("status", {"status": "active"}),
        ("sort status", {"sort": "status"}),
        ("sort oldest", {"sort": "oldest"}),
    ]
    from studio.data_manager.forms import SORTS

    for sort in SORTS:
        if sort not in ("newest", "status", "oldest"):
            filters.append((f"sort {sort}", {"sort": sort}))
    found += [(f"Items: {name}", items + "?" + urlencode(query), {}) for name, query in filters]
    item = Item.objects.filter(project=project).order_by("pk")[len(filters) * 100 :].first()
    found += [
        ("item page", f"{items}{item.pk}/", {}),
        ("Setup", f"/projects/{SLUG}/setup/", {}),
        ("Imports", f"/projects/{SLUG}/imports/", {}),
        ("Releases", f"/projects/{SLUG}/releases/", {}),
    ]
    ratings_base = f"/projects/{RATINGS_SLUG}/ratings/"
    found += [
        ("ratings: dashboard", ratings_base, {}),
        ("ratings: progress partial", ratings_base + "?part=progress", htmx),
        ("ratings: analysis partial", ratings_base + "?part=analysis", htmx),
        ("ratings: historic source", ratings_base + "?source=historic", {}),
        ("ratings: project home", f"/projects/{RATINGS_SLUG}/", {}),
    ]
    api = "/api/projects/"
    found += [
        ("API: projects", api, {}),
        ("API: stages", f"{api}{SLUG}/stages/", {}),
        ("API: items", f"{api}{SLUG}/items/", {}),
        ("API: agreement", f"{api}{SLUG}/agreement/", {}),
        ("API: imports", f"{api}{SLUG}/imports/", {}),
        ("API: releases", f"{api}{SLUG}/releases/", {}),
        ("API: ratings items", f"{api}{ratings.slug}/items/", {}),
    ]
    found += _disagreement_filter_and_cursor_pages(project)
    return found


@dataclass
class Timing:
    status: int
    seconds: float
    first_byte: float
    size: int
    statements: str


def fetch(port: int, path: str, headers: dict[str, str]) -> Timing:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    started = time.perf_counter()
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    first = response.read(1)
    first_byte = time.perf_counter() - started
    body = first + response.read()
    seconds = time.perf_counter() - started
    conn.close()
    return Timing(
        response.status,
        seconds,
        first_byte,
        len(body),
        response.getheader("X-SQL-Statements", "?"),
    )


def serve(database_url: str, workers: int, checkout: Path) -> tuple[subprocess.Popen, int]:
    from tests.processes import free_port, process_env, wait_http, web_command

    port = free_port()
    env = process_env(
        DATABASE_URL=database_url,
        RUNGWISE_QUERY_COUNT_HEADER="1",
        ALLOWED_HOSTS="127.0.0.1",
        PYTHONWARNINGS="ignore::UserWarning",
    )
    (REPO / "var").mkdir(exist_ok=True)
    log = open(REPO / "var" / "bench-pages-server.log", "ab")  # noqa: SIM115 (the server's)
    server = subprocess.Popen(
        web_command(port, workers=workers, threads=1),
        cwd=checkout,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    wait_http(f"http://127.0.0.1:{port}/healthz", process=server, timeout=120)
    return server, port


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def measure(
    port: int,
    cookie: str,
    token: str,
    repeat: int,
    only: str,
    server_pid: int | None = None,
    database_pid: int | None = None,
    skip: str = "",
) -> None:
    """Request each page (``only`` / ``skip``: comma-separated parts of the names to keep /
    to leave out) and print its figures; with the server's and the database's process ids,
    also the CPU milliseconds a warm request cost each (mean over the warm requests, from
    ``/proc``)."""

    def parts(text: str) -> list[str]:
        return [part.strip().lower() for part in text.split(",") if part.strip()]

    wanted, unwanted = parts(only) or [""], parts(skip)
    listed = [
        page
        for page in pages()
        if any(part in page[0].lower() for part in wanted)
        and not any(part in page[0].lower() for part in unwanted)
    ]
    print(f"\nload average before: {load_average()}")
    header = (
        f"{'page':<42} {'cold':>7} {'p50':>7} {'p95':>7} {'1st B':>7} {'bytes':>10} "
        f"{'SQL':>5} {'web CPU':>7} {'db CPU':>6}  status"
    )
    print(header)
    over = 0
    for name, path, extra in listed:
        headers = {"Cookie": cookie, **extra}
        if path.startswith("/api/"):
            headers = {"Authorization": f"Token {token}", **extra}
        cold = fetch(port, path, headers)
        web_before, db_before = tree_cpu_seconds(server_pid), tree_cpu_seconds(database_pid)
        warm = [fetch(port, path, headers) for _ in range(repeat)]
        web_cpu = (tree_cpu_seconds(server_pid) - web_before) * 1000 / repeat
        db_cpu = (tree_cpu_seconds(database_pid) - db_before) * 1000 / repeat
        times = [timing.seconds * 1000 for timing in warm]
        p50, p95 = statistics.median(times), percentile(times, 95)
        first = max(timing.first_byte for timing in warm) * 1000
        slow = max(p95, cold.seconds * 1000) > TARGET_MS
        over += slow
        flag = "  OVER" if slow else ""
        status = (
            cold.status if cold.status == warm[-1].status else f"{cold.status}/{warm[-1].status}"
        )
        print(
            f"{name:<42} {cold.seconds * 1000:>7.0f} {p50:>7.0f} {p95:>7.0f} {first:>7.0f} "
            f"{warm[-1].size:>10,} {warm[-1].statements:>5} {web_cpu:>7.0f} {db_cpu:>6.0f}  "
            f"{status}{flag}",
            flush=True,
        )
    print(
        f"\n{over} of {len(listed)} pages over {TARGET_MS:.0f} ms (cold or warm p95); "
        f"load average after: {load_average()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="3,000 items: for iterating")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--only",
        default="",
        help="measure only pages whose name contains this (comma-separated: any of these)",
    )
    parser.add_argument(
        "--skip", default="", help="leave out pages whose name contains this (comma-separated)"
    )
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument(
        "--checkout",
        default=str(REPO),
        help="serve the app of this checkout (e.g. main's, for figures before a change)",
    )
    parser.add_argument(
        "--data-dir",
        default="/var/tmp/rungwise-bench-pages",
        help="where the benchmark's PostgreSQL cluster lives between runs",
    )
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL database (run under scripts/with-services.sh).")
    import django

    django.setup()
    scale = SMALL if args.small else FULL
    cluster, database_url = use_database(
        f"bench_pages_{scale.name}_{args.seed}", Path(args.data_dir)
    )
    try:
        build(scale, args.seed)
        if args.build_only:
            return
        cookie, token = session_cookie(), api_token()
        from django.db import connection

        # As the image is built (Dockerfile): the pages name their static files by hash. Into
        # a directory of the benchmark's own, not the checkout's.
        static_root = Path(args.data_dir) / f"static-{Path(args.checkout).resolve().name}"
        os.environ["STATIC_ROOT"] = str(static_root)
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=args.checkout,
            check=True,
        )
        connection.close()
        server, port = serve(database_url, args.workers, Path(args.checkout).resolve())
        try:
            measure(
                port,
                cookie,
                token,
                args.repeat,
                args.only,
                server_pid=server.pid,
                database_pid=cluster.pid,
                skip=args.skip,
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        from django.db import connection

        connection.close()
        cluster.stop()


# --- Stored pipeline counts and CPU per request (PA) -------------------------------------------


def _stored_pipeline(project) -> None:
    """The project home's stored pipeline counts (annotation/pipeline_counts.py), as the worker
    stores them once the page of a large project asked; skipped on a checkout without them."""
    try:
        from annotation.pipeline_counts import pipeline_counts_store
    except ImportError:
        return
    from annotation.models import Project

    for each in Project.objects.filter(slug__in=[project.slug, RATINGS_SLUG]).order_by("pk"):
        started = time.perf_counter()
        pipeline_counts_store(project_id=each.pk)
        print(
            f"  stored pipeline counts of {each.slug}: {time.perf_counter() - started:.1f} s",
            flush=True,
        )


# --- The disagreement list's filters and the API's cursor pages (PC) ----------------------------


def _disagreement_filter_and_cursor_pages(project) -> list[tuple[str, str, dict[str, str]]]:
    """Each stage's disagreement list (and its CSV) with the sparse filters (ties, decided by
    a reviewer), and the API's item list deep in it: numbered (counted, ``OFFSET``) and by
    cursor (``api/pagination.py``; on a checkout without it the parameter is ignored)."""
    from base64 import b64encode

    from annotation.models import Item

    found: list[tuple[str, str, dict[str, str]]] = []
    for stage in project.stages.order_by("position"):
        base = f"/projects/{SLUG}/agreement/{stage.slug}/"
        for show in ("ties", "adjudicated"):
            found += [
                (f"{stage.slug}: disagreements {show}", base + f"disagreements/?show={show}", {}),
                (f"{stage.slug}: disagreements.csv {show}", base + f"tables/disagreements.csv?show={show}", {}),
            ]  # fmt: skip
    api = f"/api/projects/{SLUG}/items/"
    items = Item.objects.filter(project=project).order_by("pk")
    middle = items[items.count() // 2 :].values_list("pk", flat=True).first()
    deep = b64encode(f"p={middle}".encode()).decode()
    found += [
        ("API: items page 3000", api + "?page=3000", {}),
        ("API: items cursor", api + "?cursor=", {}),
        ("API: items cursor deep", api + "?" + urlencode({"cursor": deep}), {}),
    ]
    return found


# --- The data manager's search index (DM) ------------------------------------------------------


def _search_indexed() -> None:
    """Index the items queued for the data manager's search (annotation/search.py), as the
    worker's task does within a minute of an import (beat sends it every minute): the items
    this script writes with SQL are all queued by the database's triggers, and a search reads
    queued items one by one. Skipped on a checkout without the search table."""
    try:
        from annotation.search import item_search_index
    except ImportError:
        return
    started = time.perf_counter()
    indexed = item_search_index()
    if indexed:
        print(
            f"  search index: {indexed:,} items ({time.perf_counter() - started:.1f} s)", flush=True
        )


# --- The ratings page's stored counts (RD) -------------------------------------------------------


def _stored_ratings_counts() -> None:
    """The ratings project's import-determined counts (ratings/stored_counts.py), as the worker
    stores them once its page asked (or an import did); skipped on a checkout without them."""
    try:
        from ratings.stored_counts import project_counts_store
    except ImportError:
        return
    import pickle

    from annotation.models import Project
    from ratings import selectors
    from ratings.models import StoredAnalysis

    project = Project.objects.filter(slug=RATINGS_SLUG).first()
    if project is None:
        return
    started = time.perf_counter()
    project_counts_store(project_id=project.pk)
    print(
        f"  stored ratings counts of {project.slug}: {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    # Analyses stored before the page's slim copy existed: the copy the refresh now stores
    # beside each (ratings/services.py, analysis_refresh), made from the stored whole.
    for row in StoredAnalysis.objects.filter(project=project, page=None).exclude(content=None):
        whole = pickle.loads(bytes(row.content))
        page = selectors.analysis_for_storage(whole, page=True)
        StoredAnalysis.objects.filter(pk=row.pk).update(page=page)
        print(
            f"  slim copy of the {row.source} analysis: {len(row.content):,} → {len(page):,} bytes",
            flush=True,
        )


if __name__ == "__main__":
    main()
