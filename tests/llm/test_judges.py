"""Model judges (llm/judges.py) against the local Chat Completions server: two model judges
and two people on CausalT5k's quality gate, counted or advising as the stage says; METER's
de-contamination — three models judging pairs without their context, kept only when all three
call them non-causal; the model mark nobody can forge; the structured answers of the kinds."""

from __future__ import annotations

import io
import json

import pytest

from annotation import services as engine
from annotation.errors import ApplicationError
from annotation.kinds.base import KindContext, get_kind
from annotation.models import Annotation, Item, ItemStage, Resolution
from imports.services import import_batch_create, import_batch_run
from llm import runs
from llm.judges import MODEL_FIELD, model_mark
from llm.models import Endpoint, Run
from llm.services import prompt_template_create, rater_add
from review.causalt5k.demo import CASES
from review.causalt5k.pipeline import causalt5k_project_create, causalt5k_review_open
from review.meter import services as meter
from review.meter.decontamination import decontamination_open, decontamination_stage_create
from review.meter.demo import _answer, drive
from review.meter.fixtures import PAIRS
from tests.factories import make_member
from tests.review.meter.test_meter import pairs_csv

SCORE_KEYS = ("structural_validity", "ground_truth", "self_containment", "ecological_realism")
BY_ID = {case["case_id"]: case for case in CASES}


def _endpoint(chat_server, model: str) -> Endpoint:
    return Endpoint.objects.create(
        name=model[:60],
        base_url=chat_server.base_url,
        model=model,
        max_retries=1,
        timeout_seconds=5,
        requests_per_minute=0,
    )


def _judge(stage, endpoint, kind: str, text: str, **extra):
    version = prompt_template_create(
        project=stage.project,
        name=f"{kind}-{endpoint.name}"[:100],
        kind=kind,
        system_text="You judge cases. Answer with JSON.",
        user_text=text,
    )
    return rater_add(stage=stage, endpoint=endpoint, prompt=version, **extra)


def _run(rater) -> Run:
    run = Run.objects.create(project_id=rater.stage.project_id, purpose="rate", rater=rater)
    return runs.rater_run(run.pk)


def _scoring(slug: str):
    project = causalt5k_project_create(slug=slug, name="CT5k", seed=5)
    engine.items_create(
        project=project,
        rows=[{"external_id": "T2-S1-MED-001", "payload": dict(BY_ID["T2-S1-MED-001"])}],
        open_first_stage=False,
    )
    stages = {stage.slug: stage for stage in project.stages.all()}
    causalt5k_review_open(project=project)
    drive(stages["review"], [make_member(project)], lambda i, it, ph: {"verdict": "pass"})
    return project, stages["score"]


def _people_score(project, score, values):
    people = [make_member(project) for _ in values]
    drive(
        score,
        people,
        lambda i, item, phase: {"scores": dict(zip(SCORE_KEYS, values[i], strict=True))},
    )


def _marks(item_stage) -> list[str]:
    payloads = Annotation.objects.filter(item_stage=item_stage).values_list("payload", flat=True)
    return [str(payload.get(MODEL_FIELD)) for payload in payloads]


@pytest.mark.django_db(transaction=True)
def test_two_model_judges_in_the_reviewers_slots_decide_and_call_a_person_when_far_apart(
    chat_server,
):
    project, score = _scoring("judges-count")
    for name, value in (("judge-a", 7), ("judge-b", 10)):
        model = chat_server.model(name)
        chat_server.control(model, default={"scores": dict.fromkeys(SCORE_KEYS, value)})
        rater = _judge(
            score,
            _endpoint(chat_server, model),
            "ct5k_score",
            "Score: {{ scenario }} {{ claim }}",
            fills_human_slot=True,
        )
        assert _run(rater).done == 1
    score.refresh_from_db()
    assert score.overlap == 2  # the two judges are the stage's two reviewers
    item_stage = ItemStage.objects.get(stage=score)
    assert (item_stage.state, item_stage.target_count) == ("open", 3)  # 7.0 and 10.0: 3 apart
    assert "a third reviewer" in Resolution.objects.get(item_stage=item_stage).reason

    _people_score(project, score, [(9, 10, 9, 10)])

    item_stage.refresh_from_db()
    assert item_stage.state == "resolved"
    # the models' 10.0 and the person's 9.5 are the closest pair of three
    assert Resolution.objects.get(item_stage=item_stage).value == pytest.approx(9.75)
    assert Item.objects.get(project=project, external_id="T2-S1-MED-001").status == "accepted"
    marks = _marks(item_stage)
    assert sum(mark.startswith("judge-") for mark in marks) == 2 and marks.count("None") == 1


@pytest.mark.django_db(transaction=True)
def test_extra_model_judges_advise_and_only_the_people_s_scores_pass_the_gate(chat_server):
    project, score = _scoring("judges-advise")
    for name in ("judge-c", "judge-d"):
        model = chat_server.model(name)
        chat_server.control(model, default={"scores": dict.fromkeys(SCORE_KEYS, 0)})
        rater = _judge(
            score, _endpoint(chat_server, model), "ct5k_score", "Score: {{ scenario }} {{ claim }}"
        )
        assert _run(rater).done == 1
    score.refresh_from_db()
    assert score.overlap == 4  # two people + two extra model judges
    _people_score(project, score, [(10, 10, 9, 9), (9, 10, 9, 9)])

    item_stage = ItemStage.objects.get(stage=score)
    assert item_stage.state == "resolved"
    # the models' 0.0 are recorded but not read: the people's 9.5 and 9.25 decide
    assert Resolution.objects.get(item_stage=item_stage).value == pytest.approx(9.375)
    assert Item.objects.get(project=project, external_id="T2-S1-MED-001").status == "accepted"
    marks = _marks(item_stage)
    assert sum(mark.startswith("judge-") for mark in marks) == 2 and marks.count("None") == 2


