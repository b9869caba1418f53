"""rungwise.db.postgresql: with parameters bound on the server, statements carry at most 65,535
of them; Django's batches must fit, or large projects cannot be created in bulk or deleted. The
hot statements are prepared, and a kept connection is checked without a round trip."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from annotation.models import Item, Project
from tests.factories import make_project

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


# Alone it takes about 40 s (the cascade's deletes over every table that refers to items, and
# the deferred foreign-key checks of 70,000 deleted rows when the test's transaction ends); late
# in a whole run it has outlasted the 300 s default. Seen so far: plans the session's one
# connection cached in earlier tests, made on a nearly empty annotation_item, scan the table in
# each of the collector's 700 DELETEs and in the checks; and each of those DELETEs fires
# annotation_item_search_forget_deleted (migration 0015), whose DELETE from
# annotation_itemsearchpending (70,000 rows pending here) was once planned as a nested loop over
# the whole pending table: 3 to 4.6 s a statement. Migration 0023 makes that trigger delete by
# key (tests/annotation/test_search.py checks it scans neither table). On 2026-11-27 a whole
# run still spent about 12 minutes here, nearly all of it in the deferred checks at the end
# (SET CONSTRAINTS ALL IMMEDIATE), where the test alone takes seconds: the test now runs on a
# connection of its own (transactional, the connection closed first), so no plan cached by an
# earlier test is reused. The longer timeout stays until a whole run shows it back near 40 s.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True)
def test_a_project_with_more_rows_than_a_statement_can_bind_is_created_and_deleted(postgres):
    # A connection of its own (the suite's was opened before every earlier test): no plan it
    # cached on nearly empty tables is reused for these 70,000 rows (see above).
    connection.close()
    assert connection.features.uses_server_side_binding
    project = make_project()
    count = 70_000  # > 65,535: one IN list or one INSERT of them all cannot be sent
    Item.objects.bulk_create(
        Item(project=project, external_id=f"x{index}", payload={"text": "t"})
        for index in range(count)
    )
    assert Item.objects.filter(project=project).count() == count
    project.delete()
    assert not Project.objects.filter(pk=project.pk).exists()
    assert not Item.objects.filter(external_id="x1").exists()


def _other_connection():
    """A second connection to the test database, with the project's settings (a new wrapper:
    tests may end it without touching the one the test runs in)."""
    from django.db import connections

    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    return wrapper


def test_the_hot_statements_are_prepared_after_five_runs_on_a_connection(postgres):
    """prepare_threshold is set (Django turns preparing off unless it is): PostgreSQL stops
    parsing and planning a statement the connection keeps sending (benchmarks/README.md)."""
    statement = "SELECT count(*) FROM annotation_item WHERE project_id = %s"
    other = _other_connection()
    try:
        with other.cursor() as cursor:
            for _ in range(6):
                cursor.execute(statement, [1])
            cursor.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                ["SELECT count(*) FROM annotation_item WHERE project_id = $1%"],
            )
            assert cursor.fetchone()[0] == 1
    finally:
        other.close()


def test_a_kept_connection_is_checked_without_a_round_trip_and_a_ended_one_is_found(
    postgres, monkeypatch
):
    """The health check before a request reuses a kept connection: a healthy idle session is
    usable without sending SELECT 1; a session the server ended is unusable (and a request then
    opens a new connection), so a restart of PostgreSQL costs no failed request."""
    from django.db.backends.postgresql.base import DatabaseWrapper as DjangoWrapper

    other = _other_connection()
    try:
        round_trips = []
        real = DjangoWrapper.is_usable

        def counted(self):
            round_trips.append(1)
            return real(self)

        monkeypatch.setattr(DjangoWrapper, "is_usable", counted)
        assert other.is_usable() and round_trips == []
        pid = other.connection.info.backend_pid
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            assert cursor.fetchone()[0] is True
        for _ in range(100):  # until the server's last message reaches the socket
            if not other.is_usable():
                break
            time.sleep(0.02)
        assert not other.is_usable()
        assert round_trips  # something was on the socket: the real check ran, and failed
        other.health_check_enabled, other.health_check_done = True, False
        other.close_if_health_check_failed()
        assert other.connection is None
        with other.cursor() as cursor:  # a new session
            cursor.execute("SELECT pg_backend_pid()")
            assert cursor.fetchone()[0] != pid
    finally:
        other.close()
