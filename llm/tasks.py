"""Celery tasks of the llm app: ids in, look the rows up, call the run; safe to run twice
(CONTRIBUTING.md, "Celery tasks"): a run is claimed before it is worked (llm.runs.claim), and
everything it does is keyed (the ledger, the engine's one lease per annotator, ModelVote)."""

from __future__ import annotations

from celery import shared_task

from llm import runs


@shared_task(name="llm.tasks.rater_run")
def rater_run(run_id: int) -> str | None:
    run = runs.rater_run(run_id)
    return run.status if run else None


@shared_task(name="llm.tasks.runs_sweep")
def runs_sweep() -> int:
    """Send again the runs whose message was lost (broker outage) or whose worker died (its
    heartbeat stale): queued runs older than a minute and stale running ones."""
    from llm.services import runs_stuck

    stuck = runs_stuck()
    for run_id in stuck:
        rater_run.delay(run_id)
    return len(stuck)


@shared_task(name="llm.tasks.generation_run")
def generation_run(run_id: int) -> str | None:
    """A generation run (llm/generation.py): claimed first, every call and write keyed."""
    from llm import generation

    run = generation.generation_run(run_id)
    return run.status if run else None


@shared_task(name="llm.tasks.generations_sweep")
def generations_sweep() -> int:
    """``runs_sweep`` for generation runs (a beat task beside it)."""
    from llm import generation

    stuck = generation.generation_runs_stuck()
    for run_id in stuck:
        generation_run.delay(run_id)
    return len(stuck)
