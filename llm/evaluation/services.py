"""Evaluations of published releases (llm/README.md, "Evaluation on releases").

* :func:`evaluation_start` — a new evaluation of a release by an endpoint, as a ``Run``
  (purpose evaluate) sent to a worker after commit. Re-running a model adds an evaluation; a
  stored one is never changed.
* :func:`evaluation_execute` — the worker's part (llm.evaluation.tasks): every question of the
  release asked through the ledger (llm.ledger.call_once: one stored call per question, never
  two, so a retried or resumed task asks only what is left) on the endpoint's ``concurrency``
  threads, as a model rater's run asks (llm/runs.py), the run's status read before each
  question (a paused or cancelled run stops, a resumed one goes on), then the figures of the
  model and of the release's people stored once, together.
* :func:`evaluation_control` — pause, resume or cancel: the run's own moves.
* :func:`evaluations_stuck` — runs to send again (a lost message, a dead worker).
* :func:`evaluation_table` — the model's figures beside the human baseline, one row per group
  and figure (the page, the CSV, the API and ``manage.py llm_evaluate`` show it).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from typing import Any

from django.db import connection, connections, transaction
from django.utils import timezone

from annotation.api import enqueue_on_commit
from annotation.errors import ApplicationError, Conflict
from llm.client import CallError
from llm.evaluation.files import ReleaseFiles
from llm.evaluation.scoring import (
    Question,
    ReleaseScorer,
    human_answers,
    messages,
    scorer_for,
)
from llm.ledger import call_key, call_once
from llm.models import Call, Endpoint, Evaluation, Run
from llm.prompts import answer_format, parse_json
from llm.runs import claim
from llm.services import run_control
from releases.models import Release

logger = logging.getLogger(__name__)

PURPOSE = "evaluate"
#: Questions between two recounts of the run's counters (its status is read before each one).
CHECK_EVERY = 10


def release_files(release: Release) -> ReleaseFiles:
    return ReleaseFiles(lambda: release.archive.open("rb"))


def release_questions(release: Release) -> list[Question]:
    """Every question of a published release, by its workflow's scorer."""
    scorer = _scorer(release)
    return list(scorer.questions(release_files(release)))


def _scorer(release: Release) -> ReleaseScorer:
    scorer = scorer_for(release.project.kind)
    if scorer is None:
        raise ApplicationError(
            f"{release.project.name} is a {release.project.kind or 'plain'} project: no "
            "workflow scorer is registered for it, so its releases cannot be evaluated.",
            {"kind": release.project.kind},
        )
    return scorer


@transaction.atomic
def evaluation_start(
    *,
    release: Release,
    endpoint: Endpoint,
    user: Any = None,
    mode: str = Evaluation.Mode.CHAT,
    enqueue: bool = True,
) -> Evaluation:
    """A new evaluation of ``release`` by ``endpoint`` (module docstring); its run is queued
    and a worker starts it after commit (``enqueue`` False: the caller runs
    :func:`evaluation_execute` itself, as ``manage.py llm_evaluate`` does)."""
    if release.status != Release.Status.PUBLISHED or not release.archive:
        raise Conflict(
            f"v{release.version} is {release.get_status_display().lower()}; only a published "
            "release can be evaluated.",
            {"status": release.status},
        )
    scorer = _scorer(release)
    if mode not in Evaluation.Mode.values:
        raise ApplicationError(f"Unknown mode {mode!r}.", {"mode": mode})
    if mode == Evaluation.Mode.PERPLEXITY and not hasattr(scorer, "choices"):
        raise ApplicationError(
            f"The {release.project.kind} scorer asks open questions: perplexity needs a choice "
            "between options.",
            {"mode": mode},
        )
    run = Run.objects.create(
        project=release.project,
        purpose=Run.Purpose.EVALUATE,
        created_by=user if getattr(user, "pk", None) else None,
    )
    evaluation = Evaluation.objects.create(
        release=release,
        release_sha256=release.sha256,
        workflow=release.project.kind,
        endpoint=endpoint,
        mode=mode,
        run=run,
    )
    if enqueue:
        _enqueue(evaluation)
    return evaluation


def _enqueue(evaluation: Evaluation) -> None:
    from llm.evaluation.tasks import run_evaluation

    enqueue_on_commit(run_evaluation, evaluation.pk)


def _parser(scorer: ReleaseScorer, question: Question):
    def parse(text: str) -> Any:
        try:
            return scorer.parse(parse_json(text), dict(question.ask))
        except ValueError as error:
            raise CallError("unparseable", f"not a valid answer: {error}") from error

    return parse


