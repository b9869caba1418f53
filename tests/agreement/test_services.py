"""Agreement refresh: reading a stage's votes, computing and storing snapshots, coalescing
requests, the per-stage lock and the sweep (in-process; the real worker is in test_workers.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
from django.db import connection, connections
from django.db.models import F
from django.utils import timezone

from agreement import selectors as research_selectors
from agreement import services as agreement_services
from agreement.models import AgreementRefresh, AgreementSnapshot
from agreement.stats import fleiss_kappa, krippendorff_alpha
from agreement.tasks import refresh_agreement, sweep_agreement
from annotation import services
from annotation.errors import ApplicationError
from annotation.kinds import KINDS, AgreementSpec, TaskKind, register_kind
from annotation.models import Annotation, ItemStage, Stage
from tests.factories import annotate_stage, make_items, make_label_stage, make_member, make_project

pytestmark = pytest.mark.django_db

LABELS = ("causal", "temporal", "none")


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks, monkeypatch):
    """Run each submit's on-commit work (resolution, then the eager refresh) as after a commit."""
    original = services.annotation_submit

    def submit_and_commit(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return original(**kwargs)

    monkeypatch.setattr(services, "annotation_submit", submit_and_commit)


def patterned(person, item) -> str:
    """A realistic pattern: most people agree on an item's label; user ids decide who strays."""
    index = int(item.external_id.rsplit("-", 1)[1])
    truth = LABELS[index % 3]
    if (index + person.pk) % 5 == 0:
        return LABELS[(index + 1) % 3]
    return truth


def label_stage(items: int = 12, annotators: int = 4, overlap: int = 3):
    project = make_project()
    stage = make_label_stage(project, overlap=overlap, choices=LABELS)
    make_items(project, items)
    people = [make_member(project) for _ in range(annotators)]
    return project, stage, people


def direct_frame(stage: Stage) -> pd.DataFrame:
    rows = Annotation.objects.filter(item_stage__stage=stage).values_list(
        "item_stage_id", "annotator_id", "payload"
    )
    return pd.DataFrame(
        [(item, rater, payload["value"]) for item, rater, payload in rows],
        columns=["item", "rater", "value"],
    )


def test_resolutions_refresh_the_stored_figures(settings):
    _, stage, people = label_stage()
    annotate_stage(stage, people, patterned, seconds=lambda person: 10.0 + person.pk % 3)
    refresh = AgreementRefresh.objects.get(stage=stage)
    resolutions = ItemStage.objects.filter(stage=stage, resolution__isnull=False).count()
    assert refresh.changes == resolutions == 12
    assert refresh.computed_changes == refresh.changes
    latest = research_selectors.latest_snapshots(stage)
    assert set(latest) == {
        "fleiss_kappa",
        "krippendorff_alpha_nominal",
        "percent_agreement",
        "annotator_agreement",
    }
    frame = direct_frame(stage)
    expected = fleiss_kappa(frame, categories=list(LABELS))
    kappa = latest["fleiss_kappa"]
    assert kappa.value == pytest.approx(expected.value)
    assert (kappa.ci_low, kappa.ci_high) == pytest.approx((expected.ci_low, expected.ci_high))
    assert kappa.n_annotations == len(frame) == 36
    assert kappa.n_items == 12 and kappa.n_annotators == 4
    assert [row["value"] for row in kappa.details["vote_distribution"]] == list(LABELS)
    alpha = latest["krippendorff_alpha_nominal"]
    assert alpha.value == pytest.approx(krippendorff_alpha(frame, level="nominal").value)
    annotators = latest["annotator_agreement"].details["annotators"]
    assert sorted(row["rater"] for row in annotators) == sorted(person.pk for person in people)
    assert all(row["median_seconds"] is not None for row in annotators)


def test_a_refresh_with_nothing_new_stores_nothing():
    _, stage, people = label_stage(items=6)
    annotate_stage(stage, people, patterned)
    before = AgreementSnapshot.objects.filter(stage=stage).count()
    assert agreement_services.stage_agreement_refresh(stage_id=stage.pk) == []
    assert refresh_agreement(stage.pk) == 0
    assert AgreementSnapshot.objects.filter(stage=stage).count() == before
    forced = agreement_services.stage_agreement_refresh(stage_id=stage.pk, force=True)
    assert len(forced) == 4


def test_a_stage_without_annotations_stores_nothing_and_an_unknown_stage_is_harmless():
    _, stage, _ = label_stage(items=3)
    AgreementRefresh.objects.create(stage=stage, changes=1)
    assert agreement_services.stage_agreement_refresh(stage_id=stage.pk) == []
    assert agreement_services.stage_agreement_refresh(stage_id=987654) == []


class _Spy:
    """Records refresh_agreement.apply_async calls instead of sending them, so the coalescing
    decisions can be counted without a broker."""

    def __init__(self, monkeypatch, error: Exception | None = None):
        self.calls: list[dict[str, Any]] = []
        self.error = error
        monkeypatch.setattr(refresh_agreement, "apply_async", self)

    def __call__(self, args=None, kwargs=None, **options):
        self.calls.append({"args": args, **options})
        if self.error is not None:
            raise self.error


def test_a_burst_of_changes_enqueues_one_refresh(
    monkeypatch, django_capture_on_commit_callbacks, settings
):
    settings.AGREEMENT_REFRESH_DELAY = 2
    settings.AGREEMENT_REFRESH_INTERVAL = 30
    _, stage, people = label_stage(items=9)
    spy = _Spy(monkeypatch)
    annotate_stage(stage, people, patterned)  # 9 resolutions
    refresh = AgreementRefresh.objects.get(stage=stage)
    assert refresh.changes == 9
    assert len(spy.calls) == 1
    assert spy.calls[0]["args"] == (stage.pk,)
    assert spy.calls[0]["countdown"] == 2
    assert refresh.queued_at is not None
    assert not AgreementSnapshot.objects.filter(stage=stage).exists()

    # The worker runs it: one computation for the nine changes, the queued mark cleared.
    snapshots = agreement_services.stage_agreement_refresh(stage_id=stage.pk)
    assert {snapshot.metric for snapshot in snapshots} >= {"fleiss_kappa", "annotator_agreement"}
    assert all(snapshot.details["changes"] == 9 for snapshot in snapshots)
    refresh.refresh_from_db()
    assert refresh.queued_at is None
    assert refresh.computed_changes == 9

    # The next change waits for the minimum interval since that computation.
    with django_capture_on_commit_callbacks(execute=True):
        assert agreement_services.stage_agreement_changed(stage_id=stage.pk) is True
        assert agreement_services.stage_agreement_changed(stage_id=stage.pk) is False
    assert len(spy.calls) == 2
    assert 27 < spy.calls[1]["countdown"] <= 30


def test_changes_during_a_refresh_queue_the_next_one(
    monkeypatch, django_capture_on_commit_callbacks
):
    _, stage, people = label_stage(items=6)
    spy = _Spy(monkeypatch)
    annotate_stage(stage, people, patterned)
    real_snapshots = agreement_services._agreement_snapshots

    def snapshots_with_a_change_meanwhile(*args, **kwargs):
        rows = real_snapshots(*args, **kwargs)
        AgreementRefresh.objects.filter(stage=stage).update(changes=F("changes") + 100)
        return rows

    monkeypatch.setattr(
        agreement_services, "_agreement_snapshots", snapshots_with_a_change_meanwhile
    )
    calls_before = len(spy.calls)
    with django_capture_on_commit_callbacks(execute=True):
        agreement_services.stage_agreement_refresh(stage_id=stage.pk)
    assert len(spy.calls) == calls_before + 1  # the holder queued a follow-up itself


def test_a_failed_publish_is_logged_not_raised_and_left_to_the_sweep(
    monkeypatch, django_capture_on_commit_callbacks, caplog
):
    _, stage, people = label_stage(items=3)
    spy = _Spy(monkeypatch, error=ConnectionRefusedError("redis is down"))
    annotate_stage(stage, people, patterned)  # must not raise
    assert spy.calls
    assert "could not enqueue the agreement refresh" in caplog.text
    refresh = AgreementRefresh.objects.get(stage=stage)
    assert refresh.queued_at is None  # the next change tries again
    assert refresh.changes == 3 and refresh.computed_changes == 0
    assert agreement_services.stages_agreement_stale(grace_seconds=60) == [stage.pk]
    assert sweep_agreement() == 1
    assert agreement_services.stages_agreement_stale(grace_seconds=60) == []
    assert AgreementSnapshot.objects.filter(stage=stage, metric="fleiss_kappa").count() == 1


def test_the_sweep_takes_over_a_refresh_whose_message_is_overdue(monkeypatch):
    _, stage, people = label_stage(items=3)
    _Spy(monkeypatch)
    annotate_stage(stage, people, patterned)
    assert (
        agreement_services.stages_agreement_stale(grace_seconds=60) == []
    )  # queued, not overdue yet
    AgreementRefresh.objects.filter(stage=stage).update(
        queued_at=timezone.now() - timedelta(minutes=5)
    )
    assert agreement_services.stages_agreement_stale(grace_seconds=60) == [stage.pk]
    assert sweep_agreement() == 1
    assert sweep_agreement() == 0


@pytest.mark.django_db(transaction=True)
def test_a_refresh_finding_the_stage_locked_returns_at_once(postgres, monkeypatch):
    _, stage, people = label_stage(items=3)
    _Spy(monkeypatch)
    annotate_stage(stage, people, patterned)
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_lock(%s, %s)", [agreement_services._LOCK_NAMESPACE, stage.pk]
            )
        assert agreement_services.stage_agreement_refresh(stage_id=stage.pk) is None
        assert not AgreementSnapshot.objects.filter(stage=stage).exists()
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_all()")
    finally:
        other.close()
    assert len(agreement_services.stage_agreement_refresh(stage_id=stage.pk)) == 4


