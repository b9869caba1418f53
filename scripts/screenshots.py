"""Screenshots of every page, for looking at the UI (not a test).

    .venv/bin/python scripts/screenshots.py [--out screenshots] [--only NAME,...]

Builds a throwaway SQLite demo (migrate + seed_demo + a few annotations so that the label stage
has items), serves it with runserver on a free port, and drives headless Chromium at a
1280×800 laptop viewport, saving one PNG per page into screenshots/ (gitignored).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "rungwise-demo"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare_database(env: dict[str, str]) -> None:
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    subprocess.run(
        [python, "manage.py", "seed_demo"], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL
    )
    # Annotations by all three annotators resolve some verify items, which opens them in the
    # label stage; a tiny second project gives annotator1 an "all done" screen.
    script = """
from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Project, Role
from django.contrib.auth import get_user_model

User = get_user_model()
project = Project.objects.get(slug="demo")
verify = project.stages.get(slug="verify")
people = [User.objects.get(username=f"annotator{n}") for n in (1, 2, 3)]
for person in people:
    for _ in range(6):
        stage = access_stage_for_annotator(user=person, stage_id=verify.pk)
        assignment = services.assignment_next(annotator=person, stage=stage)
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=person, payload={"value": "keep"},
            seconds_spent=4.2,
        )
tiny = services.project_create(slug="pilot", name="Pilot batch", description="Five warm-up pairs.")
stage = services.stage_create(project=tiny, slug="verify", name="Warm-up", kind="verify", overlap=1)
services.items_create(project=tiny, rows=[
    {"external_id": f"pilot-{n}", "payload": {"text": f"Warm-up sentence {n}."}} for n in range(2)
])
services.membership_add(project=tiny, user=people[0], role=Role.ANNOTATOR)
for _ in range(2):
    assignment = services.assignment_next(
        annotator=people[0], stage=access_stage_for_annotator(user=people[0], stage_id=stage.pk)
    )
    services.annotation_submit(assignment_id=assignment.pk, annotator=people[0], payload={"value": "keep"})
print(verify.pk, project.stages.get(slug="label").pk, stage.pk)
"""
    out = subprocess.run(
        [python, "manage.py", "shell", "-c", script],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    env["SCREENSHOT_STAGES"] = out.stdout.strip().splitlines()[-1]


def publish_demo_versions(env: dict[str, str]) -> None:
    """Three published versions of the demo project (items marked finished by hand between
    them), for the release pages: the confirmation of v4 and v3 compared with v1."""
    script = """
from annotation.models import Item, Project, Role
from django.contrib.auth import get_user_model
from releases.services import release_publish

project = Project.objects.get(slug="demo")
admin = get_user_model().objects.get(username="admin")
items = list(Item.objects.filter(project=project).order_by("pk")[:9])
for batch, note in ((items[:4], "First cut."), (items[4:7], "More pairs."), (items[7:], "Fixes.")):
    Item.objects.filter(pk__in=[item.pk for item in batch]).update(status="accepted")
    if note == "Fixes.":
        Item.objects.filter(pk=items[0].pk).update(version=2)
    release_publish(project=project, user=admin, notes=note)
"""
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=REPO, env=env, check=True, capture_output=True,
    )  # fmt: skip


def expire_assignment(env: dict[str, str], username: str) -> None:
    """Make the user's active lease expire and its item close (so a submit gets a 409)."""
    script = f"""
from datetime import timedelta
from django.utils import timezone
from annotation.models import Assignment, ItemStage
assignment = Assignment.objects.get(annotator__username={username!r}, status="active", stage__slug="verify", stage__project__slug="demo")
Assignment.objects.filter(pk=assignment.pk).update(status="expired", expires_at=timezone.now() - timedelta(minutes=5))
ItemStage.objects.filter(pk=assignment.item_stage_id).update(leased_count=0, state="resolving")
"""
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script], cwd=REPO, env=env, check=True
    )


def meter_stages(env: dict[str, str], slug: str = "meter-demo") -> dict[str, int]:
    """{stage slug: id} of a demo project (METER's by default)."""
    script = (
        "from annotation.models import Stage;"
        f"print(dict(Stage.objects.filter(project__slug='{slug}').values_list('slug','pk')))"
    )
    output = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    import ast

    return ast.literal_eval(output.strip().splitlines()[-1])


