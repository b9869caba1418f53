"""The Imports page on a CausalT5k project (review.causalt5k.services.case_item_mapper): a case's
vocabulary is checked, so no value the review editors cannot offer gets in; the bad row is named
by its line."""

from __future__ import annotations

import io
import json

import pytest

from annotation.models import Item
from imports.models import ImportBatch
from imports.services import import_batch_create, import_batch_run
from review.causalt5k.pipeline import causalt5k_project_create

pytestmark = pytest.mark.django_db


def upload(project, *rows):
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(data), filename="cases.jsonl", options={}
    )
    return import_batch_run(batch_id=batch.pk)


def case(case_id, **extra):
    return {"id": case_id, "pearl_level": "L2", "scenario": "A scenario.", "label": "NO", **extra}


def test_a_trap_outside_the_vocabulary_is_refused_naming_its_line():
    project = causalt5k_project_create(slug="ct5k-import", name="CT5k", seed=5)
    batch = upload(
        project,
        case("T2-W7-MED-001", trap="W7"),
        case("T2-X-MED-002", trap="T3"),
        case("T2-X-MED-003", trap="Confounding"),
    )
    assert batch.status == ImportBatch.Status.FAILED
    assert not Item.objects.filter(project=project).exists()
    found = [(error["line"], error["message"]) for error in batch.errors]
    assert [line for line, _ in found] == [2, 3]
    assert "\"trap\": 'T3' is not a trap (W1–W10) or design (S1–S8) code" in found[0][1]
    assert "trap_family" in found[0][1]
    assert "'Confounding' reads as W7" in found[1][1]


def test_known_codes_no_trap_and_the_releases_trap_object_come_in():
    project = causalt5k_project_create(slug="ct5k-import-ok", name="CT5k", seed=5)
    batch = upload(
        project,
        case("T2-W7-MED-001", trap="W7"),
        case("T2-S1-MED-002", trap="S1"),
        case("T2-X-MED-003", trap=""),
        case("T2-X-MED-004", trap={"type": "T7", "type_name": "Confounding"}),
    )
    assert batch.status == ImportBatch.Status.SUCCEEDED, batch.errors
    stored = dict(Item.objects.filter(project=project).values_list("external_id", "payload"))
    assert stored["T2-W7-MED-001"]["trap"] == "W7"
    assert stored["T2-X-MED-004"]["trap_type"] == "T7"


def test_a_domain_name_becomes_its_d_code_as_the_release_layout_files_cases_by_it():
    """The sample file's own domain ("Medicine") must land in D4/D4_L2.json, not in
    unassigned.json: the import stores the D-code and the domain's name."""
    project = causalt5k_project_create(slug="ct5k-domains", name="CT5k", seed=5)
    batch = upload(
        project,
        case("T2-W7-MED-001", domain="Medicine"),
        case("T2-W7-ECO-002", domain="D5"),
        case("T2-W7-XXX-003", domain="Business"),
        case("T2-W7-XXX-004"),
    )
    assert batch.status == ImportBatch.Status.SUCCEEDED, batch.errors
    stored = dict(Item.objects.filter(project=project).values_list("external_id", "payload"))
    assert stored["T2-W7-MED-001"]["domain"] == "D4"
    assert stored["T2-W7-MED-001"]["domain_name"] == "Medicine & Health"
    assert stored["T2-W7-ECO-002"]["domain"] == "D5"
    assert stored["T2-W7-XXX-003"]["domain"] == "Business"  # two domains could be meant
    assert "domain_name" not in stored["T2-W7-XXX-003"]
    assert "domain" not in stored["T2-W7-XXX-004"] or not stored["T2-W7-XXX-004"]["domain"]
