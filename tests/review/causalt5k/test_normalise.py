"""The CausalT5k normaliser on small hand-made releases (no database, no shared data): every
failure class is reported with file and record, nothing disappears."""

from __future__ import annotations

import json

import pytest

from review.causalt5k import neardup, vocab
from review.causalt5k.normalise import build_cases, normalise_release
from review.causalt5k.parsing import parse_value
from review.causalt5k.release_files import read_release
from review.causalt5k.report import iter_csv_rows

SCENARIO = (
    "Patients who took vitamin D had fewer fractures, but those patients also exercised more "
    "and were younger on average than the patients who did not take it."
)


def case(**extra):
    row = {
        "id": "T3-BucketLarge-A-4.1",
        "case_id": "4.1",
        "pearl_level": "L2",
        "domain": "Medicine",
        "scenario": SCENARIO,
        "claim": "Vitamin D prevents fractures.",
        "label": "NO",
        "is_ambiguous": "False",
        "variables": "{'X': {'name': 'Vitamin D', 'role': 'exposure'}, 'Y': 'Fractures', 'Z': ['Age']}",
        "trap": "{'type': 'T7', 'type_name': 'Confounding', 'subtype': 'Age'}",
        "difficulty": "medium",
        "initial_author": "contributor-001",
        "validator": "contributor-002",
        "final_score": "9.5",
        "validator_2": "contributor-003",
        "final_score_2": "8.75",
    }
    row.update(extra)
    return row


def write(root, rel, data, raw=False):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if raw else json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(
    "spelling, code",
    [
        ("Medicine", "D4"),
        ("D10 (Social Science)", "D10"),
        ("D8 - AI Safety & Alignment", "D8"),
        ("Law & Ethics (D7)", "D7"),
        ("Markets", "D3"),
        ("Business", None),
        (None, None),
    ],
)
def test_domain_spellings(spelling, code):
    assert vocab.domain_code(spelling) == code


@pytest.mark.parametrize(
    "spellings, expected",
    [
        (("W7", "Confounding"), ("W7", None)),
        (("T7", "Base-rate Neglect"), ("W6", None)),  # a recognised name beats an old T-code
        (("T5", None), ("W4", None)),
        (("Regression Discontinuity",), ("S8", None)),
        (("Regression to the Mean",), ("W4", None)),
        (("T3", "Collider Bias"), (None, "T3")),
        (("F4", "Structural"), (None, "F4")),
        (("GOODHART",), (None, "T16")),
        (("Wishful thinking",), (None, None)),
    ],
)
def test_trap_spellings(spellings, expected):
    assert vocab.trap_code(*spellings) == expected


def test_labels_follow_the_tier():
    assert vocab.label_value("NO", 2) == "NO"
    assert vocab.label_value("NO", 3) == "INVALID"
    assert vocab.label_value("VALID", 3) == "VALID"
    assert vocab.label_value("AMBIGUOUS", 3) == "CONDITIONAL"
    assert vocab.label_value("maybe", 1) is None


def test_reprs_are_parsed_as_literals_never_evaluated():
    assert parse_value("{'X': 'a', 'Z': []}") == {"X": "a", "Z": []}
    assert parse_value("True") is True and parse_value("N/A") is None
    hostile = "[__import__('os').system('echo pwned')]"
    assert parse_value(hostile) == hostile


def test_a_record_becomes_one_canonical_case_with_reviews(tmp_path):
    write(tmp_path, "final_dataset/D4/D4_L2.json", [case()])
    cases, report = normalise_release(tmp_path)
    (only,) = cases
    assert only["case_id"] == "T2-W7-MED-001"
    assert only["original_id"] == "T3-BucketLarge-A-4.1"
    assert (only["tier"], only["domain"], only["label"], only["difficulty"]) == (
        2,
        "D4",
        "NO",
        "Medium",
    )
    assert only["variables"] == {
        "X": {"name": "Vitamin D", "role": "exposure"},
        "Y": {"name": "Fractures", "role": None},
        "Z": [{"name": "Age", "role": None}],
    }
    assert only["is_ambiguous"] is False
    assert [(r["round"], r["reviewer"], r["score"]) for r in only["reviews"]] == [
        (1, "contributor-002", 9.5),
        (2, "contributor-003", 8.75),
    ]
    assert ("domain", "Medicine", "D4") in report.mappings
    assert report.unmapped == []