def mturk(env: dict[str, str]) -> None:
    """An MTurk study on the crowd demo's stage, at /s/demo-mturk/ (for its preview)."""
    script = """
from annotation.models import Project
from crowd import services
from crowd.models import Study
project = Project.objects.get(slug="crowd-demo")
study = services.study_create(
    project=project, stage=project.stages.get(slug="label"), name="Causal relations on MTurk",
    platform="mturk", consent_text="You agree.", completion_code="MDEMO",
    instructions="Read both sentences, then choose causal, temporal or unrelated.",
)
Study.objects.filter(pk=study.pk).update(token="demo-mturk")
"""
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script], cwd=REPO, env=env, check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip


def start(page) -> None:
    """The item screen's Start button, when the annotator holds no item (GET never leases)."""
    button = page.locator("[data-start]")
    if button.count():
        button.first.click()
        page.wait_for_selector(".item-form, .all-done:not(.ready)")


def wait_until_up(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"server did not start at {url}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(REPO / "screenshots"))
    parser.add_argument("--only", default="", help="comma-separated screenshot names")
    args = parser.parse_args()
    only = {name for name in args.only.split(",") if name}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    workdir = tempfile.mkdtemp(prefix="rungwise-shots-")
    env = dict(
        os.environ,
        SQLITE_PATH=str(Path(workdir) / "db.sqlite3"),
        DEBUG="0",
        WHITENOISE_MANIFEST="0",
        DATABASE_URL="",
        CELERY_BROKER_URL="",
        DJANGO_SETTINGS_MODULE="rungwise.settings",
        # Shows the crowd study page's Prolific tools (sync, decisions, bonuses); no page
        # visited here calls Prolific.
        PROLIFIC_TOKEN="screenshots-only",
    )
    prepare_database(env)
    verify_id, label_id, pilot_id = env["SCREENSHOT_STAGES"].split()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    saved = []
    try:
        wait_until_up(base + "/accounts/login/")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
            )

            def session(username: str | None):
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                page = context.new_page()
                if username:
                    page.goto(base + "/accounts/login/")
                    page.fill("input[name=username]", username)
                    page.fill("input[name=password]", PASSWORD)
                    page.click("button[type=submit]")
                    page.wait_for_url(lambda url: "/accounts/login/" not in url)
                return context, page

            def shot(page, name: str, full_page: bool = False) -> None:
                if only and name not in only:
                    return
                path = out / f"{name}.png"
                page.screenshot(path=str(path), full_page=full_page)
                saved.append(path)

            context, page = session(None)
            page.goto(base + "/accounts/login/")
            shot(page, "01-login")
            page.fill("input[name=username]", "annotator1")
            page.fill("input[name=password]", "wrong")
            page.click("button[type=submit]")
            shot(page, "02-login-error")
            context.close()

            context, page = session("annotator1")
            shot(page, "03-home")
            page.goto(base + "/projects/demo/")
            shot(page, "04-project")
            page.goto(f"{base}/annotate/{verify_id}/")
            shot(page, "04b-item-screen-start")
            start(page)
            shot(page, "05-item-verify")
            page.keyboard.press("?")
            shot(page, "06-help-overlay")
            page.keyboard.press("Escape")
            page.keyboard.press("s")
            shot(page, "07-skip-open")
            page.goto(f"{base}/annotate/{verify_id}/")
            start(page)
            # An invalid value (as a tampered form would send) is re-rendered as a form error.
            page.evaluate("document.querySelector('button[data-key=k]').value = 'maybe'")
            page.keyboard.press("k")
            page.wait_for_selector(".error-box")
            shot(page, "08-item-invalid")
            expire_assignment(env, "annotator1")
            page.keyboard.press("k")
            page.wait_for_selector("text=This item is no longer yours")
            shot(page, "09-item-expired")
            page.goto(f"{base}/annotate/{label_id}/")
            start(page)
            shot(page, "10-item-label")
            # Going back: answer, Backspace on the next item, change, Saved, the answers list.
            page.keyboard.press("1")
            page.wait_for_selector("[data-change-previous]")
            page.wait_for_selector("#annotate[data-ready]", state="attached")
            page.keyboard.press("Backspace")
            page.wait_for_selector("[data-changing]")
            shot(page, "10b-change-answer")
            page.keyboard.press("2")
            page.wait_for_selector(".messages .notice.success")
            shot(page, "10c-change-saved")
            page.goto(f"{base}/annotate/{label_id}/answers/")
            shot(page, "10d-recent-answers")
            page.goto(f"{base}/annotate/{pilot_id}/")
            start(page)
            shot(page, "11-all-done")
            page.goto(f"{base}/annotate/{pilot_id}/answers/")
            shot(page, "11b-recent-answers-decided")
            page.goto(f"{base}/annotate/{pilot_id}/answers/last/")
            shot(page, "11c-change-refused")
            page.goto(base + "/projects/nope/")
            shot(page, "12-not-found")
            page.goto(base + "/accounts/password/")
            shot(page, "13-password-change")
            page.set_viewport_size({"width": 390, "height": 844})
            page.goto(f"{base}/annotate/{verify_id}/")
            start(page)
            shot(page, "14-item-phone", full_page=True)
            page.goto(f"{base}/annotate/{label_id}/answers/last/")
            shot(page, "14b-change-answer-phone", full_page=True)
            page.goto(f"{base}/annotate/{pilot_id}/answers/")
            shot(page, "14c-recent-answers-phone", full_page=True)
            context.close()

            for role in ("reviewer", "researcher", "admin"):
                context, page = session(role)
                shot(page, f"03-home-{role}", full_page=True)
                page.set_viewport_size({"width": 390, "height": 844})
                page.goto(base + "/")
                shot(page, f"03-home-{role}-phone", full_page=True)
                context.close()

            context, page = session("reviewer")
            page.goto(f"{base}/annotate/{verify_id}/")
            start(page)
            shot(page, "15-forbidden")
            page.goto(base + "/")
            page.click("summary:has-text('Projects')")
            shot(page, "16-nav-projects-menu")
            context.close()

            context, page = session("researcher")
            page.goto(f"{base}/projects/demo/")
            shot(page, "16b-project-pipeline", full_page=True)
            context.close()

            # Wide tables at laptop and phone widths: the disagreements table keeps its Outcome
            # column in view, the ratings dashboard's tables scroll inside their own region.
            context, page = session("researcher")
            for width, suffix in ((1366, ""), (1280, "-1280"), (390, "-phone")):
                page.set_viewport_size({"width": width, "height": 850})
                page.goto(f"{base}/projects/demo/agreement/label/disagreements/?show=all")
                shot(page, f"60-disagreements{suffix}", full_page=True)
                page.goto(f"{base}/projects/ratings-demo/ratings/")
                page.wait_for_selector("#analysis[aria-busy=false] #reliability", timeout=60_000)
                shot(page, f"61-ratings-dashboard{suffix}", full_page=True)
                page.goto(f"{base}/projects/ratings-demo/agreement/")
                shot(page, f"62-ratings-agreement{suffix}", full_page=True)
            context.close()

            context, page = session("admin")
            page.goto(base + "/projects/demo/imports/")
            shot(page, "39-imports-columns", full_page=True)
            page.goto(base + "/projects/new/")
            shot(page, "40-studio-new", full_page=True)
            page.goto(base + "/projects/meter-demo/setup/")
            page.click("#pipeline .studio-stage > summary >> nth=1")
            shot(page, "41-studio-setup", full_page=True)
            # The stage form at 1366 and 390 px, and a refused save with its inline error.
            page.set_viewport_size({"width": 1366, "height": 850})
            shot(page, "41b-studio-stage-form", full_page=True)
            page.fill("#pipeline .studio-stage[open] input[name=overlap]", "0")
            page.click("#pipeline .studio-stage[open] button:has-text('Save')")
            page.wait_for_selector(".field-error")
            shot(page, "41c-studio-stage-error", full_page=True)
            page.set_viewport_size({"width": 390, "height": 844})
            page.goto(base + "/projects/meter-demo/setup/")
            page.click("#pipeline .studio-stage > summary >> nth=0")
            shot(page, "41d-studio-stage-form-phone", full_page=True)
            page.set_viewport_size({"width": 1280, "height": 800})
            page.click("button:has-text('Create a link')")
            invite = page.locator("#invites input[readonly]").first.input_value()
            context.close()
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            page.goto(invite)
            shot(page, "42-studio-join", full_page=True)
            context.close()
            if not only or only & {
                "43-release-confirm",
                "43b-release-confirm-phone",
                "44-release-compare",
                "44b-release-compare-phone",
            }:
                publish_demo_versions(env)
                context, page = session("admin")
                page.set_viewport_size({"width": 1366, "height": 850})
                page.goto(base + "/projects/demo/releases/")
                page.fill("#id_notes", "Adds the reviewed pairs.")
                page.click("button:has-text('before publishing')")
                shot(page, "43-release-confirm", full_page=True)
                page.goto(base + "/projects/demo/releases/v3/?against=1")
                shot(page, "44-release-compare", full_page=True)
                page.set_viewport_size({"width": 390, "height": 844})
                shot(page, "44b-release-compare-phone", full_page=True)
                page.goto(base + "/projects/demo/releases/publish/")
                shot(page, "43b-release-confirm-phone", full_page=True)
                context.close()
            context, page = session("admin")
            page.goto(base + "/admin/")
            shot(page, "17-admin-index")
            page.goto(base + "/admin/annotation/assignment/")
            shot(page, "18-admin-assignments")
            page.goto(base + "/admin/annotation/project/1/change/")
            shot(page, "19-admin-project", full_page=True)
            page.goto(base + "/admin/annotation/annotation/")
            shot(page, "20-admin-annotations")
            context.close()

            # The models' pages (llm/): endpoints, the Models tab, a prompt, a preview with the
            # demo responder's answers, a run; at a laptop's and a phone's width.
            llm_shots = {
                f"{number}{'b' if phone else ''}-llm-{name}{'-phone' if phone else ''}"
                for number, name in (
                    (60, "endpoints"),
                    (61, "models"),
                    (62, "prompt"),
                    (63, "preview"),
                    (64, "run"),
                )
                for phone in (False, True)
            }
            if not only or only & llm_shots:
                context, page = session("admin")
                for width, height, b, phone in ((1366, 850, "", ""), (390, 844, "b", "-phone")):
                    page.set_viewport_size({"width": width, "height": height})
                    page.goto(base + "/llm/endpoints/")
                    page.locator("tr", has_text="demo-responder").locator("button").click()
                    page.wait_for_selector(".llm-ping .notice")
                    shot(page, f"60{b}-llm-endpoints{phone}", full_page=True)
                    page.goto(base + "/projects/meter-demo/models/")
                    shot(page, f"61{b}-llm-models{phone}", full_page=True)
                    page.click("#prompts tbody a >> nth=0")
                    shot(page, f"62{b}-llm-prompt{phone}", full_page=True)
                    page.goto(base + "/projects/meter-demo/models/preview/")
                    page.select_option(
                        "#preview-endpoint", label="demo-responder (demo responder, not a model)"
                    )
                    page.click("button:has-text('Preview')")
                    page.wait_for_selector("#preview-results h2")
                    shot(page, f"63{b}-llm-preview{phone}", full_page=True)
                    page.goto(base + "/projects/meter-demo/models/")
                    page.click("#runs tbody a >> nth=0")
                    page.wait_for_selector("#run-progress")
                    shot(page, f"64{b}-llm-run{phone}", full_page=True)
                context.close()

            # METER (review/): one screen per stage and phase, the reviewer's choice, the page.
            meter = meter_stages(env)
            context, page = session("annotator1")
            page.goto(f"{base}/annotate/{meter['verify']}/")
            start(page)
            shot(page, "30-meter-verify", full_page=True)
            page.goto(f"{base}/annotate/{meter['edit']}/")
            start(page)
            shot(page, "31-meter-check", full_page=True)
            page.goto(f"{base}/annotate/{meter['filter']}/")
            start(page)
            shot(page, "34-meter-filter", full_page=True)
            page.goto(f"{base}/annotate/{meter['baseline']}/")
            start(page)
            shot(page, "36-meter-baseline", full_page=True)
            page.goto(f"{base}/annotate/{meter['evidence']}/")
            start(page)
            page.wait_for_selector("[data-spans][data-ready]")
            page.keyboard.press("1")
            for key in (
                "ArrowRight",
                "ArrowRight",
                "Shift+ArrowRight",
                "Shift+ArrowRight",
                "Enter",
            ):
                page.keyboard.press(key)
            page.keyboard.press("2")
            page.keyboard.press("Shift+ArrowRight")
            shot(page, "37-meter-evidence", full_page=True)
            context.close()
            context, page = session("annotator2")
            page.goto(f"{base}/annotate/{meter['edit']}/")
            start(page)
            page.fill("textarea[name=L1_question]", "Why did the ships have to wait?")
            shot(page, "32-meter-edit", full_page=True)
            context.close()
            context, page = session("reviewer")
            page.goto(f"{base}/projects/meter-demo/adjudication/")
            page.click("table a >> nth=0")
            shot(page, "33-meter-adjudicate", full_page=True)
            context.close()
            context, page = session("researcher")
            page.goto(f"{base}/projects/meter-demo/items/")
            shot(page, "43-items", full_page=True)
            page.click("text=esl-0001/entry")
            shot(page, "44-item-history", full_page=True)
            page.goto(f"{base}/projects/meter-demo/meter/")
            shot(page, "35-meter-page", full_page=True)
            context.close()

            # CausalT5k (review/causalt5k/): the four validation screens and the tab.
            ct5k = meter_stages(env, "causalt5k-demo")
            context, page = session("annotator3")
            page.goto(f"{base}/annotate/{ct5k['dedup']}/")
            start(page)
            shot(page, "40-causalt5k-dedup", full_page=True)
            page.goto(f"{base}/annotate/{ct5k['review']}/")
            start(page)
            shot(page, "41-causalt5k-review", full_page=True)
            page.keyboard.press("b")
            page.locator("input[name=attacks][value=ambiguous]").check()
            page.fill("textarea[name=explanation]", "Two readings of the claim are possible.")
            page.fill("textarea[name=edit_claim]", "An edited claim, shown against the original.")
            page.locator("textarea[name=edit_claim]").dispatch_event("input")
            shot(page, "42-causalt5k-review-break", full_page=True)
            page.goto(f"{base}/annotate/{ct5k['score']}/")
            start(page)
            shot(page, "44-causalt5k-score", full_page=True)
            page.goto(f"{base}/annotate/{ct5k['answer']}/")
            start(page)
            shot(page, "46-causalt5k-blind-answer", full_page=True)
            page.goto(f"{base}/annotate/{ct5k['pressure_check']}/")
            start(page)
            shot(page, "47-causalt5k-pressure-check", full_page=True)
            page.set_viewport_size({"width": 390, "height": 844})
            page.goto(f"{base}/annotate/{ct5k['answer']}/")
            shot(page, "46-causalt5k-blind-answer-phone", full_page=True)
            context.close()
            context, page = session("annotator2")
            page.goto(f"{base}/annotate/{ct5k['author']}/")
            start(page)
            shot(page, "43-causalt5k-author", full_page=True)
            context.close()
            context, page = session("researcher")
            page.goto(f"{base}/projects/causalt5k-demo/causalt5k/")
            shot(page, "45-causalt5k-tab", full_page=True)
            page.goto(f"{base}/projects/causalt5k-demo/causalt5k/human-floor/")
            shot(page, "48-causalt5k-human-floor", full_page=True)
            page.set_viewport_size({"width": 390, "height": 844})
            page.goto(f"{base}/projects/causalt5k-demo/causalt5k/human-floor/")
            shot(page, "48-causalt5k-human-floor-phone", full_page=True)
            context.close()

            # Crowd (crowd/): the researcher's tab and study page, a participant's path.
            context, page = session("admin")
            page.goto(base + "/projects/crowd-demo/crowd/")
            shot(page, "50-crowd-tab", full_page=True)
            page.click("text=Causal relations pilot")
            shot(page, "51-crowd-study", full_page=True)
            page.fill("#bonus_csv", "000000000000000000000001,1.505")
            page.click("button:has-text('Pay bonuses')")
            shot(page, "57-crowd-bonus-refused", full_page=True)
            context.close()
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            ids = "PROLIFIC_PID=" + "c" * 24 + "&STUDY_ID=" + "5" * 24 + "&SESSION_ID=" + "d" * 24
            page.goto(base + "/s/demo-pilot/?PROLIFIC_PID=not-an-id")
            shot(page, "52-crowd-bad-link")
            page.goto(base + "/s/demo-pilot/?" + ids)
            shot(page, "53-crowd-consent", full_page=True)
            page.check("#agree")
            page.click("button[value=accept]")
            shot(page, "54-crowd-instructions")
            page.click("button:has-text('Start')")
            start(page)
            shot(page, "55-crowd-practice-item")
            context.close()
            mturk(env)
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            page.goto(base + "/s/demo-mturk/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=X")
            shot(page, "56-crowd-mturk-preview")
            context.close()

            # CARL-GT (graphs/): a yes / no question with its graph, a number question, the tab.
            carlgt = meter_stages(env, "carlgt-demo")
            context, page = session("annotator3")
            page.goto(f"{base}/annotate/{carlgt['answer']}/")
            start(page)
            shot(page, "46-carlgt-question", full_page=True)
            for _ in range(12):
                if page.locator("input[name=value]").count():
                    break
                before = page.locator("[data-field=question]").inner_text()
                page.keyboard.press("y")
                page.wait_for_function(
                    "before => { const q = document.querySelector('[data-field=question]');"
                    " return !q || q.innerText !== before; }",
                    arg=before,
                )
            page.keyboard.type("1.2")
            shot(page, "47-carlgt-number", full_page=True)
            context.close()
            context, page = session("researcher")
            page.goto(f"{base}/projects/carlgt-demo/graphs/")
            shot(page, "48-carlgt-tab", full_page=True)
            context.close()

            # CausalNarratives (narratives/): ordering cards at 1366 and 390 px (one card
            # moved with the keyboard), a graph's edges, the Narratives tab, one narrative.
            narr = meter_stages(env, "narratives-demo")
            context, page = session("annotator3")
            page.set_viewport_size({"width": 1366, "height": 900})
            page.goto(f"{base}/annotate/{narr['order']}/")
            start(page)
            shot_chain = shot_graph = False
            for _ in range(8):
                page.wait_for_selector("#annotate[data-ready]", state="attached")
                if page.locator("[data-cards]").count() and not shot_chain:
                    page.keyboard.press("j")
                    page.keyboard.press("j")
                    page.keyboard.press("Shift+ArrowUp")
                    shot(page, "60-narratives-order", full_page=True)
                    page.set_viewport_size({"width": 390, "height": 844})
                    shot(page, "60-narratives-order-390", full_page=True)
                    page.set_viewport_size({"width": 1366, "height": 900})
                    shot_chain = True
                elif page.locator("[data-event]").count() and not shot_graph:
                    page.locator("[data-event]").first.click()
                    page.locator("[data-event]").nth(1).click()
                    page.locator("[data-event]").nth(2).click()
                    shot(page, "61-narratives-graph", full_page=True)
                    shot_graph = True
                if shot_chain and shot_graph:
                    break
                if page.locator("[data-event]").count():
                    page.locator("[data-event]").first.click()
                    page.locator("[data-event]").nth(1).click()
                before = page.locator("#progress-line").inner_text()
                page.keyboard.press("Enter")
                page.wait_for_function(
                    "before => document.querySelector('#progress-line').innerText !== before",
                    arg=before,
                )
            context.close()
            context, page = session("researcher")
            page.set_viewport_size({"width": 1366, "height": 900})
            page.goto(f"{base}/projects/narratives-demo/narratives/")
            shot(page, "62-narratives-tab", full_page=True)
            page.locator("#narrative-items a").first.click()
            shot(page, "63-narratives-answers", full_page=True)
            page.goto(f"{base}/projects/narratives-demo/narratives/")
            page.set_viewport_size({"width": 390, "height": 844})
            shot(page, "62-narratives-tab-390", full_page=True)
            context.close()

            context = browser.new_context(
                viewport={"width": 1280, "height": 800}, java_script_enabled=False
            )
            page = context.new_page()
            page.goto(base + "/accounts/login/")
            page.fill("input[name=username]", "annotator2")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.goto(f"{base}/annotate/{verify_id}/")
            start(page)
            shot(page, "21-item-no-js")
            context.close()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    for path in saved:
        print(path)


if __name__ == "__main__":
    main()
