"""The researchers' dashboards and the adjudication pages: who may open what, what they show,
htmx partials, CSV and SVG downloads, pausing annotators, deciding items."""

from __future__ import annotations

import csv
import html
import io
import re
from dataclasses import dataclass

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agreement import pages, selectors
from agreement.models import AgreementSnapshot
from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.errors import PermissionDenied
from annotation.models import Annotation, ItemStage, Membership, Resolution, Role
from tests.factories import (
    PASSWORD,
    annotate_stage,
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_user,
)

pytestmark = pytest.mark.django_db

LABELS = ("causal", "temporal", "none")


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    """Many users sign in here: a fast hasher keeps the suite quick (tests only)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks, monkeypatch):
    original = services.annotation_submit

    def submit_and_commit(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return original(**kwargs)

    monkeypatch.setattr(services, "annotation_submit", submit_and_commit)


@dataclass
class Study:
    project: object
    stage: object
    annotators: list
    researcher: object
    reviewer: object
    admin: object
    outsider: object
    superuser: object


def votes_with_ties(person, item) -> str:
    """Items 0–3: a clear majority; items 4–5: each annotator a different label (a tie)."""
    index = int(item.external_id.rsplit("-", 1)[1])
    rank = person.rank
    if index >= 4:
        return LABELS[rank % 3]
    if rank == 2 and index % 2:
        return LABELS[(index + 1) % 3]
    return LABELS[index % 3]


@pytest.fixture
def study() -> Study:
    project = make_project(slug="causal-study")
    stage = make_label_stage(project, overlap=3, choices=LABELS)
    make_items(project, 6)
    annotators = [make_member(project, username=f"ann{rank}") for rank in range(3)]
    for rank, person in enumerate(annotators):
        person.rank = rank
    annotate_stage(stage, annotators, votes_with_ties, seconds=lambda person: 12.0 + person.rank)
    return Study(
        project=project,
        stage=stage,
        annotators=annotators,
        researcher=make_member(project, Role.RESEARCHER, username="rita"),
        reviewer=make_member(project, Role.REVIEWER, username="rev"),
        admin=make_member(project, Role.ADMIN, username="ada"),
        outsider=make_member(make_project(), Role.RESEARCHER, username="otto"),
        superuser=make_user("root", is_superuser=True, is_staff=True),
    )


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


def waiting(study: Study) -> list[ItemStage]:
    return list(
        ItemStage.objects.filter(stage=study.stage, state=ItemStage.State.ADJUDICATION).order_by(
            "pk"
        )
    )


# --- Access -------------------------------------------------------------------------------------


def research_urls(study: Study) -> list[str]:
    slug, stage = study.project.slug, study.stage.slug
    return [
        reverse("agreement:dashboard", args=[slug]),
        reverse("agreement:stage", args=[slug, stage]),
        reverse("agreement:disagreements", args=[slug, stage]),
        reverse("agreement:plot", args=[slug, stage, "agreement"]),
        reverse("agreement:plot", args=[slug, stage, "progress"]),
        reverse("agreement:plot", args=[slug, stage, "annotators"]),
        *[
            reverse("agreement:csv", args=[slug, stage, table])
            for table in ("agreement", "annotators", "labels", "progress", "disagreements")
        ],
    ]


@pytest.mark.parametrize(
    ("who", "research", "adjudication"),
    [
        ("anonymous", 302, 302),
        ("outsider", 404, 404),
        ("annotator", 403, 403),
        ("reviewer", 403, 200),
        ("researcher", 200, 403),
        ("admin", 200, 200),
        ("superuser", 200, 200),
    ],
)
def test_who_may_open_the_dashboards_and_the_adjudication_pages(study, who, research, adjudication):
    user = {
        "anonymous": None,
        "outsider": study.outsider,
        "annotator": study.annotators[0],
        "reviewer": study.reviewer,
        "researcher": study.researcher,
        "admin": study.admin,
        "superuser": study.superuser,
    }[who]
    client = client_for(user)
    for url in research_urls(study):
        assert client.get(url).status_code == research, url
    item_stage = waiting(study)[0]
    for url in (
        reverse("agreement:adjudication", args=[study.project.slug]),
        reverse("agreement:adjudicate", args=[study.project.slug, item_stage.pk]),
    ):
        assert client.get(url).status_code == adjudication, url
    # Writes follow the same rules, and a refused write changes nothing.
    pause = client.post(
        reverse("agreement:pause", args=[study.project.slug, study.annotators[1].pk]),
        {"paused": "1", "stage": study.stage.slug},
    )
    assert pause.status_code == (302 if research == 200 else research)
    assert Membership.objects.get(user=study.annotators[1], role=Role.ANNOTATOR).is_paused == (
        research == 200
    )
    decide = client.post(
        reverse("agreement:adjudicate", args=[study.project.slug, item_stage.pk]),
        {"value": "causal", "reason": "A brings B about."},
    )
    assert decide.status_code == (302 if adjudication == 200 else adjudication)
    item_stage.refresh_from_db()
    assert (item_stage.state == ItemStage.State.RESOLVED) == (adjudication == 200)


def test_an_htmx_request_without_a_session_is_sent_to_sign_in(study):
    response = Client().get(
        reverse("agreement:stage", args=[study.project.slug, study.stage.slug]) + "?part=live",
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert response["HX-Redirect"].startswith(reverse("login"))


def test_the_tabs_show_each_role_its_pages(study):
    dashboard = reverse("agreement:dashboard", args=[study.project.slug])
    queue = reverse("agreement:adjudication", args=[study.project.slug])
    researcher_page = client_for(study.researcher).get(dashboard).content.decode()
    reviewer_page = client_for(study.reviewer).get(queue).content.decode()
    assert f'href="{dashboard}"' in researcher_page and f'href="{queue}"' not in researcher_page
    assert f'href="{queue}"' in reviewer_page and f'href="{dashboard}"' not in reviewer_page


# --- The stage dashboard ------------------------------------------------------------------------


def test_the_stage_dashboard_shows_the_stored_figures(study):
    kappa = AgreementSnapshot.objects.filter(stage=study.stage, metric="fleiss_kappa").latest("pk")
    page = client_for(study.researcher).get(
        reverse("agreement:stage", args=[study.project.slug, study.stage.slug])
    )
    html = page.content.decode()
    assert page.status_code == 200
    assert f"{kappa.value:.3f}".replace("-", "−") in html
    assert "Figure 1." in html and "Table 2." in html
    for person in study.annotators:
        assert person.username in html
    assert 'hx-trigger="every 30s"' in html
    assert "2 with a reviewer" in html


def test_htmx_gets_only_the_requested_part(study):
    url = reverse("agreement:stage", args=[study.project.slug, study.stage.slug])
    client = client_for(study.researcher)
    live = client.get(url + "?part=live", HTTP_HX_REQUEST="true").content.decode()
    table = client.get(url + "?part=annotators", HTTP_HX_REQUEST="true").content.decode()
    assert live.lstrip().startswith('<div id="live"') and "<html" not in live
    assert (
        table.lstrip().startswith('<section class="card" id="annotators"')
        and "Figure 1." not in table
    )


def test_the_live_part_is_the_pages_own_and_reads_nothing_of_the_rest(study):
    # Polled every 30 s: the same HTML as the page's live part, without reading the
    # annotator table, the history or the sections that the page shows below it.
    url = reverse("agreement:stage", args=[study.project.slug, study.stage.slug])
    client = client_for(study.researcher)
    with CaptureQueriesContext(connection) as for_page:
        page = client.get(url).content.decode()
    with CaptureQueriesContext(connection) as for_live:
        live = client.get(url + "?part=live", HTTP_HX_REQUEST="true").content.decode()
    start = page.index('<div id="live"')
    assert page[start : start + len(live.strip())] == live.strip()
    # The annotator table's snapshot and the history (which leaves that snapshot out) name
    # its metric; the live part reads the latest figures only.
    annotator_metric = f"'{selectors.ANNOTATOR_METRIC}'"
    assert annotator_metric in " ".join(statement["sql"] for statement in for_page)
    assert annotator_metric not in " ".join(statement["sql"] for statement in for_live)
    assert len(for_live) < len(for_page)


def annotator_order(html: str, names: list[str]) -> list[str]:
    return sorted(names, key=lambda name: html.index(f">{name}<"))


def test_the_annotator_table_sorts_by_any_column_both_ways(study):
    url = reverse("agreement:stage", args=[study.project.slug, study.stage.slug])
    client = client_for(study.researcher)
    names = [person.username for person in study.annotators]
    ascending = client.get(
        url, {"sort": "name", "dir": "asc", "part": "annotators"}, HTTP_HX_REQUEST="true"
    )
    descending = client.get(
        url, {"sort": "name", "dir": "desc", "part": "annotators"}, HTTP_HX_REQUEST="true"
    )
    assert annotator_order(ascending.content.decode(), names) == sorted(names)
    assert annotator_order(descending.content.decode(), names) == sorted(names, reverse=True)
    by_time = client.get(url, {"sort": "median_seconds", "dir": "desc"}).content.decode()
    assert annotator_order(by_time, names) == ["ann2", "ann1", "ann0"]  # 14 s, 13 s, 12 s
    assert 'aria-sort="descending"' in by_time


def test_pausing_from_the_table_stops_an_annotator_and_resuming_lets_them_back(study):
    person = study.annotators[2]
    url = reverse("agreement:pause", args=[study.project.slug, person.pk])
    client = client_for(study.researcher)
    response = client.post(
        url,
        {"paused": "1", "stage": study.stage.slug, "reason": "Low agreement"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert 'id="annotators"' in response.content.decode() and "Resume" in response.content.decode()
    membership = Membership.objects.get(user=person, project=study.project, role=Role.ANNOTATOR)
    assert membership.is_paused and membership.paused_reason == "Low agreement"
    with pytest.raises(PermissionDenied):
        access_stage_for_annotator(user=person, stage_id=study.stage.pk)
    resumed = client.post(url, {"paused": "0", "stage": study.stage.slug})
    assert resumed.status_code == 302 and resumed["Location"].endswith("#annotators")
    access_stage_for_annotator(user=person, stage_id=study.stage.pk)


def test_pausing_someone_who_is_not_an_annotator_is_a_404(study):
    response = client_for(study.researcher).post(
        reverse("agreement:pause", args=[study.project.slug, study.reviewer.pk]), {"paused": "1"}
    )
    assert response.status_code == 404


def test_recompute_queues_a_fresh_computation(study, django_capture_on_commit_callbacks):
    before = AgreementSnapshot.objects.filter(stage=study.stage, metric="fleiss_kappa").count()
    client = client_for(study.researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("agreement:refresh", args=[study.project.slug, study.stage.slug])
        )
    assert response.status_code == 302
    # Eager here: the refresh ran at once and stored a new computation.
    assert (
        AgreementSnapshot.objects.filter(stage=study.stage, metric="fleiss_kappa").count()
        == before + 1
    )


# --- Downloads ----------------------------------------------------------------------------------


def read_csv(response) -> list[dict[str, str]]:
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_tables_hold_what_the_pages_show(study):
    client = client_for(study.researcher)
    slug, stage = study.project.slug, study.stage.slug

    agreement = read_csv(client.get(reverse("agreement:csv", args=[slug, stage, "agreement"])))
    stored = AgreementSnapshot.objects.filter(stage=study.stage).exclude(
        metric="annotator_agreement"
    )
    assert len(agreement) == stored.count()
    assert {row["metric"] for row in agreement} == {
        "fleiss_kappa",
        "krippendorff_alpha_nominal",
        "percent_agreement",
    }

    annotators = read_csv(client.get(reverse("agreement:csv", args=[slug, stage, "annotators"])))
    assert sorted(row["annotator"] for row in annotators) == ["ann0", "ann1", "ann2"]
    assert sum(int(row["n_annotations"]) for row in annotators) == 18

    labels = read_csv(client.get(reverse("agreement:csv", args=[slug, stage, "labels"])))
    assert [row["value"] for row in labels] == list(LABELS)
    assert sum(int(row["votes"]) for row in labels) == 18

    progress = read_csv(client.get(reverse("agreement:csv", args=[slug, stage, "progress"])))
    assert sum(int(row["annotations"]) for row in progress) == 18

    disagreements = read_csv(
        client.get(reverse("agreement:csv", args=[slug, stage, "disagreements"]))
    )
    split_items = Resolution.objects.filter(item_stage__stage=study.stage).exclude(
        status="unanimous"
    )
    assert len(disagreements) == 3 * split_items.count()
    assert {row["annotator"] for row in disagreements} == {"ann0", "ann1", "ann2"}


def test_every_timestamp_in_the_csv_downloads_states_its_time_zone(study):
    """The agreement history and the progress series: ISO 8601, UTC, with the offset."""
    from datetime import datetime, timedelta

    client = client_for(study.researcher)
    slug, stage = study.project.slug, study.stage.slug
    for table, column in (("agreement", "computed_at"), ("progress", "bucket_start")):
        rows = read_csv(client.get(reverse("agreement:csv", args=[slug, stage, table])))
        assert rows, table
        for row in rows:
            assert "T" in row[column] and row[column].endswith("+00:00"), (table, row[column])
            assert datetime.fromisoformat(row[column]).utcoffset() == timedelta(0)


HYPERLINK = '=HYPERLINK("http://x")'


def test_csv_downloads_neutralise_formulas_but_keep_negative_numbers(study):
    """A comment (and a reviewer's reason, an annotator's name) a spreadsheet would run as a
    formula gets a leading quote in every CSV download; negative numbers stay numbers."""
    split = Resolution.objects.filter(item_stage__stage=study.stage).exclude(status="unanimous")
    first = split.order_by("pk").first()
    annotation = Annotation.objects.filter(item_stage=first.item_stage).order_by("pk").first()
    annotation.payload = {**annotation.payload, "comment": HYPERLINK}
    annotation.save(update_fields=["payload"])
    Resolution.objects.filter(pk=first.pk).update(reason="+cmd|' /C calc'!A0")
    study.annotators[0].username = "@evil"
    study.annotators[0].save(update_fields=["username"])
    AgreementSnapshot.objects.filter(stage=study.stage, metric="fleiss_kappa").update(value=-0.25)
    client = client_for(study.researcher)
    slug, stage = study.project.slug, study.stage.slug
    disagreements = read_csv(
        client.get(reverse("agreement:csv", args=[slug, stage, "disagreements"]))
    )
    comments = {row["comment"] for row in disagreements}
    assert "'" + HYPERLINK in comments and HYPERLINK not in comments
    assert "'+cmd|' /C calc'!A0" in {row["reason"] for row in disagreements}
    assert "'@evil" in {row["annotator"] for row in disagreements}
    agreement = read_csv(client.get(reverse("agreement:csv", args=[slug, stage, "agreement"])))
    assert "-0.25" in {row["value"] for row in agreement if row["metric"] == "fleiss_kappa"}
    annotators = read_csv(client.get(reverse("agreement:csv", args=[slug, stage, "annotators"])))
    assert "'@evil" in {row["annotator"] for row in annotators}
    for table in ("agreement", "annotators", "labels", "progress", "disagreements"):
        for row in read_csv(client.get(reverse("agreement:csv", args=[slug, stage, table]))):
            for cell in row.values():
                assert not cell or cell[0] not in "=+-@\t\r" or float(cell) < 0, (table, cell)


def test_figures_are_svg_and_the_same_data_gives_the_same_bytes(study):
    client = client_for(study.researcher)
    for plot in ("agreement", "progress", "annotators"):
        url = reverse("agreement:plot", args=[study.project.slug, study.stage.slug, plot])
        first, second = client.get(url), client.get(url)
        assert first["Content-Type"].startswith("image/svg+xml")
        assert b"<svg" in first.content
        assert first.content == second.content
    download = client.get(url + "?download=1")
    assert "attachment" in download["Content-Disposition"]
    assert (
        client.get(
            reverse("agreement:plot", args=[study.project.slug, study.stage.slug, "nope"])
        ).status_code
        == 404
    )


# --- Disagreements ------------------------------------------------------------------------------


def test_the_disagreement_view_puts_each_items_votes_side_by_side(study):
    response = client_for(study.researcher).get(
        reverse("agreement:disagreements", args=[study.project.slug, study.stage.slug])
    )
    html = response.content.decode()
    split = ItemStage.objects.filter(stage=study.stage).exclude(resolution__status="unanimous")
    for item_stage in split:
        assert item_stage.item.external_id in html
    for name in ("ann0", "ann1", "ann2"):
        assert f"><span>{name}</span></th>" in html  # one column per annotator
    unanimous = ItemStage.objects.filter(stage=study.stage, resolution__status="unanimous").first()
    assert unanimous is not None and unanimous.item.external_id not in html
    ties = client_for(study.researcher).get(
        reverse("agreement:disagreements", args=[study.project.slug, study.stage.slug]),
        {"show": "ties"},
    )
    assert ties.context["count"] == 2 and ties.context["counted_at"] is None


def test_with_more_raters_than_columns_each_item_lists_its_own_votes(study, monkeypatch):
    # Beyond RATER_COLUMNS raters on a page, no column per rater (a page of a large stage had
    # 150, nearly every cell empty): each row names its raters beside their votes.
    monkeypatch.setattr(pages, "RATER_COLUMNS", 2)
    url = reverse("agreement:disagreements", args=[study.project.slug, study.stage.slug])
    response = client_for(study.researcher).get(url, {"show": "all"})
    text = response.content.decode()
    assert response.context["rater_columns"] is False
    assert 'class="rater-col"' not in text and ">Votes</th>" in text
    assert "3 annotators voted on these items" in text
    for row in response.context["rows"]:
        votes = Annotation.objects.filter(item_stage=row.item_stage)
        cast = sorted((vote.annotator.username, vote.payload["value"]) for vote in votes)
        assert sorted((name, cell["value"]) for name, cell in row.votes) == cast
        assert row.cells == []
        for name, _ in cast:
            assert f'<span class="rater" title="{name}">{name}</span>' in text
    monkeypatch.setattr(pages, "RATER_COLUMNS", 3)
    response = client_for(study.researcher).get(url, {"show": "all"})
    assert response.context["rater_columns"] is True and "Votes</th>" not in (
        response.content.decode()
    )


# --- Adjudication -------------------------------------------------------------------------------


def test_reviewers_see_pseudonymised_votes_and_decide_with_a_reason(study):
    client = client_for(study.reviewer)
    queue = client.get(reverse("agreement:adjudication", args=[study.project.slug]))
    first, second = waiting(study)
    assert queue.context["waiting"] == 2
    url = reverse("agreement:adjudicate", args=[study.project.slug, first.pk])
    page = client.get(url).content.decode()
    assert "Annotator 1" in page and "Annotator 3" in page
    for person in study.annotators:
        assert person.username not in page

    refused = client.post(url, {"value": "causal", "reason": "  "})
    assert refused.status_code == 400 and "Give a reason" in refused.content.decode()
    assert refused.context["posted_value"] == "causal"
    first.refresh_from_db()
    assert first.state == ItemStage.State.ADJUDICATION

    decided = client.post(url, {"value": "temporal", "reason": "A only precedes B."})
    assert decided.status_code == 302
    assert decided["Location"] == reverse(
        "agreement:adjudicate", args=[study.project.slug, second.pk]
    )
    resolution = Resolution.objects.get(item_stage=first)
    assert (resolution.status, resolution.value, resolution.reason) == (
        "adjudicated",
        "temporal",
        "A only precedes B.",
    )
    assert resolution.decided_by == study.reviewer

    again = client.post(url, {"value": "causal", "reason": "Changed my mind."})
    assert again.status_code == 409 and "already decided" in again.content.decode()
    assert Resolution.objects.get(item_stage=first).value == "temporal"


def test_an_htmx_decision_redirects_the_page_and_a_bad_value_re_renders_the_form(study):
    client = client_for(study.reviewer)
    first, second = waiting(study)
    url = reverse("agreement:adjudicate", args=[study.project.slug, second.pk])
    bad = client.post(url, {"value": "maybe", "reason": "Unsure."}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 400
    assert bad.content.decode().lstrip().startswith('<section class="card" id="decision"')
    good = client.post(
        url, {"value": "none", "reason": "Unrelated events."}, HTTP_HX_REQUEST="true"
    )
    assert good["HX-Redirect"] == reverse(
        "agreement:adjudicate", args=[study.project.slug, first.pk]
    )
    last = client.post(
        reverse("agreement:adjudicate", args=[study.project.slug, first.pk]),
        {"value": "causal", "reason": "A brings B about."},
    )
    assert last["Location"] == reverse("agreement:adjudication", args=[study.project.slug])
    assert client.get(last["Location"]).context["waiting"] == 0


def test_an_item_of_another_project_is_not_found(study):
    other = make_project()
    stage = make_label_stage(other, choices=LABELS)
    make_items(other, 1)
    foreign = ItemStage.objects.get(stage=stage)
    response = client_for(study.reviewer).get(
        reverse("agreement:adjudicate", args=[study.project.slug, foreign.pk])
    )
    assert response.status_code == 404


def test_annotations_are_untouched_by_every_page(study):
    before = list(Annotation.objects.order_by("pk").values_list("pk", "payload"))
    client = client_for(study.admin)
    for url in research_urls(study):
        client.get(url)
    assert list(Annotation.objects.order_by("pk").values_list("pk", "payload")) == before


# --- Keyset pages of the long lists ---------------------------------------------------------------


def follow_next(client, url: str, query: dict[str, str], rel: str = "next") -> list[str]:
    """The pages' HTML, from ``url`` by each page's rel="next" link (annotation/keyset.py)."""
    pages = [client.get(url, query).content.decode()]
    while (found := re.search(rf'href="\?([^"]*)" rel="{rel}"', pages[-1])) is not None:
        pages.append(client.get(url + "?" + html.unescape(found.group(1))).content.decode())
        assert len(pages) < 50
    return pages


def test_the_disagreement_list_pages_by_cursor_each_item_once(study, monkeypatch):
    from agreement import views

    monkeypatch.setattr(views, "PAGE_SIZE", 1)
    client = client_for(study.researcher)
    url = reverse("agreement:disagreements", args=[study.project.slug, study.stage.slug])
    listed = list(selectors.disagreement_items(study.stage, show="all"))
    assert len(listed) > 2
    pages = follow_next(client, url, {"show": "all"})
    assert len(pages) == len(listed)
    for page, item_stage in zip(pages, listed, strict=True):
        # Each page holds its one item (and the count of the whole list, counted now).
        assert item_stage.item.external_id in page
        assert f"All resolved items · {len(listed)} items" in page
        others = [other for other in listed if other.pk != item_stage.pk]
        assert not any(f">{other.item.external_id}</" in page for other in others)
    assert 'rel="prev"' in pages[-1] and 'rel="prev"' not in pages[0]


def test_a_large_stage_shows_its_stored_disagreement_count_with_its_age(study, settings):
    from agreement import stored
    from agreement.models import StoredStagePage

    settings.AGREEMENT_STORED_FROM = 0
    settings.AGREEMENT_STORED_MAX_AGE = 3600
    stored.stage_page_store(stage_id=study.stage.pk)
    row = StoredStagePage.objects.get(pk=study.stage.pk)
    assert row.counts["disagreements"]["ties"] == 2
    row.counts["disagreements"]["ties"] = 1234
    StoredStagePage.objects.filter(pk=row.pk).update(counts=row.counts)
    page = client_for(study.researcher).get(
        reverse("agreement:disagreements", args=[study.project.slug, study.stage.slug]),
        {"show": "ties"},
    )
    assert page.context["count"] == 1234 and page.context["counted_at"] is not None
    assert "about 1,234 items" in page.content.decode()


def test_the_adjudication_queue_pages_by_cursor_oldest_first(study, monkeypatch):
    from agreement import views

    monkeypatch.setattr(views, "PAGE_SIZE", 1)
    queue = waiting(study)
    assert len(queue) == 2
    client = client_for(study.reviewer)
    url = reverse("agreement:adjudication", args=[study.project.slug])
    pages = follow_next(client, url, {})
    oldest_first = sorted(queue, key=lambda item_stage: (item_stage.completed_at, item_stage.pk))
    assert len(pages) == 2
    for page, item_stage in zip(pages, oldest_first, strict=True):
        assert "Waiting for a decision · 2<" in page
        assert reverse("agreement:adjudicate", args=[study.project.slug, item_stage.pk]) in page
    # An annotator who reviews waits only for the items they did not annotate.
    assert selectors.adjudication_waiting(study.project, reviewer=study.annotators[0]) == 0
    assert selectors.adjudication_waiting(study.project, reviewer=study.reviewer) == 2


def test_the_annotators_table_shows_its_first_rows_and_every_row_on_request(study, monkeypatch):
    from agreement import pages

    monkeypatch.setattr(pages, "ANNOTATORS_SHOWN", 2)
    client = client_for(study.researcher)
    url = reverse("agreement:stage", args=[study.project.slug, study.stage.slug])
    names = [f'<th scope="row">ann{rank}' for rank in range(3)]
    first = client.get(url, {"sort": "name", "dir": "asc"}).content.decode()
    assert [name in first for name in names] == [True, True, False]
    assert "The first 2 of 3 annotators" in first and "rows=all" in first
    every = client.get(
        url,
        {"sort": "name", "dir": "asc", "rows": "all", "part": "annotators"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert all(name in every for name in names) and "The first 2" not in every
    # A pause posted from the whole table re-renders the whole table.
    assert 'name="rows" value="all"' in every
