"""The human floor (review.causalt5k.floor): who wrote each case from the release's provenance
fields (the rule in review.causalt5k.vocab.provenance_value) or the Rungwise author, the trap ×
domain grid with the cells below the floor flagged, the page and its CSV."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.errors import ApplicationError
from annotation.models import Item
from review.causalt5k import floor
from review.causalt5k.parsing import flatten
from review.causalt5k.pipeline import causalt5k_project_create
from review.causalt5k.vocab import provenance_value
from tests.factories import make_member, make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"source": {"origin": "generated", "generator": "llm_draft_human_verified"}}, "llm"),
        ({"source": {"origin": "human_annotator", "generator": "human"}}, "human"),
        ({"generator": "llm_generated"}, "llm"),
        ({"origin": "human_annotator"}, "human"),
        ({"provenance": {"generator_model": "gpt-5.2-2025-12-11", "seed_id": None}}, "llm"),
        ({"LLM": "ChatGPT (web, 1/12/26)"}, "llm"),
        ({"initial_author": "contributor-007"}, None),  # an author code says nothing
        ({"generator": "a committee"}, None),  # unknown spelling: reported, not guessed
    ],
)
def test_who_wrote_a_case_follows_the_release_fields(record, expected):
    assert provenance_value(flatten(record))[0] == expected


def cases(*specs):
    """(trap, domain, provenance or None, author?) per case."""
    project = causalt5k_project_create(slug="floor", name="Floor", seed=1)
    rows = [
        {
            "external_id": f"C{n}",
            "payload": {
                "case_id": f"C{n}",
                "trap": trap,
                "domain": domain,
                "tier": 1,
                **({"provenance": who} if who else {}),
            },
        }
        for n, (trap, domain, who, _) in enumerate(specs)
    ]
    engine.items_create(project=project, rows=rows, open_first_stage=False)
    author = make_member(project)
    for n, spec in enumerate(specs):
        if spec[3]:
            Item.objects.filter(project=project, external_id=f"C{n}").update(author=author)
    return project


def test_the_grid_flags_cells_below_the_floor_and_the_floor_is_configurable():
    project = cases(
        ("W7", "D4", "human", False),
        ("W7", "D4", "llm", False),
        ("W7", "D4", "llm", False),
        ("W7", "D4", "llm", False),
        ("W7", "D4", "llm", False),
        ("W7", "D4", "llm", False),  # 1 of 6 human: 16.7 %
        ("S1", "D4", None, True),  # written in Rungwise by a member: human
        ("S1", "D1", None, False),  # unknown
        ("S1", "D1", "llm", False),
        ("S1", "D1", "human", False),  # 1 of 3, or 1 of 2 known
    )
    grid = floor.human_floor(project)
    cells = {(c["trap"], c["domain"]): c for r in grid["grid"] for c in r["cells"] if c}
    assert cells[("W7", "D4")]["human"] == 1 and cells[("W7", "D4")]["cases"] == 6
    assert cells[("W7", "D4")]["below_floor"] is True
    assert cells[("S1", "D4")]["human"] == 1 and not cells[("S1", "D4")]["below_floor"]
    assert cells[("S1", "D1")]["unknown"] == 1 and cells[("S1", "D1")]["human_share"] == 0.3333
    assert grid["totals"] == {"cases": 10, "human": 3, "llm": 6, "unknown": 1}
    assert grid["flagged"] == 1 and grid["filled"] == 3
    assert [d["code"] for d in grid["domains"]] == ["D1", "D4"]
    # A higher floor flags more; the known basis leaves the unknown out (1 of 2 = 50 %).
    higher = floor.human_floor(project, threshold="0.4")
    assert higher["flagged"] == 2
    known = floor.human_floor(project, threshold=0.4, basis="known")
    assert known["flagged"] == 1
    project.settings = {"human_floor": {"threshold": 0.1}}
    project.save(update_fields=["settings"])
    assert floor.human_floor(project)["flagged"] == 0
    # Discarded cases are out.
    Item.objects.filter(project=project, external_id__in=["C1", "C2", "C3", "C4", "C5"]).update(
        status="discarded"
    )
    assert floor.human_floor(project, threshold=0.2)["flagged"] == 0
    for bad, field in (("2", "threshold"), ("x", "threshold")):
        with pytest.raises(ApplicationError) as error:
            floor.human_floor(project, threshold=bad)
        assert field in error.value.extra
    with pytest.raises(ApplicationError, match="'all' or 'known'"):
        floor.human_floor(project, basis="some")


def test_the_page_and_its_csv(client):
    project = cases(
        ("W7", "D4", "llm", False),
        ("W7", "D4", "llm", False),
        ("=HYPERLINK(1)", "D4", "human", False),  # a trap spelled as a formula stays text
    )
    researcher = make_user("researcher-floor")
    from annotation.models import Membership, Role

    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    client.force_login(researcher)
    page = client.get(reverse("causalt5k:human_floor", args=[project.slug])).content.decode()
    assert 'data-cell="W7-D4"' in page and "below the floor" in page
    assert "1 of 2 cells below the floor" in page  # the formula's cell is 100 % human
    response = client.get(
        reverse("causalt5k:human_floor_csv", args=[project.slug]) + "?threshold=0.5"
    )
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert rows[0] == floor.CSV_COLUMNS
    by_cell = {(r[0], r[2]): r for r in rows[1:]}
    assert by_cell[("W7", "D4")][4:8] == ["2", "0", "2", "0"]
    assert by_cell[("W7", "D4")][-1] == "True"
    formula = [r for r in rows[1:] if "HYPERLINK" in r[0]]
    assert len(formula) == 1 and not formula[0][0].startswith("=")
    annotator = make_member(project)
    client.force_login(annotator)
    assert client.get(reverse("causalt5k:human_floor", args=[project.slug])).status_code in (
        403,
        404,
    )
