"""An evaluation asks its questions on the endpoint's ``concurrency`` threads
(llm/evaluation/services.py, ``_ask_all``), perplexity calls too, against the local Chat
Completions server, which reports the most requests it answered at once: the threads are used
and bounded by the endpoint, and no question is asked twice — not by a run taken over while
its first worker still asks, nor by one resumed after its worker was killed mid-call."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta
from unittest import mock

import pytest
import requests
from django.db import connections
from django.utils import timezone

from llm.evaluation import services
from llm.models import Call, Endpoint, Evaluation, Run
from tests.conftest import wait_for
from tests.factories import make_project
from tests.llm.releases import explica_files, published_release

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

QUESTIONS = 12


@pytest.fixture(autouse=True)
def _threads_need_postgres(postgres):
    """Threads have connections of their own: on SQLite an evaluation asks on one thread."""


def carlgt_release(tmp_path, slug: str):
    """A CARL-GT release of QUESTIONS yes / no questions ("Are V<i> and V<i+1> …"), the gold
    alternating no / yes."""
    questions = "".join(f"Are V{i} and V{i + 1} d-seperated?\n" for i in range(QUESTIONS))
    gold = "".join(("no" if i % 2 == 0 else "yes") + "\n" for i in range(QUESTIONS))
    files = {
        "carlgt_files.csv": (
            "task,graph_id,graph_size,questions_file,answers_file,human_file,source_file,"
            "lines,note\n"
            "d_separation,1,large,carlgt_d_separation_1_questions.txt,"
            "carlgt_d_separation_1_answers.txt,carlgt_d_separation_1_human.txt,graph/1,"
            f"{QUESTIONS},\n"
        ),
        "carlgt_d_separation_1_questions.txt": questions,
        "carlgt_d_separation_1_answers.txt": gold,
        "carlgt_d_separation_1_human.txt": gold,
    }
    return published_release(make_project(slug=slug, kind="carlgt"), files, tmp_path)


def endpoint_for(chat_server, name: str, concurrency: int, delay: float) -> Endpoint:
    model = chat_server.model(name)
    chat_server.control(model, default={"answer": "no"}, delay=delay)
    return Endpoint.objects.create(
        name=model[:60],
        base_url=chat_server.base_url,
        model=model,
        concurrency=concurrency,
        requests_per_minute=0,
        max_retries=1,
        timeout_seconds=10,
    )


def peak(chat_server, model: str) -> int:
    return requests.get(
        f"{chat_server.root}/_concurrency", params={"model": model}, timeout=5
    ).json()["peak"]


def asked(chat_server, model: str) -> Counter:
    """How many requests each question got (by its "V<i> and" text)."""
    counts: Counter = Counter()
    for body in chat_server.requests(model):
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        counts.update(f"V{i} and" for i in range(QUESTIONS) if f"V{i} and" in text)
    return counts


@pytest.fixture
def media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return tmp_path


def test_questions_are_asked_on_the_endpoints_threads_once_each(chat_server, media):
    release = carlgt_release(media, "carl-threads")
    endpoint = endpoint_for(chat_server, "eval-threads", concurrency=3, delay=0.3)
    evaluation = services.evaluation_start(release=release, endpoint=endpoint, enqueue=False)

    evaluation = services.evaluation_execute(evaluation_id=evaluation.pk)

    assert evaluation.run.status == Run.Status.DONE, evaluation.run.error
    assert (evaluation.answered, evaluation.run.done, evaluation.run.calls) == (12, 12, 12)
    assert asked(chat_server, endpoint.model) == {f"V{i} and": 1 for i in range(QUESTIONS)}
    # several at once, never more than the endpoint's concurrency
    assert 2 <= peak(chat_server, endpoint.model) <= 3
    # the answers are scored in the questions' order: "no" is right on every other one
    accuracy = next(m for m in evaluation.results if m["metric"] == "accuracy")
    assert accuracy["value"] == pytest.approx(0.5)

    one = endpoint_for(chat_server, "eval-one-thread", concurrency=1, delay=0.05)
    services.evaluation_execute(
        evaluation_id=services.evaluation_start(release=release, endpoint=one, enqueue=False).pk
    )
    assert peak(chat_server, one.model) == 1


def test_perplexity_calls_use_the_threads_and_a_held_question_is_left_alone(chat_server, media):
    release = published_release(
        make_project(slug="explica-threads", kind="ratings"), explica_files(), media
    )
    endpoint = endpoint_for(chat_server, "ppl-threads", concurrency=3, delay=0.3)
    evaluation = services.evaluation_start(
        release=release, endpoint=endpoint, mode="perplexity", enqueue=False
    )
    evaluation = services.evaluation_execute(evaluation_id=evaluation.pk)
    assert evaluation.run.status == Run.Status.DONE, evaluation.run.error
    sent = chat_server.requests(endpoint.model)
    assert len(sent) == 12  # three questions × four connectives, each once
    assert len({body["prompt"] for body in sent}) == 12
    assert 2 <= peak(chat_server, endpoint.model) <= 3

    # a perplexity row another worker holds is left to it: nothing asked for it, no figures
    from llm.ledger import call_key

    other = services.evaluation_start(
        release=release, endpoint=endpoint, mode="perplexity", enqueue=False
    )
    first = services.release_questions(release)[0]
    Call.objects.create(
        key=call_key("evaluate", endpoint, None, f"{other.pk}:{first.id}", 0),
        endpoint=endpoint,
        subject=first.id,
        claimed_until=timezone.now() + timedelta(minutes=5),
    )
    other = services.evaluation_execute(evaluation_id=other.pk)
    assert other.finished_at is None and other.run.status == Run.Status.RUNNING
    held = Call.objects.get(subject=first.id, run__isnull=True)
    assert held.status == Call.Status.PENDING and held.attempts == 0
    assert len(chat_server.requests(endpoint.model)) <= 12 + 8  # the other two at most


def test_a_run_taken_over_while_its_first_worker_asks_asks_nothing_twice(chat_server, media):
    """Worker A asks on three threads; worker B takes the run over (as after a missed
    heartbeat) while A is still asking. Each stops at a question the other holds, or
    finishes; a last worker finishes what is left. Every question was asked exactly once."""
    release = carlgt_release(media, "carl-takeover")
    endpoint = endpoint_for(chat_server, "eval-takeover", concurrency=3, delay=0.3)
    evaluation = services.evaluation_start(release=release, endpoint=endpoint, enqueue=False)

    def worker_a() -> None:
        try:
            services.evaluation_execute(evaluation_id=evaluation.pk)
        finally:
            connections.close_all()

    first = threading.Thread(target=worker_a)
    first.start()
    wait_for(lambda: Call.objects.filter(run=evaluation.run_id, status="ok").count() >= 2)
    run = Run.objects.get(pk=evaluation.run_id)
    with mock.patch.object(services, "claim", return_value=run):  # B takes the run over
        services.evaluation_execute(evaluation_id=evaluation.pk)
    first.join(timeout=60)
    assert not first.is_alive()
    Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(
        heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    evaluation = services.evaluation_execute(evaluation_id=evaluation.pk)

    assert evaluation.run.status == Run.Status.DONE, evaluation.run.error
    assert evaluation.answered == QUESTIONS
    assert asked(chat_server, endpoint.model) == {f"V{i} and": 1 for i in range(QUESTIONS)}
    assert Call.objects.filter(run=run).count() == QUESTIONS


def test_a_worker_killed_mid_call_is_taken_over_and_only_its_open_calls_are_made(
    chat_server, media
):
    """A worker was killed after ten answers were stored and while two calls were in flight
    (their rows claimed, the claims since expired): the run taken over asks those two only."""
    release = carlgt_release(media, "carl-killed")
    endpoint = endpoint_for(chat_server, "eval-killed", concurrency=3, delay=0.05)
    evaluation = services.evaluation_start(release=release, endpoint=endpoint, enqueue=False)
    services.evaluation_execute(evaluation_id=evaluation.pk)
    # rewind to the moment of the kill: figures not stored, the run running, a stale
    # heartbeat, two calls claimed by the dead worker and never answered
    long_ago = timezone.now() - timedelta(hours=1)
    Evaluation.objects.filter(pk=evaluation.pk).update(finished_at=None, results=[], baseline=[])
    Run.objects.filter(pk=evaluation.run_id).update(
        status=Run.Status.RUNNING, finished_at=None, heartbeat_at=long_ago
    )
    open_calls = list(Call.objects.filter(run=evaluation.run_id).order_by("pk")[:2])
    Call.objects.filter(pk__in=[c.pk for c in open_calls]).update(
        status=Call.Status.PENDING, parsed=None, raw="", claimed_until=long_ago
    )
    before = len(chat_server.requests(endpoint.model))

    evaluation = services.evaluation_execute(evaluation_id=evaluation.pk)

    assert evaluation.run.status == Run.Status.DONE, evaluation.run.error
    assert evaluation.answered == QUESTIONS and evaluation.results
    again = chat_server.requests(endpoint.model)[before:]
    assert len(again) == 2
    subjects = {c.subject for c in open_calls}
    assert Call.objects.filter(subject__in=subjects, status="ok", run=evaluation.run).count() == 2
    # a second delivery of the task finds the run done and asks nothing
    services.evaluation_execute(evaluation_id=evaluation.pk)
    assert len(chat_server.requests(endpoint.model)) == before + 2
