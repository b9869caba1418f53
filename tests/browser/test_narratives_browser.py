"""Causal narratives in a real browser: a chain ordered and a graph's edges drawn with the
keyboard only (j / k, Shift+↑, Space, Enter), and a chain ordered by drag and drop; the moves
are announced in the aria-live line and the page never carries the true order."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.models import Annotation
from narratives import services
from narratives.demo import demo_rows
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.browser.test_meter_browser import press
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHAIN = "demo_reverse-l3"  # five events
GRAPH = "graph-demo-collider"


def project_with(*keys):
    project = services.narratives_project_create(slug="narr-b", name="Narratives", overlap=1)
    engine.items_create(
        project=project, rows=[r for r in demo_rows() if r["payload"]["key"] in keys]
    )
    return project


def cards(page) -> list[str]:
    return page.locator("[data-card]").evaluate_all(
        "cards => cards.map(card => card.getAttribute('data-node'))"
    )


def focused_node(page) -> str | None:
    return page.evaluate(
        "() => { const c = document.activeElement.closest('[data-card], [data-event]');"
        " return c ? (c.getAttribute('data-node') || c.getAttribute('data-event')) : null; }"
    )


def start(page, base, project, person):
    page.set_default_timeout(10_000)
    sign_in_with_the_keyboard(page, base, person.username)
    page.goto(base + reverse("annotation:stage", args=[project.stages.get().pk]))
    page.keyboard.press("Enter")
    page.wait_for_selector(".item-form")
    page.wait_for_selector("#annotate[data-ready]", state="attached")


def order_with_keys(page, truth: list[str]) -> None:
    page.keyboard.press("j")  # focus the first card
    for target, node in enumerate(truth):
        current = cards(page)
        at = current.index(node)
        here = current.index(focused_node(page))
        for _ in range(abs(at - here)):
            page.keyboard.press("j" if at > here else "k")
        assert focused_node(page) == node
        for _ in range(at - target):
            page.keyboard.press("Shift+ArrowUp")
        assert cards(page)[target] == node
        if at != target:
            status = page.locator("[data-narrative-status]").inner_text()
            assert f"to position {target + 1} of {len(truth)}" in status


def test_a_chain_and_a_graph_with_the_keyboard_only(live_server, page):
    project = project_with(CHAIN, GRAPH)
    truth = {i.payload["key"]: i.payload["gold"] for i in project.items.all()}
    person = make_member(project, username="kim")
    start(page, live_server.url, project, person)
    for _ in range(2):
        content = page.content()
        assert '"gold"' not in content and "direction" not in content
        if page.locator("[data-cards]").count():
            order = truth[CHAIN]["order"]
            assert cards(page) != order
            order_with_keys(page, order)
            press(page, "Enter")
        else:
            buttons = page.locator("[data-event]").evaluate_all(
                "bs => bs.map(b => b.getAttribute('data-event'))"
            )
            page.keyboard.press("j")
            for cause, effect in truth[GRAPH]["edges"]:
                for node in (cause, effect):
                    here = buttons.index(focused_node(page))
                    there = buttons.index(node)
                    for _ in range(abs(there - here)):
                        page.keyboard.press("j" if there > here else "k")
                    page.keyboard.press("Space")
                assert "Added" in page.locator("[data-narrative-status]").inner_text()
            assert page.locator("[data-edge-item]").count() == 2
            press(page, "Enter")
    answers = {
        a.item_stage.item.payload["key"]: a.payload
        for a in Annotation.objects.filter(annotator=person).select_related("item_stage__item")
    }
    assert answers[CHAIN] == {"order": truth[CHAIN]["order"]}
    assert sorted(answers[GRAPH]["edges"]) == sorted(truth[GRAPH]["edges"])
    assert services.baseline(project)["overall"]["exact"] == 1


def test_a_chain_by_drag_and_drop(live_server, page):
    project = project_with(CHAIN)
    order = project.items.get().payload["gold"]["order"]
    person = make_member(project, username="dan")
    start(page, live_server.url, project, person)
    for target, node in enumerate(order):
        if cards(page)[target] == node:
            continue
        page.drag_and_drop(
            f"[data-card][data-node='{node}']", f"[data-card]:nth-child({target + 1})"
        )
        assert cards(page)[target] == node
    assert page.locator("[data-card] [data-position]").all_inner_texts() == [
        "1", "2", "3", "4", "5"
    ]  # fmt: skip
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector(".all-done")
    [answer] = Annotation.objects.filter(annotator=person)
    assert answer.payload == {"order": order}
