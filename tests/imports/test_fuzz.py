"""Fuzzing every importer with malformed files: the generic item importer (CSV, JSON Lines, JSON;
the Django-free core, the services, the upload page and the API), the ratings importer
(``ratings/importing.py`` and its services), and the plug-ins' uploads read whole: edge lists
(``graphs/dsep.py``: the Graphs tab and the d-separation API, as a file or a JSON body) and
narratives files (``narratives/reader.py``: the Narratives tab).

Whatever the file holds, the answer is a located error or a clean import: never an exception
(a 500), never a value the database would refuse (NUL, an unpaired surrogate, a number JSON
cannot hold), and a refused file leaves every table as it was. The explicit regression tests
after the fuzzers pin each defect the fuzzers found.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from annotation import services as engine
from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, ItemRevision, ItemStage, Role
from imports.core import (
    FieldSpec,
    ImportRejected,
    RowSchema,
    generic_schema,
    validate_stream,
)
from imports.core.pipeline import iter_clean_batches
from imports.core.readers import CSV_FIELD_LIMIT
from imports.core.report import RowError
from imports.models import ImportBatch
from imports.services import import_batch_create, import_batch_run
from ratings import importing
from ratings import services as ratings_services
from ratings.connectives import EXPLICA_CONNECTIVES
from ratings.models import ModelRun, SentencePair
from review.causalt5k.schema import CAUSALT5K_SCHEMA
from tests.factories import PASSWORD, make_member, make_project, make_verify_stage
from tests.ratings.conftest import make_ratings_project, pairs_csv

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
FUZZ_DB = settings(FUZZ, max_examples=30)


# --- What malformed files are made of --------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """JSON text written as it is (a number too big for Python, NaN, 10,000 nested lists)."""

    text: str


def nested(depth: int) -> Raw:
    return Raw("[" * depth + "]" * depth)


NASTY_TEXT = st.sampled_from(
    [
        "a\x00b",  # PostgreSQL refuses NUL in text and JSON
        "\ud800",  # an unpaired surrogate: not Unicode, cannot be encoded
        "x\udfffy",
        "\x1b[31mred\x1b[0m",  # terminal escapes
        "\u202eevil",  # a right-to-left override
        "\x07\x08\x0b\x0c\x7f\x85",
        "\ufeffBOM inside",
        'quote " inside',
        "comma, semicolon; tab\tend",
        "line\nbreak\r\nand CR\r",
        "é ü 漢字",
        "=1+1",
        "",
        "   ",
    ]
)
HUGE_TEXT = st.builds(
    lambda char, size: char * size,
    st.sampled_from(["x", "é", '"', "\x00"]),
    st.sampled_from([131_073, 200_000]),
)
TEXT = st.one_of(st.text(max_size=12), NASTY_TEXT, HUGE_TEXT)
NASTY_NUMBER = st.sampled_from(
    [
        Raw("1" * 4301),
        Raw("-" + "9" * 5000),
        Raw("1e400"),
        Raw("-1e400"),
        Raw("1" + "0" * 400 + ".5"),
        Raw("NaN"),
        Raw("Infinity"),
        Raw("-Infinity"),
        Raw("1e-400"),
    ]
)
DEEP = st.sampled_from(
    [nested(65), nested(1_000), nested(10_000), Raw('{"a":' * 200 + "1" + "}" * 200)]
)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT)
VALUE = st.recursive(
    st.one_of(SCALAR, NASTY_NUMBER, DEEP),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(TEXT, children, max_size=3)
    ),
    max_leaves=6,
)
KEYS = st.one_of(
    st.sampled_from(["id", "external_id", "text", "scenario", "pearl_level", "label", "variables",
                     "final_score", "claim"]),
    TEXT,
)  # fmt: skip


def to_json(value, ascii_only: bool) -> str:
    """JSON text for a value that may hold ``Raw`` pieces."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                f"{to_json(str(key), ascii_only)}:{to_json(item, ascii_only)}"
                for key, item in value.items()
            )
            + "}"
        )
    if isinstance(value, list):
        return "[" + ",".join(to_json(item, ascii_only) for item in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


@st.composite
def records(draw):
    record = draw(st.dictionaries(KEYS, VALUE, max_size=5))
    if draw(st.booleans()):
        record.setdefault("id", draw(st.one_of(st.just("a1"), TEXT, NASTY_NUMBER)))
    return record


def encode(text: str, how: str) -> bytes:
    if how == "latin-1":
        return text.encode("latin-1", errors="replace")
    if how == "utf-16":
        return text.encode("utf-16", errors="surrogatepass")
    return text.encode("utf-8", errors="surrogatepass")


@st.composite
def damaged(draw, data: bytes) -> bytes:
    """The file as written, or cut off, prefixed with a BOM, or with stray bytes inside."""
    how = draw(
        st.sampled_from(
            ["as is", "truncate", "bom", "bom twice", "latin-1 byte", "nul", "empty", "cr"]
        )
    )
    if how == "truncate" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if how == "bom":
        return b"\xef\xbb\xbf" + data
    if how == "bom twice":
        return b"\xef\xbb\xbf\xef\xbb\xbf" + data
    if how == "latin-1 byte":
        at = draw(st.integers(0, len(data)))
        return data[:at] + b"caf\xe9" + data[at:]
    if how == "nul":
        at = draw(st.integers(0, len(data)))
        return data[:at] + b"\x00" + data[at:]
    if how == "empty":
        return b""
    if how == "cr":
        return data.replace(b"\n", b"\r")
    return data


@st.composite
def json_files(draw):
    rows = draw(st.lists(st.one_of(records(), VALUE), max_size=4))
    ascii_only = draw(st.booleans())
    fmt = draw(st.sampled_from(["jsonl", "json", "json-wrapped"]))
    if fmt == "jsonl":
        text = "".join(to_json(row, ascii_only) + "\n" for row in rows)
    elif fmt == "json":
        text = to_json(rows, ascii_only)
    else:
        text = to_json({"metadata": draw(VALUE), "items": rows}, ascii_only)
    how = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "latin-1", "utf-16"]))
    return ("jsonl" if fmt == "jsonl" else "json"), draw(damaged(encode(text, how)))


