"""METER projects: the pipeline, the pairs' schema, the generation round trip, the cascade.

Flow (``review.meter`` package docstring): pairs are imported through the engine's import
(``imports``, schema ``METER_PAIR_SCHEMA``) and open in **verify**; a pair any verifier rejects
is discarded, a kept pair is *verified* (its item accepted). ``generation_rows`` lists the
verified pairs without an entry, the file the team feeds to its LLM; ``entries_import`` brings
the generated entries back — each a new item ``<pair_id>/entry`` linked to its pair (group), opened
in **edit** (check → edit → vote) and then **filter**. Every entry is checked before anything
is written; one bad entry refuses the file with line and field, and nothing is kept.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.db import transaction

from annotation import api as engine
from annotation.eligibility import blind
from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, ItemStage, Project, Stage
from imports.core import FieldSpec, RecordReader, RowError, RowSchema
from imports.core.readers import ImportFileError
from review.meter.entries import (
    CATEGORIES,
    CRITERIA,
    LEVELS,
    SOURCES,
    EntryInvalid,
    clean_questions,
)

WORKFLOW = "meter"
BASELINE_ANNOTATORS = 5
#: METER's published human accuracy by level (%), beside the baseline measured here.
PUBLISHED_ACCURACY = {1: 95.8, 2: 92.8, 3: 91.0}
#: METER's published Fleiss' κ per stage kind.
PUBLISHED_KAPPA = {"meter_verify": 0.78, "meter_edit": 0.71, "meter_filter": 0.75}
ENTRY_SUFFIX = "/entry"
MAX_ENTRY_BYTES = 64 << 20
ERROR_CAP = 200

METER_PAIR_SCHEMA = RowSchema(
    name="meter-pairs",
    description="METER cause–effect pairs: a context passage with one cause and one effect.",
    external_id_field="pair_id",
    extra_fields="keep",
    fields=(
        FieldSpec(
            "pair_id",
            "str",
            required=True,
            aliases=("id",),
            max_length=150,
            help="Identifier of the pair; the generated entry refers to it.",
            example="esl",
        ),
        FieldSpec(
            "source",
            "choice",
            choices=SOURCES,
            help="The corpus the pair comes from (review/meter/entries.py, SOURCES).",
        ),
        FieldSpec(
            "context",
            "str",
            required=True,
            max_length=20_000,
            help="The passage (context).",
            example="The storm knocked down power lines, so the town lost electricity.",
        ),
        FieldSpec(
            "cause",
            "str",
            required=True,
            max_length=2_000,
            help="The cause, described.",
            example="The storm knocked down power lines.",
        ),
        FieldSpec(
            "effect",
            "str",
            required=True,
            max_length=2_000,
            help="The effect, described.",
            example="The town lost electricity.",
        ),
        FieldSpec(
            "triggers",
            "list[str]",
            max_length=200,
            help="Trigger words in the context (CSV: separated by ';').",
            example=["knocked down", "lost"],
        ),
    ),
)

GUIDELINES = """METER builds multiple-choice questions about cause and effect in a passage.

**Verify**: keep a pair when the passage states that the cause brings about the effect and both
descriptions are complete. Reject it as *ambiguous* (the passage allows another reading),
*erroneous* (the passage does not say this) or *semantically incomplete* (a description misses
what makes it the cause or the effect). One reject discards the pair.

**Check, edit and vote**: the checker flags what is wrong in the generated questions; two editors
fix them (a distractor must stay in its category: contradictory statement, unfounded statement,
causal reversal, irrelevant fact); all three then vote for the best version.

**Filter**: for every question confirm the five criteria; an entry that fails one is discarded."""

EDIT_PHASES = [
    {"name": "check", "slots": 1},
    {"name": "edit", "slots": 2, "people": "new", "shows": ["check"]},
    {"name": "vote", "slots": 3, "people": "same", "shows": ["edit"]},
]


def pair_item_mapper(clean: dict[str, Any], schema: RowSchema, options: Any):
    """A pairs row → an item: the pair's fields in the payload, grouped by pair id."""
    from imports.services import ItemFields

    payload = {key: value for key, value in clean.items() if value is not None}
    return ItemFields(
        payload=payload,
        group=clean["pair_id"][:200],
        source=str(clean.get("source") or "")[:200],
    )


