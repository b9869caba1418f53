"""The client (llm/client.py) against the local Chat Completions server: keys from the
environment only, errors by kind, the demo responder through the same code path."""

from __future__ import annotations

import json

import pytest

from llm import client
from llm.models import DEMO_BASE_URL, Endpoint
from llm.services import endpoint_save

MESSAGES = [{"role": "user", "content": "Is rain a cause of floods?"}]


def _endpoint(chat_server, **extra) -> Endpoint:
    model = chat_server.model("client")
    return Endpoint.objects.create(
        name=model[:60], base_url=chat_server.base_url, model=model, timeout_seconds=2, **extra
    )


@pytest.mark.django_db
def test_the_key_comes_from_the_named_variable_and_is_sent_never_stored(chat_server, monkeypatch):
    monkeypatch.setenv("RUNGWISE_TEST_MODEL_KEY", "sk-secret-value")
    endpoint = _endpoint(chat_server, api_key_env="RUNGWISE_TEST_MODEL_KEY")
    reply = client.chat(endpoint, MESSAGES)
    assert reply.text == "fake answer"
    (request,) = chat_server.requests(endpoint.model)
    assert request["authorization"] == "Bearer sk-secret-value"
    row = Endpoint.objects.filter(pk=endpoint.pk).values().get()
    assert "sk-secret-value" not in json.dumps(row, default=str)


@pytest.mark.django_db
def test_a_missing_key_is_an_error_naming_the_variable(chat_server, monkeypatch):
    monkeypatch.delenv("RUNGWISE_TEST_ABSENT_KEY", raising=False)
    endpoint = _endpoint(chat_server, api_key_env="RUNGWISE_TEST_ABSENT_KEY")
    with pytest.raises(client.CallError) as error:
        client.chat(endpoint, MESSAGES)
    assert error.value.kind == "key_missing" and not error.value.retryable
    assert "RUNGWISE_TEST_ABSENT_KEY" in error.value.message


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fault", "kind", "retry_after"),
    [
        ({"status": 429, "retry_after": 7}, "rate_limited", 7.0),
        ({"status": 503}, "server", None),
        ({"status": 400}, "client", None),
        ({"delay": 3}, "timeout", None),
        ({"refusal": "no"}, "refused", None),
    ],
)
def test_errors_come_back_by_kind(chat_server, fault, kind, retry_after):
    endpoint = _endpoint(chat_server)
    chat_server.control(endpoint.model, faults=[fault])
    with pytest.raises(client.CallError) as error:
        client.chat(endpoint, MESSAGES)
    assert error.value.kind == kind
    assert error.value.retry_after == retry_after
    assert error.value.retryable == (kind in {"rate_limited", "server", "timeout"})


@pytest.mark.django_db
def test_an_unreachable_server_is_a_connection_error():
    endpoint = Endpoint.objects.create(
        name="nowhere", base_url="http://127.0.0.1:9/v1", model="m", timeout_seconds=2
    )
    with pytest.raises(client.CallError) as error:
        client.chat(endpoint, MESSAGES)
    assert error.value.kind == "connection"


@pytest.mark.django_db
def test_the_demo_responder_fills_the_schema_and_says_what_it_is():
    endpoint = Endpoint.objects.create(name="demo", base_url=DEMO_BASE_URL, model="demo")
    schema = {
        "type": "object",
        "properties": {"value": {"enum": ["keep", "reject"]}, "note": {"type": "string"}},
    }
    response_format = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
    first = client.chat(endpoint, MESSAGES, response_format=response_format)
    again = client.chat(endpoint, MESSAGES, response_format=response_format)
    answer = json.loads(first.text)
    assert answer["value"] in ("keep", "reject") and first.text == again.text
    assert "not a language model" in answer["note"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"base_url": "ftp://x/v1"}, "base_url"),
        ({"api_key_env": "sk-live-123"}, "api_key_env"),
        ({"default_params": {"temperature": 0, "api_key": "x"}}, "default_params"),
    ],
)
def test_bad_endpoint_settings_are_refused_naming_the_field(changes, field):
    from annotation.errors import ApplicationError

    endpoint = Endpoint(name="bad", base_url="http://127.0.0.1:8001/v1", model="m", **{})
    for name, value in changes.items():
        setattr(endpoint, name, value)
    with pytest.raises(ApplicationError) as error:
        endpoint_save(endpoint=endpoint)
    assert field in error.value.extra
    assert not Endpoint.objects.exists()
