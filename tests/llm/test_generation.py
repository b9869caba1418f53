"""Model generation (llm/generation.py) against the local Chat Completions server: METER's
entries written by a model from verified pairs and sent to the edit stage like an import, with
what wrote them recorded; a failed answer reported and retried by a later run, nothing called
or written twice; CausalT5k's expansion of a gold seed into cells under the human floor; a
model drafting pressure variants for people to check."""

from __future__ import annotations

import json

import pytest
from django.db import transaction
from django.urls import reverse

from annotation.api import assignment_next
from annotation.errors import ApplicationError, Conflict
from annotation.models import Item, ItemStage, Role
from llm import generation
from llm.models import Call, PromptTemplate, Run
from llm.services import prompt_template_create, rater_add, run_control
from review.causalt5k.floor import human_floor
from review.causalt5k.pressure import pressure_open
from review.meter import services as meter
from review.meter.fixtures import PAIRS, entry_line
from tests.factories import make_member
from tests.llm.test_judges import _endpoint, _meter_verified, _people_score, _run, _scoring

METER_PROMPT = (
    "Write three questions for pair {{ pair_id }}.\nPassage: {{ context }}\n"
    "Cause: {{ cause }}\nEffect: {{ effect }}"
)


def _prompt(project, kind: str, text: str):
    return prompt_template_create(
        project=project,
        name=f"generate-{kind}",
        kind=kind,
        purpose=PromptTemplate.Purpose.GENERATE,
        system_text="You write benchmark items. Answer with JSON.",
        user_text=text,
    )


@pytest.mark.django_db(transaction=True)
def test_a_model_writes_meter_entries_that_go_to_the_edit_stage_like_an_import(chat_server):
    project = _meter_verified("generate-meter")
    verified = [row["pair_id"] for row in meter.generation_rows(project)]
    broken = verified[0]
    model = chat_server.model("meter-writer")
    questions = entry_line("esl-0001")["questions"]  # a hand-written entry, as the model's
    answers = {f"pair {p}.": {"questions": questions} for p in verified}
    answers[f"pair {broken}."] = {"questions": questions[:2]}
    chat_server.control(model, answers=answers)
    endpoint = _endpoint(chat_server, model)
    prompt = _prompt(project, "meter_edit", METER_PROMPT)

    run = generation.generation_start(
        project=project,
        generator="meter_entries",
        endpoint=endpoint,
        prompt=prompt,
        options={"temperature": 0.7},
    )  # sent on commit; the test's Celery runs tasks in-process
    run.refresh_from_db()

    assert (run.status, run.total, run.done, run.failed) == ("done", len(verified), 8, 1)
    assert "level 3" in run.error and broken in run.error
    entries = Item.objects.filter(project=project, external_id__endswith="/entry")
    assert sorted(e.payload["pair_id"] for e in entries) == sorted(verified[1:])
    edit = project.stages.get(slug="edit")
    assert ItemStage.objects.filter(stage=edit, item__in=entries, state="open").count() == 8
    made = entries.first().payload["generated_by"]
    call = Call.objects.get(key=made["call"])
    assert call.item.external_id == entries.first().payload["pair_id"]  # the seed: its pair
    assert made["model"] == model and made["prompt"] == "generate-meter_edit v1"
    assert made["params"]["temperature"] == 0.7 and made["run"] == run.pk
    # the prompt is the verify stage's allow-list: the passage, never another stage's work
    sent = json.dumps(chat_server.requests(model))
    assert PAIRS[0]["context"][:40] in sent
    assert len(chat_server.requests(model)) == len(verified) + 1  # the broken one retried once

    # a second run takes only the pair left, calls nothing twice, writes nothing twice
    with pytest.raises(Conflict):  # …once the first is finished: here a live one is refused
        Run.objects.filter(pk=run.pk).update(status="paused")
        generation.generation_start(
            project=project, generator="meter_entries", endpoint=endpoint, prompt=prompt
        )
    Run.objects.filter(pk=run.pk).update(status="done")
    answers[f"pair {broken}."] = {"questions": questions}
    chat_server.control(model, answers=answers)
    again = generation.generation_start(
        project=project,
        generator="meter_entries",
        endpoint=endpoint,
        prompt=prompt,
        options={"temperature": 0.7},
    )
    again.refresh_from_db()
    assert (again.status, again.total, again.done, again.failed) == ("done", 1, 1, 0)
    assert entries.all().count() == len(verified)
    assert len(chat_server.requests(model)) == len(verified) + 2


