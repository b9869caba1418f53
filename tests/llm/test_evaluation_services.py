"""Evaluations of a published release (llm/evaluation/services.py) against the local Chat
Completions server (tests/fakes/chat_server.py) with the production client and ledger: every
question asked once and stored as a ledger call named by the question, the figures stored with
the human baseline and never changed, a re-run adding an evaluation, pause / resume / cancel
through the run, and the perplexity reading of a choice question."""

from __future__ import annotations

import json

import pytest

from annotation.errors import ApplicationError, Conflict
from llm.evaluation import services
from llm.models import Call, Endpoint, Evaluation, Run
from tests.factories import make_project
from tests.llm.releases import carlgt_files, explica_files, published_release

pytestmark = pytest.mark.django_db

RIGHT = {
    "Are V0 and V1 d-seperated?": {"answer": "no"},
    "Are V0 and V2": {"answer": "yes"},
    "Are V3 and V4": {"answer": "no"},
    "What is V1": {"answer": -0.25},
    "What is V2": {"answer": 4.5},
}


@pytest.fixture
def endpoint(chat_server):
    model = chat_server.model("evaluate")
    chat_server.control(model, answers=RIGHT)
    return Endpoint.objects.create(
        name=model[:60].replace(".", "-"),
        base_url=chat_server.base_url,
        model=model,
        requests_per_minute=0,
        max_retries=1,
        default_params={"temperature": 0},
    )


