"""The historic ratings import's bulk path (ratings/historic_bulk.py, the engine's
annotation/services/historic_bulk.py) on PostgreSQL: it stores exactly what the per-row path
stores (a small file with earlier imports, and ExpliCa's release), leaves every other file to
the per-row path (errors by line), and writes nothing when the import fails."""

from __future__ import annotations

import pytest

from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, ItemStage, Resolution
from imports.models import ImportBatch
from ratings import historic, historic_bulk, importing, services
from tests.ratings.conftest import csv_text, explica_data_dir, make_ratings_project, pairs_csv

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

HEADER = ["pair_id", "order", "connective", "rater", "rating"]
FIRST = csv_text(
    HEADER,
    [
        ["p1", "AB", "so", "r1", "9"], ["p1", "AB", "so", "r2", "8"], ["p1", "BA", "so", "", "3"],
        ["p2", "AB", "because", "r1", "4"], ["p3", "BA", "then", "r3", "1"],
        ["p2", "AB", "because", "", "4"],
    ],
)  # fmt: skip
# A second file (TSV, other column order) adding to item stages of the first.
SECOND = csv_text(
    ["rating", "rater", "connective", "order", "pair_id"],
    [
        ["2", "r3", "so", "AB", "p1"],
        ["7", "r3", "because", "AB", "p2"],
        ["5", "", "so", "BA", "p1"],
    ],
    delimiter="\t",
)


def stored(project):
    """Everything a historic import writes, by item key and file order (not by row id)."""
    key = "item_stage__item__external_id"
    annotations = list(
        Annotation.objects.filter(item_stage__item__project=project)
        .order_by("pk")
        .values_list(key, "external_rater", "payload", "client_info", "version", "is_current",
                     "round", "phase", "annotator_id", "assignment_id", "item_version")
    )  # fmt: skip
    stages = sorted(
        ItemStage.objects.filter(item__project=project, stage__slug="historic").values_list(
            "item__external_id", "stage__slug", "state", "target_count", "submitted_count",
            "leased_count", "random_key", "group_size", "phase", "round",
        )
    )  # fmt: skip
    resolutions = sorted(
        (k, repr(value), *rest)
        for k, value, *rest in Resolution.objects.filter(
            item_stage__item__project=project
        ).values_list(key, "value", "status", "outcome", "n_annotations", "policy", "votes")
    )
    items = sorted(Item.objects.filter(project=project).values_list("external_id", "status"))
    batches = list(
        ImportBatch.objects.filter(project=project)
        .order_by("pk")
        .values_list("filename", "sha256", "content_sha256", "rows_total", "message")
    )
    return annotations, stages, resolutions, items, batches


def project_with_pairs():
    project = make_ratings_project()
    services.pairs_import(project=project, content=pairs_csv(), filename="pairs.csv")
    return project


def import_both(monkeypatch, files):
    """The same files through the bulk path and through the per-row path; both states."""
    states = []
    for bulk in (True, False):
        monkeypatch.setattr(historic, "_bulk_path", lambda bulk=bulk: bulk)
        project = project_with_pairs()
        for name, content in files:
            services.historic_ratings_import(project=project, content=content, filename=name)
        states.append(stored(project))
    return states


def test_both_paths_store_the_same_ratings_counters_and_means(monkeypatch, postgres):
    calls = []
    parse = importing.parse_ratings
    monkeypatch.setattr(
        importing, "parse_ratings", lambda *a, **k: calls.append(1) or parse(*a, **k)
    )
    bulk, per_row = import_both(monkeypatch, [("first.csv", FIRST), ("second.tsv", SECOND)])
    assert len(calls) == 2  # the per-row run only: the bulk run read neither file row by row
    assert bulk == per_row
    annotations, stages, resolutions, items, batches = bulk
    assert len(annotations) == 9 and len(batches) == 3  # the pairs file and two of ratings
    means = {k: value for k, value, *_ in resolutions}
    assert means["p1:AB:so"] == repr((9 + 8 + 2) / 3) and means["p2:AB:because"] == "5.0"


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        (["p9", "AB", "so", "r1", "5"], "", "p9"),  # no such item
        (["p1", "AB", "so", "r5", "12"], "rating", ""),  # off the scale
        (["p1", "AB", "so", "r1", "5"], "rater", "already rated"),  # r1 twice in the file
    ],
)
def test_a_bad_row_is_reported_by_line_and_nothing_is_written(postgres, row, field, message):
    project = project_with_pairs()
    before = stored(project)
    content = csv_text(HEADER, [["p1", "AB", "so", "r1", "9"], ["p2", "BA", "so", "", "2"], row])
    with pytest.raises(ApplicationError) as refused:
        services.historic_ratings_import(project=project, content=content, filename="bad.csv")
    errors = refused.value.extra["errors"]
    assert [error["line"] for error in errors] == [4]
    assert errors[0]["field"] == field or not field
    assert message in errors[0]["message"]
    assert stored(project) == before


def test_a_failure_after_the_bulk_writes_leaves_nothing(monkeypatch, postgres):
    project = project_with_pairs()
    before = stored(project)

    def fail(**kwargs):
        raise RuntimeError("after the writes")

    monkeypatch.setattr(historic.engine, "items_accept", fail)
    with pytest.raises(RuntimeError):
        services.historic_ratings_import(project=project, content=FIRST, filename="first.csv")
    assert stored(project) == before


