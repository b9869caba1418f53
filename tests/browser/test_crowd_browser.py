"""A Prolific participant in a real browser: the study URL, the consent, the instructions, the
practice items and their quota with the keyboard only, and the redirect back to Prolific with
the completion code (intercepted: nothing leaves the machine)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from annotation.models import Annotation
from crowd.models import Participant
from tests.factories import make_crowd_study, prolific_ids

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_prolific_participant_goes_from_the_study_url_to_the_completion_redirect(
    live_server, page
):
    study = make_crowd_study(regular=6, practice=2, checks=0, quota=3, overlap=2)
    completed: list[str] = []

    def prolific(route):
        completed.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<h1>Prolific: completed</h1>")

    page.route("https://app.prolific.com/**", prolific)
    url = live_server.url + reverse("crowd:enter", args=[study.token])
    page.goto(url + "?" + urlencode(prolific_ids(7)))

    # Consent: the box, then Enter (the form's default button: continue).
    page.wait_for_url(f"**{reverse('crowd:consent', args=[study.token])}")
    assert "your answers are used for research" in page.locator("main").inner_text()
    page.locator("#agree").focus()
    page.keyboard.press("Space")
    page.keyboard.press("Enter")

    # Instructions: Start has the focus.
    page.wait_for_url(f"**{reverse('crowd:instructions', args=[study.token])}")
    assert "practice items" in page.locator("main").inner_text()
    page.keyboard.press("Enter")

    # The normal item screen: Start (GET never leases), then 1 = the first label, 5 times.
    page.wait_for_url(f"**{reverse('annotation:stage', args=[study.stage_id])}")
    page.wait_for_selector("#annotate[data-ready]")
    page.keyboard.press("Enter")
    seen = []
    for _ in range(5):
        page.wait_for_function(
            "() => document.querySelector('#annotate[data-ready]')"
            " && document.querySelector('.item-form')"
            " && document.activeElement && document.activeElement.id === 'item-card'"
        )
        # No staff chrome: the item's text, never its id; a practice item is marked.
        current = page.locator(".item-body").inner_text()
        assert current not in seen
        assert page.locator(".item-head strong").count() == 0
        practice = page.locator("[data-practice-item]").count() == 1
        assert practice == current.startswith("Practice")
        seen.append(current)
        page.keyboard.press("1")
        if practice:
            # The practice answer's feedback (annotation/practice.py) holds the focus; Enter
            # goes on.
            page.wait_for_function(
                "() => document.activeElement"
                " && document.activeElement.closest('[data-practice-feedback]')"
            )
            assert page.locator(".item-head strong").count() == 0
            page.keyboard.press("Enter")
        page.wait_for_function(
            "seen => !document.querySelector('.item-body')"
            " || document.querySelector('.item-body').innerText !== seen",
            arg=current,
        )
    # The end page shows the code, then goes on to Prolific by itself.
    page.wait_for_selector("[data-testid=crowd-code]")
    assert page.locator("[data-testid=crowd-code]").inner_text() == "C0MPLETE"
    page.wait_for_function("() => document.body.innerText.includes('Prolific: completed')")
    assert completed == ["https://app.prolific.com/submissions/complete?cc=C0MPLETE"]
    participant = Participant.objects.get(study=study)
    assert participant.status == "completed"
    assert [s.split()[0] for s in seen] == ["Practice"] * 2 + ["Regular"] * 3
    assert Annotation.objects.filter(annotator=participant.user).count() == 5


def test_a_participant_with_quota_left_but_no_free_item_waits_then_goes_on(live_server, page):
    """The last free item goes to this participant while another holds the only other one: the
    item screen says to wait and try again (never "All done"); once the other participant
    leaves, Enter on "Try again" hands the item out and the quota ends at Prolific."""
    from crowd import services
    from tests.crowd.test_services import enter, next_item, ready

    study = make_crowd_study(regular=2, practice=0, checks=0, quota=2, overlap=1)
    holder = ready(enter(study, 1))
    assert next_item(holder) is not None  # holds one of the two items
    page.route(
        "https://app.prolific.com/**",
        lambda route: route.fulfill(
            status=200, content_type="text/html", body="<h1>Prolific: completed</h1>"
        ),
    )
    page.goto(
        live_server.url
        + reverse("crowd:enter", args=[study.token])
        + "?"
        + urlencode(prolific_ids(2))
    )
    page.wait_for_url(f"**{reverse('crowd:consent', args=[study.token])}")
    page.locator("#agree").check()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{reverse('crowd:instructions', args=[study.token])}")
    # Enter on the Start button itself (its autofocus may land after the load event).
    page.get_by_role("button", name="Start").press("Enter")
    page.wait_for_selector("#annotate[data-ready]", state="attached")
    page.keyboard.press("Enter")
    page.wait_for_selector("#annotate[data-ready] .item-form", state="attached")
    page.keyboard.press("1")
    page.wait_for_selector("[data-waiting]")
    text = page.locator("#annotate").inner_text()
    assert "All done" not in text and "Try again" in text and "message the researcher" in text
    page.screenshot(path="/tmp/crowd-waiting.png", full_page=True)

    services.participant_leave(participant=holder, status="returned", reason="Prolific: RETURNED")
    page.wait_for_selector("#annotate[data-ready]", state="attached")
    page.keyboard.press("Enter")  # Try again
    # The new item's screen, once its keys are bound (the waiting screen was ready too).
    page.wait_for_selector("#annotate[data-ready] .item-form", state="attached")
    page.keyboard.press("1")
    page.wait_for_function("() => document.body.innerText.includes('Prolific: completed')")
    assert (
        Participant.objects.get(platform_id=prolific_ids(2)["PROLIFIC_PID"]).status == "completed"
    )