# --- Reading votes ------------------------------------------------------------------------------


class ScoreKind(TaskKind):
    """A numeric 1–10 rating kind, for these tests only."""

    key = "score_for_tests"
    label = "Score 1–10"
    policies = ("mean",)
    default_policy = "mean"
    agreement = AgreementSpec("interval")

    def validate(self, payload, context):
        value = payload.get("value")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
            raise ApplicationError("Rate from 1 to 10.", {"value": "1–10"})
        return {"value": value}


class NestedLabelKind(TaskKind):
    """A kind whose vote is a nested payload field (answer.label), not "value"."""

    key = "nested_for_tests"
    label = "Nested"

    vote_field = "answer.label"

    def validate(self, payload, context):
        return dict(payload)

    def categories(self, config):
        return list(LABELS)


@pytest.fixture
def test_kinds():
    register_kind(ScoreKind())
    register_kind(NestedLabelKind())
    yield
    KINDS.pop(ScoreKind.key, None)
    KINDS.pop(NestedLabelKind.key, None)


def sorted_votes(votes) -> np.ndarray:
    table = np.column_stack(
        [
            votes.items,
            votes.raters,
            np.nan_to_num(votes.values, nan=-9),
            np.nan_to_num(votes.seconds, nan=-9),
        ]
    )
    return table[np.lexsort(table.T[::-1])]


