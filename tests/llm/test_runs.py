"""Model raters through the engine, against the local Chat Completions server
(tests/fakes/chat_server.py): blindness of prompts, extra slots, samples, failures by kind,
idempotent re-runs, a real Celery worker, a run taken over from a dead worker."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import services as engine
from annotation.models import Annotation, Assignment, ItemStage
from llm import runs
from llm.models import Call, Endpoint, ModelRater, ModelVote, Run
from llm.services import prompt_template_create, rater_add, rater_remove, run_control, run_start
from tests.conftest import wait_for
from tests.factories import annotate_stage, make_label_stage, make_member, make_project

CHOICES = ("causal", "temporal", "none")


def _project(items: int = 4, overlap: int = 2):
    project = make_project()
    stage = make_label_stage(project, overlap=overlap, choices=CHOICES)
    rows = [
        {
            "external_id": f"case-{i}",
            "payload": {
                "text": f"Sentence {i}: the storm came, then the roof leaked.",
                "gold": {"label": "SECRET-GOLD-" + str(i)},
                "answer": "SECRET-ANSWER",
                "_hidden": "SECRET-UNDERSCORE",
                "hidden": "SECRET-NOT-LISTED",
            },
        }
        for i in range(items)
    ]
    engine.items_create(project=project, rows=rows)
    return project, stage


def _endpoint(chat_server, model: str, **extra) -> Endpoint:
    extra.setdefault("max_retries", 2)
    extra.setdefault("timeout_seconds", 5)
    extra.setdefault("requests_per_minute", 0)
    return Endpoint.objects.create(
        name=model[:60], base_url=chat_server.base_url, model=model, **extra
    )


def _rater(project, stage, endpoint, **extra):
    version = prompt_template_create(
        project=project,
        name=f"label-{endpoint.name}"[:100],
        kind="label",
        system_text="You label causal relations. Answer with JSON.",
        user_text="Label the relation in: {{ text }} {{ gold }} {{ answer }} {{ hidden }}",
    )
    return rater_add(stage=stage, endpoint=endpoint, prompt=version, **extra)


def _run(rater) -> Run:
    run = Run.objects.create(project_id=rater.stage.project_id, purpose="rate", rater=rater)
    return runs.rater_run(run.pk)


@pytest.mark.django_db(transaction=True)
def test_a_model_rater_answers_every_item_through_the_engine_and_never_sees_gold(chat_server):
    project, stage = _project(items=4, overlap=2)
    model = chat_server.model("rater")
    chat_server.control(model, answers={"Sentence 1:": {"value": "temporal"}})
    rater = _rater(project, stage, _endpoint(chat_server, model))

    run = _run(rater)

    assert run.status == Run.Status.DONE and run.done == 4 and run.failed == 0
    votes = {v.item_stage.item.external_id: v.value for v in ModelVote.objects.all()}
    assert votes == {
        "case-0": "causal",
        "case-1": "temporal",
        "case-2": "causal",
        "case-3": "causal",
    }
    assert Annotation.objects.filter(annotator=rater.user).count() == 4
    requests = chat_server.requests(model)
    assert len(requests) == 4
    sent = json.dumps(requests)
    for secret in ("SECRET-GOLD", "SECRET-ANSWER", "SECRET-UNDERSCORE", "SECRET-NOT"):
        assert secret not in sent
    assert "the storm came" in sent
    # the structured answer asked for is the kind's own: one of the stage's labels
    schema = requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["value"]["enum"] == list(CHOICES)


@pytest.mark.django_db(transaction=True)
def test_an_extra_model_rater_keeps_its_slot_and_people_give_as_many_answers(chat_server):
    project, stage = _project(items=3, overlap=2)
    people = [make_member(project) for _ in range(4)]
    model = chat_server.model("extra")
    rater = _rater(project, stage, _endpoint(chat_server, model))
    stage.refresh_from_db()
    assert stage.overlap == 3
    assert {"rule": "model_slots"} in stage.eligibility
    assert set(ItemStage.objects.filter(stage=stage).values_list("target_count", flat=True)) == {3}

    given = annotate_stage(stage, people, lambda person, item: "none")

    assert given == 6  # two people per item, as before the model came
    assert not ItemStage.objects.filter(stage=stage, state="resolved").exists()
    run = _run(rater)
    assert run.done == 3
    for item_stage in ItemStage.objects.filter(stage=stage):
        assert item_stage.submitted_count == 3

    rater_remove(rater=rater)
    stage.refresh_from_db()
    assert stage.overlap == 2 and {"rule": "model_slots"} not in stage.eligibility


@pytest.mark.django_db(transaction=True)
def test_a_model_filling_a_human_slot_takes_one_of_the_people_s_places(chat_server):
    project, stage = _project(items=2, overlap=2)
    people = [make_member(project) for _ in range(3)]
    rater = _rater(
        project, stage, _endpoint(chat_server, chat_server.model("fill")), fills_human_slot=True
    )
    stage.refresh_from_db()
    assert stage.overlap == 2 and not stage.eligibility
    assert _run(rater).done == 2
    assert annotate_stage(stage, people, lambda person, item: "none") == 2


@pytest.mark.django_db(transaction=True)
def test_samples_vote_by_mode_and_their_agreement_is_the_confidence(chat_server):
    project, stage = _project(items=1, overlap=1)
    model = chat_server.model("samples")
    chat_server.control(
        model,
        faults=[
            {"content": '{"value": "temporal"}'},
            {"content": '{"value": "causal"}'},
            {"content": '{"value": "temporal"}'},
        ],
    )
    rater = _rater(project, stage, _endpoint(chat_server, model), samples=3, temperature=0.7)
    assert _run(rater).done == 1
    vote = ModelVote.objects.get()
    assert vote.value == "temporal" and vote.confidence == pytest.approx(2 / 3)
    assert vote.annotation.payload["value"] == "temporal"
    temperatures = {r["temperature"] for r in chat_server.requests(model)}
    assert temperatures == {0.7}


@pytest.mark.django_db(transaction=True)
def test_429_is_retried_after_its_retry_after_and_500_then_malformed_then_success(chat_server):
    project, stage = _project(items=1, overlap=1)
    model = chat_server.model("flaky")
    chat_server.control(
        model,
        faults=[{"status": 429, "retry_after": 0}, {"status": 500}, {"content": "not json"}],
    )
    rater = _rater(project, stage, _endpoint(chat_server, model, max_retries=3))
    run = _run(rater)
    call = Call.objects.get(run=run)
    assert call.status == Call.Status.OK and call.attempts == 4
    assert run.done == 1 and run.calls == 4
    assert len(chat_server.requests(model)) == 4


@pytest.mark.django_db(transaction=True)
def test_failures_are_reported_per_item_and_never_counted_as_votes(chat_server):
    project, stage = _project(items=2, overlap=1)
    model = chat_server.model("broken")
    chat_server.control(
        model,
        answers={"Sentence 0:": "this is not JSON at all"},
        refusals={"Sentence 1:": "I will not"},
    )
    rater = _rater(project, stage, _endpoint(chat_server, model, max_retries=1))
    run = _run(rater)

    assert run.done == 0 and run.failed == 2
    assert not ModelVote.objects.exists() and not Annotation.objects.exists()
    calls = {c.item.external_id: c for c in Call.objects.select_related("item")}
    assert calls["case-0"].error_kind == "unparseable" and calls["case-0"].attempts == 2
    assert calls["case-1"].error_kind == "refused" and calls["case-1"].attempts == 1
    skipped = Assignment.objects.filter(annotator=rater.user, status="skipped")
    assert skipped.count() == 2
    assert all("model call failed" in a.skip_reason for a in skipped)


@pytest.mark.django_db(transaction=True)
def test_a_second_run_calls_nothing_twice_and_stores_nothing_twice(chat_server):
    project, stage = _project(items=3, overlap=1)
    model = chat_server.model("rerun")
    rater = _rater(project, stage, _endpoint(chat_server, model))
    assert _run(rater).done == 3
    first = len(chat_server.requests(model))
    second = _run(rater)
    # progress counts the rater's items in the stage, over all its runs; calls, this run's
    assert second.status == Run.Status.DONE and second.done == 3 and second.calls == 0
    assert len(chat_server.requests(model)) == first == 3
    assert Annotation.objects.count() == 3 and Call.objects.count() == 3


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_worker_died_is_taken_over_and_finishes_without_gaps(chat_server):
    project, stage = _project(items=3, overlap=1)
    model = chat_server.model("takeover")
    rater = _rater(project, stage, _endpoint(chat_server, model))
    # a worker claimed the run, made one call, leased an item, and died
    run = Run.objects.create(
        project=project,
        purpose="rate",
        rater=rater,
        status=Run.Status.RUNNING,
        heartbeat_at=timezone.now(),
    )
    assert runs.rater_run(run.pk) is None  # a live worker holds it: left alone
    Run.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=runs.STALE_SECONDS + 1)
    )
    engine.assignment_next(annotator=rater.user, stage=stage)
    from llm.services import runs_stuck

    assert runs_stuck() == [run.pk]
    finished = runs.rater_run(run.pk)
    assert finished.status == Run.Status.DONE and finished.done == 3
    assert Annotation.objects.filter(annotator=rater.user).count() == 3
    assert len(chat_server.requests(model)) == 3


@pytest.mark.django_db(transaction=True)
def test_calls_a_dead_worker_had_not_counted_yet_are_counted_by_the_takeover(chat_server):
    from annotation.models import Item
    from llm.ledger import Tally

    project, stage = _project(items=3, overlap=1)
    model = chat_server.model("uncounted")
    rater = _rater(project, stage, _endpoint(chat_server, model))
    run = Run.objects.create(
        project=project,
        purpose="rate",
        rater=rater,
        status=Run.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(seconds=runs.STALE_SECONDS + 1),
    )
    # the dead worker made two calls; their counts were in its memory (a Tally), never written
    lost = Tally()
    for item in Item.objects.filter(project=project).order_by("pk")[:2]:
        runs.calls_for(rater, item, run, tally=lost)
    assert lost.calls == 2 and Run.objects.get(pk=run.pk).calls == 0
    finished = runs.rater_run(run.pk)
    assert finished.status == Run.Status.DONE and finished.done == 3
    assert len(chat_server.requests(model)) == 3  # the two made calls were not made again
    assert finished.calls == 3  # counted from the ledger's rows, plus the one made now


@pytest.mark.django_db(transaction=True)
def test_pause_stops_a_run_and_resume_goes_on_where_it_was(chat_server):
    project, stage = _project(items=2, overlap=1)
    rater = _rater(project, stage, _endpoint(chat_server, chat_server.model("pause")))
    run = Run.objects.create(project=project, purpose="rate", rater=rater)
    run_control(run=run, action="pause")
    assert runs.rater_run(run.pk) is None
    with pytest.raises(Exception, match="cannot pause"):
        run_control(run=run, action="pause")
    run_control(run=run, action="resume")  # eager tasks: the run goes on at once
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and run.done == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.celery_worker
def test_a_real_worker_runs_a_model_rater(celery_worker, chat_server):
    project, stage = _project(items=5, overlap=1)
    model = chat_server.model("worker")
    rater = _rater(project, stage, _endpoint(chat_server, model, concurrency=3))
    run = run_start(rater=rater)
    wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.DONE, timeout=60)
    run.refresh_from_db()
    assert run.done == 5 and run.calls == 5
    assert ModelVote.objects.filter(rater=rater).count() == 5


def _verify_project(items: int = 1):
    from tests.factories import make_verify_stage

    project = make_project()
    stage = make_verify_stage(project, overlap=2, resolution_policy="unanimity_keep")
    engine.items_create(
        project=project,
        rows=[{"external_id": f"p-{i}", "payload": {"text": f"Pair {i}"}} for i in range(items)],
    )
    return project, stage


def _verify_rater(project, stage, endpoint, **extra):
    version = prompt_template_create(
        project=project, name="verify", kind="verify", user_text="Keep or reject: {{ text }}"
    )
    return rater_add(stage=stage, endpoint=endpoint, prompt=version, **extra)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fills_human_slot", [False, True])
def test_an_extra_model_advises_and_a_model_in_a_human_slot_decides(chat_server, fills_human_slot):
    """Any reject discards (unanimity_keep): the model rejects, the people keep. An extra
    (advisory) model is measured but the pair is kept; a model in a person's slot discards it."""
    project, stage = _verify_project()
    people = [make_member(project) for _ in range(2)]
    model = chat_server.model("advice")
    chat_server.control(model, default={"value": "reject"})
    rater = _verify_rater(
        project, stage, _endpoint(chat_server, model), fills_human_slot=fills_human_slot
    )
    assert _run(rater).done == 1
    annotate_stage(stage, people, lambda person, item: "keep")

    item_stage = ItemStage.objects.get(stage=stage)
    assert item_stage.submitted_count == (2 if fills_human_slot else 3)
    resolution = item_stage.resolution
    if fills_human_slot:
        assert resolution.outcome == "reject"
    else:
        assert resolution.outcome == "accept" and resolution.value == "keep"
        assert sum(resolution.votes.values()) == 2  # the people's votes, not the model's
    assert ModelVote.objects.get().value == "reject"
    from agreement.votes import stage_votes

    raters = set(stage_votes(stage).raters.tolist())
    everyone = set(stage_votes(stage, include_advisory=True).raters.tolist())
    people_voting = {a.annotator_id for a in Annotation.objects.exclude(annotator=rater.user)}
    assert everyone == {rater.user_id, *people_voting}
    # the stage's agreement figures are its deciding raters'
    assert raters == (everyone if fills_human_slot else everyone - {rater.user_id})


