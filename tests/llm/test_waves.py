"""A model rater's run in waves (llm/waves.py) and the ledger's wave statements (llm/ledger.py:
calls_claim, calls_store): a key is claimed once however often a wave asks, a stored answer is
a HOT update on PostgreSQL, a run gives the same votes on each of its paths (ready waves: one
engine statement a wave; waves in the SWEEP order; call by call), each key asked of the server
once, and a wave's votes written again keep the first."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection

from annotation.models import Annotation
from llm import runs
from llm.client import Reply
from llm.ledger import Outcome, Tally, call_key, calls_claim, calls_store, fresh_call
from llm.models import Call, ModelVote, Run
from llm.waves import SWEEP_WAVES
from tests.llm.test_runs import _endpoint, _project, _rater


def _fresh(endpoint, subjects):
    return [
        fresh_call(
            key=call_key("rate", endpoint, None, subject, 0),
            endpoint=endpoint,
            messages=[{"role": "user", "content": subject}],
            params={},
            run=None,
            prompt=None,
            item_id=None,
            subject=subject,
            sample=0,
        )
        for subject in subjects
    ]


@pytest.mark.django_db
def test_a_wave_claims_a_key_once_and_stores_every_outcome(chat_server):
    endpoint = _endpoint(chat_server, chat_server.model("claims"))
    first = calls_claim(_fresh(endpoint, ["a", "b"]))
    again = calls_claim(_fresh(endpoint, ["b", "c"]))

    assert [call.subject for call in first] == ["a", "b"]
    assert [call.subject for call in again] == ["c"]  # b exists: not claimed twice
    assert Call.objects.count() == 3
    assert set(Call.objects.values_list("status", flat=True)) == {Call.Status.PENDING}

    tally = Tally()
    reply = Reply('{"value": "none"}', 12, 3, 40, "m", "stop")
    calls_store(
        [
            (first[0], Outcome(status="ok", attempts=2, cost=Decimal("0.5"), reply=reply,
                               parsed={"value": "none"})),
            (again[0], Outcome(status="failed", attempts=1, cost=Decimal(0), reply=None)),
        ],
        tally=tally,
    )  # fmt: skip

    stored = {call.subject: call for call in Call.objects.all()}
    assert stored["a"].status == "ok" and stored["a"].parsed == {"value": "none"}
    assert (stored["a"].attempts, stored["a"].prompt_tokens, stored["a"].raw) == (
        2,
        12,
        '{"value": "none"}',
    )
    assert stored["a"].claimed_until is None and stored["a"].finished_at is not None
    assert stored["c"].status == "failed" and stored["c"].attempts == 1
    assert stored["b"].status == "pending"  # not in the wave: untouched
    assert tally.take() == (3, Decimal("0.5"))


@pytest.mark.postgres
@pytest.mark.django_db
def test_storing_an_answer_is_a_hot_update_on_postgresql(postgres, chat_server):
    """No index names a column the answer changes (migration 0004): PostgreSQL rewrites none
    of the table's indexes (counted for this transaction by pg_stat_get_xact_*). A few rows:
    within one transaction nothing is pruned, so only the page's free room takes new versions."""
    endpoint = _endpoint(chat_server, chat_server.model("hot"))
    claimed = calls_claim(_fresh(endpoint, [f"s{i}" for i in range(5)]))
    reply = Reply('{"value": "causal"}', 5, 2, 10, "m", "stop")

    def counts() -> tuple[int, int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_stat_get_xact_tuples_updated(%s::regclass),"
                " pg_stat_get_xact_tuples_hot_updated(%s::regclass)",
                [Call._meta.db_table, Call._meta.db_table],
            )
            return cursor.fetchone()

    before = counts()
    calls_store(
        [
            (call, Outcome(status="ok", attempts=1, cost=Decimal(0), reply=reply,
                           parsed={"value": "causal"}))
            for call in claimed
        ],
        tally=Tally(),
    )  # fmt: skip
    after = counts()
    assert (after[0] - before[0], after[1] - before[1]) == (5, 5)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["ready", "sweep-waves", "per-call"])
def test_every_path_gives_the_same_votes_and_asks_each_key_once(postgres, chat_server, path):
    project, stage = _project(items=40, overlap=1)
    model = chat_server.model(f"paths-{path}")
    chat_server.control(model, answers={"Sentence 7:": {"value": "temporal"}})
    rater = _rater(project, stage, _endpoint(chat_server, model, concurrency=8))
    options = {"per-call": {runs.PER_CALL: True}, "sweep-waves": {SWEEP_WAVES: True}}.get(path, {})
    run = Run.objects.create(project_id=project.pk, purpose="rate", rater=rater, options=options)

    run = runs.rater_run(run.pk)

    assert run.status == Run.Status.DONE and (run.done, run.failed, run.calls) == (40, 0, 40)
    votes = {vote.item_stage.item.external_id: vote.value for vote in ModelVote.objects.all()}
    assert len(votes) == 40 and votes["case-7"] == "temporal"
    assert {value for key, value in votes.items() if key != "case-7"} == {"causal"}
    assert Annotation.objects.filter(annotator=rater.user).count() == 40
    assert Call.objects.filter(endpoint=rater.endpoint).count() == 40
    assert len(chat_server.requests(model)) == 40

    # a second run finds every item answered: no call, no vote, no annotation more
    again = Run.objects.create(project_id=project.pk, purpose="rate", rater=rater)
    again = runs.rater_run(again.pk)
    assert again.calls == 0 and ModelVote.objects.count() == 40
    assert len(chat_server.requests(model)) == 40


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_ready_wave_s_votes_written_again_keep_the_first_and_match_the_orm(postgres, chat_server):
    from annotation.api import annotations_submit_ready, reached_by
    from annotation.models import ItemStage
    from llm.waves import votes_record

    project, stage = _project(items=3, overlap=1)
    rater = _rater(project, stage, _endpoint(chat_server, chat_server.model("votes")))
    item_stages = list(ItemStage.objects.filter(stage=stage).order_by("pk"))
    votes = {s.pk: ("causal", 2 / 3, 3) for s in item_stages}
    stored = annotations_submit_ready(
        annotator=rater.user,
        stage=reached_by(stage, rater.user.pk),
        answers=[(s, {"value": "causal"}) for s in item_stages],
        on_submitted=lambda done: votes_record(rater, done, votes=votes),
    )
    assert len(stored) == 3
    votes_record(rater, stored, votes={s.pk: ("temporal", 1.0, 1) for s in item_stages})  # a retry

    rows = ModelVote.objects.filter(rater=rater).order_by("item_stage_id")
    assert [(v.item_stage_id, v.value, v.samples) for v in rows] == [
        (s.pk, "causal", 3) for s in item_stages
    ]
    assert [v.annotation_id for v in rows] == [done.annotation_id for done in stored]
    assert all(abs(v.confidence - 2 / 3) < 1e-9 and v.created_at for v in rows)