def test_invalid_json_files_are_reported_with_where_and_why_and_nothing_is_taken(tmp_path):
    write(
        tmp_path,
        "raw_submissions/groupD-submission-08.json",
        '[{"scenario": "costs \\$10"}]',
        raw=True,
    )
    write(
        tmp_path,
        "raw_submissions/groupD-submission-11.json",
        '{"scenario": "a"}\n\n{"scenario": "b"}',
        raw=True,
    )
    write(
        tmp_path,
        "raw_submissions/groupJ-submission-25.jsonl",
        '{"id": 1}\n{"id": 2, "scenario": "unfinished\n{"id": 3}\n',
        raw=True,
    )
    files, records = read_release(tmp_path)
    assert records == []
    errors = {f.path.split("/")[-1]: f.error for f in files}
    assert all(f.status == "invalid" for f in files)
    assert "invalid backslash escape at line 1" in errors["groupD-submission-08.json"]
    assert "2 JSON values one after another" in errors["groupD-submission-11.json"]
    assert errors["groupJ-submission-25.jsonl"].startswith("line 2, column ")


def test_a_json_lines_file_is_read_one_record_per_line(tmp_path):
    lines = [
        case(id="T3-BucketLarge-J-0001", scenario=SCENARIO),
        case(id="T3-BucketLarge-J-0002", scenario=SCENARIO + " Another.", claim="Other."),
        {"case_id": "J-3", "responses": {"response1": [case(id="T3-BucketLarge-J-0003")]}},
    ]
    text = "\ufeff" + "\r\n".join(json.dumps(line) for line in lines) + "\r\n\r\n"
    write(tmp_path, "raw_submissions/groupJ-submission-24.jsonl", text, raw=True)
    files, records = read_release(tmp_path)
    (only,) = files
    assert (only.status, only.records, only.error) == ("ok", 3, "")
    assert [(record.index, record.data["id"]) for record in records] == [
        ("line 1", "T3-BucketLarge-J-0001"),
        ("line 2", "T3-BucketLarge-J-0002"),
        ("line 3.responses.response1[0]", "T3-BucketLarge-J-0003"),
    ]
    cases, report = normalise_release(tmp_path)
    assert report.records_read == 3 and sum(report.outcomes.values()) == 3
    assert {"raw_submissions/groupJ-submission-24.jsonl#line 2"} <= {
        source for case_ in cases for source in case_["sources"]
    }


def test_the_shared_json_lines_submission_gives_its_230_records(shared_datasets, tmp_path):
    source = shared_datasets / "CausalT5k" / "raw_submissions" / "groupJ-submission-24.jsonl"
    if not source.is_file():
        pytest.skip(f"{source} not present")
    (tmp_path / "raw_submissions").mkdir()
    (tmp_path / "raw_submissions" / source.name).symlink_to(source)
    files, records = read_release(tmp_path)
    (only,) = files
    assert (only.status, only.records, only.error) == ("ok", 230, "")
    assert len(records) == 230 and records[-1].index == "line 230"
    assert all(isinstance(record.data, dict) and record.data.get("id") for record in records)


def test_unknown_domain_and_trap_spellings_are_reported_with_file_and_record(tmp_path):
    write(
        tmp_path,
        "review_round1/validator-batch-01.json",
        [case(), case(scenario=SCENARIO + " More.", domain="Business", trap="{'type': 'Wishful'}")],
    )
    cases, report = normalise_release(tmp_path)
    assert len(cases) == 2
    unmapped = {(u["field"], u["value"], u["file"], u["record"]) for u in report.unmapped}
    assert ("domain", "Business", "review_round1/validator-batch-01.json", "1") in unmapped
    assert ("trap", "Wishful", "review_round1/validator-batch-01.json", "1") in unmapped
    assert cases[1]["case_id"] == "T2-X-UNK-001"


def test_the_folder_decides_domain_and_level_and_a_disagreement_is_reported(tmp_path):
    write(tmp_path, "final_dataset/D5/D5_L1.json", [case(domain="Medicine", pearl_level="L2")])
    (only,), report = normalise_release(tmp_path)
    assert (only["domain"], only["pearl_level"]) == ("D5", "L1")
    notes = {(u["field"], u["note"]) for u in report.unmapped}
    assert ("domain", "folder says D5; folder kept") in notes
    assert ("pearl_level", "file says L1") in notes


def test_the_same_case_in_several_files_is_merged_and_disagreements_are_listed(tmp_path):
    write(tmp_path, "final_dataset/D4/D4_L2.json", [case()])
    write(
        tmp_path,
        "review_round2/validator-batch-01.json",
        [case(label="AMBIGUOUS", key_insight="Age.")],
    )
    write(tmp_path, "review_round1/validator-batch-01.json", {"metadata": {}, "cases": [case()]})
    cases, report = normalise_release(tmp_path)
    (only,) = cases
    assert only["label"] == "NO"  # the final shard wins
    assert only["key_insight"] == "Age."  # a gap is filled from another record
    assert len(only["sources"]) == 3 and len(only["reviews"]) == 2  # the same reviews once
    (merge,) = report.merges
    assert merge["conflicts"] == {"label": ["NO", "AMBIGUOUS"]}
    assert report.outcomes == {"created a case": 1, "merged into a case": 2}