@pytest.mark.django_db
def test_bad_set_ups_are_refused_naming_what_and_nothing_is_written(chat_server):
    from annotation.errors import ApplicationError, Conflict

    project, stage = _project(items=1, overlap=1)
    endpoint = _endpoint(chat_server, chat_server.model("setup"))
    rater = _rater(project, stage, endpoint)
    version = rater.prompt
    with pytest.raises(Conflict, match="already rates"):
        rater_add(stage=stage, endpoint=endpoint, prompt=version)
    verify = prompt_template_create(
        project=project, name="verify-kind", kind="verify", user_text="{{ text }}"
    )
    with pytest.raises(ApplicationError, match="asks for 'verify' answers") as error:
        rater_add(stage=stage, endpoint=endpoint, prompt=verify)
    assert "prompt" in error.value.extra
    other = make_project()
    foreign = prompt_template_create(project=other, name="x", kind="label", user_text="{{ text }}")
    with pytest.raises(ApplicationError, match="another project"):
        rater_add(stage=stage, endpoint=endpoint, prompt=foreign)
    second = Endpoint.objects.create(name="second", base_url=chat_server.base_url, model="m")
    with pytest.raises(ApplicationError, match="temperature"):
        rater_add(stage=stage, endpoint=second, prompt=version, samples=3)
    with pytest.raises(ApplicationError, match="not a valid template"):
        prompt_template_create(project=project, name="bad", kind="label", user_text="{% if %}")
    assert ModelRater.objects.count() == 1
    stage.refresh_from_db()
    assert stage.overlap == 2  # one extra slot, for the one rater that was added

    run_start(rater=rater)  # queued: this test's transaction never commits, nothing runs
    with pytest.raises(Conflict, match="already has a run"):
        run_start(rater=rater)  # a double click starts one run
    assert Run.objects.filter(rater=rater).count() == 1