@st.composite
def csv_files(draw, columns=KEYS):
    header = draw(st.lists(columns, min_size=0, max_size=5))
    width = len(header)
    rows = draw(
        st.lists(
            st.lists(st.one_of(TEXT, st.sampled_from(["[" * 70 + "]" * 70, "1" * 4400, "1e400",
                                                       '{"a": "\\u0000"}', '["\\ud800"]'])),
                     min_size=max(width - 1, 0), max_size=width + 1),
            max_size=4,
        )
    )  # fmt: skip
    out = io.StringIO()
    writer = csv.writer(out, delimiter=draw(st.sampled_from([",", ";", "\t"])), lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    how = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "latin-1", "utf-16"]))
    return "csv", draw(damaged(encode(out.getvalue(), how)))


ANY_FILE = st.one_of(json_files(), csv_files())


# --- What "storable" means --------------------------------------------------------------------


def assert_storable(value) -> None:
    """What PostgreSQL takes in a jsonb or text column: finite numbers, valid Unicode, no NUL."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    text.encode("utf-8")  # no unpaired surrogate

    def no_nul(part) -> None:
        if isinstance(part, str):
            assert "\x00" not in part
        elif isinstance(part, dict):
            for key, item in part.items():
                no_nul(key)
                no_nul(item)
        elif isinstance(part, list):
            for item in part:
                no_nul(item)

    no_nul(value)


def assert_clean_error(error: RowError) -> None:
    """An error a person can read and the database can store: located, no raw control
    characters (they are shown escaped), valid Unicode."""
    data = error.to_dict()
    assert_storable(data)
    for key in ("message", "field", "found", "expected"):
        text = data[key] or ""
        assert not any(ord(char) < 32 or 0x7F <= ord(char) < 0xA0 for char in text), (key, text)
    assert error.message


def counts() -> tuple[int, ...]:
    return (
        Item.objects.count(),
        ItemStage.objects.count(),
        ItemRevision.objects.count(),
        Annotation.objects.count(),
        SentencePair.objects.count(),
        ModelRun.objects.count(),
    )


# --- The Django-free core ---------------------------------------------------------------------


@FUZZ
@given(ANY_FILE, st.sampled_from(["generic", "causalt5k"]))
def test_core_reports_or_accepts_storable_rows_for_any_file(case, schema_name):
    fmt, data = case
    schema = generic_schema() if schema_name == "generic" else CAUSALT5K_SCHEMA
    report = validate_stream(io.BytesIO(data), fmt=fmt, schema=schema)
    for error in report.errors:
        assert_clean_error(error)
    if report.ok:
        for batch in iter_clean_batches(
            io.BytesIO(data), fmt=fmt, schema=schema, expected_sha256=report.sha256
        ):
            for row in batch:
                assert_storable(row.data)
    else:
        with pytest.raises(ImportRejected):
            for _ in iter_clean_batches(io.BytesIO(data), fmt=fmt, schema=schema):
                pass


# --- Through the services, the upload page and the API ---------------------------------------


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.mark.django_db
@FUZZ_DB
@given(ANY_FILE, st.sampled_from(["reject", "update"]), st.sampled_from(["rows", "release"]))
def test_service_imports_all_or_nothing_for_any_file(media, case, policy, layout):
    fmt, data = case
    project = make_project()
    make_verify_stage(project)
    before = counts()
    try:
        batch = import_batch_create(
            project=project,
            user=None,
            fileobj=io.BytesIO(data),
            filename=f"fuzz.{fmt}",
            options={"duplicate_policy": policy, "layout": layout},
        )
    except ApplicationError:
        assert counts() == before
        return
    batch = import_batch_run(batch_id=batch.pk)
    assert batch.status in (ImportBatch.Status.SUCCEEDED, ImportBatch.Status.FAILED)
    assert "internal error" not in batch.message, batch.message
    if batch.status == ImportBatch.Status.FAILED:
        assert counts() == before
        assert (batch.error_count > 0 and batch.errors) or "holds no rows" in batch.message
        for error in batch.errors:
            assert_clean_error(RowError.from_dict(error))
    else:
        for item in Item.objects.filter(project=project):
            assert_storable(item.payload)


OPTION = st.one_of(
    st.just(""),
    st.text(max_size=8),
    NASTY_TEXT.filter(lambda t: "\ud800" not in t and "\udfff" not in t),
)


@pytest.fixture
def admin_clients(db, media, settings):
    settings.RUNGWISE_IMPORT_INLINE_MAX_BYTES = 1 << 26  # every fuzzed file runs inline
    project = make_project()
    make_verify_stage(project)
    admin = make_member(project, Role.ADMIN)
    page = Client()
    assert page.login(username=admin.username, password=PASSWORD)
    api = APIClient()
    api.force_authenticate(admin)
    return project, page, api


@pytest.mark.django_db
@FUZZ_DB
@given(
    ANY_FILE,
    st.fixed_dictionaries(
        {
            "duplicate_policy": OPTION,
            "layout": OPTION,
            "format": OPTION,
            "group_field": OPTION,
            "purpose_field": OPTION,
        }
    ),
    st.sampled_from(["page", "api"]),
    st.sampled_from(["fuzz.csv", "fuzz.jsonl", "fuzz.json", "a\x00b.csv", "\x1b.json"]),
)
def test_upload_page_and_api_answer_4xx_or_import_for_any_file(admin_clients, case, form, via, filename):  # fmt: skip
    project, page, api = admin_clients
    before = counts()
    body = {key: value for key, value in form.items() if value or via == "page"}
    body["file"] = SimpleUploadedFile(filename, case[1])
    if via == "page":
        response = page.post(f"/projects/{project.slug}/imports/", body)
        assert response.status_code in (200, 302, 400, 413), response.status_code
    else:
        response = api.post(f"/api/projects/{project.slug}/imports/", body, format="multipart")
        assert response.status_code in (201, 202, 400, 413), response.status_code
    for batch in ImportBatch.objects.filter(project=project):
        assert batch.status in (ImportBatch.Status.SUCCEEDED, ImportBatch.Status.FAILED)
        assert "internal error" not in batch.message, batch.message
        if batch.status == ImportBatch.Status.FAILED:
            assert counts() == before
        ImportBatch.objects.filter(pk=batch.pk).delete()
        Item.objects.filter(project=project).delete()


# --- The ratings importer ---------------------------------------------------------------------

RATING_COLUMNS = st.one_of(
    st.sampled_from(["pair_id", "sentence_a", "sentence_b", "subset", "origin", "flags", "purpose",
                     "connective", "order", "expected_min", "expected_max", "rating", "ratings",
                     "rater", "choice"]),
    TEXT,
)  # fmt: skip


@st.composite
def rating_files(draw):
    if draw(st.booleans()):
        _, data = draw(csv_files(RATING_COLUMNS))
        return "fuzz.csv", data
    rows = draw(
        st.lists(st.one_of(st.dictionaries(RATING_COLUMNS, VALUE, max_size=6), VALUE), max_size=4)
    )
    ascii_only = draw(st.booleans())
    text = "".join(to_json(row, ascii_only) + "\n" for row in rows)
    how = draw(st.sampled_from(["utf-8", "utf-8", "latin-1"]))
    return "fuzz.jsonl", draw(damaged(encode(text, how)))


def assert_clean_rejection(rejected: importing.ImportRejected) -> None:
    assert rejected.errors and rejected.error_count >= len(rejected.errors)
    for error in rejected.errors:
        assert_storable(error.to_dict())
    assert_storable(str(rejected))


@FUZZ
@given(rating_files())
def test_ratings_reader_and_parsers_reject_or_accept_any_file(case):
    filename, data = case
    try:
        rows = importing.read_rows(data, filename)
    except importing.ImportRejected as rejected:
        assert_clean_rejection(rejected)
        return
    for _, row in rows:
        assert_storable(row)
    for parse in (
        lambda: importing.parse_pairs(rows, EXPLICA_CONNECTIVES),
        lambda: importing.parse_ratings(rows, EXPLICA_CONNECTIVES, scale=(1, 10)),
        lambda: importing.parse_model_answers(
            rows, EXPLICA_CONNECTIVES, scale=(1, 10), known_items=set(), known_pairs=set()
        ),
    ):
        try:
            parse()
        except importing.ImportRejected as rejected:
            assert_clean_rejection(rejected)


@pytest.fixture
def ratings_project(db):
    project = make_ratings_project()
    ratings_services.pairs_import(project=project, content=pairs_csv(), filename="pairs.csv")
    return project


@pytest.mark.django_db
@FUZZ_DB
@given(rating_files(), st.sampled_from(["pairs", "ratings", "model"]))
def test_ratings_services_import_all_or_nothing_for_any_file(ratings_project, case, what):
    filename, data = case
    before = counts()
    try:
        if what == "pairs":
            ratings_services.pairs_import(project=ratings_project, content=data, filename=filename)
        elif what == "ratings":
            ratings_services.historic_ratings_import(
                project=ratings_project, content=data, filename=filename, allow_duplicate_file=True
            )
        else:
            ratings_services.model_run_import(
                project=ratings_project, name="fuzz", content=data, filename=filename, replace=True
            )
    except ApplicationError as error:
        assert counts() == before
        assert_storable({"message": error.message, "extra": error.extra})
        return
    for item in Item.objects.filter(project=ratings_project):
        assert_storable(item.payload)
    for pair in SentencePair.objects.filter(project=ratings_project):
        assert_storable([pair.pair_id, pair.sentence_a, pair.sentence_b, pair.extra, pair.flags])
    for run in ModelRun.objects.filter(project=ratings_project):
        assert_storable(run.answers)


@pytest.mark.django_db
@FUZZ_DB
@given(rating_files(), st.sampled_from(["pairs", "ratings", "other"]))
def test_ratings_import_page_answers_4xx_or_imports_for_any_file(ratings_project, case, what):
    filename, data = case
    admin = make_member(ratings_project, Role.ADMIN)
    page = Client()
    assert page.login(username=admin.username, password=PASSWORD)
    before = counts()
    response = page.post(
        f"/projects/{ratings_project.slug}/ratings/import/",
        {"file": SimpleUploadedFile(filename, data), "what": what},
    )
    assert response.status_code in (200, 302, 400, 409), response.status_code
    if response.status_code != 302:
        assert counts() == before


# --- The graphs and narratives uploads ---------------------------------------------------------
# An edge list (the Graphs tab and POST /api/projects/<slug>/graphs/dsep/) and a narratives file
# (the Narratives tab): read whole, by the same rules (imports.core.readers.read_json_document).

NODE = st.one_of(st.sampled_from(["A", "B", "C", "D", "rain", "wet"]), TEXT)
# A form field as a client can send it: any text but unpaired surrogates, which no encoding of a
# form carries (the test client could not send them either).
GRAPH_NAME = st.one_of(
    st.sampled_from(["g", "smoking-1", "bad name", "a\x00b", ""]),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
)


@st.composite
def edge_lists(draw):
    """(file name, bytes) of an edge list: CSV cause,effect or JSON in its three shapes, with
    names, values and nesting of every kind, in any encoding, damaged."""
    pairs = draw(st.lists(st.lists(NODE, min_size=1, max_size=3), max_size=5))
    shape = draw(st.sampled_from(["csv", "pairs", "objects", "document", "value"]))
    ascii_only = draw(st.booleans())
    if shape == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(draw(st.sampled_from([["cause", "effect"], ["from", "to"], []])))
        writer.writerows(pairs)
        text, name = out.getvalue(), "edges.csv"
    else:
        if shape == "pairs":
            document = [draw(st.one_of(st.just(pair), VALUE)) for pair in pairs]
        elif shape == "objects":
            document = [{"cause": pair[0], "effect": pair[-1]} for pair in pairs]
        elif shape == "document":
            document = {"nodes": draw(st.lists(st.one_of(NODE, VALUE), max_size=3)),
                        "edges": pairs + draw(st.lists(VALUE, max_size=2))}  # fmt: skip
        else:
            document = draw(st.one_of(VALUE, DEEP))
        text, name = to_json(document, ascii_only), "edges.json"
    how = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "latin-1", "utf-16"]))
    return draw(st.sampled_from([name, "edges.txt"])), draw(damaged(encode(text, how)))


@st.composite
def narrative_files(draw):
    """(file name, bytes) of a narratives file: chains, graphs and anything else, one a line."""
    lines = []
    for _ in range(draw(st.integers(0, 3))):
        nodes = draw(st.lists(NODE, max_size=4))
        record = {"nodes": nodes, "sentences": draw(st.lists(TEXT, max_size=3))}
        if draw(st.booleans()):
            record["edges"] = draw(st.lists(st.lists(NODE, max_size=3), max_size=3))
            record["id"] = draw(st.one_of(st.just("g1"), TEXT))
        lines.append(draw(st.one_of(st.just(record), records(), VALUE, DEEP)))
    ascii_only = draw(st.booleans())
    text = "".join(to_json(line, ascii_only) + "\n" for line in lines)
    how = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "latin-1", "utf-16"]))
    return "fuzz.jsonl", draw(damaged(encode(text, how)))


@FUZZ
@given(edge_lists())
def test_edge_lists_give_a_dag_of_storable_names_or_graph_invalid(case):
    from graphs.dsep import GraphInvalid, parse_edge_list

    filename, data = case
    try:
        dag = parse_edge_list(data, filename)
    except GraphInvalid as refused:
        assert refused.problems and all(isinstance(p, str) and p for p in refused.problems)
        return
    assert_storable(sorted(str(node) for node in dag.nodes))


@FUZZ
@given(narrative_files())
def test_narrative_lines_give_storable_narratives_or_located_problems(case):
    from imports.core.readers import ImportFileError, decode_utf8
    from narratives.reader import read_lines

    filename, data = case
    try:
        text = decode_utf8(data)
    except ImportFileError as refused:
        assert_clean_error(refused.error)
        return
    reading = read_lines(text, file=filename)
    for problem in reading.problems:
        assert problem.file == filename and problem.message
    for narrative in reading.narratives:
        assert_storable([list(narrative.nodes), list(narrative.sentences), narrative.true_edges])


@pytest.fixture
def plugin_clients(db):
    from graphs.services import carlgt_project_create
    from narratives.services import narratives_project_create

    graphs = carlgt_project_create(slug="fuzz-graphs", name="Fuzz graphs", overlap=2)
    narratives = narratives_project_create(slug="fuzz-narr", name="Fuzz narr", overlap=2, seed=1)
    admin = make_member(graphs, Role.ADMIN)
    engine.membership_add(project=narratives, user=admin, role=Role.ADMIN)
    page = Client()
    assert page.login(username=admin.username, password=PASSWORD)
    api = APIClient()
    api.force_authenticate(admin)
    return graphs, narratives, page, api


@pytest.mark.django_db
@FUZZ_DB
@given(edge_lists(), st.sampled_from(["page", "api", "api-json"]), GRAPH_NAME)
def test_edge_list_uploads_answer_4xx_or_add_questions(plugin_clients, case, via, name):
    graphs, _, page, api = plugin_clients
    filename, data = case
    before = counts()
    if via == "page":
        response = page.post(
            reverse("graphs:generate", args=[graphs.slug]),
            {"file": SimpleUploadedFile(filename, data), "graph_name": name},
        )
        ok = 302
    elif via == "api":
        response = api.post(
            f"/api/projects/{graphs.slug}/graphs/dsep/",
            {"file": SimpleUploadedFile(filename, data), "graph_name": name},
            format="multipart",
        )
        ok = 201
    else:  # the edge list's text as the JSON body's "edges", however broken
        text = data.decode("utf-8", errors="surrogateescape")
        body = '{"graph_name": "g", "edges": ' + text + "}"
        response = api.post(
            f"/api/projects/{graphs.slug}/graphs/dsep/",
            body.encode("utf-8", errors="surrogateescape"),
            content_type="application/json",
        )
        ok = 201
    assert response.status_code in (ok, 400), response.status_code
    if response.status_code != ok:
        assert counts() == before
    if via != "page":
        assert set(response.json()) == ({"message", "extra"} if response.status_code == 400
                                         else {"created", "graph_name", "external_ids"})  # fmt: skip
    Item.objects.filter(project=graphs).delete()


@pytest.mark.django_db
@FUZZ_DB
@given(narrative_files())
def test_narrative_uploads_answer_4xx_or_import_everything(plugin_clients, case):
    _, narratives, page, _ = plugin_clients
    filename, data = case
    before = counts()
    response = page.post(
        reverse("narratives:import", args=[narratives.slug]),
        {"file": SimpleUploadedFile(filename, data)},
    )
    assert response.status_code in (302, 400), response.status_code
    if response.status_code != 302:
        assert counts() == before
    Item.objects.filter(project=narratives).delete()


# --- Regressions: each defect the fuzzers found -----------------------------------------------


def core_errors(data: bytes, fmt: str, schema=None) -> list[RowError]:
    report = validate_stream(io.BytesIO(data), fmt=fmt, schema=schema or generic_schema())
    assert not report.ok
    for error in report.errors:
        assert_clean_error(error)
    return report.errors


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (b'{"id": "a", "x": ' + b"[" * 10_000 + b"]" * 10_000 + b"}\n", "jsonl"),
        (b'[{"id": "a", "x": ' + b"[" * 10_000 + b"]" * 10_000 + b"}]", "json"),
        (b'{"id": "a", "x": ' + b"[" * 65 + b"]" * 65 + b"}\n", "jsonl"),
        (b'{"items": [{"id": "a", "x": ' + b"[" * 500 + b"]" * 500 + b"}]}", "json"),
    ],
    ids=["jsonl-10k", "json-10k", "jsonl-65", "wrapped-500"],
)
def test_json_nested_deeper_than_64_levels_is_a_located_error(data, fmt):
    [error] = core_errors(data, fmt)
    assert error.line == 1 and "nested more than 64 levels" in error.message


def test_a_json_cell_of_a_csv_nested_too_deep_is_an_error_naming_the_field():
    data = (b"id,scenario,pearl_level,label,variables\na,s,L1,YES," + b"[" * 5000 + b"]" * 5000
            + b"\n")  # fmt: skip
    [error] = core_errors(data, "csv", CAUSALT5K_SCHEMA)
    assert (error.line, error.field) == (2, "variables") and "64 levels" in error.message


def test_nesting_up_to_64_levels_is_read():
    data = b'{"id": "a", "x": ' + b"[" * 63 + b"]" * 63 + b"}\n"
    report = validate_stream(io.BytesIO(data), fmt="jsonl", schema=generic_schema())
    assert report.ok, report.errors


@pytest.mark.parametrize(
    ("data", "fmt", "line"),
    [
        (b'{"id": "a"}\n{"id": "b", "x": ' + b"1" * 5000 + b"}\n", "jsonl", 2),
        (b'[{"id": "a"},\n {"id": "b", "x": [' + b"7" * 4301 + b"]}]", "json", 2),
        (b'{"id": "a", "x": 1e400}\n', "jsonl", 1),
        (b'[{"id": "a", "x": {"y": -1e400}}]', "json", 1),
    ],
    ids=["jsonl-int", "json-int", "jsonl-1e400", "json-nested-1e400"],
)
def test_numbers_json_cannot_hold_are_an_error_naming_the_line_and_field(data, fmt, line):
    [error] = core_errors(data, fmt)
    assert (error.line, error.field) == (line, "x") and "number" in error.message


def test_a_csv_int_field_with_more_than_4300_digits_is_an_error_not_an_exception():
    schema = RowSchema(
        name="n", external_id_field="id", fields=(FieldSpec("id"), FieldSpec("n", "int"))
    )
    [error] = core_errors(b"id,n\na," + b"1" * 5000 + b"\n", "csv", schema)
    assert (error.line, error.field) == (2, "n")
    [error] = core_errors(b'{"id": "a", "n": "' + b"1" * 5000 + b'"}\n', "jsonl", schema)
    assert (error.line, error.field) == (1, "n")


@pytest.mark.parametrize(
    ("data", "fmt", "line", "field"),
    [
        (b'{"id": "a", "text": "x\\u0000y"}\n', "jsonl", 1, "text"),
        (b'{"id": "a"}\n{"id": "b", "text": ["\\ud800"]}\n', "jsonl", 2, "text"),
        (b'[{"id": "a", "text": {"deep": "\\udfff"}}]', "json", 1, "text"),
        (b"id,text\na,x\x00y\n", "csv", 2, "text"),
        (b"id,text\na\x00,xy\n", "csv", 2, "external_id"),
        (b'{"id": "a", "k\\u0000": 1}\n', "jsonl", 1, "k\\x00"),
    ],
    ids=["jsonl-nul", "jsonl-surrogate", "json-surrogate", "csv-nul", "csv-nul-id", "key-nul"],
)
def test_nul_and_unpaired_surrogates_are_refused_naming_line_and_field(data, fmt, line, field):
    [error] = core_errors(data, fmt)
    assert (error.line, error.field) == (line, field)
    assert "U+0000" in error.message or "surrogate" in error.message


def test_control_characters_are_escaped_when_echoed_in_messages():
    errors = core_errors(b'{"id": "a\\u001b[31m"}\n{"id": "a\\u001b[31m"}\n', "jsonl")
    assert "\\x1b[31m" in errors[0].message and "\x1b" not in errors[0].message
    schema = generic_schema(extra_fields="reject")
    [error] = core_errors(b'{"id": "a", "bad\\u0007\\u202e": 1}\n', "jsonl", schema)
    assert "\x07" not in error.message + error.field and "\\x07" in error.message


@pytest.mark.django_db
def test_a_nul_in_a_form_option_is_a_400_not_a_500(admin_clients):
    project, page, api = admin_clients
    before = counts()
    response = page.post(
        f"/projects/{project.slug}/imports/",
        {"file": SimpleUploadedFile("a.csv", b"id,x\na,1\n"), "group_field": "x\x00"},
    )
    assert response.status_code == 400 and "group_field" in response.content.decode()
    assert counts() == before and not ImportBatch.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_a_file_name_with_control_characters_is_stored_without_them(admin_clients, media):
    project, page, _ = admin_clients
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(b"id\na\n"), filename="a\x00\x1b.csv"
    )
    assert batch.filename == "a.csv"


RATINGS_CRASHES = {
    "deep": b'{"pair_id": "9", "sentence_a": ' + b"[" * 10_000 + b"]" * 10_000 + b"}\n",
    "big-int": b'{"pair_id": ' + b"1" * 5000 + b', "sentence_a": "A.", "sentence_b": "B."}\n',
    "1e400": b'{"pair_id": "9", "order": "AB", "connective": "so", "rating": 1e400}\n',
    "nul": b'{"pair_id": "9", "sentence_a": "A\\u0000.", "sentence_b": "B."}\n',
    "surrogate": b'{"pair_id": "9", "sentence_a": "A\\ud800.", "sentence_b": "B."}\n',
}


@pytest.mark.parametrize("name", RATINGS_CRASHES)
def test_ratings_reader_refuses_what_used_to_crash_it_naming_the_line(name):
    with pytest.raises(importing.ImportRejected) as caught:
        rows = importing.read_rows(RATINGS_CRASHES[name], "x.jsonl")
        importing.parse_ratings(rows, EXPLICA_CONNECTIVES, scale=(1, 10))
    assert_clean_rejection(caught.value)
    assert caught.value.errors[0].line == 1


def test_ratings_number_helper_refuses_numbers_too_large_for_a_float():
    with pytest.raises(importing.ImportRejected) as caught:
        importing.parse_ratings(
            [(2, {"pair_id": "9", "order": "AB", "connective": "so", "rating": 10**400})],
            EXPLICA_CONNECTIVES,
            scale=(1, 10),
        )
    assert (caught.value.errors[0].line, caught.value.errors[0].field) == (2, "rating")


def test_ratings_csv_cells_longer_than_131072_characters_are_read_and_longer_than_the_limit_refused():
    text = "pair_id,sentence_a,sentence_b\n9," + '"' + "A" * 200_000 + '"' + ",B.\n"
    [(line, row)] = importing.read_rows(text, "x.csv")
    assert line == 2 and len(row["sentence_a"]) == 200_000
    never_closed = 'pair_id,sentence_a\n9,"never closed' + "x" * CSV_FIELD_LIMIT
    with pytest.raises(importing.ImportRejected) as caught:
        importing.read_rows(never_closed, "x.csv")
    assert_clean_rejection(caught.value)
    assert caught.value.errors[0].line == 2 and "double quote" in caught.value.errors[0].message


@pytest.mark.django_db
def test_a_nul_in_a_ratings_sentence_is_refused_and_nothing_is_written(ratings_project):
    before = counts()
    with pytest.raises(ApplicationError) as caught:
        ratings_services.pairs_import(
            project=ratings_project,
            content="pair_id,sentence_a,sentence_b\n9,The pipe\x00 burst.,B.\n",
            filename="pairs.csv",
        )
    [error] = caught.value.extra["errors"]
    assert (error["line"], error["field"]) == (2, "sentence_a") and "U+0000" in error["message"]
    assert counts() == before


@pytest.mark.django_db
def test_ratings_text_with_an_unpaired_surrogate_in_a_column_name_is_refused(ratings_project):
    before = counts()
    with pytest.raises(ApplicationError) as caught:
        ratings_services.pairs_import(
            project=ratings_project,
            content="pair_id,sentence_a,sentence_b,note\ud800\n9,A.,B.,c\n",
            filename="pairs.csv",
        )
    [error] = caught.value.extra["errors"]
    assert error["line"] == 1 and "surrogate" in error["message"]
    assert counts() == before


def test_a_json_array_element_of_megabytes_is_read_and_its_nesting_checked_across_refills():
    big = "x[{" * 1_000_000  # brackets inside a string are not nesting
    data = json.dumps([{"id": "a", "text": big}, {"id": "b", "n": [[[1]]]}]).encode()
    report = validate_stream(io.BytesIO(data), fmt="json", schema=generic_schema())
    assert report.ok and report.rows_ok == 2, report.errors
    deep = ('[{"id": "a", "text": "' + big + '", "n": ' + "[" * 65 + "]" * 65 + "}]").encode()
    [error] = core_errors(deep, "json")
    assert error.code == "too_deep" and error.index == 0