@transaction.atomic
def meter_project_create(
    *, slug: str, name: str, description: str = "", overlap: int = 3, seed: int | None = None
) -> Project:
    """A METER project: verify (any reject discards) → check, edit and vote (the winning
    version becomes the entry's revision) → filter (majority keeps) → human baseline, blind
    (nobody who verified the entry's pair or checked, edited, voted on or filtered the entry:
    the ``blind`` rule following the entry's ``pair_id``) → evidence spans."""
    project = engine.project_create(
        slug=slug,
        name=name,
        kind=WORKFLOW,
        description=description,
        guidelines=GUIDELINES,
    )
    seeds: dict[str, Any] = {"seed": seed} if seed is not None else {}
    finish = {"action": "finish"}
    stages: list[tuple[str, str, str, str, dict[str, Any], str, dict[str, Any]]] = [
        # (slug, name, kind, policy, routes, instructions, options)
        ("verify", "Verify pairs", "meter_verify", "unanimity_keep",
         {"accept": finish, "reject": {"action": "discard", "reason": "rejected in verification"}},
         "Keep the pair, or reject it with a reason. One reject discards it.", {}),
        ("edit", "Check, edit and vote", "meter_edit", "meter_vote",
         {"accept": {"action": "revise", "then": {"action": "next"}}},
         "Check flags problems, two editors fix them, all three vote.", {"phases": EDIT_PHASES}),
        ("filter", "Filter", "meter_filter", "majority",
         {"accept": finish, "reject": {"action": "discard", "reason": "discarded by the filter"}},
         "Confirm the five criteria for each question; keep or discard.", {}),
        ("baseline", "Human baseline", "meter_answer", "meter_record", {"accept": finish},
         "Answer each question from the passage alone; there is one right option.",
         {"overlap": BASELINE_ANNOTATORS, "eligibility": [blind("pair_id")]}),
        ("evidence", "Evidence spans", "meter_spans", "meter_record", {"accept": finish},
         "For each question, mark the words of the passage needed to answer it.", {}),
    ]  # fmt: skip
    for stage_slug, stage_name, kind, policy, routes, instructions, options in stages:
        engine.stage_create(
            project=project,
            slug=stage_slug,
            name=stage_name,
            kind=kind,
            overlap=options.pop("overlap", overlap),
            resolution_policy=policy,
            routes=routes,
            instructions=instructions,
            **options,
            **seeds,
        )
    return project


def _pairs_with_entries(project: Project) -> set[str]:
    """The pair ids that already have a generated entry (an entry's group is its pair id)."""
    return set(
        Item.objects.filter(project=project, external_id__endswith=ENTRY_SUFFIX).values_list(
            "group", flat=True
        )
    )


def generation_rows(project: Project) -> Iterator[dict[str, Any]]:
    """The verified pairs that have no entry yet, in import order: what generation needs."""
    done = _pairs_with_entries(project)
    pairs = (
        Item.objects.filter(project=project, status=Item.Status.ACCEPTED)
        .exclude(external_id__endswith=ENTRY_SUFFIX)
        .order_by("pk")
    )
    for item in pairs.iterator(chunk_size=1000):
        if item.external_id in done:
            continue
        payload = item.payload
        yield {
            "pair_id": item.external_id,
            "source": payload.get("source", ""),
            "context": payload.get("context", ""),
            "cause": payload.get("cause", ""),
            "effect": payload.get("effect", ""),
            "triggers": payload.get("triggers") or [],
        }


# --- Generated entries back in ------------------------------------------------------------


@dataclass
class EntriesReport:
    """The outcome of an entries import: ``created`` entries, or ``errors`` (nothing kept)."""

    created: int = 0
    rows: int = 0
    errors: list[RowError] = field(default_factory=list)
    error_count: int = 0

    @property
    def ok(self) -> bool:
        return not self.error_count


def _error(record: Any, field_name: str | None, message: str, code: str) -> RowError:
    return RowError(
        line=record.line,
        index=record.index,
        column=record.column,
        field=field_name,
        code=code,
        message=f"{field_name}: {message}" if field_name else message,
    )


