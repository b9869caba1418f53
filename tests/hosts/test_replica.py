"""Researchers' reads off the primary (rungwise/replica.py, rungwise/dbrouter.py), against a real
PostgreSQL streaming replica of the test run's server: ``pg_basebackup -R`` from it, started on
another port. Replay is paused on the replica (``pg_wal_replay_pause()``) so that a page read
there shows yesterday's rows and says so, while everything that must be current (sign-in,
sessions, memberships, every write) stays on the primary; and a replica that is stopped or
trails by more than the bound is not read at all."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Item, Membership, Project, Role
from rungwise import replica
from rungwise.dbrouter import ReplicaRouter
from tests.factories import make_items, make_member, make_project, make_user
from tests.hosts.conftest import settings_for
from tests.processes import free_port, wait_until

#: Bound of the tests that read the replica: far above any lag a paused replay builds up while
#: a test runs, so those pages are read there whatever the machine's load.
GENEROUS_BOUND = 24 * 3600.0


# --- Settings (no server needed) -----------------------------------------------------------


def test_replica_url_adds_the_alias_and_the_router():
    primary = "postgres://app@db.internal:5432/rungwise"
    configured = settings_for(
        DATABASE_URL=primary,
        RUNGWISE_REPLICA_URL="postgres://reader@replica.internal:5432/rungwise",
        RUNGWISE_REPLICA_MAX_LAG="12.5",
    )
    copy = configured["DATABASES"]["replica"]
    assert copy["HOST"] == "replica.internal" and copy["USER"] == "reader"
    assert copy["ENGINE"] == configured["DATABASES"]["default"]["ENGINE"]
    assert copy["TEST"] == {"MIRROR": "default"}
    assert copy["OPTIONS"]["connect_timeout"] == 2
    assert configured["DATABASE_ROUTERS"] == ["rungwise.dbrouter.ReplicaRouter"]
    assert configured["REPLICA_MAX_LAG"] == 12.5

    plain = settings_for(DATABASE_URL=primary, RUNGWISE_REPLICA_URL="")
    assert set(plain["DATABASES"]) == {"default"}
    assert "DATABASE_ROUTERS" not in plain


def test_a_replica_needs_postgresql():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="RUNGWISE_REPLICA_URL"):
        settings_for(DATABASE_URL="", RUNGWISE_REPLICA_URL="postgres://replica/rungwise")


def test_the_router_writes_to_the_primary_and_reads_there_outside_marked_views():
    router = ReplicaRouter()
    assert router.db_for_write(Item) == "default"
    assert router.db_for_read(Item) == "default"
    with replica.reading_from_replica():
        assert router.db_for_read(Item) == "replica"
        assert router.db_for_read(Project) == "replica"
        assert router.db_for_write(Item) == "default"
        # Who the visitor is and what they may see: always the primary.
        assert router.db_for_read(Session) == "default"
        assert router.db_for_read(Membership) == "default"
        assert router.db_for_read(get_user_model()) == "default"
    assert router.allow_migrate("default", "annotation") is True
    assert router.allow_migrate("replica", "annotation") is False


# --- A real streaming replica ---------------------------------------------------------------


class Standby:
    """A hot standby of the test run's PostgreSQL (scripts/with-services.sh), on its own port."""

    def __init__(self) -> None:
        self.bin = Path(os.environ["RUNGWISE_PG_BIN"])
        self.port = free_port()
        self.as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.directory = Path(tempfile.mkdtemp(prefix="rungwise-standby-"))
        self.data = self.directory / "data"
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        primary = urlsplit(os.environ["DATABASE_URL"])
        with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
            # A hot standby refuses to start with fewer connections than its primary allows.
            max_connections = connection.execute("SHOW max_connections").fetchone()[0]
        self._run(
            "pg_basebackup",
            *(
                "-h",
                primary.hostname,
                "-p",
                str(primary.port),
                "-U",
                primary.username or "postgres",
            ),
            *("-D", str(self.data), "-R", "-X", "stream", "-c", "fast"),
        )
        self.options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            f"-c max_connections={max_connections} -c hot_standby=on"
        )
        self.start()

    def _run(self, program: str, *args: str) -> None:
        result = subprocess.run(
            [*self.as_postgres, str(self.bin / program), *args], capture_output=True, text=True
        )
        if result.returncode != 0:
            raise RuntimeError(f"{program} failed: {result.stderr[-2000:]}")

    def start(self) -> None:
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.directory / "server.log"),
            "-w", "-o", self.options, "start",
        )  # fmt: skip

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def execute(self, sql: str, database: str) -> list[tuple]:
        primary = urlsplit(os.environ["DATABASE_URL"])
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=primary.username, dbname=database,
            autocommit=True,
        ) as connection:  # fmt: skip
            cursor = connection.execute(sql)
            return cursor.fetchall() if cursor.description else []

    def remove(self) -> None:
        subprocess.run(
            [*self.as_postgres, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m",
             "immediate", "stop"],
            capture_output=True,
        )  # fmt: skip
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="module")
def standby(django_db_setup):
    """A streaming replica of the test run's server (its test database included), for the
    module, and the alias ``replica`` naming it (the test database, on the standby's port), as
    ``RUNGWISE_REPLICA_URL`` makes it (before any test's database set-up, which checks the
    aliases a test names)."""
    if not {"RUNGWISE_PG_BIN", "DATABASE_URL"} <= set(os.environ):
        pytest.skip("needs the PostgreSQL of scripts/with-services.sh (RUNGWISE_PG_BIN)")
    server = Standby()
    default = connections["default"].settings_dict
    connections.settings["replica"] = {
        **default,
        "HOST": "127.0.0.1",
        "PORT": str(server.port),
        "OPTIONS": {**default["OPTIONS"], "connect_timeout": 2},
        "TEST": {**default["TEST"], "MIRROR": "default"},
    }
    yield server
    connections["replica"].close()
    del connections["replica"]
    del connections.settings["replica"]
    server.remove()