def add_imported(
    stage: Stage, rater: str, payload: dict, seconds: float | None = None
) -> Annotation:
    item_stage = ItemStage.objects.filter(stage=stage).order_by("pk").first()
    return Annotation.objects.create(
        item_stage=item_stage, external_rater=rater, payload=payload, seconds_spent=seconds
    )


def test_the_copy_reader_and_the_python_reader_read_the_same_votes(postgres):
    _, stage, people = label_stage(items=9)
    annotate_stage(stage, people, patterned, seconds=lambda person: 4.5)
    add_imported(stage, "crowd-17", {"value": "temporal"})
    add_imported(stage, "crowd-18", {"value": "not a label"}, seconds=2.0)
    add_imported(stage, "crowd-19", {"comment": "no value"})
    fast = research_selectors.stage_votes(stage)
    slow = research_selectors.stage_votes(stage, fast=False)
    assert len(fast) == len(slow) == 27 + 3
    np.testing.assert_array_equal(sorted_votes(fast), sorted_votes(slow))
    assert fast.categories == slow.categories == LABELS
    assert (fast.values == -1).sum() == 2  # the stray label and the missing value
    external = fast.raters[fast.raters < 0]
    assert len(set(external.tolist())) == 3
    assert research_selectors.external_rater_key("crowd-17") in external


def test_numeric_votes_are_read_as_numbers(postgres, test_kinds):
    project = make_project()
    stage = services.stage_create(
        project=project, slug="score", name="Score", kind=ScoreKind.key, overlap=3
    )
    make_items(project, 6)
    people = [make_member(project) for _ in range(3)]
    annotate_stage(stage, people, lambda person, item: 3 + person.pk % 4)
    add_imported(stage, "old-rater", {"value": "seven"})
    fast = research_selectors.stage_votes(stage)
    slow = research_selectors.stage_votes(stage, fast=False)
    assert fast.categories is None and fast.values.dtype == np.float64
    np.testing.assert_array_equal(sorted_votes(fast), sorted_votes(slow))
    assert np.isnan(fast.values).sum() == 1
    latest = research_selectors.latest_snapshots(stage)
    assert {"krippendorff_alpha_interval", "krippendorff_alpha_ordinal"} <= set(latest)


