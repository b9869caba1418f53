from __future__ import annotations

import pytest

from tests.sso.provider import Provider


@pytest.fixture
def provider():
    """A local OpenID provider (tests/sso/provider.py), stopped after the test."""
    running = Provider().start()
    yield running
    running.stop()


@pytest.fixture
def sso(provider, settings):
    """Rungwise pointed at the local provider, passwords still on."""
    for name, value in provider.settings().items():
        setattr(settings, name, value)
    settings.AUTHENTICATION_BACKENDS = [
        *settings.AUTHENTICATION_BACKENDS,
        "sso.backends.VerifiedEmailBackend",
    ]
    return provider