#: The tests that read the standby: committed rows (the replica sees only those) on the
#: primary, and the replica alias allowed.
on_both = pytest.mark.django_db(transaction=True, databases=["default", "replica"])


@pytest.fixture
def site_with_replica(standby, settings):
    """This process as a site whose ``RUNGWISE_REPLICA_URL`` names ``standby``: its router, the
    bound far away, no earlier look at the replica remembered."""
    settings.DATABASE_ROUTERS = ["rungwise.dbrouter.ReplicaRouter"]
    settings.REPLICA_MAX_LAG = GENEROUS_BOUND
    replica.forget_replica_state()
    yield standby
    replica.forget_replica_state()
    if standby.execute("SELECT pg_is_wal_replay_paused()", "postgres")[0][0]:
        standby.execute("SELECT pg_wal_replay_resume()", "postgres")


def _database() -> str:
    return connections["default"].settings_dict["NAME"]


def _replica_has(standby: Standby, sql: str) -> bool:
    return bool(standby.execute(sql, _database()))


def _paused_after(standby: Standby, project: Project) -> None:
    """Wait until the standby holds ``project``'s items, then stop its replay there."""
    wait_until(
        lambda: _replica_has(
            standby, f"SELECT 1 FROM annotation_item WHERE project_id = {project.pk} LIMIT 1"
        ),
        timeout=60,
        what="the replica replaying the project's items",
    )
    standby.execute("SELECT pg_wal_replay_pause()", "postgres")
    wait_until(
        lambda: (
            standby.execute("SELECT pg_get_wal_replay_pause_state()", "postgres")[0][0] == "paused"
        ),
        timeout=60,
        what="the replica's replay paused",
    )


def _items_page(client, project: Project):
    return client.get(reverse("studio:items", args=[project.slug]))


@pytest.mark.postgres
@on_both
def test_a_marked_page_reads_the_replica_and_says_how_old_its_data_is(site_with_replica, client):
    standby = site_with_replica
    project = make_project()
    make_items(project, 3, prefix="early")
    _paused_after(standby, project)

    # After the pause: a new item, a new researcher, a new session. Only the item may be
    # missing from the page: the membership and the session are read from the primary.
    make_items(project, 1, prefix="late")
    researcher = make_member(project, Role.RESEARCHER)
    client.force_login(researcher)

    with CaptureQueriesContext(connections["replica"]) as on_replica:
        response = _items_page(client, project)
    assert response.status_code == 200
    page = response.content.decode()
    assert "early-00000" in page
    assert "late-00000" not in page, "the page read the primary, not the paused replica"
    assert "Data as of" in page and 'id="replica-note"' in page
    statements = [query["sql"].lstrip().split()[0].upper() for query in on_replica.captured_queries]
    assert "SELECT" in statements
    assert not {"INSERT", "UPDATE", "DELETE"} & set(statements)
    assert not any("django_session" in query["sql"] for query in on_replica.captured_queries)
    assert not any("annotation_membership" in query["sql"] for query in on_replica.captured_queries)

    # The agreement dashboards are marked too; an unmarked page of the same project reads the
    # primary, and says nothing.
    dashboard = client.get(reverse("agreement:dashboard", args=[project.slug]))
    assert dashboard.status_code == 200
    assert 'id="replica-note"' in dashboard.content.decode()
    home = client.get(reverse("annotation:project", args=[project.slug]))
    assert home.status_code == 200
    assert 'id="replica-note"' not in home.content.decode()


@pytest.mark.postgres
@on_both
def test_writes_inside_a_marked_view_go_to_the_primary(site_with_replica):
    standby = site_with_replica
    project = make_project()
    make_items(project, 1)
    _paused_after(standby, project)
    with replica.reading_from_replica():
        # A hot standby refuses writes outright: these only succeed on the primary.
        make_items(project, 1, prefix="written-inside")
        user = make_user()
        Project.objects.filter(pk=project.pk).update(name="Renamed inside")
        assert Item.objects.filter(project=project).count() == 1  # read on the replica
    assert Item.objects.filter(project=project).count() == 2
    assert Project.objects.get(pk=project.pk).name == "Renamed inside"
    assert user.pk is not None
    assert not _replica_has(
        standby, "SELECT 1 FROM annotation_item WHERE external_id LIKE 'written-inside%'"
    )