def test_a_kind_voting_with_a_nested_field_is_read_by_its_path(test_kinds):
    project = make_project()
    stage = services.stage_create(
        project=project, slug="nested", name="Nested", kind=NestedLabelKind.key, overlap=2
    )
    make_items(project, 4)
    people = [make_member(project) for _ in range(2)]
    annotate_stage(stage, people, lambda person, item: "x")  # payload {"value": "x"}: no vote
    votes = research_selectors.stage_votes(stage)
    assert len(votes) == 8 and (votes.values == -1).all()
    add_imported(stage, "r", {"answer": {"label": "causal"}})
    add_imported(stage, "s", {"answer": ["label"]})  # not an object: no vote on either path
    add_imported(stage, "t", {"answer": {"label": "temporal", "x": 1}})
    fast = research_selectors.stage_votes(stage)
    slow = research_selectors.stage_votes(stage, fast=False)
    np.testing.assert_array_equal(sorted_votes(fast), sorted_votes(slow))
    assert (fast.values == 0).sum() == 1 and (fast.values == 1).sum() == 1


class VerdictKind(TaskKind):
    """A structured vote (verdict and score); agreement reads the verdict."""

    key = "verdict_for_tests"
    label = "Verdict"
    vote_field = None
    vote_fields = {"verdict": "verdict", "score": "rubric.total"}
    agreement = AgreementSpec("nominal", field="verdict")

    def validate(self, payload, context):
        return dict(payload)

    def categories(self, config):
        return ["keep", "reject"]


class FreeTextKind(TaskKind):
    """Free-text edits: no agreement figures."""

    key = "free_text_for_tests"
    label = "Free text"
    agreement = AgreementSpec(None)

    def validate(self, payload, context):
        return dict(payload)


def test_a_structured_vote_is_read_by_its_agreement_field(test_kinds):
    register_kind(VerdictKind())
    try:
        project = make_project()
        stage = services.stage_create(
            project=project, slug="verdict", name="Verdict", kind=VerdictKind.key, overlap=2
        )
        make_items(project, 2)
        people = [make_member(project) for _ in range(2)]
        annotate_stage(stage, people, lambda person, item: "x")  # no verdict: no vote
        add_imported(stage, "a", {"verdict": "keep", "rubric": {"total": 3}})
        add_imported(stage, "b", {"verdict": "reject"})
        add_imported(stage, "c", {"rubric": {"total": 5}})
        add_imported(stage, "d", {"verdict": "maybe"})  # not a category: no vote
        slow = research_selectors.stage_votes(stage, fast=False)
        assert sorted(slow.values.tolist()) == [-1] * 6 + [0, 1]
        if connection.vendor == "postgresql":
            fast = research_selectors.stage_votes(stage)
            np.testing.assert_array_equal(sorted_votes(fast), sorted_votes(slow))
    finally:
        KINDS.pop(VerdictKind.key, None)


def test_a_kind_without_agreement_gets_no_figures_and_no_crash():
    register_kind(FreeTextKind())
    try:
        project = make_project()
        stage = services.stage_create(
            project=project, slug="edit", name="Edit", kind=FreeTextKind.key, overlap=2
        )
        make_items(project, 3)
        people = [make_member(project) for _ in range(2)]
        annotate_stage(stage, people, lambda person, item: f"an edit of {item.external_id}")
        for fast in (True, False):
            assert len(research_selectors.stage_votes(stage, fast=fast)) == 0
        assert agreement_services.stage_agreement_refresh(stage_id=stage.pk, force=True) == []
        assert not AgreementSnapshot.objects.filter(stage=stage).exists()
        assert research_selectors.latest_snapshots(stage) == {}
    finally:
        KINDS.pop(FreeTextKind.key, None)