def test_the_same_ratings_in_another_form_are_refused_by_the_bulk_fingerprint(postgres):
    project = project_with_pairs()
    services.historic_ratings_import(project=project, content=FIRST, filename="first.csv")
    before = stored(project)
    crlf = FIRST.replace("\n", "\r\n")
    with pytest.raises(ApplicationError) as refused:
        services.historic_ratings_import(project=project, content=crlf, filename="again.csv")
    assert "already imported from first.csv" in refused.value.message
    assert stored(project) == before


EXPLICA = explica_data_dir()


@pytest.mark.shared_data
@pytest.mark.skipif(EXPLICA is None, reason="shared ExpliCa data folder not found")
def test_explica_is_stored_identically_by_both_paths(monkeypatch, postgres):
    states = []
    for bulk in (True, False):
        monkeypatch.setattr(historic, "_bulk_path", lambda bulk=bulk: bulk)
        project = make_ratings_project()
        services.explica_import(
            project=project,
            pair_file=EXPLICA / "explica" / "explica_freq_4800.tsv",
            ratings_file=EXPLICA
            / "res"
            / "acceptability"
            / "zeroshot"
            / "accept_res_outlines_gpt-4o_zero.tsv",
        )
        states.append(stored(project)[:4])
    assert len(states[0][0]) == 72_000
    assert states[0] == states[1]


def _plain(text, spaces=True):
    """The bulk path's plain-text rule in Python (ratings/historic_bulk.py, module docstring)."""
    if not spaces and " " in text:
        return False
    return (
        all(" " <= char <= "~" for char in text)
        and '"' not in text
        and "\\" not in text
        and text == text.strip(" ")
        and "  " not in text
    )


def test_the_plain_text_expressions_accept_exactly_plain_text(postgres):
    from django.db import connection

    texts = [chr(code) for code in range(1, 256)]
    texts += [f"a{char}b" for char in texts] + [f"so{char}" for char in texts]
    texts += ["", " ", "so", "as a result", "as  a result", " so", "so ", "a b c", "x\ty"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t, t ~ %s, t ~ %s FROM unnest(%s::text[]) AS t",
            [historic_bulk._PLAIN, historic_bulk._NO_SPACE, texts],
        )
        answers = {text: (plain, no_space) for text, plain, no_space in cursor.fetchall()}
    assert len(answers) == len(set(texts))
    wrong = [
        text
        for text, (plain, no_space) in answers.items()
        if (plain, no_space) != (_plain(text), _plain(text, spaces=False))
    ]
    assert wrong == []


def test_the_bulk_writes_check_their_foreign_keys_once_and_store_what_the_per_row_checks_do(
    monkeypatch, postgres
):
    """As a superuser (this suite's) the writes run with session_replication_role = replica
    after the stage and the items are locked; as a role that may not set it, PostgreSQL checks
    every row; both store the same rows (annotation/services/common.py,
    ``foreign_keys_checked_once``)."""
    from django.db import connection

    from annotation.services import may_skip_row_checks

    monkeypatch.setattr(historic, "_bulk_path", lambda: True)
    states = []
    queries: list[str] = []

    def record(execute, sql, params, many, context):
        queries.append(str(sql))
        return execute(sql, params, many, context)

    for plain_role in (False, True):
        project = project_with_pairs()
        with connection.cursor() as cursor:
            if plain_role:
                cursor.execute("CREATE ROLE rungwise_ratings_plain NOSUPERUSER")
                cursor.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO rungwise_ratings_plain")
                cursor.execute(
                    "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO rungwise_ratings_plain"
                )
                cursor.execute("SET ROLE rungwise_ratings_plain")
        try:
            assert may_skip_row_checks() is not plain_role
            queries.clear()
            with connection.execute_wrapper(record):
                for name, content in [("first.csv", FIRST), ("second.tsv", SECOND)]:
                    services.historic_ratings_import(
                        project=project, content=content, filename=name
                    )
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET ROLE")
        skipped = [sql for sql in queries if "session_replication_role = replica" in sql]
        locks = [sql for sql in queries if "FOR KEY SHARE OF i" in sql]
        assert (len(skipped), len(locks)) == ((0, 0) if plain_role else (2, 2))
        states.append(stored(project)[:3])
    assert states[0] == states[1]
    assert len(states[0][0]) == 9


def test_an_item_gone_before_the_writes_refuses_the_import(postgres):
    """The check before the writes locks every touched item; one that is no longer there
    (removed by another session after the first checks) refuses the import."""
    from django.db import connection, transaction

    from annotation.services import historic_bulk as engine_bulk

    project = project_with_pairs()
    services.historic_ratings_import(project=project, content=FIRST, filename="first.csv")
    stage = project.stages.get(slug="historic")
    item = Item.objects.filter(project=project).first()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE {engine_bulk._TOUCHED} ON COMMIT DROP AS"
            " SELECT %s::bigint AS item_id UNION ALL SELECT %s::bigint",
            [item.pk, item.pk + 10_000_000],
        )
        with pytest.raises(ApplicationError, match="Some items were removed"):
            engine_bulk._references_lock(cursor, stage=stage)
        cursor.execute(f"DELETE FROM {engine_bulk._TOUCHED} WHERE item_id <> %s", [item.pk])
        engine_bulk._references_lock(cursor, stage=stage)  # the item there: locked, no error
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND mode = 'RowShareLock'"
            " AND relation = %s::regclass AND pid = pg_backend_pid()",
            [Item._meta.db_table],
        )
        assert cursor.fetchone()[0] == 1