def entries_import(
    *, project: Project, fileobj: IO[bytes], filename: str = "entries.jsonl"
) -> EntriesReport:
    """Import generated entries (JSON Lines or a JSON array; see review/README.md for the
    format): each refers to a verified pair of the project by ``pair_id`` and carries its three
    questions. Every record is checked first (unknown, unverified or discarded pair, a pair
    given twice or already having an entry, a level missing or repeated, a question without
    exactly five options or one correct answer, a distractor of no known category); any error
    refuses the file and writes nothing. Otherwise the entries are created and opened in the
    edit stage, in one transaction."""
    if project.kind != WORKFLOW:
        raise ApplicationError("Entries are imported into METER projects only.", {"project": ""})
    edit = Stage.objects.filter(project=project, kind="meter_edit", is_active=True).first()
    if edit is None:
        raise ApplicationError("This project has no active check/edit/vote stage.", {"stage": ""})
    report = EntriesReport()
    try:
        reader = RecordReader(fileobj, filename=filename)
    except ValueError as error:
        raise ApplicationError(str(error), {"file": filename}) from None
    if reader.fmt == "csv":
        raise ApplicationError(
            "Generated entries are nested (three questions of five options): upload JSON Lines "
            "(.jsonl) or a JSON array, not CSV.",
            {"file": filename},
        )
    pairs = {
        external_id: (status, payload)
        for external_id, status, payload in Item.objects.filter(project=project)
        .exclude(external_id__endswith=ENTRY_SUFFIX)
        .values_list("external_id", "status", "payload")
    }
    existing = _pairs_with_entries(project)
    seen: dict[str, int] = {}
    rows: list[dict[str, Any]] = []

    def fail(error: RowError) -> None:
        report.error_count += 1
        if len(report.errors) < ERROR_CAP:
            report.errors.append(error)

    try:
        for record in reader:
            report.rows += 1
            if record.error is not None:
                fail(record.error)
                continue
            data = record.data
            if not isinstance(data, dict):
                fail(_error(record, None, "Each entry must be a JSON object.", "wrong_type"))
                continue
            pair_id = data.get("pair_id")
            if not isinstance(pair_id, str) or not pair_id.strip():
                fail(_error(record, "pair_id", "required: the id of a verified pair", "missing"))
                continue
            pair_id = pair_id.strip()
            known = pairs.get(pair_id)
            if known is None:
                fail(_error(record, "pair_id", f"no pair {pair_id!r} in this project", "unknown"))
                continue
            if known[0] == Item.Status.DISCARDED:
                fail(
                    _error(
                        record,
                        "pair_id",
                        f"pair {pair_id!r} was discarded in verification",
                        "discarded",
                    )
                )
                continue
            if known[0] != Item.Status.ACCEPTED:
                fail(
                    _error(record, "pair_id", f"pair {pair_id!r} is not verified yet", "unverified")
                )
                continue
            if pair_id in existing:
                fail(
                    _error(record, "pair_id", f"pair {pair_id!r} already has an entry", "duplicate")
                )
                continue
            if pair_id in seen:
                fail(
                    _error(
                        record,
                        "pair_id",
                        f"pair {pair_id!r} is also on line {seen[pair_id]}",
                        "duplicate",
                    )
                )
                continue
            seen[pair_id] = record.line
            try:
                questions = clean_questions(data.get("questions"))
            except EntryInvalid as error:
                for problem in error.problems:
                    fail(_error(record, problem.field, problem.message, "invalid"))
                continue
            pair = known[1]
            rows.append(
                {
                    "external_id": pair_id + ENTRY_SUFFIX,
                    "payload": {
                        **{
                            k: pair[k]
                            for k in ("pair_id", "source", "context", "cause", "effect", "triggers")
                            if k in pair
                        },
                        "pair_id": pair_id,
                        "questions": questions,
                        # who wrote it, when a model did (review.meter.generation)
                        **(
                            {"generated_by": data["generated_by"]}
                            if isinstance(data.get("generated_by"), dict)
                            else {}
                        ),
                    },
                    "group": pair_id[:200],
                    "source": str(pair.get("source") or "")[:200],
                }
            )
    except ImportFileError as problem:
        for file_error in problem.errors:
            fail(file_error)
    finally:
        reader.finish()
    if report.rows == 0 and not report.error_count:
        fail(RowError(line=None, code="empty", message="The file holds no entries."))
    if report.error_count:
        return report
    with transaction.atomic():
        items = engine.items_create(project=project, rows=rows, open_first_stage=False)
        engine.item_stages_open(items=items, stage=edit)
    report.created = len(items)
    return report


def entries_import_text(*, project: Project, text: str, filename: str = "entries.jsonl"):
    """``entries_import`` of a text (tests, the demo)."""
    return entries_import(
        project=project, fileobj=io.BytesIO(text.encode("utf-8")), filename=filename
    )


# --- What researchers see -----------------------------------------------------------------