def test_a_stage_with_phases_counts_the_last_phase_of_the_current_round():
    """Check → edit → vote: only the vote phase's annotations of the item stage's current
    round count, on both reading paths."""
    _, stage, people = label_stage(items=3, annotators=3)
    Stage.objects.filter(pk=stage.pk).update(
        phases=[{"name": "check", "slots": 1}, {"name": "vote", "slots": 3}]
    )
    stage.refresh_from_db()
    ItemStage.objects.filter(stage=stage).update(
        phase=1, round=1, state=ItemStage.State.RESOLVED, completed_at=timezone.now()
    )
    item_stages = list(ItemStage.objects.filter(stage=stage))
    assert len(item_stages) == 3
    rows = []
    for item_stage in item_stages:
        for person in people:
            for round_, phase in ((0, 1), (1, 0), (1, 1)):
                rows.append(
                    Annotation(
                        item_stage=item_stage, annotator=person, round=round_, phase=phase,
                        payload={"value": LABELS[phase + round_]},
                    )
                )  # fmt: skip
    Annotation.objects.bulk_create(rows)
    readers = [False, True] if connection.vendor == "postgresql" else [False]
    for fast in readers:
        votes = research_selectors.stage_votes(stage, fast=fast)
        assert len(votes) == 9, fast  # 3 items × 3 people, round 1, phase 1
        assert set(votes.values.tolist()) == {LABELS.index("none")}, fast
    Stage.objects.filter(pk=stage.pk).update(phases=[])
    stage.refresh_from_db()
    # Without phases every annotation of the current round counts (round 0's do not).
    assert len(research_selectors.stage_votes(stage, fast=False)) == 18


def test_the_latest_snapshot_of_a_metric_is_by_time_then_id_for_every_reader():
    """A backfill stores past moments after newer rows: the latest snapshot is the one computed
    last (ties: the greater id), whichever reader asks."""

    project, stage, _ = label_stage(items=1)
    now = timezone.now()

    def snapshot(metric, value, moment):
        return AgreementSnapshot.objects.create(
            stage=stage, metric=metric, value=value, n_items=1, n_annotators=1,
            n_annotations=1, details={"annotators": []}, computed_at=moment,
        )  # fmt: skip

    newest = snapshot("fleiss_kappa", 0.5, now)
    snapshot("fleiss_kappa", 0.1, now - timedelta(days=2))  # backfilled afterwards
    AgreementSnapshot.objects.filter(value=0.1).update(computed_at=now - timedelta(days=2))
    AgreementSnapshot.objects.filter(pk=newest.pk).update(computed_at=now)
    tie_first = snapshot("percent_agreement", 0.7, now)
    tie_second = snapshot("percent_agreement", 0.8, now)
    AgreementSnapshot.objects.filter(pk__in=[tie_first.pk, tie_second.pk]).update(computed_at=now)
    annotators = snapshot(research_selectors.ANNOTATOR_METRIC, 0.9, now)
    snapshot(research_selectors.ANNOTATOR_METRIC, 0.2, now - timedelta(days=1))
    AgreementSnapshot.objects.filter(value=0.2).update(computed_at=now - timedelta(days=1))
    AgreementSnapshot.objects.filter(pk=annotators.pk).update(computed_at=now)
    expected = {
        "fleiss_kappa": newest.pk,
        "percent_agreement": tie_second.pk,
        research_selectors.ANNOTATOR_METRIC: annotators.pk,
    }
    latest = research_selectors.latest_snapshots(stage)
    assert {metric: row.pk for metric, row in latest.items()} == expected
    by_stage = research_selectors.latest_snapshots_by_stage([stage])
    assert {metric: row.pk for metric, row in by_stage[stage.pk].items()} == expected
    listed = research_selectors.latest_agreement(project)
    assert {row.metric: row.pk for row in listed} == expected
    _, table = research_selectors.annotator_rows(stage)
    assert table.pk == annotators.pk


def binary_copy(rows, *, extension: bytes = b"") -> bytes:
    """A COPY … TO STDOUT (FORMAT binary) stream of (int8, float8) rows, as PostgreSQL sends it."""
    header = b"PGCOPY\n\xff\r\n\x00" + bytes(4) + len(extension).to_bytes(4, "big")
    tuples = b"".join(
        b"\x00\x02" + (8).to_bytes(4, "big") + number.to_bytes(8, "big", signed=True)
        + (8).to_bytes(4, "big") + np.array([value], ">f8").tobytes()
        for number, value in rows
    )  # fmt: skip
    return header + extension + tuples + b"\xff\xff"


COPY_ROWS = [(1, 0.5), (-7, float("nan")), (2**40, -3.25)]
COPY_COLUMNS = {"key": ">i8", "value": ">f8"}


