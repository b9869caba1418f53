"""API throttles count in the shared cache (Redis); when that cache is down they let requests
through (fail open) instead of answering 500: an outage of the cache must not stop annotation
or sign-in. Found by benchmarks/soak.py, where every submit answered 500 while Redis was down."""

from __future__ import annotations

import pytest
import redis
from django.core.cache import cache
from rest_framework.test import APIClient

from tests.api.test_views import client_for
from tests.factories import PASSWORD, make_user, pipeline
from tests.processes import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def cache_down(settings):
    """The cache is a Redis server that is not running (a loopback port nobody listens on)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"auth": "5/min", "submit": "5/min"},
    }
    with pytest.raises(redis.exceptions.ConnectionError):
        cache.get("anything")  # really down
    yield


def test_a_submit_is_accepted_while_the_throttle_cache_is_down(cache_down):
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=1)
    api = client_for(alice)
    leased = api.post(f"/api/stages/{verify.pk}/next/").json()
    answer = api.post(
        f"/api/assignments/{leased['id']}/submit/", {"payload": {"value": "keep"}}, format="json"
    )
    assert answer.status_code == 201, answer.content


def test_a_token_is_issued_while_the_throttle_cache_is_down(cache_down):
    make_user("carol")
    answer = APIClient().post("/api/auth/token/", {"username": "carol", "password": PASSWORD})
    assert answer.status_code == 200, answer.content