@pytest.fixture
def release(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    project = make_project(slug="carl-eval", kind="carlgt")
    return published_release(project, carlgt_files(), tmp_path)


def run(release, endpoint, django_capture_on_commit_callbacks, **options):
    with django_capture_on_commit_callbacks(execute=True):
        evaluation = services.evaluation_start(release=release, endpoint=endpoint, **options)
    evaluation.refresh_from_db()
    return evaluation


def figures(rows):
    return {(row["group"], row["metric"]): row for row in rows}


def test_every_question_is_asked_once_and_scored_beside_the_people(
    release, endpoint, chat_server, django_capture_on_commit_callbacks
):
    evaluation = run(release, endpoint, django_capture_on_commit_callbacks)
    assert evaluation.run.status == Run.Status.DONE
    assert evaluation.release_sha256 == release.sha256
    assert (evaluation.questions, evaluation.answered) == (5, 5)
    calls = Call.objects.filter(run=evaluation.run)
    assert sorted(calls.values_list("subject", flat=True)) == [
        "counterfactual/100/1",
        "counterfactual/100/2",
        "d_separation/1/1",
        "d_separation/1/2",
        "d_separation/1/3",
    ]
    assert set(calls.values_list("status", flat=True)) == {Call.Status.OK}
    assert evaluation.run.done == 5 and evaluation.run.total == 5
    model = figures(evaluation.results)
    assert model[("all", "accuracy")]["value"] == pytest.approx(2 / 3)
    assert model[("all", "mae")]["value"] == pytest.approx(0.5)
    human = figures(evaluation.baseline)
    assert human[("all", "accuracy")]["value"] == 0.5
    table = figures(services.evaluation_table(evaluation))
    assert table[("all", "accuracy")]["human"] == 0.5
    # the server saw the questions and a schema for the answer, never the gold answers
    sent = chat_server.requests(endpoint.model)
    assert len(sent) == 5
    assert all(body["response_format"]["type"] == "json_schema" for body in sent)
    assert not any("-0.25" in json.dumps(body["messages"]) for body in sent)


def test_running_again_asks_nothing_and_changes_nothing(
    release, endpoint, chat_server, django_capture_on_commit_callbacks
):
    evaluation = run(release, endpoint, django_capture_on_commit_callbacks)
    stored = (evaluation.results, evaluation.baseline, evaluation.finished_at)
    services.evaluation_execute(evaluation_id=evaluation.pk)
    evaluation.refresh_from_db()
    assert (evaluation.results, evaluation.baseline, evaluation.finished_at) == stored
    assert len(chat_server.requests(endpoint.model)) == 5


def test_a_rerun_adds_an_evaluation_with_its_own_calls(
    release, endpoint, chat_server, django_capture_on_commit_callbacks
):
    first = run(release, endpoint, django_capture_on_commit_callbacks)
    chat_server.control(endpoint.model, default={"answer": "yes"})  # the model changed
    second = run(release, endpoint, django_capture_on_commit_callbacks)
    assert second.pk != first.pk
    assert Evaluation.objects.filter(release=release, endpoint=endpoint).count() == 2
    assert Call.objects.filter(run=second.run).count() == 5
    assert len(chat_server.requests(endpoint.model)) == 10
    first_figures = figures(Evaluation.objects.get(pk=first.pk).results)
    assert first_figures == figures(first.results)


def test_unparseable_answers_are_retried_then_reported_never_scored(
    release, endpoint, chat_server, django_capture_on_commit_callbacks
):
    chat_server.control(
        endpoint.model,
        answers={**RIGHT, "What is V2": {"answer": "many"}},
        faults=[{"status": 500}],
    )
    evaluation = run(release, endpoint, django_capture_on_commit_callbacks)
    assert evaluation.run.status == Run.Status.DONE
    assert (evaluation.answered, evaluation.run.failed) == (4, 1)
    failed = Call.objects.get(run=evaluation.run, status=Call.Status.FAILED)
    assert failed.subject == "counterfactual/100/2" and failed.error_kind == "unparseable"
    assert failed.attempts == 2  # max_retries 1
    assert figures(evaluation.results)[("all", "mae")]["n"] == 1


def test_pause_resume_and_cancel_through_the_run(
    release, endpoint, chat_server, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        evaluation = services.evaluation_start(release=release, endpoint=endpoint)
    services.evaluation_control(evaluation=evaluation, action="pause")
    services.evaluation_execute(evaluation_id=evaluation.pk)  # the queued message arrives
    assert chat_server.requests(endpoint.model) == []
    with pytest.raises(Conflict):
        services.evaluation_control(evaluation=evaluation, action="pause")
    with django_capture_on_commit_callbacks(execute=True):
        services.evaluation_control(evaluation=evaluation, action="resume")
    evaluation.refresh_from_db()
    assert evaluation.run.status == Run.Status.DONE and evaluation.answered == 5
    with pytest.raises(Conflict):
        services.evaluation_control(evaluation=evaluation, action="cancel")
    with django_capture_on_commit_callbacks(execute=False):
        other = services.evaluation_start(release=release, endpoint=endpoint)
    services.evaluation_control(evaluation=other, action="cancel")
    services.evaluation_execute(evaluation_id=other.pk)
    other.refresh_from_db()
    assert other.run.status == Run.Status.CANCELLED and other.results == []


def test_only_a_published_release_of_a_scored_workflow_is_evaluated(release, endpoint, tmp_path):
    release.status = release.Status.BUILDING
    release.save(update_fields=["status"])
    with pytest.raises(Conflict):
        services.evaluation_start(release=release, endpoint=endpoint)
    plain = published_release(make_project(slug="plain"), {"items.jsonl": ""}, tmp_path)
    with pytest.raises(ApplicationError, match="no workflow scorer"):
        services.evaluation_start(release=plain, endpoint=endpoint)
    with pytest.raises(ApplicationError, match="perplexity"):
        services.evaluation_start(
            release=published_release(
                make_project(slug="carl2", kind="carlgt"), carlgt_files(), tmp_path
            ),
            endpoint=endpoint,
            mode="perplexity",
        )


def test_perplexity_chooses_the_least_surprising_connective(
    endpoint, chat_server, tmp_path, settings, django_capture_on_commit_callbacks
):
    """The fake server gives each word the log-probability −len/10, so the sentence with the
    shortest connective ("so") is the least surprising one."""
    settings.MEDIA_ROOT = tmp_path / "media"
    release = published_release(
        make_project(slug="explica", kind="ratings"), explica_files(), tmp_path
    )
    evaluation = run(release, endpoint, django_capture_on_commit_callbacks, mode="perplexity")
    assert evaluation.run.status == Run.Status.DONE, evaluation.run.error
    calls = Call.objects.filter(run=evaluation.run)
    assert set(calls.values_list("parsed", flat=True)) == {"so"}
    assert sorted(json.loads(calls.get(subject="1/AB").raw)) == ["after", "because", "so", "then"]
    assert figures(evaluation.results)[("all", "accuracy")]["value"] == pytest.approx(2 / 3)
    sent = chat_server.requests(endpoint.model)
    assert len(sent) == 12 and all(body["echo"] and body["max_tokens"] == 0 for body in sent)


def test_the_command_evaluates_in_process_and_prints_the_table(release, endpoint):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command(
        "llm_evaluate",
        release.project.slug,
        "--release",
        "1",
        "--endpoint",
        endpoint.name,
        stdout=out,
    )
    text = out.getvalue()
    assert "5 of 5 questions answered, 0 failed" in text
    lines = {line.split()[0] + " " + line.split()[1]: line for line in text.splitlines()[2:]}
    assert "0.667 [" in lines["all accuracy"] and "0.500 [" in lines["all accuracy"]
    assert Evaluation.objects.get(release=release).run.status == Run.Status.DONE
    with pytest.raises(CommandError, match="No endpoint 'nope'"):
        call_command("llm_evaluate", release.project.slug, "--release", "1", "--endpoint", "nope")
    with pytest.raises(CommandError, match="no release v7"):
        call_command(
            "llm_evaluate", release.project.slug, "--release", "7", "--endpoint", endpoint.name
        )


def test_lost_or_abandoned_runs_are_found_and_a_held_question_is_left_to_its_worker(
    release, endpoint, chat_server, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from llm.evaluation.tasks import evaluations_sweep
    from llm.ledger import call_key

    with django_capture_on_commit_callbacks(execute=False):
        lost = services.evaluation_start(release=release, endpoint=endpoint)
        fresh = services.evaluation_start(release=release, endpoint=endpoint)
    long_ago = timezone.now() - timedelta(minutes=10)
    Run.objects.filter(pk=lost.run_id).update(created_at=long_ago)
    assert services.evaluations_stuck() == [lost.pk]
    # a worker died mid-run: its heartbeat stopped; another worker holds the first question
    Run.objects.filter(pk=fresh.run_id).update(status=Run.Status.RUNNING, heartbeat_at=long_ago)
    assert sorted(services.evaluations_stuck()) == sorted([lost.pk, fresh.pk])
    Call.objects.create(
        key=call_key("evaluate", endpoint, None, f"{fresh.pk}:d_separation/1/1", 0),
        endpoint=endpoint,
        subject="d_separation/1/1",
        claimed_until=timezone.now() + timedelta(minutes=5),
    )
    assert evaluations_sweep() == 2  # eager: both run now
    lost.refresh_from_db()
    fresh.refresh_from_db()
    assert lost.run.status == Run.Status.DONE and lost.answered == 5
    # taken over, but the question another worker holds is left to it: nothing stored yet
    assert fresh.run.status == Run.Status.RUNNING and fresh.finished_at is None
    assert len(chat_server.requests(endpoint.model)) == 5


@pytest.mark.django_db(transaction=True)
@pytest.mark.celery_worker
def test_a_real_worker_evaluates_a_release(chat_server, tmp_path, settings):
    """The queued run goes through Redis to a worker process, which reads the archive, asks
    through the ledger and stores the figures."""
    from tests.conftest import Workers, wait_for

    if not settings.IS_POSTGRES or not __import__("os").environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs PostgreSQL and Redis: run through scripts/with-services.sh")
    from rungwise.celery import app

    settings.MEDIA_ROOT = tmp_path / "media"
    app.control.purge()
    workers = Workers(MEDIA_ROOT=str(tmp_path / "media"))
    try:
        workers.start()  # inside: a worker that fails to answer its ping is stopped too
        model = chat_server.model("worker-eval")
        chat_server.control(model, answers=RIGHT)
        worker_endpoint = Endpoint.objects.create(
            name=model[:60].replace(".", "-"),
            base_url=chat_server.base_url,
            model=model,
            requests_per_minute=600,
        )
        project = make_project(slug="carl-worker", kind="carlgt")
        published = published_release(project, carlgt_files(), tmp_path)
        evaluation = services.evaluation_start(release=published, endpoint=worker_endpoint)
        wait_for(
            lambda: Run.objects.get(pk=evaluation.run_id).status == Run.Status.DONE, timeout=60
        )
        evaluation.refresh_from_db()
        assert evaluation.answered == 5 and evaluation.finished_at is not None
        assert figures(evaluation.results)[("all", "accuracy")]["value"] == pytest.approx(2 / 3)
        assert len(chat_server.requests(model)) == 5
    finally:
        workers.stop_all()


def test_a_release_its_scorer_cannot_read_fails_the_run_with_the_reason(
    endpoint, tmp_path, settings, django_capture_on_commit_callbacks
):
    settings.MEDIA_ROOT = tmp_path / "media"
    broken = published_release(
        make_project(slug="carl-bad", kind="carlgt"), {"items.jsonl": ""}, tmp_path
    )
    evaluation = run(broken, endpoint, django_capture_on_commit_callbacks)
    assert evaluation.run.status == Run.Status.FAILED
    assert "carlgt_files.csv" in evaluation.run.error and evaluation.results == []
