"""The shared web helpers (annotation/web.py): the CSV download every app's tables use, the
spreadsheet-safe cell rule it shares with the release files, and paging."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from django.test import RequestFactory
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from annotation.web import CSV_LINE_END, csv_response, csv_text_sql, page_of, spreadsheet_safe


def read_csv(response) -> list[dict[str, str]]:
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_response_spells_every_datetime_in_utc_with_its_offset():
    """The one CSV download helper (annotation.web.csv_response, used by every app's
    downloads): naive times (SQLite's) are taken as UTC, aware ones converted to UTC."""
    rows = [
        [datetime(2026, 3, 1, 12, 0)],
        [datetime(2026, 3, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))],
    ]
    cells = [row["at"] for row in read_csv(csv_response("t.csv", ["at"], rows))]
    assert cells == ["2026-03-01T12:00:00+00:00", "2026-03-01T12:00:00+00:00"]


def test_csv_response_is_a_bom_the_header_and_safe_cells_as_an_attachment():
    response = csv_response(
        "t.csv",
        ["text", "number", "empty", "flag"],
        [["=1+1", -0.25, None, True], ["-3", 3, "", False]],
    )
    assert response["Content-Disposition"] == 'attachment; filename="t.csv"'
    body = b"".join(response.streaming_content).decode("utf-8")
    assert body == "\ufefftext,number,empty,flag\r\n'=1+1,-0.25,,True\r\n-3,3,,False\r\n"


def test_spreadsheet_safe_quotes_formulas_and_leaves_numbers():
    assert spreadsheet_safe('=HYPERLINK("x")') == '\'=HYPERLINK("x")'
    assert spreadsheet_safe("@cmd") == "'@cmd"
    assert spreadsheet_safe("\tx") == "'\tx"
    assert spreadsheet_safe("-0.25") == "-0.25"
    assert spreadsheet_safe("+1e-5") == "+1e-5"
    assert spreadsheet_safe("plain") == "plain"
    assert spreadsheet_safe("") == ""


def test_page_of_falls_back_to_the_first_and_last_page():
    factory = RequestFactory()
    items = list(range(120))
    assert list(page_of(factory.get("/"), items, 50).object_list) == items[:50]
    assert list(page_of(factory.get("/?page=oops"), items, 50).object_list) == items[:50]
    assert list(page_of(factory.get("/?page=9"), items, 50).object_list) == items[100:]


def test_the_release_writers_import_the_cell_rule_without_django_set_up():
    """releases/writers.py is used by scripts that never set Django up
    (benchmarks/io_files_only.py): importing the shared cell rule must not need settings."""
    root = Path(__file__).resolve().parents[2]
    environment = {
        key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"
    }
    code = "import releases.writers as w; print(w.spreadsheet_safe('=x'))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=environment, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "'=x"


@pytest.mark.postgres
@pytest.mark.django_db
@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))
@example("")
@example('a,b "c"')
@example("line\nbreak")
@example("carriage\rreturn")
@example(" leading space")
@example('"')
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_sql_csv_cell_is_the_one_csv_writer_writes(postgres, text):
    """``csv_text_sql`` quotes as ``csv_response``'s writer does (lines PostgreSQL spells for
    a download equal those Python would write)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {csv_text_sql('x.t')}, {csv_text_sql('NULL::text')} "
            "FROM (SELECT %s::text AS t) x",
            [text],
        )
        cell, empty = cursor.fetchone()
    out = io.StringIO()
    csv.writer(out).writerow([text, "", None])
    assert f"{cell},{empty},{empty}{CSV_LINE_END}" == out.getvalue()
