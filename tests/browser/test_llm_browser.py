"""An admin sets a model rater up in a real browser and watches its run: an endpoint pointing
at the local Chat Completions server (tests/fakes/chat_server.py), tested from its row; a
prompt for the stage's kind, previewed on real items with the model's answer; a model rater
added to the stage; a run started, worked by a real Celery worker and followed by the page's
htmx polling until it finishes; once two people have answered every item, the stage's
Agreement page shows the model against them ("Models against people", llm/calibration.py) with
its figure."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.models import Annotation, ItemStage, Role
from llm.models import ModelRater, ModelVote, Run
from tests.conftest import wait_for
from tests.factories import (
    PASSWORD,
    annotate_stage,
    make_label_stage,
    make_member,
    make_project,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.celery_worker,
    pytest.mark.django_db(transaction=True),
]


def _sign_in(page, live_server, username: str) -> None:
    page.goto(live_server.url + reverse("login"))
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def test_an_admin_sets_up_a_model_rater_previews_it_and_watches_its_run(
    live_server,
    page,
    chat_server,
    celery_worker,
):
    project = make_project()
    stage = make_label_stage(project, overlap=2)
    engine.items_create(
        project=project,
        rows=[
            {
                "external_id": f"case-{i}",
                "payload": {"text": f"Sentence {i}: it rained, then it flooded."},
            }
            for i in range(4)
        ],
    )
    admin = make_member(project, Role.ADMIN, username="model-admin")
    model = chat_server.model("browser")
    chat_server.control(
        model, answers={"Sentence 3:": {"value": "temporal"}}, default={"value": "causal"}
    )
    _sign_in(page, live_server, admin.username)

    # The endpoint, then its Test button: the answer shows in its row.
    page.goto(live_server.url + reverse("llm:endpoints"))
    page.fill("input[name=name]", "local-fake")
    page.fill("input[name=base_url]", chat_server.base_url)
    page.fill("input[name=model]", model)
    page.fill("input[name=requests_per_minute]", "0")
    page.click("button:has-text('Add the endpoint')")
    page.wait_for_selector("text=Saved the endpoint local-fake.")
    row = page.locator("tr", has_text="local-fake")
    assert "none needed" in row.inner_text()
    row.locator("button:has-text('Test')").click()
    page.wait_for_selector(".llm-ping:has-text('Answered')")

    # A prompt for the label stage's kind.
    page.goto(live_server.url + reverse("llm:models", args=[project.slug]))
    page.click("summary:has-text('New prompt')")
    page.fill("#prompt-name", "labeller")
    page.select_option("#prompt-stage", str(stage.pk))
    page.fill("#prompt-user", "Label the relation in: {{ text }}")
    page.click("button:has-text('Create the prompt')")
    page.wait_for_selector("h1:has-text('Prompt labeller')")
    assert "Version 1" in page.locator("main").inner_text()

    # Its preview on two real items, with the model's answer (htmx swaps the results in).
    page.goto(live_server.url + reverse("llm:preview", args=[project.slug]))
    page.fill("#preview-items", "2")
    page.select_option("#preview-endpoint", label="local-fake")
    page.click("button:has-text('Preview')")
    page.wait_for_selector("#preview-results:has-text('2 items')")
    results = page.locator("#preview-results").inner_text()
    assert "Label the relation in: Sentence" in results and "it rained" in results
    assert results.count("parsed") == 2 and "causal" in results

    # A model rater in the stage, with its cost estimate, then a run.
    page.goto(live_server.url + reverse("llm:models", args=[project.slug]))
    page.click(f"#stage-{stage.pk} summary:has-text('Add a model rater')")
    page.click(f"#stage-{stage.pk} button:has-text('Add the model rater')")
    page.wait_for_selector("text=now rates in Label")
    rater_row = page.locator(f"#stage-{stage.pk} tbody tr").first
    assert "model" in rater_row.inner_text() and "4 items × 1 = 4 calls" in rater_row.inner_text()
    rater_row.locator("button:has-text('Start a run')").click()

    # The run page polls until the worker is done, then shows the report.
    page.wait_for_selector("h1:has-text('Run #')")
    page.wait_for_selector("#run-progress[data-status='done']", timeout=60_000)
    page.wait_for_selector("#calls tbody tr")
    assert page.locator("[data-figure=done]").inner_text() == "4"
    assert page.locator("[data-figure=failed]").inner_text() == "0"
    assert "Calls 1–4 of 4" in page.locator("#calls").inner_text()

    rater = ModelRater.objects.get()
    run = Run.objects.get()
    assert run.status == "done" and run.done == 4
    assert Annotation.objects.filter(annotator=rater.user).count() == 4
    votes = {vote.item_stage.item.external_id: vote.value for vote in ModelVote.objects.all()}
    assert votes == {
        "case-0": "causal",
        "case-1": "causal",
        "case-2": "causal",
        "case-3": "temporal",
    }

    # Two people answer every item "causal": the items complete (the model's extra answer
    # advises) and the Agreement page compares the model with them: 3 of 4 alike.
    people = [make_member(project, Role.ANNOTATOR) for _ in range(2)]
    annotate_stage(stage, people, lambda person, item: "causal")
    wait_for(
        lambda: ItemStage.objects.filter(stage=stage, state="resolved").count() == 4,
        timeout=60,
    )
    page.goto(live_server.url + reverse("agreement:stage", args=[project.slug, stage.slug]))
    section = page.locator(f"#models-{stage.slug}")
    section.wait_for()
    row = section.locator("tbody tr").first
    assert "local-fake" in row.inner_text() or "labeller" in row.inner_text()
    cells = row.locator("td")
    assert cells.nth(0).inner_text().strip() == "4"  # items compared
    assert "75" in cells.nth(3).inner_text()  # accuracy: 3 of 4
    figure = section.locator("img[src*='models-agreement']")
    figure.scroll_into_view_if_needed()
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=figure.element_handle(), timeout=60_000
    )


def _screenshot(page, name: str) -> None:
    """The page at a laptop's and a phone's width, into $RUNGWISE_SCREENSHOTS when it is set
    (for looking at the pages, not an assertion)."""
    import os
    from pathlib import Path

    folder = os.environ.get("RUNGWISE_SCREENSHOTS")
    if not folder:
        return
    size = page.viewport_size
    for width in (1366, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(Path(folder) / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size(size)


def test_an_admin_starts_a_meter_generation_run_and_its_entries_reach_the_edit_stage(
    live_server,
    page,
    chat_server,
    celery_worker,
):
    """METER's entries written by a model from the verified pairs (llm/generation.py): the
    admin writes a generation prompt on the Models tab, starts the run from the METER tab,
    follows it from the Models tab's runs to the run page until the worker is done; every
    entry is open in the edit stage with the endpoint, model, prompt version and parameters
    recorded on it."""
    from annotation.models import Item
    from llm.models import Call, Endpoint
    from review.meter import services as meter
    from review.meter.fixtures import entry_line
    from tests.llm.test_judges import _meter_verified

    project = _meter_verified("browser-generate")
    verified = sorted(row["pair_id"] for row in meter.generation_rows(project))
    assert verified
    edit = project.stages.get(slug="edit")
    admin = make_member(project, Role.ADMIN, username="generation-admin")
    model = chat_server.model("browser-writer")
    # a short delay per answer, so that the run page has progress to poll
    chat_server.control(
        model, default={"questions": entry_line("esl-0001")["questions"]}, delay=0.2
    )
    Endpoint.objects.create(
        name="local-writer",
        base_url=chat_server.base_url,
        model=model,
        max_retries=1,
        timeout_seconds=10,
        requests_per_minute=0,
    )
    _sign_in(page, live_server, admin.username)

    # A generation prompt for the edit stage's kind, written on the Models tab.
    page.goto(live_server.url + reverse("llm:models", args=[project.slug]))
    page.click("summary:has-text('New prompt')")
    page.fill("#prompt-name", "entry-writer")
    page.select_option("#prompt-stage", str(edit.pk))
    page.select_option("#prompt-purpose", "generate")
    page.fill(
        "#prompt-user",
        "Write three questions for pair {{ pair_id }}.\nPassage: {{ context }}\n"
        "Cause: {{ cause }}\nEffect: {{ effect }}",
    )
    page.click("button:has-text('Create the prompt')")
    page.wait_for_selector("h1:has-text('Prompt entry-writer')")

    # The METER tab's "Generate with a model": endpoint, prompt, temperature.
    page.goto(live_server.url + reverse("meter:meter", args=[project.slug]))
    section = page.locator("section[aria-labelledby=model-generation-heading]")
    section.scroll_into_view_if_needed()
    _screenshot(page, "meter-generate")
    section.locator("#generation-endpoint").select_option(label=f"local-writer ({model})")
    section.locator("#generation-prompt").select_option(label="entry-writer v1")
    section.locator("#generation-temperature").fill("0.7")
    section.locator("button:has-text('Start a generation run')").click()
    page.wait_for_selector("text=started: entries go to")

    # The Models tab lists the run; its page polls until the worker is done.
    page.goto(live_server.url + reverse("llm:models", args=[project.slug]))
    runs_table = page.locator("#runs")
    listed = runs_table.locator("tbody tr").first.inner_text()
    assert "Generation: meter_entries by model local-writer with entry-writer v1" in listed
    _screenshot(page, "models-tab-generation")
    runs_table.locator("tbody tr a").first.click()
    page.wait_for_selector("h1:has-text('Run #')")
    page.wait_for_selector("#run-progress[data-status='done']", timeout=60_000)
    assert page.locator("[data-figure=done]").inner_text() == str(len(verified))
    assert page.locator("[data-figure=failed]").inner_text() == "0"
    assert "temperature 0.7" in page.locator("main").inner_text()
    _screenshot(page, "generation-run")
    page.goto(live_server.url + reverse("llm:models", args=[project.slug]))
    first_row = page.locator("#runs tbody tr").first.inner_text()
    assert "Done" in first_row and f"{len(verified)} / {len(verified)}" in first_row

    # What the run wrote: one entry per verified pair, open in the edit stage, its maker named.
    run = Run.objects.get(purpose="generate")
    assert (run.status, run.done, run.failed) == ("done", len(verified), 0)
    entries = Item.objects.filter(project=project, external_id__endswith="/entry")
    assert sorted(entry.payload["pair_id"] for entry in entries) == verified
    assert ItemStage.objects.filter(stage=edit, item__in=entries, state="open").count() == len(
        verified
    )
    for entry in entries:
        made = entry.payload["generated_by"]
        assert made["model"] == model and made["endpoint"] == "local-writer"
        assert made["prompt"] == "entry-writer v1"
        assert made["params"]["temperature"] == 0.7 and made["run"] == run.pk
        assert Call.objects.get(key=made["call"]).item.external_id == entry.payload["pair_id"]
    sent = chat_server.requests(model)
    assert len(sent) == len(verified)
    assert all(body["temperature"] == 0.7 for body in sent)