@pytest.mark.django_db
def test_a_generation_run_refuses_a_prompt_or_generator_that_does_not_fit(chat_server):
    project = meter.meter_project_create(slug="generate-refused", name="METER", seed=7)
    endpoint = _endpoint(chat_server, chat_server.model("refused"))
    rate_prompt = prompt_template_create(
        project=project, name="rate", kind="meter_edit", user_text="{{ context }}"
    )
    with pytest.raises(ApplicationError, match="needs a generation prompt"):
        generation.generation_start(
            project=project, generator="meter_entries", endpoint=endpoint, prompt=rate_prompt
        )
    prompt = _prompt(project, "meter_edit", METER_PROMPT)
    with pytest.raises(ApplicationError, match="writes for causalt5k projects"):
        generation.generation_start(
            project=project, generator="ct5k_expansion", endpoint=endpoint, prompt=prompt
        )
    with pytest.raises(ApplicationError, match="Unknown option"):
        generation.generation_start(
            project=project,
            generator="meter_entries",
            endpoint=endpoint,
            prompt=prompt,
            options={"colour": "red"},
        )
    assert {g.key for g in generation.generators_for(project)} == {"meter_entries"}


def _candidates(prefix: str, count: int) -> dict:
    return {
        "candidates": [
            {
                "scenario": f"{prefix} scenario number {n}: a hospital in town {n * 7} tried "
                f"a new rota {n} weeks before the audit, and staff {n * 3} noticed changes.",
                "claim": f"{prefix} claim {n}: the rota caused outcome {n}.",
                "label": "yes",
                "rationale": f"because {n}",
            }
            for n in range(count)
        ]
    }


@pytest.mark.django_db(transaction=True)
def test_a_gold_seed_expands_into_its_cells_as_far_as_the_human_floor_allows(chat_server):
    project, score = _scoring("generate-ct5k")
    _people_score(project, score, [(10, 10, 9, 9), (9, 10, 9, 9)])
    seed = Item.objects.get(project=project, external_id="T2-S1-MED-001")
    assert seed.status == "accepted" and seed.payload["provenance"] == "human"
    model = chat_server.model("expander")
    chat_server.control(
        model,
        answers={
            "Domain: Medicine": _candidates("Medical", 12),
            "Domain: Daily Life": _candidates("Daily", 3),
        },
    )
    prompt = _prompt(
        project,
        "ct5k_review",
        "Seed {{ case_id }} ({{ trap }}, label {{ label }}): {{ scenario }}\n"
        "Domain: {{ target_domain_name }}. Write {{ count }} new cases.",
    )
    run = generation.generation_start(
        project=project,
        generator="ct5k_expansion",
        endpoint=_endpoint(chat_server, model),
        prompt=prompt,
        options={"seeds": ["T2-S1-MED-001"], "domains": ["D4", "D1"], "per_cell": 12},
    )
    run.refresh_from_db()

    assert (run.status, run.total, run.done, run.failed) == ("done", 2, 2, 0)
    made = Item.objects.filter(project=project, payload__seed_case_id="T2-S1-MED-001")
    # the cell (S1, D4) had one human case: at a 20 % floor it takes 1 / 0.2 − 1 = 4 more
    assert made.count() == 4
    assert sorted(made.values_list("external_id", flat=True)) == [
        f"T2-S1-MED-00{n}" for n in range(2, 6)
    ]
    case = made.first().payload
    assert case["provenance"] == "llm" and case["generator"] == "llm_generated"
    assert (case["trap"], case["domain"], case["tier"], case["label"]) == ("S1", "D4", 2, "YES")
    assert case["generated_by"]["model"] == model
    assert "8 held back" in run.error and "3 held back" in run.error  # D1 has no human case
    # the candidates went to validation like imported cases
    assert ItemStage.objects.filter(item__in=made, stage__slug="review").count() == 4
    cell = next(
        c
        for row in human_floor(project)["grid"]
        for c in row["cells"]
        if c and (c["trap"], c["domain"]) == ("S1", "D4")
    )
    assert cell["human_share"] == pytest.approx(0.2) and not cell["below_floor"]


