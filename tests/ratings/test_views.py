"""The researcher page (access, content, htmx partials, downloads), the import page and model
uploads."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Item, Role
from ratings import services
from ratings.models import ModelRun, SentencePair
from tests.factories import PASSWORD, make_member, make_project
from tests.ratings.conftest import csv_text, pairs_csv

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def signed_in(client, user):
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


@pytest.fixture
def analysed(ratings_project, django_capture_on_commit_callbacks):
    """Historic ratings from four named raters on every item, and a model run; the analyses the
    imports ask for are computed (tasks run in-process here)."""
    from ratings.models import StoredAnalysis

    # The ratings_project fixture's import asked for analyses whose messages were never sent
    # (its on-commit callbacks did not run): as if they were lost, let the next request send.
    StoredAnalysis.objects.filter(project=ratings_project).update(queued_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        return _analysed(ratings_project)


def _analysed(ratings_project):
    rows = []
    for item in Item.objects.filter(project=ratings_project):
        good = item.payload["subset"] == item.payload["relation"] and (
            (item.payload["connective_order"] == "iconic") == (item.payload["order"] == "AB")
        )
        for number, offset in enumerate((0, 1, -1, 0), start=1):
            rows.append(
                [
                    item.payload["pair_id"],
                    item.payload["order"],
                    item.payload["connective"],
                    f"r{number}",
                    (8 if good else 2) + offset,
                ]
            )
    services.historic_ratings_import(
        project=ratings_project,
        content=csv_text(["pair_id", "order", "connective", "rater", "rating"], rows),
        filename="old.csv",
    )  # fmt: skip
    model = [[r[0], r[1], r[2], r[4]] for r in rows if r[3] == "r1"]
    services.model_run_import(
        project=ratings_project,
        name="echo",
        content=csv_text(["pair_id", "order", "connective", "rating"], model),
        filename="echo.csv",
    )
    return ratings_project


def url(project, name="ratings:dashboard", *args):
    return reverse(name, args=[project.slug, *args])


def computed_page(client, project, django_capture_on_commit_callbacks, **params):
    """The dashboard once its stored analysis is computed: a first load shows it, or that it
    is missing with the page's request for it (a POST: the page's GETs write nothing), which
    is sent here (the refresh task runs in-process after commit, tasks being eager here); the
    second load shows it."""
    first = client.get(url(project), params).content.decode()
    if "Computing the analysis" in first:
        assert 'action="' + url(project, "ratings:analysis_request") + '"' in first
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url(project, "ratings:analysis_request"), params)
    return client.get(url(project), params)


def test_only_researchers_and_admins_of_a_ratings_project_see_the_page(client, analysed):
    page = url(analysed)
    assert client.get(page).status_code == 302  # sign in first
    signed_in(client, make_member(analysed, Role.ANNOTATOR))
    assert client.get(page).status_code == 403
    signed_in(client, make_member(make_project(), Role.RESEARCHER))
    assert client.get(page).status_code == 404
    signed_in(client, make_member(analysed, Role.ADMIN))
    assert client.get(page).status_code == 200
    other = make_project()
    signed_in(client, make_member(other, Role.RESEARCHER))
    refused = client.get(url(other))  # not a ratings project: the rule of every workflow's tab
    assert refused.status_code == 400
    assert f"{other.name} is not a ratings project." in refused.content.decode()


def test_the_page_shows_progress_reliability_labels_raters_and_plots(
    client, analysed, django_capture_on_commit_callbacks
):
    signed_in(client, make_member(analysed, Role.RESEARCHER))
    response = computed_page(
        client, analysed, django_capture_on_commit_callbacks, source="historic"
    )
    html = response.content.decode()
    assert response.status_code == 200
    for text in ("Krippendorff's α, ordinal", "Split-half reliability", "By expected subset",
                 "By origin", "By flag", "socially challenging", "r4",
                 "<svg", "Rating distributions per connective", "echo"):  # fmt: skip
        assert text in html, text
    assert "96 ratings of 24 items by 4 raters" in html


def test_the_model_comparison_appears_for_the_chosen_run(
    client, analysed, django_capture_on_commit_callbacks
):
    signed_in(client, make_member(analysed, Role.RESEARCHER))
    run = ModelRun.objects.get(project=analysed)
    html = computed_page(
        client, analysed, django_capture_on_commit_callbacks, source="historic", run=run.pk
    ).content.decode()
    assert "Confusion matrix" in html and "Spearman ρ with human item means" in html
    assert "100.0 %" in html  # the model repeats rater r1, whose ratings give the same labels
    assert html.count('class="plot"') == 3
    assert client.get(url(analysed), {"run": 999999}).status_code == 404


def test_htmx_gets_partials_and_a_nudge_when_the_data_changed(client, analysed):
    signed_in(client, make_member(analysed, Role.RESEARCHER))
    progress = client.get(url(analysed), {"part": "progress", "version": "old"}, **HTMX)
    html = progress.content.decode()
    assert progress.status_code == 200 and "<html" not in html and 'id="progress"' in html
    assert progress["HX-Trigger"] == "ratings-data-changed"
    version = html.split("version=")[1].split('"')[0]
    same = client.get(url(analysed), {"part": "progress", "version": version}, **HTMX)
    assert "HX-Trigger" not in same
    analysis = client.get(url(analysed), {"part": "analysis", "source": "historic"}, **HTMX)
    assert 'id="analysis"' in analysis.content.decode() and "<html" not in analysis.content.decode()
    assert client.get(url(analysed), {"source": "nonsense"}).status_code == 400


def read_csv(response):
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_every_table_downloads_as_csv(client, analysed):
    signed_in(client, make_member(analysed, Role.RESEARCHER))
    run = ModelRun.objects.get(project=analysed)
    classes = client.get(
        url(analysed, "ratings:table", "classes_by_subset"), {"source": "historic"}
    )
    assert classes["Content-Type"].startswith("text/csv")
    rows = {row["subset"]: row for row in read_csv(classes)}
    assert rows["causal"]["causal-iconic"] == "1" and rows["causal"]["causal-anti-iconic"] == "1"
    assert rows["unrelated"]["unrelated"] == "2" and rows["all"]["total"] == "6"
    labels = read_csv(client.get(url(analysed, "ratings:table", "labels"), {"source": "historic"}))
    assert len(labels) == 6 and {"pair_id", "order", "label", "subset", "origin"} <= set(labels[0])
    for table in ("items", "classes", "classes_by_origin", "reliability", "raters"):
        response = client.get(url(analysed, "ratings:table", table), {"source": "historic"})
        assert response.status_code == 200 and len(read_csv(response)) >= 1, table
    for table in (
        "model_summary",
        "model_by_class",
        "model_by_relation",
        "model_by_order",
        "model_confusion",
        "model_by_connective",
        "model_labels",
    ):
        response = client.get(
            url(analysed, "ratings:table", table), {"source": "historic", "run": run.pk}
        )
        assert response.status_code == 200 and len(read_csv(response)) >= 1, table
    assert (
        client.get(
            url(analysed, "ratings:table", "model_summary"), {"source": "historic"}
        ).status_code
        == 404
    )
    assert client.get(url(analysed, "ratings:table", "secrets")).status_code == 404
    svg = client.get(url(analysed, "ratings:plot", "distributions"), {"source": "historic"})
    assert (
        svg["Content-Type"] == "image/svg+xml"
        and b'xmlns="http://www.w3.org/2000/svg"' in svg.content
    )


def upload(content, name="file.csv"):
    return SimpleUploadedFile(name, content.encode("utf-8"), content_type="text/csv")


def test_admins_import_pairs_and_see_every_bad_row(client, ratings_project):
    page = url(ratings_project, "ratings:import")
    signed_in(client, make_member(ratings_project, Role.RESEARCHER))
    assert client.get(page).status_code == 403
    signed_in(client, make_member(ratings_project, Role.ADMIN))
    assert "How raters see the items" in client.get(page).content.decode()
    bad = pairs_csv(
        [
            ("n1", "A one.", "B one.", "", "", ""),
            ("n2", "", "B two.", "", "", ""),
            ("p1", "A.", "B.", "", "", ""),
        ]
    )
    response = client.post(page, {"what": "pairs", "file": upload(bad)})
    html = response.content.decode()
    assert response.status_code == 400 and "Nothing was imported" in html
    assert '<td class="num">3</td><td><code>sentence_a</code></td>' in html
    assert '<td class="num">4</td><td><code>pair_id</code></td>' in html
    assert not SentencePair.objects.filter(project=ratings_project, pair_id="n1").exists()
    good = pairs_csv([("n1", "A one.", "B one.", "", "", "")])
    response = client.post(page, {"what": "pairs", "file": upload(good)}, follow=True)
    assert "Imported 1 pair as 8 items" in response.content.decode()
    assert Item.objects.filter(project=ratings_project, group="n1").count() == 8
    ratings = csv_text(
        ["pair_id", "order", "connective", "rating"],
        [["n1", "AB", "so", "7"], ["n1", "AB", "so", "12"]],
    )
    response = client.post(page, {"what": "ratings", "file": upload(ratings)})
    assert response.status_code == 400 and "outside the scale 1–10" in response.content.decode()
    assert client.post(page, {"what": "pairs"}).status_code == 400  # no file


def test_researchers_upload_model_answers_and_delete_runs(client, ratings_project):
    signed_in(client, make_member(ratings_project, Role.RESEARCHER))
    assert client.get(url(ratings_project, "ratings:model_form")).status_code == 200
    answers = csv_text(["pair_id", "order", "choice"], [["p1", "AB", "so"], ["p1", "BA", "-1"]])
    response = client.post(
        url(ratings_project, "ratings:model_upload"), {"name": "chooser", "file": upload(answers)}
    )
    run = ModelRun.objects.get(project=ratings_project)
    assert response.status_code == 302 and f"run={run.pk}" in response["Location"]
    assert (run.name, run.answer_kind, run.n_no_answer) == ("chooser", "choices", 1)
    bad = csv_text(["pair_id", "order", "choice"], [["p1", "AB", "whereas"]])
    response = client.post(
        url(ratings_project, "ratings:model_upload"), {"name": "bad", "file": upload(bad)}
    )
    assert response.status_code == 400 and "unknown connective" in response.content.decode()
    # Another researcher reads the run but cannot delete it; its uploader (or an admin) can.
    signed_in(client, make_member(ratings_project, Role.RESEARCHER))
    refused = client.post(url(ratings_project, "ratings:model_delete", run.pk))
    assert refused.status_code == 403 and ModelRun.objects.exists()
    signed_in(client, run.uploaded_by)
    client.post(url(ratings_project, "ratings:model_delete", run.pk))
    assert not ModelRun.objects.exists()


def test_the_agreement_page_shows_the_ratings_pages_alpha_and_no_huge_overlap(
    client, analysed, django_capture_on_commit_callbacks
):
    """One figure, one source: the Agreement page's α of the historic stage is the α of the
    ratings page's "Imported" tab (both read the stored analysis), and the practice stage,
    which every rater sees in full, reads "every annotator" rather than its 100,000 slots."""
    from agreement.templatetags.research_ui import fixed
    from ratings import selectors

    header = ["pair_id", "sentence_a", "sentence_b", "purpose", "connective", "expected_min",
              "expected_max"]  # fmt: skip
    practice = [["practice-1", "The glass fell.", "It broke.", "practice", "so", "7", "10"]]
    with django_capture_on_commit_callbacks(execute=True):
        services.pairs_import(
            project=analysed, content=csv_text(header, practice), filename="practice.csv"
        )
    signed_in(client, make_member(analysed, Role.RESEARCHER))
    html = client.get(reverse("agreement:dashboard", args=[analysed.slug])).content.decode()
    assert "100000" not in html and "100,000" not in html
    assert "every annotator, every item" in html
    assert "of the imported ratings" in html and "updating" not in html
    context = selectors.ratings_context(analysed)
    alpha = selectors.stored_analysis(context, source="historic", run=None).analysis
    value = fixed(alpha.report.figures["alpha_ordinal"].value)
    assert value != "—"
    ratings_url = url(analysed) + "?source=historic"
    assert f'<a href="{ratings_url}">{value}</a>' in html
    ratings_page = client.get(url(analysed), {"source": "historic"}).content.decode()
    assert f'<span class="stat-value">{value}</span>' in ratings_page


def test_table_downloads_neutralise_formulas_in_imported_text(client, ratings_project):
    """Pair ids, origins and subsets come from an uploaded file: a cell a spreadsheet would run
    as a formula is written inert (releases.writers.spreadsheet_safe); numbers stay numbers."""
    pairs = [
        ("=HYPERLINK(1)", "The pipe burst.", "The floor was flooded.", "causal", "@origin", ""),
        ("p9", "Ana locked the door.", "She left.", "+temporal", "-2", ""),
    ]
    services.pairs_import(project=ratings_project, content=pairs_csv(pairs), filename="evil.csv")
    rows = [
        [pair_id, order, word, rating]
        for pair_id in ("=HYPERLINK(1)", "p9")
        for order in ("AB", "BA")
        for word, rating in (("so", 8), ("because", 2), ("then", 3), ("after", 4))
    ]
    services.historic_ratings_import(
        project=ratings_project,
        content=csv_text(["pair_id", "order", "connective", "rating"], rows),
        filename="ratings.csv",
    )
    signed_in(client, make_member(ratings_project, Role.RESEARCHER))
    text = client.get(url(ratings_project, "ratings:table", "labels")).content.decode()
    assert "'=HYPERLINK(1)" in text and "'@origin" in text and "'+temporal" in text
    assert "\n=" not in text and ",=" not in text and ",@" not in text
    assert ",-2," in text or text.rstrip().endswith(",-2")  # a plain number is left as it is
    items = client.get(url(ratings_project, "ratings:table", "items")).content.decode()
    assert "'=HYPERLINK(1)" in items and ",=" not in items


def test_loading_the_page_writes_nothing_and_asks_for_the_analysis_with_a_post(
    client, analysed, django_capture_on_commit_callbacks
):
    from ratings.models import StoredAnalysis

    signed_in(client, make_member(analysed, Role.RESEARCHER))
    StoredAnalysis.objects.filter(project=analysed).delete()  # nothing stored: the page asks
    request_url = url(analysed, "ratings:analysis_request")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        page = client.get(url(analysed), {"source": "live"}).content.decode()
        client.get(url(analysed), {"source": "live", "part": "analysis"}, **HTMX)
    assert callbacks == [] and not StoredAnalysis.objects.filter(project=analysed).exists()
    assert "Computing the analysis" in page and f'hx-post="{request_url}"' in page
    assert client.get(request_url).status_code == 405
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        asked = client.post(request_url, {"source": "live", "run": ""}, **HTMX)
    assert asked.status_code == 204 and len(callbacks) == 1
    assert StoredAnalysis.objects.get(project=analysed, source="live").queued_at is not None
    plain = client.post(request_url, {"source": "live"})
    assert plain.status_code == 302 and plain.url == url(analysed) + "?source=live"
    assert client.post(request_url, {"source": "nonsense"}).status_code == 400
    assert client.post(request_url, {"source": "live", "run": "999999"}).status_code == 404


def test_the_progress_cards_show_live_stopping_with_its_rule_once_it_is_on(client, ratings_project):
    researcher = make_member(ratings_project, Role.RESEARCHER)
    signed_in(client, researcher)
    assert "live-stopping" not in client.get(url(ratings_project)).content.decode()
    services.stopping_set(project=ratings_project, floor=2, confidence=0.9)
    html = client.get(url(ratings_project), {"part": "progress"}, HTTP_HX_REQUEST="true")
    text = " ".join(html.content.decode().split())
    assert 'id="live-stopping"' in text
    assert "0 <small>ratings saved</small>" in text
    assert "0 items (0 ordered pairs) stopped early, of 72 ratings at 3 per item" in text
    assert "settled under 90 % intervals, from 2 to 3 ratings per item" in text
