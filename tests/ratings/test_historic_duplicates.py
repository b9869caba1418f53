"""Historic ratings are imported once: the same file again is
refused unless asked for — and so are the same ratings in another form (CRLF, a byte-order mark,
JSON Lines), named by the import they repeat —, a named rater never rates an item twice across files (a database
constraint), and concurrent imports into one project keep the counters equal to the rows."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.db.models import Count

from annotation.errors import ApplicationError
from annotation.models import Annotation, ItemStage, Resolution
from ratings import services
from ratings.models import RatingsSetup
from tests.ratings.conftest import csv_text, make_ratings_project, pairs_csv


def ratings_csv(rows):
    return csv_text(["pair_id", "order", "connective", "rater", "rating"], rows)


def state(project):
    """Everything a historic import changes: rows, counters and means."""
    stages = ItemStage.objects.filter(item__project=project).order_by("pk")
    return (
        Annotation.objects.filter(item_stage__item__project=project).count(),
        list(stages.values_list("pk", "target_count", "submitted_count", "state")),
        sorted(
            Resolution.objects.filter(item_stage__item__project=project).values_list(
                "item_stage_id", "value", "n_annotations"
            )
        ),
    )


ANONYMOUS = csv_text(
    ["pair_id", "order", "connective", "ratings"],
    [["p1", "AB", "so", "[9, 8, 7]"], ["p2", "BA", "then", "[3, 4]"]],
)


@pytest.mark.django_db
def test_the_same_file_again_is_refused_and_changes_nothing(ratings_project):
    services.historic_ratings_import(project=ratings_project, content=ANONYMOUS, filename="a.csv")
    before = state(ratings_project)
    with pytest.raises(ApplicationError) as refused:
        services.historic_ratings_import(
            project=ratings_project, content=ANONYMOUS, filename="renamed.csv"
        )
    assert "already imported" in refused.value.message and "a.csv" in refused.value.message
    assert state(ratings_project) == before

    # Asked for explicitly (anonymous lists really collected twice), it is added.
    services.historic_ratings_import(
        project=ratings_project, content=ANONYMOUS, filename="again.csv", allow_duplicate_file=True
    )
    assert state(ratings_project)[0] == before[0] * 2


@pytest.mark.django_db
def test_a_named_rater_never_rates_an_item_twice_across_files(ratings_project):
    services.historic_ratings_import(
        project=ratings_project, content=ratings_csv([["p1", "AB", "so", "r1", "9"]]),
        filename="first.csv",
    )  # fmt: skip
    before = state(ratings_project)
    with pytest.raises(ApplicationError) as refused:
        services.historic_ratings_import(
            project=ratings_project,
            content=ratings_csv(
                [["p1", "AB", "because", "r1", "2"], ["p1", "AB", "so", "r1", "3"]]
            ),
            filename="second.csv",
        )
    errors = refused.value.extra["errors"]
    assert [(error["line"], error["field"]) for error in errors] == [(3, "rater")]
    assert "'r1' already rated p1:AB:so" in errors[0]["message"]
    assert state(ratings_project) == before


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_imports_into_one_project_keep_counters_equal_to_the_rows():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: run through `make test` (scripts/with-services.sh)")
    project = make_ratings_project()
    services.pairs_import(project=project, content=pairs_csv(), filename="pairs.csv")
    files = [
        ratings_csv([[pair, order, "so", f"{prefix}{n}", str(n % 10 + 1)]
                     for pair in ("p1", "p2", "p3") for order in ("AB", "BA") for n in range(6)])
        for prefix in ("a", "b", "c", "d")
    ]  # fmt: skip
    barrier = threading.Barrier(len(files))
    failures = []

    def run(index):
        try:
            barrier.wait()
            services.historic_ratings_import(
                project=project, content=files[index], filename=f"f{index}.csv"
            )
        except Exception as error:  # pragma: no cover - reported below
            failures.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(files))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    historic = RatingsSetup.objects.get(project=project).historic_stage
    recount = dict(
        Annotation.objects.filter(item_stage__stage=historic)
        .values_list("item_stage_id")
        .annotate(n=Count("pk"))
    )
    stages = ItemStage.objects.filter(stage=historic)
    assert {row.pk: row.submitted_count for row in stages} == recount
    assert set(recount.values()) == {24}
    assert all(
        resolution.n_annotations == 24
        for resolution in Resolution.objects.filter(item_stage__stage=historic)
    )


@pytest.mark.django_db
def test_the_command_and_the_page_refuse_a_second_import_unless_asked(
    ratings_project, tmp_path, client
):
    from django.contrib.auth import get_user_model
    from django.core.management import CommandError, call_command
    from django.urls import reverse

    from annotation import services as engine
    from annotation.models import Role

    path = tmp_path / "old.csv"
    path.write_text(ANONYMOUS)
    call_command("ratings_import_ratings", ratings_project.slug, str(path))
    with pytest.raises(CommandError, match="already imported"):
        call_command("ratings_import_ratings", ratings_project.slug, str(path))
    call_command(
        "ratings_import_ratings", ratings_project.slug, str(path), "--allow-duplicate-file"
    )

    admin = get_user_model().objects.create_user("ratings-admin", password="pw-long-enough-1")
    engine.membership_add(project=ratings_project, user=admin, role=Role.ADMIN)
    client.force_login(admin)
    url = reverse("ratings:import", args=[ratings_project.slug])
    before = state(ratings_project)
    with path.open("rb") as handle:
        refused = client.post(url, {"what": "ratings", "file": handle})
    assert "already imported" in refused.content.decode()
    assert state(ratings_project) == before
    with path.open("rb") as handle:
        client.post(url, {"what": "ratings", "file": handle, "allow_duplicate_file": "1"})
    assert state(ratings_project)[0] == before[0] + 5


def _as_jsonl(rows):
    import json

    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "other_form",
    [
        pytest.param(ANONYMOUS.replace("\n", "\r\n").encode(), id="crlf"),
        pytest.param(b"\xef\xbb\xbf" + ANONYMOUS.encode(), id="bom"),
        pytest.param(
            _as_jsonl(
                [
                    {"pair_id": "p2", "order": "BA", "connective": "then", "ratings": [4, 3]},
                    {"pair_id": "p1", "order": "AB", "connective": "so", "ratings": [7, 9, 8]},
                ]
            ).encode(),
            id="jsonl-reordered",
        ),
    ],
)
def test_the_same_ratings_in_another_form_are_refused_naming_the_earlier_import(
    ratings_project, other_form
):
    services.historic_ratings_import(project=ratings_project, content=ANONYMOUS, filename="a.csv")
    before = state(ratings_project)
    filename = "again.jsonl" if other_form.lstrip().startswith(b"{") else "again.csv"
    with pytest.raises(ApplicationError) as refused:
        services.historic_ratings_import(
            project=ratings_project, content=other_form, filename=filename
        )
    assert "already imported" in refused.value.message and "a.csv" in refused.value.message
    assert refused.value.extra["filename"] == "a.csv"
    assert state(ratings_project) == before

    services.historic_ratings_import(
        project=ratings_project, content=other_form, filename=filename, allow_duplicate_file=True
    )
    assert state(ratings_project)[0] == before[0] * 2


@pytest.mark.django_db
def test_other_ratings_of_the_same_items_are_not_taken_for_a_repeat(ratings_project):
    services.historic_ratings_import(project=ratings_project, content=ANONYMOUS, filename="a.csv")
    different = ANONYMOUS.replace("[3, 4]", "[3, 5]")
    assert (
        services.historic_ratings_import(
            project=ratings_project, content=different, filename="b.csv"
        )
        == 5
    )


@pytest.mark.django_db
def test_the_page_names_the_import_a_crlf_copy_repeats(ratings_project, client):
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    from annotation import services as engine
    from annotation.models import Role

    admin = get_user_model().objects.create_user("ratings-admin2", password="pw-long-enough-1")
    engine.membership_add(project=ratings_project, user=admin, role=Role.ADMIN)
    client.force_login(admin)
    url = reverse("ratings:import", args=[ratings_project.slug])
    client.post(url, {"what": "ratings", "file": SimpleUploadedFile("lf.csv", ANONYMOUS.encode())})
    before = state(ratings_project)
    crlf = ANONYMOUS.replace("\n", "\r\n").encode()
    refused = client.post(url, {"what": "ratings", "file": SimpleUploadedFile("crlf.csv", crlf)})
    assert refused.status_code == 409
    assert "already imported" in refused.content.decode() and "lf.csv" in refused.content.decode()
    assert state(ratings_project) == before
    client.post(
        url,
        {
            "what": "ratings",
            "file": SimpleUploadedFile("crlf.csv", crlf),
            "allow_duplicate_file": "1",
        },
    )
    assert state(ratings_project)[0] == before[0] * 2


def test_the_fingerprint_is_of_the_rows_not_their_form():
    from ratings.importing import RatingRow, ratings_fingerprint

    rows = [RatingRow(2, "p1:AB:so", 9.0, ""), RatingRow(3, "p1:AB:so", 8.0, "")]
    assert ratings_fingerprint(rows) == ratings_fingerprint(list(reversed(rows)))
    assert ratings_fingerprint(rows) != ratings_fingerprint(rows[:1])
    assert ratings_fingerprint(rows) != ratings_fingerprint(
        [RatingRow(2, "p1:AB:so", 9.0, "r1"), rows[1]]
    )
