"""Browser tests: Playwright's sync API driving Debian's Chromium against pytest-django's
live_server. Skipped with the reason when Chromium or Playwright is missing."""

from __future__ import annotations

import os
import shutil

import pytest

# Playwright's sync API runs an asyncio event loop in this thread; Django refuses ORM calls from
# a thread with a running loop unless told that this is deliberate (it is: tests only).
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM):
        pytest.skip(f"Chromium is not installed at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def page_without_javascript(browser):
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, java_script_enabled=False
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()