@pytest.mark.django_db
def test_model_unanimity_refuses_settings_that_cannot_work():
    stage = decontamination_stage_create(
        project=meter.meter_project_create(slug="judges-unanimity", name="METER", seed=7)
    )
    with pytest.raises(ApplicationError, match="needs the option value"):
        engine.stage_update(stage=stage, policy_options={})
    with pytest.raises(ApplicationError, match="min_models"):
        engine.stage_update(stage=stage, policy_options={"value": "non_causal", "min_models": 0})


@pytest.mark.django_db
def test_nobody_forges_the_model_mark_and_a_model_rater_cannot_drop_it():
    project, score = _scoring("judges-mark")
    person = make_member(project)
    kind = get_kind("ct5k_score")
    item = Item.objects.get(project=project, external_id="T2-S1-MED-001")
    forged = {"scores": dict.fromkeys(SCORE_KEYS, 9), MODEL_FIELD: "gpt-judge · v1"}
    clean = kind.validate(forged, KindContext(stage=score, item=item, annotator_id=person.pk))
    assert MODEL_FIELD not in clean
    assert model_mark({MODEL_FIELD: "x"}, None) == {}


def _meter_verified(slug: str):
    project = meter.meter_project_create(slug=slug, name="METER", seed=7)
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(pairs_csv(PAIRS)), filename="pairs.csv"
    )
    assert import_batch_run(batch_id=batch.pk).status == "succeeded"
    stages = {stage.slug: stage for stage in project.stages.all()}
    drive(stages["verify"], [make_member(project) for _ in range(3)], _answer)
    return project


@pytest.mark.django_db(transaction=True)
def test_meter_decontamination_keeps_only_pairs_all_three_models_call_non_causal(chat_server):
    project = _meter_verified("decontaminate")
    stage = decontamination_stage_create(project=project, judges=3)
    verified = list(
        Item.objects.filter(project=project, status="accepted").values_list(
            "external_id", flat=True
        )
    )
    leaked = next(p for p in PAIRS if p["pair_id"] == verified[0])
    models = [chat_server.model(f"decon-{n}") for n in range(3)]
    for n, model in enumerate(models):
        # the second model knows the first pair's answer without the passage
        answers = {leaked["cause"]: {"value": "causal"}} if n == 1 else {}
        chat_server.control(model, answers=answers, default={"value": "non_causal"})
    raters = [
        _judge(
            stage,
            _endpoint(chat_server, model),
            "meter_decontaminate",
            "Cause: {{ cause }}\nEffect: {{ effect }}\nPassage: {{ context }}",
            fills_human_slot=True,
        )
        for model in models
    ]
    assert decontamination_open(project=project) == len(verified)
    for rater in raters:
        assert _run(rater).done == len(verified)

    statuses = dict(
        Item.objects.filter(project=project, external_id__in=verified).values_list(
            "external_id", "status"
        )
    )
    assert statuses.pop(verified[0]) == "discarded"
    assert set(statuses.values()) == {"accepted"}
    reason = Resolution.objects.get(
        item_stage__stage=stage, item_stage__item__external_id=verified[0]
    ).reason
    assert "said causal" in reason and models[1][:20] in reason
    # no passage reached any model: the stage's allow-list leaves the context out
    sent = json.dumps([chat_server.requests(model) for model in models])
    for pair in PAIRS:
        assert pair["context"] not in sent
    assert leaked["cause"] in sent
    # the pairs left are the ones generation will take
    assert {row["pair_id"] for row in meter.generation_rows(project)} == set(statuses)


@pytest.mark.django_db
def test_the_decontamination_stage_refuses_to_show_the_passage():
    project = meter.meter_project_create(slug="decon-config", name="METER", seed=7)
    stage = decontamination_stage_create(project=project)
    with pytest.raises(ApplicationError, match="without its passage"):
        engine.stage_update(
            stage=stage, config={"choices": ["causal", "non_causal"], "visible_fields": ["context"]}
        )


@pytest.mark.django_db
def test_the_filter_and_pressure_kinds_describe_answers_their_validation_accepts():
    project = meter.meter_project_create(slug="filter-schema", name="METER", seed=7)
    filter_stage = project.stages.get(slug="filter")
    kind = get_kind("meter_filter")
    schema = kind.answer_schema(KindContext(stage=filter_stage))
    assert schema["properties"]["value"]["enum"] == ["keep", "discard"]
    assert "L2.fluent" in schema["properties"]["failed"]["items"]["enum"]
    answer = {"value": "discard", "failed": ["L2.fluent"]}
    assert kind.validate(answer, KindContext(stage=filter_stage))["failed"] == ["L2.fluent"]

    ct5k, score = _scoring("pressure-schema")
    rubric = get_kind("ct5k_score").answer_schema(KindContext(stage=score))
    scores = rubric["properties"]["scores"]
    assert scores["required"] == list(SCORE_KEYS)
    assert scores["properties"]["ground_truth"] == {"type": "integer", "minimum": 0, "maximum": 10}
    pressure = ct5k.stages.get(slug="pressure")
    schema = get_kind("ct5k_pressure").answer_schema(KindContext(stage=pressure))
    assert schema["required"] == ["social", "epistemic"]