def _ask(evaluation: Evaluation, scorer: ReleaseScorer, question: Question) -> Call:
    key = call_key(PURPOSE, evaluation.endpoint, None, f"{evaluation.pk}:{question.id}", 0)
    if evaluation.mode == Evaluation.Mode.PERPLEXITY:
        from llm.evaluation.perplexity import choose_by_perplexity

        return choose_by_perplexity(
            key=key, evaluation=evaluation, scorer=scorer, question=question
        )
    schema = scorer.answer_schema(dict(question.ask))
    asked = messages(scorer, question)
    if not evaluation.endpoint.json_schema_mode:
        asked[0]["content"] += (
            "\n\nAnswer with one JSON object that follows this JSON schema:\n"
            f"{json.dumps(schema, ensure_ascii=False)}"
        )
    return call_once(
        key=key,
        endpoint=evaluation.endpoint,
        messages=asked,
        parse=_parser(scorer, question),
        response_format=answer_format(schema, evaluation.endpoint),
        run=evaluation.run,
        subject=question.id,
    )


def _status(run: Run) -> str:
    """The run's status, read between questions; a running run's heartbeat beats with it (a
    worker that stops beating for llm.runs.STALE_SECONDS is taken over)."""
    Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(heartbeat_at=timezone.now())
    return Run.objects.filter(pk=run.pk).values_list("status", flat=True).get()


def _count(evaluation: Evaluation) -> None:
    """The run's counters from the ledger (idempotent: a resumed task counts nothing twice)."""
    calls = Call.objects.filter(run=evaluation.run)
    Run.objects.filter(pk=evaluation.run_id).update(
        done=calls.filter(status=Call.Status.OK).count(),
        failed=calls.filter(status=Call.Status.FAILED).count(),
        heartbeat_at=timezone.now(),
    )


def evaluation_execute(*, evaluation_id: int) -> Evaluation:
    """Ask what is left of the evaluation's questions, then store its figures (module
    docstring). Safe to run twice: the run is claimed first (llm.runs.claim: a queued run, or a
    running one whose worker's heartbeat stopped), so a finished, paused or cancelled
    evaluation is left as it is; and every question is asked through the ledger."""
    evaluation = Evaluation.objects.select_related("release__project", "endpoint", "run").get(
        pk=evaluation_id
    )
    run = claim(evaluation.run_id)
    if run is None:  # not queued, or running in a live worker
        return evaluation
    try:
        scorer = _scorer(evaluation.release)
        if evaluation.release.sha256 != evaluation.release_sha256:
            raise ApplicationError("The release's checksum is not the one evaluated.")
        questions = list(scorer.questions(release_files(evaluation.release)))
        Run.objects.filter(pk=run.pk).update(total=len(questions))
        Evaluation.objects.filter(pk=evaluation.pk).update(questions=len(questions))
        calls = _ask_all(evaluation, run, scorer, questions)
        _count(evaluation)
        if calls is not None:
            answers = [
                (question, calls[index].parsed)
                for index, question in enumerate(questions)
                if calls[index].status == Call.Status.OK
            ]
            _finish(evaluation, scorer, questions, answers)
    except (ApplicationError, KeyError, ValueError) as error:
        # A release the scorer cannot read: the message says what is missing.
        _fail(run, str(error))
    except Exception as error:
        # Anything else fails the run with its message rather than leaving it running for the
        # sweep to send again and again; the answers stay in the ledger.
        logger.exception("evaluation %s failed", evaluation.pk)
        _fail(run, f"{type(error).__name__}: {error}")
    evaluation.refresh_from_db()
    return evaluation


def _threads(evaluation: Evaluation) -> int:
    """The endpoint's ``concurrency``, as a model rater's run uses it (llm/runs.py) — but one
    thread on SQLite (its writers queue anyway) and inside a caller's transaction (threads have
    connections of their own and would not see its rows)."""
    if connection.vendor == "sqlite" or connection.in_atomic_block:
        return 1
    return max(1, evaluation.endpoint.concurrency)


