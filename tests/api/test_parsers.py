"""The API's JSON parser (api/parsers.py): every JSON body is read within the limits of
annotation/values.py, so text nested too deep, bad syntax or bad encoding is a 400 in the
API's error format naming where, on every endpoint, signed in or not."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from annotation.models import Annotation
from annotation.values import MAX_DEPTH
from tests.api.test_input_limits import lease  # noqa: F401 (a fixture)
from tests.imports.test_fuzz import FUZZ_DB, VALUE, assert_storable, to_json

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("body", [DEEP, '{"username": ' + "{" * 100_000])
def test_json_nested_100000_deep_is_a_400_even_before_signing_in(body):
    response = APIClient().post("/api/auth/token/", body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert set(error) == {"message", "extra"}
    assert f"more than {MAX_DEPTH} levels" in error["message"]
    assert "line 1, column" in error["message"]


def test_a_deep_submit_is_refused_and_writes_nothing(lease):  # noqa: F811
    api, url, _, _ = lease
    body = '{"payload": {"value": "keep", "deep": ' + DEEP + "}}"
    response = api.post(url, body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "levels" in response.json()["message"]
    assert not Annotation.objects.exists()


def test_bad_syntax_names_line_and_column_in_words():
    response = APIClient().post(
        "/api/auth/token/", '{\n  "username": "a",\n}', content_type="application/json"
    )
    assert response.status_code == 400
    assert "line 2, column 18" in response.json()["message"]  # the comma itself
    assert "trailing comma" in response.json()["message"]


def test_a_body_that_is_not_utf8_is_a_400_naming_the_byte():
    response = APIClient().post(
        "/api/auth/token/", b'{"username": "caf\xe9"}', content_type="application/json"
    )
    assert response.status_code == 400
    assert "0xE9" in response.json()["message"]


def test_every_endpoint_reads_json_with_this_parser():
    from django.urls import get_resolver

    from api.parsers import JSONParser

    def views(patterns):
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                yield from views(pattern.url_patterns)
            else:
                view = getattr(pattern.callback, "cls", None) or getattr(
                    pattern.callback, "view_class", None
                )
                if view is not None and hasattr(view, "parser_classes"):
                    yield view

    checked = set()
    for view in views(get_resolver().url_patterns):
        for parser in view.parser_classes:
            if parser.media_type == "application/json":
                assert issubclass(parser, JSONParser), view
                checked.add(view.__name__)
    assert {"TokenView", "SubmitView", "DsepGenerateView"} <= checked


@pytest.fixture
def unthrottled(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"auth": "off", "submit": "off"},
    }


@pytest.mark.django_db
@FUZZ_DB
@given(
    st.fixed_dictionaries({"payload": VALUE}, optional={"client_info": VALUE, "next": VALUE}),
    st.booleans(),
    st.sampled_from(["as is", "truncate", "latin-1 byte", "bom"]),
)
def test_any_json_body_is_a_4xx_or_a_stored_answer(unthrottled, lease, body, ascii_only, damage):  # noqa: F811
    """Bodies of every kind (nasty text and numbers, nesting up to 10,000 deep, broken bytes)
    sent to the token endpoint and to a submit: never a 500, and what is stored is storable."""
    api, url, _, _ = lease
    data = to_json(body, ascii_only).encode("utf-8", errors="surrogatepass")
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "latin-1 byte":
        data = data[:1] + b"caf\xe9" + data[1:]
    elif damage == "bom":
        data = b"\xef\xbb\xbf" + data
    token = APIClient().post("/api/auth/token/", data, content_type="application/json")
    assert token.status_code == 400 and set(token.json()) == {"message", "extra"}
    response = api.post(url, data, content_type="application/json")
    assert response.status_code in (200, 201, 400), response.status_code
    assert set(response.json()) >= ({"message", "extra"} if response.status_code == 400 else {"id"})
    for annotation in Annotation.objects.all():
        assert_storable([annotation.payload, annotation.client_info])