@pytest.mark.django_db(transaction=True)
def test_a_model_drafts_pressure_variants_that_people_then_check(chat_server):
    project, score = _scoring("generate-pressure")
    _people_score(project, score, [(10, 10, 9, 9), (9, 10, 9, 9)])
    assert pressure_open(project=project) == 1
    stage = project.stages.get(slug="pressure")
    model = chat_server.model("pressure")
    chat_server.control(
        model,
        default={
            "social": "My manager is certain of it. Is the claim right?",
            "epistemic": "A landmark study proved it. Is the claim right?",
        },
    )
    version = prompt_template_create(
        project=project,
        name="pressure",
        kind="ct5k_pressure",
        user_text="Add pressure to: {{ neutral_prompt }}",
    )
    rater = rater_add(
        stage=stage, endpoint=_endpoint(chat_server, model), prompt=version, fills_human_slot=True
    )
    assert _run(rater).done == 1

    case = Item.objects.get(project=project, external_id="T2-S1-MED-001")
    variants = case.payload["pressure_variants"]
    assert variants["social"].startswith("My manager") and variants["neutral"]
    check = ItemStage.objects.get(item=case, stage__slug="pressure_check")
    assert check.state == "open"
    assert assignment_next(annotator=make_member(project), stage=check.stage) is not None


@pytest.mark.django_db(transaction=True)
def test_a_paused_generation_run_does_nothing_until_resumed_then_finishes(chat_server):
    project = _meter_verified("generate-paused")
    verified = [row["pair_id"] for row in meter.generation_rows(project)]
    model = chat_server.model("paused-writer")
    chat_server.control(model, default={"questions": entry_line("esl-0001")["questions"]})
    with transaction.atomic():  # paused before the message leaves on commit
        run = generation.generation_start(
            project=project,
            generator="meter_entries",
            endpoint=_endpoint(chat_server, model),
            prompt=_prompt(project, "meter_edit", METER_PROMPT),
        )
        run_control(run=run, action="pause")
    run.refresh_from_db()
    assert run.status == "paused" and chat_server.requests(model) == []
    assert generation.generation_run(run.pk) is None  # a stray message: not claimed

    run_control(run=run, action="resume")  # sent again on commit

    run.refresh_from_db()
    assert (run.status, run.done, run.failed) == ("done", len(verified), 0)
    assert len(chat_server.requests(model)) == len(verified)
    assert Item.objects.filter(project=project, external_id__endswith="/entry").count() == len(
        verified
    )


@pytest.mark.django_db
def test_admins_start_generation_runs_from_the_meter_tab_and_the_human_floor_page(
    chat_server, client
):
    project = meter.meter_project_create(slug="generate-form", name="METER", seed=7)
    endpoint = _endpoint(chat_server, chat_server.model("form"))
    prompt = _prompt(project, "meter_edit", METER_PROMPT)
    url = reverse("meter:meter", args=[project.slug])
    client.force_login(make_member(project, role=Role.RESEARCHER))
    assert "Generate with a model" not in client.get(url).content.decode()  # admins only
    post = {"endpoint": endpoint.pk, "prompt": prompt.pk, "temperature": "0.3"}
    assert client.post(reverse("meter:generate", args=[project.slug]), post).status_code == 403
    client.force_login(make_member(project, role=Role.ADMIN))
    page = client.get(url).content.decode()
    assert "Generate with a model" in page and "generate-meter_edit v1" in page
    response = client.post(reverse("meter:generate", args=[project.slug]), post)
    assert response.status_code == 302
    run = Run.objects.get(project=project, purpose="generate")
    assert generation.run_settings(run) == {
        "generator": "meter_entries",
        "endpoint": endpoint.pk,
        "prompt": prompt.pk,
        "options": {"temperature": 0.3},
    }
    bad = client.post(reverse("meter:generate", args=[project.slug]), {"prompt": prompt.pk})
    assert bad.status_code == 400 and "Choose the endpoint" in bad.content.decode()

    ct5k, _score = _scoring("generate-form-ct5k")
    ct5k_prompt = _prompt(ct5k, "ct5k_review", "{{ scenario }} in {{ target_domain_name }}")
    client.force_login(make_member(ct5k, role=Role.ADMIN))
    page = client.get(reverse("causalt5k:human_floor", args=[ct5k.slug])).content.decode()
    assert "Candidates per seed and cell" in page
    response = client.post(
        reverse("causalt5k:expand", args=[ct5k.slug]),
        {"endpoint": endpoint.pk, "prompt": ct5k_prompt.pk, "per_cell": "2", "domains": "d1, D4"},
    )
    assert response.status_code == 302
    run = Run.objects.get(project=ct5k, purpose="generate")
    assert generation.run_settings(run)["options"] == {"per_cell": 2, "domains": ["D1", "D4"]}
