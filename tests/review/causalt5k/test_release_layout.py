"""CausalT5k's release layout (review.causalt5k.release_layout): ``D{n}/D{n}_L{k}.json`` per
domain × level with the kept cases in the canonical schema and their confirmed pressure
variants paired, the engine's files beside them, and the datasheet (cascade, agreement,
contributor shares rounded to 5 % and never identities, the licence)."""

from __future__ import annotations

import json
import zipfile

import pytest

from annotation.models import Item
from review.causalt5k.datasheet import round5
from review.causalt5k.pressure import neutral_prompt, pressure_open
from review.meter.demo import drive
from tests.factories import make_member
from tests.review.causalt5k.test_pipeline import scores, to_scoring

pytestmark = pytest.mark.django_db

KEPT = ("T2-S1-MED-001", "T1-W7-MED-001", "T3-F1-HIS-001")


def test_round5():
    assert [round5(x) for x in (0, 0.024, 0.026, 0.123, 0.5, 1)] == [0, 0, 5, 10, 50, 100]
    assert round5(None) is None


def publish(project, settings, tmp_path, capture):
    from releases.models import Release
    from releases.services import release_publish

    settings.MEDIA_ROOT = str(tmp_path)
    with capture(execute=True):
        release = release_publish(project=project, user=None)
    release = Release.objects.get(pk=release.pk)
    assert release.status == "published", release.error
    archive = zipfile.ZipFile(release.archive.path)
    prefix = archive.namelist()[0].split("/", 1)[0]
    return release, archive, prefix


def test_the_release_has_one_file_per_domain_and_level_with_pressure_variants_paired(
    settings, tmp_path, django_capture_on_commit_callbacks
):
    project, stages = to_scoring([*KEPT, "T2-W9-ECO-001"])
    Item.objects.filter(project=project, external_id="T1-W7-MED-001").update(
        payload={**Item.objects.get(project=project, external_id="T1-W7-MED-001").payload,
                 "author": "contributor-042",
                 "reviews": [{"round": 1, "reviewer": "contributor-777", "score": 9.5}]}
    )  # fmt: skip
    people = [make_member(project, username=f"scorer{n}") for n in range(2)]
    drive(
        stages["score"],
        people,
        lambda i, item, phase: (
            scores(5, 5, 5, 5) if item.external_id == "T2-W9-ECO-001" else scores(10, 10, 9, 9)
        ),
    )
    assert pressure_open(project=project) == 1  # T2-S1-MED-001: the kept tier-2 case
    writer, checker = make_member(project), make_member(project)

    def write(index, item, phase):
        neutral = neutral_prompt(item.payload)
        return {
            "social": "My boss insists. " + neutral,
            "epistemic": "Studies prove it. " + neutral,
        }

    drive(stages["pressure"], [writer], write)
    drive(
        stages["pressure_check"],
        [checker],
        lambda i, item, ph: {"social": "only_pressure", "epistemic": "only_pressure"},
    )
    release, archive, prefix = publish(
        project, settings, tmp_path, django_capture_on_commit_callbacks
    )
    names = {name.split("/", 1)[1] for name in archive.namelist()}
    assert {"D4/D4_L2.json", "D4/D4_L1.json", "D2/D2_L3.json"} <= names
    assert not any(n.startswith("D6/") for n in names)  # the dropped case's domain (ECO)
    assert {"items.jsonl", "annotations.jsonl", "README.md", "manifest.json", "SHA256SUMS",
            "causalt5k_cases.jsonl", "causalt5k_pressure.jsonl", "causalt5k_cascade.csv",
            "causalt5k_datasheet.md"} <= names  # fmt: skip
    assert "D4/D4_L2.json" in {e["name"] for e in release.manifest["files"]}

    def read(name):
        return archive.read(f"{prefix}/{name}").decode()

    [case] = json.loads(read("D4/D4_L2.json"))
    assert case["case_id"] == "T2-S1-MED-001" and case["composite"] == 9.5
    variants = case["pressure_variants"]
    assert variants["neutral"] == neutral_prompt(case)
    assert variants["social"] == "My boss insists. " + variants["neutral"]
    [t1] = json.loads(read("D4/D4_L1.json"))
    assert "pressure_variants" not in t1 and "author" not in t1
    assert t1["reviews"] == [{"round": 1, "score": 9.5}]  # scores kept, names not
    pairs = [json.loads(line) for line in read("causalt5k_pressure.jsonl").splitlines()]
    assert pairs == [{"case_id": "T2-S1-MED-001", **variants}]
    layout_files = [n for n in names if n.startswith(("D", "causalt5k_"))]
    for name in layout_files:
        text = read(name)
        for identity in ("contributor-042", "contributor-777", "scorer0", "scorer1",
                         writer.username, checker.username):  # fmt: skip
            assert identity not in text, (name, identity)
    sheet = read("causalt5k_datasheet.md")
    assert "Licence: **CC-BY-4.0**" in sheet
    assert "| Kept by the quality gate | 3 | 75.0 | 5147 | 67.6 |" in sheet
    assert "Fleiss' κ" in sheet
    assert "1 tier-2 case(s) with social- and epistemic-pressure variants" in sheet
    # 3 kept cases, one with an author: 33 % → 35 %; its author wrote all of them that have one.
    assert "Authors: 1; the most active wrote 100 %" in sheet
    assert "Reviewers in Rungwise: 3" in sheet  # two scorers + the reviewer of to_scoring
    # Every kept case sits in exactly one domain × level file.
    shards = [n for n in names if n.startswith("D") and n.endswith(".json")]
    assert sum(len(json.loads(read(n))) for n in shards) == 3


def test_a_case_kept_by_hand_is_released_without_a_composite(
    settings, tmp_path, django_capture_on_commit_callbacks
):
    """A stranded case resolved by hand on the item page (decision ``keep``) is released in its
    D{n} file with ``composite`` null, never the word ``keep`` in a number's place."""
    from annotation.api import items_act
    from annotation.models import Role

    project, stages = to_scoring(["T2-S1-MED-001"])
    scorer = make_member(project, username="scorer")
    admin = make_member(project, Role.ADMIN, username="boss")
    drive(stages["score"], [scorer], lambda i, item, phase: scores(10, 10, 9, 9))
    item = Item.objects.get(project=project, external_id="T2-S1-MED-001")
    report = items_act(
        project, [item.pk], "resolve", by=admin, reason="One careful score.", value="keep"
    )
    assert not report.refused, report.refused
    _, archive, prefix = publish(project, settings, tmp_path, django_capture_on_commit_callbacks)
    (case,) = json.loads(archive.read(f"{prefix}/D4/D4_L2.json"))
    assert case["case_id"] == "T2-S1-MED-001" and case["composite"] is None
