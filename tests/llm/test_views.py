"""The models' pages (llm/views.py): who may open and write what, forms' errors naming their
field, no key ever rendered, and the tab's flows — prompts, preview, model raters with their
cost estimate, runs with their control, report and CSV — against the local Chat Completions
server (tests/fakes/chat_server.py)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.models import Role
from llm.models import Call, Endpoint, ModelRater, PromptTemplate, Run
from llm.selectors import cost_estimate
from llm.services import prompt_template_create, rater_add
from tests.factories import make_label_stage, make_member, make_project, make_user

pytestmark = pytest.mark.django_db

SECRET = "sk-test-SECRET-VALUE-0123456789"
KEY_VARIABLE = "RUNGWISE_TEST_MODEL_KEY"


def _project(items: int = 3):
    project = make_project()
    stage = make_label_stage(project, overlap=2)
    engine.items_create(
        project=project,
        rows=[
            {
                "external_id": f"case-{i}",
                "payload": {"text": f"Sentence {i}: rain, then floods.", "gold": "GOLD-SECRET"},
            }
            for i in range(items)
        ],
    )
    return project, stage


def _people(project):
    return {
        role: make_member(project, role)
        for role in (Role.ANNOTATOR, Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)
    }


def _endpoint(chat_server, **extra) -> Endpoint:
    extra.setdefault("requests_per_minute", 0)
    extra.setdefault("max_retries", 0)
    extra.setdefault("timeout_seconds", 5)
    return Endpoint.objects.create(
        name=extra.pop("name", "local"),
        base_url=chat_server.base_url,
        model=extra.pop("model", chat_server.model("views")),
        **extra,
    )


def _prompt(project, user_text="Label: {{ text }} {{ gold }}"):
    return prompt_template_create(
        project=project, name="labeller", kind="label", user_text=user_text
    )


# --- Endpoints --------------------------------------------------------------------------------


def test_endpoints_are_for_staff_and_admins_of_any_project(client):
    project, _ = _project()
    people = _people(project)
    url = reverse("llm:endpoints")
    assert client.get(url).status_code == 302  # sign in first
    for role in (Role.ANNOTATOR, Role.REVIEWER, Role.RESEARCHER):
        client.force_login(people[role])
        assert client.get(url).status_code == 403, role
        assert client.post(url, {"name": "x"}).status_code == 403, role
    client.force_login(people[Role.ADMIN])
    assert client.get(url).status_code == 200
    client.force_login(make_user(is_staff=True))
    assert client.get(url).status_code == 200


def test_an_endpoint_names_its_key_variable_and_the_list_says_whether_it_is_set(
    client, monkeypatch
):
    monkeypatch.setenv(KEY_VARIABLE, SECRET)
    client.force_login(make_user(is_staff=True))
    response = client.post(
        reverse("llm:endpoints"),
        {
            "name": "hosted",
            "base_url": "https://models.example/v1",
            "model": "m-1",
            "api_key_env": KEY_VARIABLE,
            "concurrency": 2,
            "requests_per_minute": 60,
            "tokens_per_minute": 0,
            "timeout_seconds": 30,
            "max_retries": 2,
            "default_params": '{"temperature": 0, "max_tokens": 20}',
            "json_schema_mode": "on",
            "price_prompt_per_million": "1.5",
            "price_completion_per_million": "3",
        },
    )
    assert response.status_code == 302
    endpoint = Endpoint.objects.get(name="hosted")
    assert endpoint.api_key_env == KEY_VARIABLE and endpoint.default_params["max_tokens"] == 20
    page = client.get(reverse("llm:endpoints")).content.decode()
    assert KEY_VARIABLE in page and ">set<" in page and SECRET not in page
    monkeypatch.delenv(KEY_VARIABLE)
    assert ">not set<" in client.get(reverse("llm:endpoints")).content.decode()


def test_a_key_pasted_instead_of_its_variable_is_refused_and_never_echoed(client):
    client.force_login(make_user(is_staff=True))
    response = client.post(
        reverse("llm:endpoints"),
        {
            "name": "pasted",
            "base_url": "https://models.example/v1",
            "model": "m",
            "api_key_env": SECRET,
            "concurrency": 1,
            "requests_per_minute": 0,
            "tokens_per_minute": 0,
            "timeout_seconds": 5,
            "max_retries": 0,
            "default_params": "{}",
            "price_prompt_per_million": "0",
            "price_completion_per_million": "0",
        },
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "api_key_env" in page and "environment variable" in page
    assert SECRET not in page
    assert not Endpoint.objects.filter(name="pasted").exists()


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("base_url", "ftp://x", "http:// or https://"),
        ("default_params", '{"frequency": 1}', "Unknown default parameter"),
        ("default_params", "{not json", "default_params"),
        ("concurrency", "0", "concurrency"),
    ],
)
def test_endpoint_form_errors_name_their_field(client, field, value, words):
    client.force_login(make_user(is_staff=True))
    data = {
        "name": "bad",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "api_key_env": "",
        "concurrency": 1,
        "requests_per_minute": 0,
        "tokens_per_minute": 0,
        "timeout_seconds": 5,
        "max_retries": 0,
        "default_params": "{}",
        "price_prompt_per_million": "0",
        "price_completion_per_million": "0",
        field: value,
    }
    response = client.post(reverse("llm:endpoints"), data)
    page = response.content.decode()
    assert response.status_code == 400 and field in page and words in page
    assert not Endpoint.objects.filter(name="bad").exists()


def test_an_endpoint_is_edited_in_place(client, chat_server):
    endpoint = _endpoint(chat_server, name="editable")
    client.force_login(make_user(is_staff=True))
    url = reverse("llm:endpoint", args=[endpoint.pk])
    assert 'value="editable"' in client.get(url).content.decode()
    data = {
        "name": "editable",
        "base_url": chat_server.base_url,
        "model": endpoint.model,
        "api_key_env": "",
        "concurrency": 7,
        "requests_per_minute": 0,
        "tokens_per_minute": 0,
        "timeout_seconds": 5,
        "max_retries": 0,
        "default_params": "{}",
        "price_prompt_per_million": "0",
        "price_completion_per_million": "0",
    }
    assert client.post(url, data).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.concurrency == 7 and Endpoint.objects.count() == 1


def test_the_test_button_shows_the_answer_or_the_error_kind(client, chat_server, monkeypatch):
    good = _endpoint(chat_server, name="good")
    chat_server.control(good.model, default="OK")
    missing = _endpoint(chat_server, name="keyless", api_key_env="RUNGWISE_NOT_SET_ANYWHERE")
    monkeypatch.delenv("RUNGWISE_NOT_SET_ANYWHERE", raising=False)
    client.force_login(make_user(is_staff=True))
    answered = client.post(reverse("llm:endpoint_test", args=[good.pk]), HTTP_HX_REQUEST="true")
    text = answered.content.decode()
    assert answered.status_code == 200 and "Answered" in text and f'id="ping-{good.pk}"' in text
    assert "<html" not in text  # the row's partial only
    refused = client.post(reverse("llm:endpoint_test", args=[missing.pk])).content.decode()
    assert "key_missing" in refused and "RUNGWISE_NOT_SET_ANYWHERE" in refused
    assert not Call.objects.exists()  # a test writes nothing


# --- The Models tab ---------------------------------------------------------------------------


def test_the_tab_is_for_researchers_to_read_and_admins_to_write(client, chat_server):
    project, stage = _project()
    people = _people(project)
    version = _prompt(project)
    rater = rater_add(stage=stage, endpoint=_endpoint(chat_server), prompt=version)
    run = Run.objects.create(project=project, purpose="rate", rater=rater)
    reads = [
        reverse("llm:models", args=[project.slug]),
        reverse("llm:prompt", args=[project.slug, version.template_id]),
        reverse("llm:preview", args=[project.slug]),
        reverse("llm:run", args=[project.slug, run.pk]),
        reverse("llm:run_calls_csv", args=[project.slug, run.pk]),
    ]
    writes = [
        (reverse("llm:prompt_create", args=[project.slug]), {"name": "n", "stage": stage.pk}),
        (reverse("llm:prompt", args=[project.slug, version.template_id]), {"user": "x"}),
        (reverse("llm:preview", args=[project.slug]), {"stage": stage.pk}),
        (reverse("llm:rater_add", args=[project.slug, stage.pk]), {"endpoint": 1}),
        (reverse("llm:rater_remove", args=[project.slug, rater.pk]), {}),
        (reverse("llm:run_start", args=[project.slug, rater.pk]), {}),
        (reverse("llm:run_control", args=[project.slug, run.pk]), {"action": "cancel"}),
    ]
    for role in (Role.ANNOTATOR, Role.REVIEWER):
        client.force_login(people[role])
        for url in reads:
            assert client.get(url).status_code == 403, (role, url)
        for url, data in writes:
            assert client.post(url, data).status_code == 403, (role, url)
    client.force_login(people[Role.RESEARCHER])
    for url in reads:
        assert client.get(url).status_code == 200, url
    for url, data in writes:
        assert client.post(url, data).status_code == 403, url
    tab = client.get(reads[0]).content.decode()
    assert "Create the prompt" not in tab and "Open the queued run" not in tab
    assert '<span class="badge">model</span>' in tab
    client.force_login(people[Role.ADMIN])
    tab = client.get(reads[0]).content.decode()
    assert "Create the prompt" in tab and "Open the queued run" in tab and "Remove" in tab
    # Someone else's ids answer as unknown ones.
    other, _ = _project()
    make_member(other, Role.ADMIN, username="other-admin")
    assert client.get(reverse("llm:run", args=[other.slug, run.pk])).status_code == 404


def test_the_tab_is_listed_in_the_project_navigation_for_researchers_only(client):
    project, _ = _project()
    people = _people(project)
    url = reverse("llm:models", args=[project.slug])
    client.force_login(people[Role.RESEARCHER])
    assert (
        f'href="{url}"'
        in client.get(reverse("annotation:project", args=[project.slug])).content.decode()
    )
    client.force_login(people[Role.ANNOTATOR])
    page = client.get(reverse("annotation:project", args=[project.slug])).content.decode()
    assert f'href="{url}"' not in page


def test_a_prompt_is_created_from_a_stage_and_gets_versions(client):
    project, stage = _project()
    admin = make_member(project, Role.ADMIN)
    client.force_login(admin)
    response = client.post(
        reverse("llm:prompt_create", args=[project.slug]),
        {"name": "first", "stage": stage.pk, "system": "Be brief.", "user": "Label {{ text }}"},
    )
    template = PromptTemplate.objects.get(project=project, name="first")
    assert response.status_code == 302 and template.kind == "label" and template.purpose == "rate"
    url = reverse("llm:prompt", args=[project.slug, template.pk])
    assert client.post(url, {"system": "Be brief.", "user": "Label {{ text }}"}).status_code == 302
    assert template.versions.count() == 1  # the same texts add no version
    assert client.post(url, {"user": "Label this: {{ text }}"}).status_code == 302
    page = client.get(url).content.decode()
    assert template.versions.count() == 2 and "Version 2" in page and "Label this:" in page


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"name": "p", "user": "x"}, "Choose a stage."),
        ({"name": "p", "stage": "STAGE"}, "The prompt needs a user message."),
        ({"name": "p", "stage": "STAGE", "user": "{% if %}"}, "not a valid template"),
        ({"name": "labeller", "stage": "STAGE", "user": "again"}, "already has a prompt"),
    ],
)
def test_prompt_form_errors_are_named_where_the_form_is(client, data, words):
    project, stage = _project()
    _prompt(project)
    client.force_login(make_member(project, Role.ADMIN))
    data = {key: (stage.pk if value == "STAGE" else value) for key, value in data.items()}
    response = client.post(reverse("llm:prompt_create", args=[project.slug]), data)
    page = response.content.decode()
    assert response.status_code in (400, 409) and words in page
    assert "The prompt was not created" in page


def test_the_preview_shows_messages_fields_missing_variables_and_the_models_answer(
    client, chat_server
):
    project, stage = _project(items=4)
    version = _prompt(project, user_text="Label: {{ text }} {{ gold }} {{ nowhere }}")
    endpoint = _endpoint(chat_server)
    chat_server.control(endpoint.model, default={"value": "temporal"})
    client.force_login(make_member(project, Role.ADMIN))
    url = reverse("llm:preview", args=[project.slug])
    response = client.post(url, {"stage": stage.pk, "version": version.pk, "items": 2})
    page = response.content.decode()
    assert response.status_code == 200 and "2 items" in page
    assert page.count("Label: Sentence ") == 2 and "GOLD-SECRET" not in page
    assert "<code>gold</code>" in page and "<code>nowhere</code>" in page  # lacked: a warning
    assert not Call.objects.exists()
    response = client.post(
        url,
        {"stage": stage.pk, "version": version.pk, "items": 2, "endpoint": endpoint.pk},
        HTTP_HX_REQUEST="true",
    )
    page = response.content.decode()
    assert 'id="preview-results"' in page and "<html" not in page
    assert page.count("parsed") == 2 and "{&quot;value&quot;: &quot;temporal&quot;}" in page
    assert Call.objects.filter(status="ok").count() == 2
    client.post(
        url, {"stage": stage.pk, "version": version.pk, "items": 2, "endpoint": endpoint.pk}
    )
    assert len(chat_server.requests(endpoint.model)) == 2  # previewing again calls nothing


def test_the_preview_names_a_version_of_another_kind(client):
    project, stage = _project()
    verify = engine.stage_create(project=project, kind="verify", overlap=1, slug="v", name="V")
    version = _prompt(project)
    client.force_login(make_member(project, Role.ADMIN))
    response = client.post(
        reverse("llm:preview", args=[project.slug]), {"stage": verify.pk, "version": version.pk}
    )
    assert response.status_code == 400 and "asks for &#x27;label&#x27;" in response.content.decode()
    assert stage.pk


def test_a_model_rater_is_added_with_its_errors_named_and_a_cost_estimate(client, chat_server):
    project, stage = _project(items=3)
    version = _prompt(project)
    endpoint = _endpoint(
        chat_server,
        price_prompt_per_million=Decimal(1_000_000),
        price_completion_per_million=Decimal(2_000_000),
        default_params={"max_tokens": 10},
    )
    client.force_login(make_member(project, Role.ADMIN))
    url = reverse("llm:rater_add", args=[project.slug, stage.pk])
    refused = client.post(url, {"endpoint": endpoint.pk, "version": version.pk, "samples": 3})
    assert refused.status_code == 400 and "need a temperature" in refused.content.decode()
    refused = client.post(url, {"endpoint": endpoint.pk, "version": version.pk, "samples": 99})
    assert refused.status_code == 400 and "samples" in refused.content.decode()
    assert not ModelRater.objects.exists()
    added = client.post(
        url, {"endpoint": endpoint.pk, "version": version.pk, "samples": 2, "temperature": "0.7"}
    )
    assert added.status_code == 302
    rater = ModelRater.objects.get()
    assert rater.samples == 2 and rater.temperature == 0.7 and not rater.fills_human_slot
    estimate = cost_estimate(rater)
    assert (estimate.pending, estimate.calls, estimate.completion_tokens) == (3, 6, 10)
    assert estimate.cost == Decimal(6 * estimate.prompt_tokens + 2 * 6 * 10)
    tab = client.get(reverse("llm:models", args=[project.slug])).content.decode()
    assert "3 items × 2 = 6 calls" in tab and "max_tokens, an upper bound" in tab
    removed = client.post(reverse("llm:rater_remove", args=[project.slug, rater.pk]))
    rater.refresh_from_db()
    assert removed.status_code == 302 and not rater.active


def test_a_run_starts_is_controlled_and_reports_its_calls(
    client, chat_server, django_capture_on_commit_callbacks
):
    project, stage = _project(items=3)
    version = _prompt(project)
    endpoint = _endpoint(chat_server)
    chat_server.control(
        endpoint.model,
        answers={"Sentence 2:": '=HYPERLINK("http://evil")'},  # unparseable, and a formula
    )
    rater = rater_add(stage=stage, endpoint=endpoint, prompt=version)
    client.force_login(make_member(project, Role.ADMIN))
    start = reverse("llm:run_start", args=[project.slug, rater.pk])
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(start)
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/runs/{run.pk}/")
    assert client.post(start).status_code == 409  # one live run per rater
    control = reverse("llm:run_control", args=[project.slug, run.pk])
    paused = client.post(control, {"action": "pause"}, HTTP_HX_REQUEST="true")
    assert paused.status_code == 200 and 'data-status="paused"' in paused.content.decode()
    refused = client.post(control, {"action": "pause"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 409 and "cannot pause" in refused.content.decode()
    assert client.post(control, {"action": "stop"}).status_code == 400
    with django_capture_on_commit_callbacks(execute=True):
        client.post(control, {"action": "resume"})  # the run works, in-process
    run.refresh_from_db()
    assert (run.status, run.done, run.failed, run.total) == ("done", 2, 1, 3)
    url = reverse("llm:run", args=[project.slug, run.pk])
    poll = client.get(url + "?poll=1", HTTP_HX_REQUEST="true")
    assert poll["HX-Refresh"] == "true" and 'data-figure="done">2<' in poll.content.decode()
    page = client.get(url).content.decode()
    assert "case-2" in page and "unparseable" in page and "Calls 1–3 of 3" in page
    download = client.get(reverse("llm:run_calls_csv", args=[project.slug, run.pk]))
    rows = list(csv.reader(io.StringIO(b"".join(download.streaming_content).decode("utf-8-sig"))))
    assert rows[0][:4] == ["call", "item", "sample", "status"] and len(rows) == 4
    raw = {row[1]: row[11] for row in rows[1:]}
    assert raw["case-2"].startswith("'=HYPERLINK")  # spreadsheet-safe


def test_no_page_ever_renders_a_key(client, chat_server, monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, SECRET)
    project, stage = _project()
    endpoint = _endpoint(chat_server, api_key_env=KEY_VARIABLE)
    version = _prompt(project)
    rater = rater_add(stage=stage, endpoint=endpoint, prompt=version)
    run = Run.objects.create(project=project, purpose="rate", rater=rater)
    client.force_login(make_member(project, Role.ADMIN))
    pages = [
        client.get(reverse("llm:endpoints")),
        client.get(reverse("llm:endpoint", args=[endpoint.pk])),
        client.post(reverse("llm:endpoint_test", args=[endpoint.pk])),
        client.get(reverse("llm:models", args=[project.slug])),
        client.get(reverse("llm:prompt", args=[project.slug, version.template_id])),
        client.post(
            reverse("llm:preview", args=[project.slug]),
            {"stage": stage.pk, "version": version.pk, "endpoint": endpoint.pk},
        ),
        client.get(reverse("llm:run", args=[project.slug, run.pk])),
    ]
    for response in pages:
        assert response.status_code == 200, response.content[:300]
        assert SECRET not in response.content.decode()
    assert chat_server.requests(endpoint.model)  # the key was used: sent, never shown
