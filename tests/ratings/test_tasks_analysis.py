"""The researcher page's stored analysis with the real Celery worker: ratings submitted on the
item screen's services reach the stored analysis through the engine's resolution event, a burst
of them is computed far fewer times than there were changes, and a page load never computes."""

from __future__ import annotations

import os

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.models import Role
from ratings import selectors, services
from ratings.models import StoredAnalysis
from tests.conftest import Workers, wait_for
from tests.factories import PASSWORD, make_member
from tests.ratings.conftest import make_ratings_project, pairs_csv

pytestmark = [pytest.mark.celery_worker, pytest.mark.postgres]


@pytest.fixture
def worker(transactional_db, postgres):
    if not os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs Redis: run through `make test` (scripts/with-services.sh)")
    from rungwise.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    app.control.purge()
    pool = Workers(RATINGS_ANALYSIS_DELAY="1", prefix="ratings")
    pool.start()
    yield pool
    pool.stop_all()
    app.conf.task_always_eager = previous
    app.control.purge()


def rate(project, rater, count: int, value: int = 7) -> None:
    stage = selectors.ratings_context(project).setup.rating_stage
    for _ in range(count):
        assignment = engine.assignment_next(annotator=rater, stage=stage)
        assert assignment is not None
        engine.annotation_submit(
            assignment_id=assignment.pk, annotator=rater, payload={"value": value}
        )


def stored(project, source="all"):
    return StoredAnalysis.objects.filter(project=project, source=source, run_key=0).first()


def current(project) -> bool:
    row = stored(project)
    context = selectors.ratings_context(project)
    return bool(
        row and row.content is not None and row.version == selectors.data_version(context, None)
    )


def test_new_ratings_update_the_stored_analysis_once_per_burst(worker):
    project = make_ratings_project(overlap=1)
    services.pairs_import(project=project, content=pairs_csv(), filename="pairs.csv")
    rater = make_member(project, Role.ANNOTATOR)
    # The import itself asked for the analysis (no ratings yet).
    wait_for(lambda: current(project))
    before = stored(project).computations
    rate(project, rater, 12)  # overlap 1: every submission resolves its item
    wait_for(lambda: current(project), timeout=30)
    row = stored(project)
    analysis = selectors.stored_analysis(
        selectors.ratings_context(project), source="all", run=None
    ).analysis
    assert analysis.report.n_ratings == 12 and analysis.report.n_items_rated == 12
    # Twelve resolutions, debounced: far fewer computations than changes.
    assert 1 <= row.computations - before <= 4, row.computations - before


def test_a_page_load_never_computes_and_shows_progress_until_the_worker_is_done(
    worker, client, monkeypatch
):
    project = make_ratings_project(overlap=1)
    services.pairs_import(project=project, content=pairs_csv(), filename="pairs.csv")
    rater = make_member(project, Role.ANNOTATOR)
    rate(project, rater, 5)
    researcher = make_member(project, Role.RESEARCHER)
    assert client.login(username=researcher.get_username(), password=PASSWORD)

    def no_inline_computation(*args, **kwargs):
        raise AssertionError("the page computed the analysis inline")

    # The test process (the web side) may not compute; the worker is another process.
    monkeypatch.setattr(selectors, "compute_analysis", no_inline_computation)
    page = reverse("ratings:dashboard", args=[project.slug])
    first = client.get(page, {"source": "live"}).content.decode()
    assert "Computing the analysis" in first and 'aria-busy="true"' in first
    assert "every 2s" in first  # the section polls until the result is stored

    def ready():
        html = client.get(page, {"source": "live", "part": "analysis"}, HTTP_HX_REQUEST="true")
        html = html.content.decode()
        return html if "Krippendorff" in html else None

    html = wait_for(ready, timeout=30, interval=0.5)
    assert "5 ratings of 5 items" in html and 'aria-busy="false"' in html
    assert "every 2s" not in html
    # More ratings: the stored result is shown while it is brought up to date.
    rate(project, rater, 2, value=3)
    stale = client.get(page, {"source": "live"}).content.decode()
    assert "5 ratings of 5 items" in stale and "Updating with the newest ratings" in stale
    html = wait_for(
        lambda: (
            lambda text: text if "7 ratings of 7 items" in text else None
        )(client.get(page, {"source": "live", "part": "analysis"}, HTTP_HX_REQUEST="true")
          .content.decode()),
        timeout=30,
        interval=0.5,
    )  # fmt: skip
    assert "Updating" not in html