def test_the_binary_copy_decoder_survives_any_split_of_the_stream():
    stream = binary_copy(COPY_ROWS, extension=b"ext!")
    for cut in range(len(stream) + 1):
        columns = research_selectors.read_binary_copy([stream[:cut], stream[cut:]], COPY_COLUMNS)
        assert columns["key"].tolist() == [1, -7, 2**40], cut
        np.testing.assert_array_equal(columns["value"], [0.5, np.nan, -3.25])
    one_byte_blocks = [stream[n : n + 1] for n in range(len(stream))]
    columns = research_selectors.read_binary_copy(one_byte_blocks, COPY_COLUMNS)
    assert columns["key"].tolist() == [1, -7, 2**40]
    empty = research_selectors.read_binary_copy([binary_copy([])], COPY_COLUMNS)
    assert len(empty["key"]) == len(empty["value"]) == 0


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (b"NOTACOPY\n\xff\r\n\x00" + bytes(8) + b"\xff\xff", "not a binary COPY"),
        (binary_copy([(1, 0.5)])[:-2], "trailer"),
        (binary_copy([(1, 0.5)]) + b"\x00", "trailer"),
        (binary_copy([])[:10], "header"),
        (binary_copy([])[:19] + b"\x00\x02" + b"\xff" * 4 + (8).to_bytes(4, "big")
         + bytes(8) + bytes(8) + b"\xff\xff", "NULL"),
        (binary_copy([])[:19] + b"\x00\x01" + (8).to_bytes(4, "big") + bytes(8) + b"\xff\xff",
         "width"),
    ],
)  # fmt: skip
def test_the_binary_copy_decoder_refuses_what_it_cannot_read_exactly(stream, message):
    with pytest.raises(ValueError, match=message):
        research_selectors.read_binary_copy([stream], COPY_COLUMNS)


def test_only_completed_items_count_and_as_of_reads_what_was_complete_then(postgres):
    _, stage, people = label_stage(items=6)
    annotate_stage(stage, people[:1], patterned)  # one vote on each item: none complete
    assert len(research_selectors.stage_votes(stage)) == 0
    annotate_stage(stage, people, patterned)
    assert len(research_selectors.stage_votes(stage)) == 18
    cutoff = timezone.now()
    later = list(
        ItemStage.objects.filter(stage=stage).order_by("pk")[3:].values_list("pk", flat=True)
    )
    ItemStage.objects.filter(pk__in=later).update(completed_at=cutoff + timedelta(minutes=5))
    Annotation.objects.filter(item_stage_id__in=later).update(
        created_at=cutoff + timedelta(minutes=1)
    )
    for fast in (True, False):
        votes = research_selectors.stage_votes(stage, as_of=cutoff, fast=fast)
        assert len(votes) == 9 and not set(votes.items.tolist()) & set(later)
        assert len(research_selectors.stage_votes(stage, fast=fast)) == 18


def test_backfill_stores_the_history_at_past_moments():
    _, stage, people = label_stage(items=6)
    annotate_stage(stage, people, patterned)
    AgreementSnapshot.objects.all().delete()
    completed = ItemStage.objects.filter(stage=stage).order_by("completed_at")
    moments = [row.completed_at for row in completed[1::2]]
    stored = agreement_services.stage_agreement_backfill(stage_id=stage.pk, moments=moments)
    history = research_selectors.agreement_history(stage)
    assert stored == 4 * len(moments)
    assert [snapshot.computed_at for snapshot in history["fleiss_kappa"]] == sorted(moments)
    counts = [snapshot.n_annotations for snapshot in history["fleiss_kappa"]]
    assert counts == sorted(counts) and counts[-1] == 18


def test_connection_is_postgres_when_asked(postgres):
    assert connection.vendor == "postgresql"


def test_both_vote_readers_read_current_versions_only(postgres):
    """An answer changed before its item was decided counts once, as changed, on both paths."""
    _, stage, people = label_stage(items=9)
    annotate_stage(stage, people, patterned, seconds=lambda person: 4.5)
    changed = Annotation.objects.filter(item_stage__stage=stage).order_by("pk").first()
    labels = [label for label in LABELS if label != changed.payload.get("value")]
    Annotation.all_versions.filter(pk=changed.pk).update(is_current=False)
    Annotation.all_versions.create(
        item_stage_id=changed.item_stage_id,
        assignment_id=changed.assignment_id,
        annotator_id=changed.annotator_id,
        payload={"value": labels[0]},
        supersedes=changed,
        version=2,
    )
    fast = research_selectors.stage_votes(stage)
    slow = research_selectors.stage_votes(stage, fast=False)
    assert len(fast) == len(slow) == 27
    np.testing.assert_array_equal(sorted_votes(fast), sorted_votes(slow))
    mine = (fast.items == changed.item_stage_id) & (fast.raters == changed.annotator_id)
    assert fast.values[mine].tolist() == [LABELS.index(labels[0])]
