"""The evaluation's Celery task: an id in, the service does the work; safe to run twice
(CONTRIBUTING.md, "Celery tasks"): every question goes through the ledger, and a finished,
paused or cancelled evaluation is left alone."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="llm.evaluation.tasks.run_evaluation")
def run_evaluation(evaluation_id: int) -> int:
    """Ask what is left of an evaluation's questions and store its figures; returns how many
    questions were answered."""
    from llm.evaluation.services import evaluation_execute

    return evaluation_execute(evaluation_id=evaluation_id).answered


@shared_task(name="llm.evaluation.tasks.evaluations_sweep")
def evaluations_sweep() -> int:
    """Send again the evaluations whose message was lost or whose worker died
    (llm.evaluation.services.evaluations_stuck); returns how many."""
    from llm.evaluation.services import evaluations_stuck

    stuck = evaluations_stuck()
    for evaluation_id in stuck:
        run_evaluation.delay(evaluation_id)
    return len(stuck)
