"""Screenshots of the researchers' and reviewers' pages, for looking at them (not a test).

    SQLITE_PATH=/tmp/demo.sqlite3 .venv/bin/python manage.py migrate
    SQLITE_PATH=/tmp/demo.sqlite3 .venv/bin/python manage.py seed_demo
    SQLITE_PATH=/tmp/demo.sqlite3 .venv/bin/python manage.py simulate_annotations
    SQLITE_PATH=/tmp/demo.sqlite3 DEBUG=1 .venv/bin/python manage.py runserver 127.0.0.1:8765 &
    .venv/bin/python scripts/research_screenshots.py http://127.0.0.1:8765 var/screenshots

Signs in as the demo researcher and reviewer (password rungwise-demo) and saves one full-page
PNG per page with Debian's Chromium through Playwright.
"""

from __future__ import annotations

import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

PASSWORD = "rungwise-demo"
RESEARCHER_PAGES = {
    "agreement-overview": "/projects/demo/agreement/",
    "stage-label": "/projects/demo/agreement/label/",
    "stage-verify": "/projects/demo/agreement/verify/",
    "disagreements": "/projects/demo/agreement/label/disagreements/",
    "disagreements-adjudicated": "/projects/demo/agreement/label/disagreements/?show=adjudicated",
    "annotator-quality": "/projects/quality-demo/quality/label/",
}
REVIEWER_PAGES = {"adjudication-queue": "/projects/demo/adjudication/"}


def sign_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state("networkidle")


def wait_for_server(base: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(f"{base}/accounts/login/", timeout=2)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def main() -> None:
    base = sys.argv[1].rstrip("/") if len(sys.argv) > 1 else "http://127.0.0.1:8765"
    wait_for_server(base)
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "var/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for username, pages in (("researcher", RESEARCHER_PAGES), ("reviewer", REVIEWER_PAGES)):
            context = browser.new_context(
                viewport={"width": 1360, "height": 900}, device_scale_factor=1
            )
            page = context.new_page()
            sign_in(page, base, username)
            for name, path in pages.items():
                page.goto(base + path)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(out / f"{name}.png"), full_page=True)
                print(out / f"{name}.png")
            if username == "reviewer":
                link = page.locator("a.button", has_text="Start with the oldest")
                if link.count():
                    link.first.click()
                    page.wait_for_load_state("networkidle")
                    page.screenshot(path=str(out / "adjudicate.png"), full_page=True)
                    print(out / "adjudicate.png")
            context.close()
        browser.close()


if __name__ == "__main__":
    main()