def _ask_all(
    evaluation: Evaluation, run: Run, scorer: ReleaseScorer, questions: list[Question]
) -> dict[int, Call] | None:
    """Every question's ledger call by its index, asked on :func:`_threads` threads sharing
    one queue (the shared rate budget, llm/budget.py, is waited for before every request; the
    ledger asks each key once). None when the evaluation stops before the end: the run is no
    longer running (paused, cancelled — read before each question, its heartbeat beating), or
    a question came back ``pending`` because another worker holds it (a run taken over while
    its first worker was still asking: that worker goes on, this one stops). The calls in
    flight finish and are stored either way. The first unexpected error of a thread stops the
    others and is raised here."""
    work: queue.Queue[tuple[int, Question]] = queue.Queue()
    for pair in enumerate(questions):
        work.put(pair)
    calls: dict[int, Call] = {}
    stop = threading.Event()
    errors: list[BaseException] = []
    lock = threading.Lock()
    asked = [0]

    def worker() -> None:
        while not stop.is_set():
            try:
                index, question = work.get_nowait()
            except queue.Empty:
                return
            try:
                if _status(run) != Run.Status.RUNNING:
                    stop.set()
                    return
                call = _ask(evaluation, scorer, question)
            except Exception as error:  # raised in the caller's thread below
                with lock:
                    errors.append(error)
                stop.set()
                return
            with lock:
                calls[index] = call
                asked[0] += 1
                recount = asked[0] % CHECK_EVERY == 0
            if call.status == Call.Status.PENDING:
                stop.set()
                return
            if recount:
                _count(evaluation)

    def threaded() -> None:
        try:
            worker()
        finally:
            connections.close_all()

    count = _threads(evaluation)
    if count == 1:
        worker()
    else:
        pool = [threading.Thread(target=threaded, daemon=True) for _ in range(count)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
    if errors:
        raise errors[0]
    if stop.is_set() or len(calls) < len(questions):
        return None
    return calls


def _fail(run: Run, message: str) -> None:
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.FAILED, error=message[:2000], finished_at=timezone.now()
    )


@transaction.atomic
def _finish(
    evaluation: Evaluation,
    scorer: ReleaseScorer,
    questions: list[Question],
    answers: list[tuple[Question, Any]],
) -> None:
    """Write the figures once: only a running evaluation not finished yet takes them."""
    run = Run.objects.select_for_update().get(pk=evaluation.run_id)
    if run.status != Run.Status.RUNNING:
        return
    now = timezone.now()
    stored = Evaluation.objects.filter(pk=evaluation.pk, finished_at__isnull=True).update(
        answered=len(answers),
        results=[metric.to_dict() for metric in scorer.score(answers)],
        baseline=[metric.to_dict() for metric in scorer.score(human_answers(questions))],
        finished_at=now,
    )
    if stored:
        Run.objects.filter(pk=run.pk).update(status=Run.Status.DONE, finished_at=now)


def evaluation_control(*, evaluation: Evaluation, action: str) -> Evaluation:
    """``pause`` (stop after the question being asked; the answers so far are kept),
    ``resume`` (go on where it stopped: the ledger skips the questions answered) or ``cancel``
    (stop for good, with no figures) — the run's own moves (llm.services.run_control; a refused
    move is a Conflict naming it)."""
    with transaction.atomic():
        run = run_control(run=evaluation.run, action=action)
        if run.status == Run.Status.QUEUED:
            _enqueue(evaluation)
    evaluation.refresh_from_db()
    evaluation.run.refresh_from_db()
    return evaluation


def evaluations_stuck(*, queued_seconds: float = 60) -> list[int]:
    """Evaluations to send again: queued for more than ``queued_seconds`` (a lost message) or
    running with a heartbeat older than llm.runs.STALE_SECONDS (a dead worker; ``claim``
    takes such a run over, and the ledger asks nothing twice)."""
    from datetime import timedelta

    from django.db.models import Q

    from llm.runs import STALE_SECONDS

    now = timezone.now()
    return list(
        Evaluation.objects.filter(run__purpose=Run.Purpose.EVALUATE)
        .filter(
            Q(
                run__status=Run.Status.QUEUED,
                run__created_at__lt=now - timedelta(seconds=queued_seconds),
            )
            | Q(
                run__status=Run.Status.RUNNING,
                run__heartbeat_at__lt=now - timedelta(seconds=STALE_SECONDS),
            )
        )
        .values_list("pk", flat=True)
    )


TABLE_COLUMNS = [
    "group",
    "metric",
    "model_n",
    "model",
    "model_low",
    "model_high",
    "human_n",
    "human",
    "human_low",
    "human_high",
]


def evaluation_table(evaluation: Evaluation) -> list[dict[str, Any]]:
    """One row per (group, figure): the model's value and interval beside the people's
    (blank where the baseline has no such figure), in the scorer's order."""
    human = {(m["group"], m["metric"]): m for m in evaluation.baseline}
    rows = []
    for metric in evaluation.results:
        people = human.get((metric["group"], metric["metric"]), {})
        rows.append(
            {
                "group": metric["group"],
                "metric": metric["metric"],
                "model_n": metric["n"],
                "model": metric["value"],
                "model_low": metric["low"],
                "model_high": metric["high"],
                "human_n": people.get("n"),
                "human": people.get("value"),
                "human_low": people.get("low"),
                "human_high": people.get("high"),
            }
        )
    return rows