def cascade(project: Project) -> list[dict[str, Any]]:
    """How many pairs and entries reached each step: pairs in → verified → generated → edited
    → kept, with what was discarded where (the rows of the cascade table and plot)."""
    items = Item.objects.filter(project=project)
    pairs = items.exclude(external_id__endswith=ENTRY_SUFFIX)
    entries = items.filter(external_id__endswith=ENTRY_SUFFIX)
    stages = {stage.kind: stage for stage in Stage.objects.filter(project=project)}

    def resolved(kind: str) -> int:
        stage = stages.get(kind)
        if stage is None:
            return 0
        return ItemStage.objects.filter(stage=stage, state=ItemStage.State.RESOLVED).count()

    return [
        {"step": "Pairs in", "count": pairs.count(), "dropped": 0},
        {
            "step": "Verified",
            "count": pairs.filter(status=Item.Status.ACCEPTED).count(),
            "dropped": pairs.filter(status=Item.Status.DISCARDED).count(),
        },
        {"step": "Generated", "count": entries.count(), "dropped": 0},
        {"step": "Edited", "count": resolved("meter_edit"), "dropped": 0},
        {
            "step": "Kept",
            "count": entries.filter(status=Item.Status.ACCEPTED).count(),
            "dropped": entries.filter(status=Item.Status.DISCARDED).count(),
        },
    ]


def criterion_agreement(project: Project) -> list[dict[str, Any]]:
    """Per filter criterion: the share of judgements that failed it, and Fleiss' κ on
    pass/fail (an annotator fails an entry on a criterion when any of its questions fails it),
    over the filter stage's complete item stages."""
    import pandas as pd

    from agreement.stats import fleiss_kappa

    stage = Stage.objects.filter(project=project, kind="meter_filter").first()
    if stage is None:
        return []
    complete = ItemStage.objects.filter(stage=stage, submitted_count__gte=stage.overlap)
    rows = list(
        Annotation.objects.filter(item_stage__in=complete).values_list(
            "item_stage_id", "annotator_id", "payload"
        )
    )
    figures = []
    for key, label in CRITERIA.items():
        table = [
            {
                "item": item_stage,
                "rater": annotator,
                "value": "fail"
                if any(entry.endswith(f".{key}") for entry in payload.get("failed") or [])
                else "pass",
            }
            for item_stage, annotator, payload in rows
        ]
        failed = sum(row["value"] == "fail" for row in table)
        result = (
            fleiss_kappa(pd.DataFrame(table), categories=["pass", "fail"], ci="analytic")
            if table
            else None
        )
        figures.append(
            {
                "criterion": key,
                "label": label,
                "judgements": len(table),
                "failed": failed,
                "fail_rate": failed / len(table) if table else None,
                "kappa": result.value if result else None,
                "ci_low": result.ci_low if result else None,
                "ci_high": result.ci_high if result else None,
            }
        )
    return figures


def category_changes(project: Project) -> dict[str, dict[str, int]]:
    """Distractor-category confusion: {generated category: {category after the vote: count}},
    over entries whose edit stage is resolved (each distractor slot compared by position)."""
    changes: dict[str, dict[str, int]] = {k: dict.fromkeys(CATEGORIES, 0) for k in CATEGORIES}
    entries = Item.objects.filter(
        project=project,
        external_id__endswith=ENTRY_SUFFIX,
        item_stages__stage__kind="meter_edit",
        item_stages__state=ItemStage.State.RESOLVED,
    )
    for item in entries.prefetch_related("revisions"):
        revisions = list(item.revisions.all())
        if not revisions:
            before = after = item.payload.get("questions") or []
        else:
            before = revisions[0].payload.get("questions") or []
            after = item.payload.get("questions") or []
        by_level = {q["level"]: q for q in after}
        for question in before:
            later = by_level.get(question["level"])
            if later is None:
                continue
            for old, new in zip(question["distractors"], later["distractors"], strict=False):
                if old.get("category") in changes and new.get("category") in CATEGORIES:
                    changes[old["category"]][new["category"]] += 1
    return changes


# --- The human baseline ---------------------------------------------------------------------


@transaction.atomic
def baseline_open(*, project: Project, sample: int = 100, seed: int = 0) -> int:
    """Open a seeded sample of ``sample`` kept entries (not in the baseline yet) in the human
    baseline stage, where annotators answer their questions without seeing the answers.
    Returns how many were opened."""
    return _sample_open(project, "meter_answer", "human-baseline", sample, seed)