@pytest.mark.postgres
@on_both
def test_a_replica_trailing_beyond_the_bound_is_not_read(site_with_replica, client, settings):
    standby = site_with_replica
    project = make_project()
    make_items(project, 2, prefix="early")
    _paused_after(standby, project)
    make_items(project, 1, prefix="late")
    client.force_login(make_member(project, Role.RESEARCHER))

    settings.REPLICA_MAX_LAG = 1.0

    def trails_beyond_bound() -> bool:
        replica.forget_replica_state()
        state = replica.replica_state()
        return state.lag_seconds is not None and state.lag_seconds > settings.REPLICA_MAX_LAG

    wait_until(trails_beyond_bound, timeout=60, what="the paused replica trailing beyond 1 s")
    assert not replica.replica_state().usable

    page = _items_page(client, project).content.decode()
    assert "late-00000" in page
    assert 'id="replica-note"' not in page


@pytest.mark.postgres
@on_both
def test_a_stopped_replica_is_not_read(site_with_replica, client):
    standby = site_with_replica
    project = make_project()
    make_items(project, 2, prefix="early")
    client.force_login(make_member(project, Role.RESEARCHER))
    standby.stop()
    try:
        # The next look finds no replica: the page reads the primary.
        replica.forget_replica_state()
        page = _items_page(client, project)
        assert page.status_code == 200
        assert "early-00000" in page.content.decode()
        assert 'id="replica-note"' not in page.content.decode()
        assert not replica.replica_state().usable
    finally:
        standby.start()


@pytest.mark.postgres
@on_both
def test_a_replica_failing_during_a_request_hands_the_page_to_the_primary(
    site_with_replica, client, settings
):
    standby = site_with_replica
    # The process trusts its look at the replica, made while it ran, for the whole test.
    settings.REPLICA_LAG_CACHE_SECONDS = 3600.0
    project = make_project()
    make_items(project, 2, prefix="early")
    client.force_login(make_member(project, Role.RESEARCHER))
    _paused_after(standby, project)
    replica.forget_replica_state()
    assert replica.replica_state().usable  # the look before the replica goes away
    standby.stop()
    try:
        page = _items_page(client, project)
        assert page.status_code == 200
        assert "early-00000" in page.content.decode()
        assert 'id="replica-note"' not in page.content.decode()
        state = replica.replica_state()
        assert not state.usable and "during a request" in state.reason
    finally:
        standby.start()


@pytest.mark.postgres
@on_both
def test_the_agreement_tabs_hand_written_reads_come_from_the_replica(site_with_replica, client):
    """The vote COPY (agreement/votes.py) and the stranded-items check (annotation/stranding.py,
    a stage with a rule) are raw SQL: on a marked page they read the replica the router picks,
    so the paused replica's older rows show, with the note; elsewhere they read the primary."""
    from agreement.votes import stage_votes
    from annotation.api import stages_stranded
    from annotation.models import ItemStage
    from tests.factories import annotate_stage, make_verify_stage

    standby = site_with_replica
    project = make_project()
    stage = make_verify_stage(project, overlap=2, eligibility=[{"rule": "not_author"}])
    make_items(project, 3, prefix="early")
    first, second = make_member(project), make_member(project)
    assert annotate_stage(stage, [first, second], lambda person, item: "keep") == 6
    # Only the first may take an item the second wrote: two answers needed, one person left.
    make_items(project, 1, prefix="stuck")
    Item.objects.filter(project=project, external_id__startswith="stuck").update(author=second)
    # Replayed in commit order: once the author is there, the answers before it are too.
    wait_until(
        lambda: _replica_has(
            standby,
            "SELECT 1 FROM annotation_item WHERE external_id = 'stuck-00000'"
            " AND author_id IS NOT NULL",
        ),
        timeout=60,
        what="the replica holding the stuck item's author",
    )
    _paused_after(standby, project)

    # After the pause: one more item answered by both, another stuck one.
    make_items(project, 1, prefix="late")
    annotate_stage(stage, [first, second], lambda person, item: "keep")
    make_items(project, 1, prefix="stuck-late")
    Item.objects.filter(project=project, external_id="stuck-late-00000").update(author=second)
    client.force_login(make_member(project, Role.RESEARCHER))

    assert len(stage_votes(stage).items) == 8  # the primary, outside a marked view
    with replica.reading_from_replica():
        assert len(stage_votes(stage).items) == 6  # the replica, paused before the late ones

    with CaptureQueriesContext(connections["replica"]) as on_replica:
        response = client.get(reverse("agreement:dashboard", args=[project.slug]))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="replica-note"' in page and 'id="stranded"' in page
    assert "Verify: 1 item needs more people" in page
    assert "stuck-00000" in page and "stuck-late-00000" not in page
    assert any(ItemStage._meta.db_table in query["sql"] for query in on_replica.captured_queries)

    # Outside a marked page (the Setup tab, the item page) the same check reads the primary.
    (warning,) = stages_stranded(project)
    assert [item.external_id for item in warning.items] == ["stuck-00000", "stuck-late-00000"]