def test_one_id_with_different_texts_stays_two_cases(tmp_path):
    write(
        tmp_path, "final_dataset/D4/D4_L2.json", [case(), case(scenario="Another story entirely.")]
    )
    cases, report = normalise_release(tmp_path)
    assert [c["case_id"] for c in cases] == ["T2-W7-MED-001", "T2-W7-MED-002"]
    assert report.id_collisions == 1


def test_every_record_ends_somewhere_with_a_reason(tmp_path):
    write(
        tmp_path,
        "raw_submissions/groupA-submission-09.json",
        [
            {"case_id": "4.1", "responses": {"response1": [case(), case(scenario=None)]}},
            ["not", "a", "case"],
        ],
    )
    write(
        tmp_path,
        "review_round1/validator-batch-26.json",
        {"T3-BucketI-0001": {"case_id": "9.9", "total_score": 4.5}},
    )
    files, records = read_release(tmp_path)
    cases, report = build_cases(files, records)
    assert report.records_read == 4
    assert sum(report.outcomes.values()) == report.records_read
    reasons = sorted(n["reason"] for n in report.not_imported)
    assert reasons[0] == "no scenario" and reasons[1] == "not an object: list"
    assert reasons[2].startswith("rubric only, no tier-3 case")
    rows = list(iter_csv_rows(report.as_dict()))
    assert sum(1 for r in rows if r[0] == "not imported") == 3


def test_near_duplicates_cluster_above_the_threshold_only():
    base = " ".join(f"word{i}" for i in range(60))
    docs = [
        ("a", base),
        ("b", base + " extra"),
        ("c", base.replace("word30", "other")),
        ("d", " ".join(f"token{i}" for i in range(60))),
    ]
    clusters = neardup.near_duplicate_clusters(docs, threshold=0.8)
    assert [sorted(c.keys) for c in clusters] == [["a", "b", "c"]]
    assert neardup.summary(clusters, 4) == {
        "documents": 4,
        "clusters": 1,
        "in_clusters": 3,
        "after_dedup": 2,
        "sizes": {3: 1},
    }
    assert neardup.near_duplicate_clusters(docs, threshold=0.99) == []
    with pytest.raises(ValueError):
        neardup.near_duplicate_clusters(docs, threshold=0)


def test_the_record_schema_is_registered_and_maps_spellings_in_the_releases_name_order():
    from imports.core.schema import schema_for_kind
    from review.causalt5k.normalise import RECORD_KIND, RECORD_SCHEMA

    assert schema_for_kind(RECORD_KIND) is RECORD_SCHEMA
    found: list = []
    clean, errors = RECORD_SCHEMA.validate_row(
        {"tier": "Rung 2", "domain": "Medicine", "domain_id": "D7", "label": "flawed"},
        None,
        normalised=found,
    )
    assert errors == []
    assert clean == {"pearl_level": "L2", "domain_id": "D7", "ground_truth": "NO"}
    assert {(n.field, n.spelling, n.canonical) for n in found} == {
        ("pearl_level", "Rung 2", "L2"),
        ("domain_id", "D7", "D7"),
        ("ground_truth", "flawed", "NO"),
    }


def test_spellings_the_schema_cannot_map_are_reported_and_the_case_still_made(tmp_path):
    write(
        tmp_path,
        "review_round1/validator-batch-01.json",
        [
            case(
                pearl_level="rung 9",
                label="perhaps",
                difficulty="brutal",
                is_ambiguous="maybe",
                domain=[],
                domain_name="Markets",
            )
        ],
    )
    (only,), report = normalise_release(tmp_path)
    assert (only["pearl_level"], only["label"], only["difficulty"]) == (None, None, None)
    assert (only["is_ambiguous"], only["domain"]) == (None, "D3")
    unmapped = {(u["field"], u["value"], u["record"]) for u in report.unmapped}
    assert unmapped == {
        ("pearl_level", "rung 9", "0"),
        ("label", "perhaps", "0"),
        ("difficulty", "brutal", "0"),
        ("is_ambiguous", "maybe", "0"),
    }
    assert report.mappings[("difficulty", "brutal", "")] == 1
    assert report.mappings[("label", "perhaps (L?)", "")] == 1
    assert report.mappings[("domain", "Markets", "D3")] == 1
