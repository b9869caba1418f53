"""The narratives plug-in inside the app: the kind's validation (a permutation of exactly the
item's events; edges among them), blindness (the page and the API never carry the true order,
direction or source), the narrative_record policy, the Narratives tab with its baseline,
agreement and drill-down, the upload, the release layout, the template and the demo."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError
from annotation.kinds import KindContext, get_kind
from annotation.models import Item, Project, Role
from annotation.workflows import get_workflow
from graphs.demo import answer_all
from narratives import services
from narratives.demo import DEMO_CHAINS, DEMO_GRAPHS, demo_answer, demo_rows
from releases.services import release_build, release_publish
from tests.factories import make_member

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    project = services.narratives_project_create(slug="narr", name="Narratives", overlap=2, seed=1)
    engine.items_create(project=project, rows=demo_rows())
    return project


def lease(person, stage):
    access = access_stage_for_annotator(user=person, stage_id=stage.pk)
    return engine.assignment_next(annotator=person, stage=access)


def item_of(project, key):
    return project.items.get(payload__key=key)


def validate(project, external_id, payload):
    stage = project.stages.get()
    kind = get_kind(stage.kind)
    return kind.validate(payload, KindContext(stage=stage, item=item_of(project, external_id)))


def test_an_order_must_be_a_permutation_of_exactly_the_items_events(project):
    truth = ["heavy_rain", "river_overflow", "road_closure"]
    chain = "demo_forward-l1"
    assert validate(project, chain, {"order": truth}) == {"order": truth}
    for bad, says in [
        (truth[:2], "missing: road_closure"),
        ([*truth, "heavy_rain"], "more than once: heavy_rain"),
        (["heavy_rain", "river_overflow", "snow"], "not events of this item: snow"),
        ("heavy_rain", "a list of the item's event names"),
        ([1, 2, 3], "a list of the item's event names"),
    ]:
        with pytest.raises(ApplicationError, match=says):
            validate(project, chain, {"order": bad})
    # The no-JavaScript form posts a position per event.
    ranks = {"heavy_rain": "1", "river_overflow": "2", "road_closure": "3"}
    assert validate(project, chain, {"ranks": ranks}) == {"order": truth}
    with pytest.raises(ApplicationError, match="both at position 2"):
        validate(project, chain, {"ranks": {**ranks, "road_closure": "2"}})


def test_edges_must_join_the_items_events_without_loops_repeats_or_cycles(project):
    fork = "graph-demo-fork"
    edges = [["heatwave", "wildfires"], ["heatwave", "power_demand"]]
    assert validate(project, fork, {"edges": edges}) == {"edges": sorted(edges)}
    for bad, says in [
        ([], "at least one edge"),
        ([["heatwave", "flood"]], "flood, not an event"),
        ([["heatwave", "heatwave"]], "cannot cause itself"),
        ([edges[0], edges[0]], "there twice"),
        ([["heatwave", "wildfires"], ["wildfires", "heatwave"]], "cycle"),
        ([["heatwave"]], "not \\[cause, effect\\]"),
    ]:
        with pytest.raises(ApplicationError, match=says):
            validate(project, fork, {"edges": bad})


def test_annotators_see_the_sentences_and_shuffled_cards_never_the_truth(project, client):
    stage = project.stages.get()
    person = make_member(project)
    item = lease(person, stage).item_stage.item
    client.force_login(person)
    page = client.get(reverse("annotation:stage", args=[stage.pk])).content.decode()
    for sentence in item.payload["sentences"]:
        assert sentence.replace("'", "&#x27;") in page
    # The item's external id is opaque: nothing on the page names the folder or the structure.
    assert item.external_id.startswith("cn-") and item.external_id in page
    for telling in ("demo_forward", "demo_reverse", "fork", "collider", item.payload["key"]):
        assert telling not in page, telling
    body = page.split('class="item-body"', 1)[-1]
    for hidden in ('"gold"', "gold", "direction", "source_file", "demo_forward", "demo_reverse"):
        assert hidden not in body, hidden
    # The cards come in the item's fixed shuffled order, which is not the true order.
    nodes = [part.split('"', 1)[0] for part in body.split('data-node="')[1:]]
    if item.payload["structure"] == "chain":
        assert nodes == item.payload["events"] != item.payload["gold"]["order"]
    from tests.api.test_views import client_for

    seen = client_for(make_member(project)).post(f"/api/stages/{stage.pk}/next/").json()
    shown = seen["item"]["payload"]
    assert set(shown) == {"structure", "sentences", "events", "cards"}
    text = json.dumps(seen)
    assert "gold" not in text and "direction" not in text and "source_file" not in text
    assert shown["events"] not in (
        [n for _, nodes, _ in DEMO_CHAINS for n in [nodes]]  # never a true chain
    )


def test_the_api_refuses_an_incomplete_order_and_writes_nothing(project):
    from tests.api.test_views import client_for

    stage = project.stages.get()
    person = make_member(project)
    api = client_for(person)
    leased = api.post(f"/api/stages/{stage.pk}/next/").json()
    events = leased["item"]["payload"]["events"]
    key = "edges" if leased["item"]["payload"]["structure"] == "graph" else "order"
    bad = {"order": events[:-1]} if key == "order" else {"edges": [[events[0], events[0]]]}
    response = api.post(f"/api/assignments/{leased['id']}/submit/", bad, format="json")
    assert response.status_code == 400, response.content
    assert stage.item_stages.filter(annotations__isnull=False).count() == 0


def test_answers_are_scored_and_the_tab_shows_the_baseline_with_drill_down(project, client):
    stage = project.stages.get()
    people = [make_member(project) for _ in range(2)]
    assert answer_all(stage, people, demo_answer) == 2 * (len(DEMO_CHAINS) + len(DEMO_GRAPHS))
    report = services.baseline(project)
    chains = len(DEMO_CHAINS)
    fives = sum(1 for _, nodes, _ in DEMO_CHAINS if len(nodes) == 5)
    assert report["overall"]["answers"] == 2 * chains
    assert report["overall"]["exact"] == 2 * chains - fives  # the second swaps the last two
    five = next(r for r in report["by_length"] if r["group"] == 5)
    assert five["exact_rate"] == 0.5 and five["tau"] == pytest.approx((1 + 0.8) / 2)
    assert {r["group"] for r in report["by_direction"]} == {"forward", "reverse"}
    assert report["graph_overall"]["answers"] == 4 and report["graph_overall"]["exact"] == 3
    agreement = report["agreement"]
    assert agreement["kappa"]["n_items"] == chains
    assert agreement["same"]["value"] == pytest.approx((chains - fives) / chains)
    # Resolution: the share of exact answers.
    resolved = {i.payload["key"]: i.item_stages.get().resolution.value for i in project.items.all()}
    assert resolved["demo_forward-l3"] == 0.5 and resolved["demo_forward-l1"] == 1.0

    client.force_login(make_member(project, role=Role.RESEARCHER))
    page = client.get(reverse("narratives:baseline", args=[project.slug])).content.decode()
    assert 'id="narrative-headline"' in page and "98 %" in page and "<svg" in page
    assert "89.5 % – 99.6 %" in page  # the paper's 49 / 50 with its Wilson interval
    assert 'id="narrative-by-length"' in page and "Fleiss" in page
    assert "Import narratives" not in page  # admins only
    hard = item_of(project, "demo_forward-l3")
    assert reverse("narratives:item", args=[project.slug, hard.pk]) in page
    detail = client.get(reverse("narratives:item", args=[project.slug, hard.pk])).content.decode()
    assert "Power outage" in detail and 'class="wrong"' in detail
    assert detail.count("<tr>") >= 3  # header + two answers
    collider = item_of(project, "graph-demo-collider")
    detail = client.get(reverse("narratives:item", args=[project.slug, collider.pk])).content
    assert b'class="dag"' in detail and "Icy roads → Crash".encode() in detail
    client.force_login(people[0])
    assert client.get(reverse("narratives:item", args=[project.slug, hard.pk])).status_code in (
        403,
        404,
    )
    assert client.get(reverse("narratives:baseline", args=[project.slug])).status_code in (
        403,
        404,
    )


def test_admins_upload_graphs_and_bad_files_change_nothing(project, client):
    admin = make_member(project, role=Role.ADMIN)
    client.force_login(admin)
    url = reverse("narratives:import", args=[project.slug])
    before = Item.objects.count()
    good = json.dumps(
        {
            "id": "g1",
            "nodes": ["x", "y", "z"],
            "edges": [["x", "z"], ["y", "z"]],
            "sentences": ["x and y both cause z"],
        }  # fmt: skip
    )
    bad = good + "\n" + '{"nodes": ["a", "b"], "sentences": []}\n'
    response = client.post(url, {"file": SimpleUploadedFile("g.jsonl", bad.encode())})
    assert response.status_code == 400
    assert "g.jsonl:2: 0 sentences for 2 nodes" in response.content.decode()
    assert Item.objects.count() == before
    # Files that used to stop the page with a 500 or be stored changed: nested 100,000 deep,
    # not UTF-8 (bytes were replaced with U+FFFD and imported).
    for content, where in [
        (good.encode() + b"\n" + b"[" * 100_000, "g.jsonl:2: not JSON: line 2, column 65: nested"),
        (
            good.encode().replace(b'"x and', b'"caf\xe9 x and'),
            "g.jsonl: line 1, column 93: not UTF-8 (byte 0xE9",
        ),
    ]:
        response = client.post(url, {"file": SimpleUploadedFile("g.jsonl", content)})
        assert response.status_code == 400 and where in response.content.decode()
    assert Item.objects.count() == before
    response = client.post(url, {"file": SimpleUploadedFile("g.jsonl", good.encode())})
    assert response.status_code == 302
    graph = item_of(project, "graph-g1").payload
    assert graph["structure"] == "graph"
    assert graph["gold"]["edges"] == [["x", "z"], ["y", "z"]]


def test_a_release_holds_the_benchmarks_layout_with_answers_and_scores(project):
    stage = project.stages.get()
    answer_all(stage, [make_member(project) for _ in range(2)], demo_answer)
    admin = make_member(project, role=Role.ADMIN)
    release = release_build(release_id=release_publish(project=project, user=admin).pk)
    assert release.status == "published", release.message
    with zipfile.ZipFile(release.archive.path) as archive:
        names = {name.rsplit("/", 1)[-1]: name for name in archive.namelist()}
        for standard in ("items.jsonl", "annotations.jsonl", "README.md", "manifest.json"):
            assert standard in names
        assert "causalnarratives_demo_forward_size=5.jsonl" in names
        assert "causalnarratives_graphs_size=3.jsonl" in names
        lines = [
            json.loads(line)
            for line in archive.read(names["causalnarratives_demo_forward_size=5.jsonl"])
            .decode()
            .splitlines()
        ]
        scores = archive.read(names["causalnarratives_scores.csv"]).decode()
        manifest = json.loads(archive.read(names["manifest.json"]))
        datasheet = archive.read(names["README.md"]).decode()
    assert "causalnarratives_demo_forward_size=5.jsonl" in datasheet
    [record] = lines
    assert record["nodes"] == DEMO_CHAINS[2][1]  # causal order, as the benchmark writes it
    assert record["sentences"] == DEMO_CHAINS[2][2]
    assert record["direction"] == "forward"
    raters = [answer["rater"] for answer in record["human_answers"]]
    assert all(r.startswith("R") for r in raters) and len(set(raters)) == 2
    assert sorted(a["exact"] for a in record["human_answers"]) == [False, True]
    assert record["human_exact_rate"] == 0.5
    import csv

    rows = list(csv.DictReader(io.StringIO(scores)))
    five = next(r for r in rows if r["length"] == "5" and r["direction"] == "forward")
    assert five["answers"] == "2" and float(five["exact_rate"]) == 0.5
    listed = json.dumps(manifest)
    assert "causalnarratives_scores.csv" in listed


def test_the_workflow_template_and_the_demo(client):
    workflow = get_workflow(services.WORKFLOW)
    created = workflow.create(slug="fresh", name="Fresh", description="")
    assert created.stages.get().kind == "causal_order"
    # A human baseline: the template's stage is blind to earlier work on an item.
    assert created.stages.get().eligibility == [{"rule": "blind"}]
    from django.contrib.auth import get_user_model

    from annotation.plugins import get_plugin

    users = {
        name: get_user_model().objects.create_user(name, password="x")
        for name in ("admin", "researcher", "annotator1", "annotator2", "annotator3")
    }
    get_plugin("narratives").demo(users=users)
    get_plugin("narratives").demo(users=users)  # again: nothing doubles
    demo = Project.objects.get(slug="narratives-demo")
    assert demo.items.count() == len(DEMO_CHAINS) + len(DEMO_GRAPHS)
    assert services.baseline(demo)["overall"]["answers"] == 2 * len(DEMO_CHAINS)
    assert lease(users["annotator3"], demo.stages.get()) is not None
    client.force_login(users["admin"])
    page = client.get(reverse("studio:new")).content.decode()
    assert "CausalNarratives" in page


def test_the_engines_pages_render_for_a_narratives_project(project, client):
    stage = project.stages.get()
    answer_all(stage, [make_member(project), make_member(project)], demo_answer)
    client.force_login(make_member(project, role=Role.RESEARCHER))
    for url in (
        reverse("annotation:project", args=[project.slug]),
        reverse("agreement:dashboard", args=[project.slug]),
        reverse("agreement:stage", args=[project.slug, stage.slug]),
    ):
        assert client.get(url).status_code == 200, url
    overview = client.get(reverse("annotation:project", args=[project.slug])).content.decode()
    assert reverse("narratives:baseline", args=[project.slug]) in overview


def test_the_forms_without_javascript_post_positions_and_checkboxes(project, client):
    """The plain form (no script): a position select per card, a checkbox per possible edge."""
    stage = project.stages.get()
    person = make_member(project)
    client.force_login(person)
    done = {}
    for _ in range(project.items.count()):
        assignment = lease(person, stage)
        if assignment is None:
            break
        item = assignment.item_stage.item
        page = client.get(reverse("annotation:stage", args=[stage.pk])).content.decode()
        gold = item.payload["gold"]
        url = reverse("annotation:submit", args=[assignment.pk])
        if "order" in gold:
            assert 'name="rank:' in page
            data = {f"rank:{node}": str(i + 1) for i, node in enumerate(gold["order"])}
        else:
            assert 'type="checkbox" name="edge"' in page
            data = {"edges_sent": "1", "edge": [json.dumps(edge) for edge in gold["edges"]]}
        assert client.post(url, data).status_code in (200, 302)
        done[item.external_id] = gold
    answers = {
        a.item_stage.item.external_id: a.payload
        for a in person.annotations.select_related("item_stage__item")
    }
    assert len(answers) == len(done) == project.items.count()
    for external_id, gold in done.items():
        key = "order" if "order" in gold else "edges"
        assert sorted(answers[external_id][key]) == sorted(gold[key])
        if key == "order":
            assert answers[external_id]["order"] == gold["order"]


def test_an_edge_field_nested_deep_or_holding_nul_is_refused_not_a_500(project, client):
    """The item screen's edge fields are read within the nesting limit, and what the database
    cannot store is refused by the engine's one rule (annotation/inputs.py)."""
    stage = project.stages.get()
    person = make_member(project)
    client.force_login(person)
    for _ in range(project.items.count()):
        assignment = lease(person, stage)
        if assignment.item_stage.item.payload["structure"] == "graph":
            break
        engine.assignment_skip(assignment_id=assignment.pk, annotator=person, reason="not a graph")
    url = reverse("annotation:submit", args=[assignment.pk])
    for edge in ("[" * 100_000, '["x\\u0000", "y"]'):
        response = client.post(url, {"edges_sent": "1", "edge": [edge]})
        assert response.status_code == 400, response.status_code
    assert not person.annotations.exists()