@transaction.atomic
def evidence_open(*, project: Project, sample: int = 500, seed: int = 0) -> int:
    """Open a seeded sample of kept entries in the evidence-spans stage (METER marks spans on a
    sample of 500 by default). Returns how many were opened."""
    return _sample_open(project, "meter_spans", "evidence-spans", sample, seed)


def _sample_open(project: Project, kind: str, what: str, sample: Any, seed: int) -> int:
    import random

    stage = Stage.objects.filter(project=project, kind=kind, is_active=True).first()
    if stage is None:
        raise ApplicationError(f"This project has no {what} stage.", {"stage": kind})
    if isinstance(sample, bool) or not isinstance(sample, int) or not 1 <= sample <= 10_000:
        raise ApplicationError(
            "The sample is a number of entries from 1 to 10,000.", {"sample": sample}
        )
    taken = ItemStage.objects.filter(stage=stage).values("item_id")
    kept = list(
        Item.objects.filter(
            project=project, status=Item.Status.ACCEPTED, external_id__endswith=ENTRY_SUFFIX
        )
        .exclude(pk__in=taken)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    chosen = sorted(random.Random(seed).sample(kept, min(sample, len(kept))))
    if chosen:
        engine.item_stages_open(items=chosen, stage=stage)
    return len(chosen)


def evidence_agreement(project: Project) -> dict[str, Any]:
    """Span agreement of the evidence stage (review.meter.spans.agreement) over the entries
    with at least two annotators' spans."""
    from review.meter.spans import agreement

    return agreement(
        [(context, markings) for context, markings in _evidence(project).values()
         if len(markings) >= 2]
    )  # fmt: skip


def _evidence(project: Project) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """{entry external id: (context, [spans of each annotator])} of the evidence stage."""
    found: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    rows = Annotation.objects.filter(
        item_stage__stage__project=project, item_stage__stage__kind="meter_spans"
    ).values_list("item_stage__item__external_id", "item_stage__item__payload", "payload")
    for external_id, item_payload, payload in rows.order_by("pk"):
        entry = found.setdefault(external_id, (item_payload.get("context") or "", []))
        entry[1].append((payload or {}).get("spans") or {})
    return found


def evidence_spans(project: Project) -> dict[str, dict[str, list[list[int]]]]:
    """{entry external id: the majority's spans per level}, for the release."""
    from review.meter.spans import majority_spans

    return {
        external_id: majority_spans(context, markings)
        for external_id, (context, markings) in _evidence(project).items()
    }


def baseline_accuracy(
    project: Project, *, n_boot: int = 2000, seed: int = 0
) -> list[dict[str, Any]]:
    """Per level: answers, correct, accuracy and a 95 % CI from a bootstrap over entries (the
    answers to one entry are not independent: statsmodels' proportion intervals assume they
    are), beside METER's published accuracy."""
    import numpy as np

    from review.meter.entries import release_question

    stage = Stage.objects.filter(project=project, kind="meter_answer").first()
    rows = (
        Annotation.objects.filter(item_stage__stage=stage).values_list(
            "item_stage__item_id", "item_stage__item__payload", "payload"
        )
        if stage is not None
        else []
    )
    per_entry: dict[int, dict[int, list[int]]] = {}
    for item_id, payload, answer in rows:
        key = {
            q["level"]: release_question(q, payload.get("pair_id") or "")["answer"]
            for q in payload.get("questions") or []
        }
        marks = per_entry.setdefault(item_id, {level: [] for level in LEVELS})
        for level in LEVELS:
            given = ((answer or {}).get("answers") or {}).get(f"L{level}")
            marks[level].append(int(given == key.get(level)))
    figures = []
    rng = np.random.default_rng(seed)
    entries = list(per_entry.values())
    for level, name in LEVELS.items():
        correct = np.array([sum(e[level]) for e in entries], dtype=float)
        total = np.array([len(e[level]) for e in entries], dtype=float)
        answers = int(total.sum())
        accuracy = float(correct.sum() / answers) if answers else None
        low = high = None
        if answers and len(entries) > 1:
            picks = rng.integers(0, len(entries), size=(n_boot, len(entries)))
            shares = correct[picks].sum(axis=1) / total[picks].sum(axis=1)
            low, high = (float(v) for v in np.percentile(shares, [2.5, 97.5]))
        figures.append(
            {
                "level": level,
                "name": name,
                "entries": len(entries),
                "answers": answers,
                "correct": int(correct.sum()),
                "accuracy": accuracy,
                "ci_low": low,
                "ci_high": high,
                "published": round(PUBLISHED_ACCURACY[level] / 100, 4),
            }
        )
    return figures
