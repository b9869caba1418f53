"""CausalT5k's real release, read from the shared folder beside the checkout (never copied into
the repository). Skipped when that folder is absent."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.errors import ApplicationError
from annotation.models import Item, Role
from review.causalt5k import neardup, vocab
from review.causalt5k.normalise import normalise_release
from review.causalt5k.services import (
    causalt5k_import,
    causalt5k_near_duplicates,
    causalt5k_project_create,
    review_candidates,
)
from tests.conftest import shared_dir
from tests.factories import make_member

ROOT = shared_dir() / "datasets" / "CausalT5k"
pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not ROOT.is_dir(), reason=f"shared CausalT5k data not found at {ROOT}"),
]


@pytest.fixture(scope="module")
def release():
    return normalise_release(ROOT)


def test_every_file_is_read_and_the_two_invalid_ones_are_explained(release):
    _, report = release
    ok = [f for f in report.files if f.status == "ok"]
    invalid = {f.path: f.error for f in report.files if f.status != "ok"}
    assert len(ok) == 135
    assert sorted(invalid) == [
        "raw_submissions/groupD-submission-08.json",
        "raw_submissions/groupD-submission-11.json",
    ]
    assert invalid["raw_submissions/groupD-submission-08.json"].startswith(
        "invalid backslash escape at line 455, column 44"
    )
    assert (
        "41 JSON values one after another" in invalid["raw_submissions/groupD-submission-11.json"]
    )
    # Valid JSON Lines (one object per line), read as such: every one of its 230 records.
    (jsonl,) = [f for f in ok if f.path == "raw_submissions/groupJ-submission-24.jsonl"]
    assert jsonl.records == 230
    final = [f for f in ok if f.kind == "final"]
    assert (len(final), sum(f.records for f in final)) == (30, 7260)


def test_every_record_is_accounted_for(release):
    cases, report = release
    assert report.records_read == 31508
    assert sum(report.outcomes.values()) == report.records_read
    assert dict(report.outcomes) == {
        "created a case": 8671,
        "merged into a case": 21928,
        "attached as a review": 252,
        "not imported": 657,
    }
    assert len(cases) == 8671 == len({c["case_id"] for c in cases})
    assert len(report.not_imported) == 657 and len(report.merges) == 7342
    final_ids = {
        i
        for c in cases
        if any(s.startswith("final_dataset/D") for s in c["sources"])
        for i in c["original_ids"]
    }
    assert len(final_ids) >= 6159  # every id of the 7,260 final rows is on a case


def test_canonical_values_only(release):
    cases, _ = release
    for case in cases:
        assert case["tier"] in (1, 2, 3, None)
        assert case["label"] in {None, "YES", "NO", "AMBIGUOUS"} | (
            {"VALID", "INVALID", "CONDITIONAL"} if case["tier"] == 3 else set()
        )
        assert case["domain"] is None or case["domain"] in {f"D{i}" for i in range(1, 11)}
        assert case["trap"] is None or case["trap"] in vocab.TRAPS


def test_review_candidates_and_their_near_duplicates():
    docs = review_candidates(ROOT)
    assert len(docs) == 7609
    counts = neardup.summary(neardup.near_duplicate_clusters(docs, threshold=0.8), len(docs))
    assert counts["documents"] == 7609 and counts["clusters"] > 0
    assert counts["after_dedup"] == 7609 - counts["in_clusters"] + counts["clusters"]


@pytest.mark.django_db
def test_import_writes_one_item_per_case_the_report_page_and_a_safe_csv(client):
    project = causalt5k_project_create(slug="ct5k", name="CausalT5k")
    record = causalt5k_import(project=project, root=ROOT)
    assert record.cases == Item.objects.filter(project=project).count() == 8671
    assert record.records == 31508 and record.seconds > 0
    item = Item.objects.get(project=project, external_id="T2-W7-MED-001")
    assert item.payload["domain"] == "D4" and item.payload["sources"]

    researcher = make_member(project, role=Role.RESEARCHER)
    client.force_login(researcher)
    page = client.get(reverse("causalt5k:report", args=[project.slug])).content.decode()
    assert "groupD-submission-08.json" in page and "Business" in page
    text = b"".join(
        client.get(reverse("causalt5k:report_csv", args=[project.slug])).streaming_content
    ).decode("utf-8-sig")
    lines = text.splitlines()
    assert lines[0] == "section,field,value,mapped_to,count,file,record,original_id,note"
    assert not any(
        cell.startswith(("=", "+", "@")) for line in lines[1:] for cell in line.split(",")
    )

    with pytest.raises(ApplicationError):  # a second import is refused, nothing changes
        causalt5k_import(project=project, root=ROOT)
    assert Item.objects.filter(project=project).count() == 8671

    clusters, counts = causalt5k_near_duplicates(project=project, threshold=0.9)
    assert counts["documents"] == 8671 and len(clusters) == counts["clusters"]

    # Validation opens on the real cases: every cluster is one queue item, every other case is
    # in adversarial review; the release's authors are pseudonyms, so none is linked.
    from review.causalt5k.figures import cascade
    from review.causalt5k.pipeline import causalt5k_review_open

    opened = causalt5k_review_open(project=project, threshold=0.9)
    assert opened["clusters"] == counts["clusters"]
    assert opened["in_clusters"] == counts["in_clusters"]
    assert opened["opened_in_review"] == 8671 - counts["in_clusters"]
    assert opened["authors_linked"] == 0
    figures = cascade(project)
    assert figures["raw"] == 8671 and figures["clusters_waiting"] == counts["clusters"]
    page = client.get(reverse("causalt5k:report", args=[project.slug])).content.decode()
    assert "8,671" in page and "7,609" in page


def test_who_wrote_each_case_is_read_from_the_provenance_fields(release):
    """The human floor's input (review.causalt5k.vocab.provenance_value): most of the release
    does not say who wrote a case; where it does, mostly an LLM."""
    from collections import Counter

    cases, report = release
    assert Counter(c.get("provenance") for c in cases) == {None: 7093, "llm": 1449, "human": 129}
    final = [c for c in cases if any(s.startswith("final_dataset/D") for s in c["sources"])]
    assert Counter(c.get("provenance") for c in final) == {None: 5567, "llm": 1152, "human": 12}
    spellings = {k[1]: n for k, n in report.mappings.items() if k[0] == "provenance"}
    assert spellings["generator=llm_draft_human_verified"] == 1424
    assert spellings["generator=human"] == 125 and spellings["generator=human_revised"] == 4
    # 716 in the JSON files + the 230 records of groupJ-submission-24.jsonl (each names its model)
    assert spellings["provenance.generator_model"] == 946


@pytest.mark.django_db
def test_the_release_scores_become_the_historic_phase():
    """The two rounds of the release's reviewers (review.causalt5k.historic), on the real
    cases: 6,871 cases with a score, 6,783 with both rounds; 4,692 reach a mean of 9.0."""
    from review.causalt5k.historic import historic_scores_import, historic_summary

    project = causalt5k_project_create(slug="ct5k-historic", name="CausalT5k")
    causalt5k_import(project=project, root=ROOT)
    counts = historic_scores_import(project=project)
    assert counts == {"cases": 6871, "scores": 13654, "extra": 1359}
    summary = historic_summary(project)
    assert (summary["two_scores"], summary["kept"], summary["kept_two"]) == (6783, 4692, 4692)
    agreement = summary["agreement"]
    assert agreement["n_items"] == 6783
    assert agreement["icc"].ci_low <= agreement["icc"].value <= agreement["icc"].ci_high
    assert Item.objects.filter(project=project).exclude(status="active").count() == 0
