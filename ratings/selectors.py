"""Reads of ratings projects: querysets turned into the frames ratings.stats expects, progress
counts, and the researcher page's analysis (cached per data version).

Sources of ratings: ``live`` (annotations collected on the rating stage), ``historic`` (imported,
on the historic stage) and ``all`` (both). Practice and attention-check items are never part of
the analysis of the benchmark's items; they have their own tables.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce

from annotation.models import Annotation, Assignment, Item, ItemStage, Project
from imports.models import ImportBatch
from ratings import plots, report
from ratings.connectives import ConnectiveSet, connective_set_from_json
from ratings.kinds import scale_bounds
from ratings.models import ModelRun, RatingsSetup, SentencePair, StoredAnalysis
from ratings.services import label_rule_from_json
from ratings.stats import LabelRule
from ratings.stored_counts import ShownCounts, project_counts_shown

logger = logging.getLogger(__name__)

SOURCES = {
    "all": "All ratings",
    "live": "Collected here",
    "historic": "Imported",
}
CACHE_SECONDS = 3600


@dataclass(frozen=True)
class RatingsContext:
    """A ratings project with its decoded settings."""

    project: Project
    setup: RatingsSetup
    connective_set: ConnectiveSet
    rule: LabelRule
    scale: tuple[int, int]


def ratings_context(project: Project) -> RatingsContext | None:
    setup = (
        RatingsSetup.objects.select_related("rating_stage", "practice_stage", "historic_stage")
        .filter(project=project)
        .first()
    )
    if setup is None:
        return None
    setup.project = project
    return RatingsContext(
        project=project,
        setup=setup,
        connective_set=connective_set_from_json(setup.connective_set),
        rule=label_rule_from_json(setup.label_rule),
        scale=scale_bounds(setup.rating_stage.config if setup.rating_stage else {}),
    )


def _stage_ids(context: RatingsContext, source: str) -> list[int]:
    setup = context.setup
    stages = {
        "live": [setup.rating_stage_id],
        "historic": [setup.historic_stage_id],
        "all": [setup.rating_stage_id, setup.historic_stage_id],
    }[source]
    return [stage_id for stage_id in stages if stage_id is not None]


# --- Frames ----------------------------------------------------------------------------------


def items_frame(project: Project) -> pd.DataFrame:
    """One row per regular item: item_key, pair_id, order, connective, relation,
    connective_order, item_id (database id)."""
    rows = Item.objects.filter(project=project, purpose=Item.Purpose.REGULAR).values_list(
        "pk",
        "external_id",
        "payload__pair_id",
        "payload__order",
        "payload__connective",
        "payload__relation",
        "payload__connective_order",
    )
    return pd.DataFrame.from_records(
        list(rows),
        columns=[
            "item_id",
            "item_key",
            "pair_id",
            "order",
            "connective",
            "relation",
            "connective_order",
        ],
    ).astype({"pair_id": str})


def pairs_frame(project: Project) -> pd.DataFrame:
    rows = SentencePair.objects.filter(project=project).values_list(
        "pair_id", "subset", "origin", "flags"
    )
    return pd.DataFrame.from_records(
        list(rows), columns=["pair_id", "subset", "origin", "flags"]
    ).astype({"pair_id": str})


def _usernames(user_ids) -> dict[int, str]:
    ids = sorted(
        {int(user_id) for user_id in user_ids if user_id is not None and user_id == user_id}
    )
    if not ids:
        return {}
    User = get_user_model()
    return dict(User.objects.filter(pk__in=ids).values_list("pk", User.USERNAME_FIELD))


def ratings_frame(
    context: RatingsContext, *, source: str = "all", items: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The long ratings table of the project's regular items (ratings.stats format) with
    ``source`` (live/historic), ``cannot_judge`` and ``seconds``. ``rater`` is the username for
    live ratings, the external rater id for imported ones, NaN for anonymous imported ratings."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}")
    items = items if items is not None else items_frame(context.project)
    stage_ids = _stage_ids(context, source)
    rows = Annotation.objects.filter(
        item_stage__stage_id__in=stage_ids, item_stage__item__purpose=Item.Purpose.REGULAR
    ).values_list(
        "item_stage__item_id",
        "item_stage__stage_id",
        # As text, not JSON: decoding two JSON values per rating in Python was most of the
        # read's time at a million ratings; the numbers are parsed below in one pass.
        KeyTextTransform("value", "payload"),
        KeyTextTransform("cannot_judge", "payload"),
        "annotator_id",
        "external_rater",
        "seconds_spent",
    )
    frame = pd.DataFrame.from_records(
        list(rows),
        columns=[
            "item_id",
            "stage_id",
            "rating",
            "cannot_judge",
            "annotator_id",
            "external_rater",
            "seconds",
        ],
    )
    names = _usernames(frame["annotator_id"].dropna().unique()) if len(frame) else {}
    rater = frame["annotator_id"].map(names)
    external = frame["external_rater"].where(frame["external_rater"].fillna("") != "")
    frame["rater"] = rater.where(rater.notna(), external)
    frame["rater"] = frame["rater"].astype(object).where(frame["rater"].notna(), np.nan)
    frame["source"] = np.where(
        frame["stage_id"] == context.setup.historic_stage_id, "historic", "live"
    )
    frame["rating"] = pd.to_numeric(frame["rating"], errors="coerce")
    # JSON true arrives as "true" (PostgreSQL's ->>) or 1 (SQLite's).
    frame["cannot_judge"] = frame["cannot_judge"].astype(str).str.lower().isin(["true", "1"])
    frame["seconds"] = pd.to_numeric(frame["seconds"], errors="coerce")
    meta = items.set_index("item_id")[["item_key", "pair_id", "order", "connective"]]
    frame = frame.join(meta, on="item_id")
    return frame[
        [
            "item_key",
            "pair_id",
            "order",
            "connective",
            "rater",
            "rating",
            "source",
            "cannot_judge",
            "seconds",
        ]
    ].reset_index(drop=True)


def _single_item_answers(context: RatingsContext, purpose: str) -> pd.DataFrame:
    """Live answers on practice or attention-check items: rater, item, text, rating, expected
    range."""
    rows = Annotation.objects.filter(
        item_stage__item__project=context.project,
        item_stage__item__purpose=purpose,
        annotator__isnull=False,
    ).values_list(
        "annotator_id",
        "item_stage__item__payload__pair_id",
        "item_stage__item__payload__text",
        "payload__value",
        "item_stage__item__payload__expected_min",
        "item_stage__item__payload__expected_max",
    )
    frame = pd.DataFrame.from_records(
        list(rows),
        columns=["annotator_id", "item", "text", "rating", "expected_min", "expected_max"],
    )
    names = _usernames(frame["annotator_id"].unique()) if len(frame) else {}
    frame.insert(0, "rater", frame.pop("annotator_id").map(names))
    return frame


def attention_check_answers(context: RatingsContext) -> pd.DataFrame:
    return _single_item_answers(context, Item.Purpose.ATTENTION_CHECK)


def practice_answers(context: RatingsContext) -> pd.DataFrame:
    return _single_item_answers(context, Item.Purpose.PRACTICE)


# --- Progress --------------------------------------------------------------------------------


def counts_shown(context: RatingsContext) -> ShownCounts:
    """The counts the project's imports determine, counted now or, for a large project, as the
    worker stored them (ratings/stored_counts.py). The page reads them once per request and
    gives them to both ``progress`` and ``data_version``."""
    return project_counts_shown(context.project, context.setup.historic_stage_id)


def progress(context: RatingsContext, *, shown: ShownCounts | None = None) -> dict[str, Any]:
    """Counts for the progress cards: live rating stage (items, ratings collected and needed,
    completed items, raters, leases), practice, attention checks, imported ratings.
    ``shown``: ``counts_shown(context)`` when the caller has just read it; ``counted_at`` is
    when the pairs, items and imported ratings were counted (None: now)."""
    setup = context.setup
    shown = shown if shown is not None else counts_shown(context)
    counts = shown.counts
    # A project without its rating stage reads no rows either way (ids start at 1).
    rating_stage_id = setup.rating_stage_id or 0
    result: dict[str, Any] = {"pairs": counts.pairs, "counted_at": shown.stored_at}
    regular = ItemStage.objects.filter(stage_id=rating_stage_id, item__purpose=Item.Purpose.REGULAR)
    live = regular.aggregate(
        items=Count("pk"),
        needed=Sum("target_count"),
        collected=Sum("submitted_count"),
        leased=Sum("leased_count"),
        complete=Count("pk", filter=~Q(state=ItemStage.State.OPEN)),
    )
    live = {key: value or 0 for key, value in live.items()}
    live["percent"] = round(100 * live["collected"] / live["needed"]) if live["needed"] else 0
    submitted = Assignment.objects.filter(
        stage_id=rating_stage_id, status=Assignment.Status.SUBMITTED
    )
    live["raters"] = submitted.values("annotator_id").distinct().count()
    live["cannot_judge"] = Annotation.objects.filter(
        item_stage__stage_id=rating_stage_id, payload__cannot_judge=True
    ).count()
    result["live"] = live
    result["items_total"] = counts.regular_items
    checks = Annotation.objects.filter(
        item_stage__stage_id=rating_stage_id,
        item_stage__item__purpose=Item.Purpose.ATTENTION_CHECK,
    )
    result["checks"] = {
        "items": counts.check_items,
        "answers": checks.count(),
    }
    if setup.practice_stage_id:
        practice = ItemStage.objects.filter(stage_id=setup.practice_stage_id).aggregate(
            items=Count("pk"), answers=Sum("submitted_count")
        )
        result["practice"] = {
            "items": practice["items"] or 0,
            "answers": practice["answers"] or 0,
        }
    if setup.historic_stage_id:
        result["historic"] = {
            "items": counts.historic_items,
            "ratings": counts.historic_ratings,
            "raters": counts.historic_raters,
        }
    result["stopping"] = stopping_summary(context)
    return result


def stopping_summary(context: RatingsContext) -> dict[str, Any] | None:
    """Live stopping on the rating stage (ratings/stopping.py) for the progress cards: whether
    it is on and its rule (floor, cap = the overlap, confidence, interval width), the items and
    ordered pairs stopped early, and the ratings saved: for each stopped item, the overlap less
    the ratings it closed at (``target_count``), against the ratings the fixed overlap needs.
    None when it is off and nothing was ever stopped."""
    stage = context.setup.rating_stage
    if stage is None:
        return None
    option = (stage.config or {}).get("stopping") or None
    regular = ItemStage.objects.filter(stage=stage, item__purpose=Item.Purpose.REGULAR)
    stopped = regular.filter(stopped_at__isnull=False)
    counts = stopped.aggregate(items=Count("pk"), closed_at=Sum("target_count"))
    items = counts["items"] or 0
    if option is None and not items:
        return None
    pairs = stopped.values("item__payload__pair_id", "item__payload__order").distinct().count()
    return {
        "on": option is not None,
        "floor": option["floor"] if option else None,
        "cap": stage.overlap,
        "confidence_percent": round(100 * option["confidence"], 1) if option else None,
        "mean_ci_width": option.get("mean_ci_width") if option else None,
        "items": items,
        "pairs": pairs,
        "saved": items * stage.overlap - (counts["closed_at"] or 0),
        "needed": regular.count() * stage.overlap,
    }


def model_runs(project: Project) -> list[ModelRun]:
    return list(ModelRun.objects.filter(project=project).defer("answers").order_by("name"))


# --- The analysis ----------------------------------------------------------------------------


@dataclass
class Analysis:
    """The researcher page's computed content for one source and model run."""

    source: str
    report: report.Report
    plots: dict[str, str]
    run: ModelRun | None


def data_version(
    context: RatingsContext, run: ModelRun | None, *, shown: ShownCounts | None = None
) -> str:
    """Changes whenever the analysed data could have changed: annotations added to the
    project's stages, items imported, settings edited, the model run replaced.

    Live stages (rating, practice) are read by their annotations (count and last id: a new
    answer or an edited one changes them). Items and the historic stage are read from the
    counts their imports determine (``counts_shown``; ``shown``: when the caller has just read
    them): the historic stage by its item stages' counters, which the engine's historic import
    (annotation/services/historic.py) is the only writer of and sets to the ratings each item
    holds — a million imported ratings are one aggregate over their items, not a count over
    every rating (about 180 ms per poll). For a large project those counts are the ones the
    worker stored (ratings/stored_counts.py), so page and worker agree on the version while
    the stored counts stand, and an import's new version shows once they are counted again
    (every import asks for that, ``services.analyses_data_changed``)."""
    live_stage_ids = [
        stage_id
        for stage_id in (context.setup.rating_stage_id, context.setup.practice_stage_id)
        if stage_id
    ]
    annotations = Annotation.objects.filter(item_stage__stage_id__in=live_stage_ids).aggregate(
        n=Count("pk"), last=Max("pk")
    )
    counts = (shown if shown is not None else counts_shown(context)).counts
    parts = [
        context.project.pk,
        annotations["n"],
        annotations["last"],
        counts.historic_items,
        counts.historic_last,
        counts.historic_ratings,
        counts.items,
        counts.items_last,
        context.setup.updated_at.isoformat(),
        run.pk if run else "",
        run.created_at.isoformat() if run else "",
    ]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:20]


def compute_analysis(context: RatingsContext, *, source: str, run: ModelRun | None) -> Analysis:
    items = items_frame(context.project)
    pairs = pairs_frame(context.project)
    ratings = ratings_frame(context, source=source, items=items)
    checks = attention_check_answers(context)
    practice = practice_answers(context) if context.setup.practice_stage_id else None
    model = None
    if run is not None:
        model = {"name": run.name, "answer_kind": run.answer_kind, "answers": run.answers}
    seed = context.setup.rating_stage.seed if context.setup.rating_stage else 0
    built = report.build_report(
        ratings=ratings,
        items=items,
        pairs=pairs,
        connective_set=context.connective_set,
        rule=context.rule,
        scale=context.scale,
        checks=checks,
        practice=practice,
        model=model,
        seed=seed % (2**32),
    )
    figures: dict[str, str] = {}
    if built.ratings is not None and len(built.ratings):
        subsets = None
        if len(pairs) and (pairs["subset"] != "").any():
            subset_of_pair = pairs.set_index("pair_id")["subset"]
            subsets = items.set_index("item_key")["pair_id"].map(subset_of_pair)
        figures["distributions"] = plots.rating_distributions(
            built.ratings, context.connective_set, context.scale, by_subset=subsets
        )
        if built.item_means is not None:
            figures["means"] = plots.mean_by_connective(
                built.item_means, context.connective_set, subsets
            )
    if built.model_ratings is not None and built.model_ratings["model"].notna().any():
        figures["model_scatter"] = plots.model_scatter(
            built.model_ratings,
            context.connective_set,
            context.scale,
            model_name=built.model_name or "model",
        )
    return Analysis(source=source, report=built, plots=figures, run=run)


#: Tables the page never shows (their CSV downloads read the whole analysis, ``analysis``):
#: one row per item (100,000 at a million ratings) or per ordered pair. The page's slim copy
#: (StoredAnalysis.page) leaves them out, so a web process's first load of it reads and
#: unpickles a few hundred kilobytes rather than megabytes.
PAGE_LEFT_OUT = ("items", "labels", "model_labels")


def analysis_for_storage(result: Analysis, *, page: bool = False) -> bytes:
    """The analysis as StoredAnalysis.content: without the model run (re-attached on load) and
    without the long frames kept only to draw the plots, which are already drawn. ``page``:
    as StoredAnalysis.page, also without the tables in ``PAGE_LEFT_OUT``."""
    tables = result.report.tables
    if page:
        tables = {name: frame for name, frame in tables.items() if name not in PAGE_LEFT_OUT}
    slim = report.Report(
        **{
            **vars(result.report),
            "tables": tables,
            "ratings": None,
            "item_means": None,
            "model_ratings": None,
        }
    )
    return pickle.dumps(
        Analysis(source=result.source, report=slim, plots=result.plots, run=None),
        protocol=pickle.HIGHEST_PROTOCOL,
    )


class _LoadedAnalyses:
    """The last few unpickled stored analyses of this process, keyed by (row, version,
    computed_at): a new computation has a new key, so nothing is ever served stale. Bounded
    (a handful of selections; each holds its tables) and shared by the process's threads."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.entries: OrderedDict[tuple, Analysis] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple) -> Analysis | None:
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key]
            return None

    def put(self, key: tuple, value: Analysis) -> None:
        with self.lock:
            self.entries[key] = value
            self.entries.move_to_end(key)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)


_loaded_analyses = _LoadedAnalyses()


@dataclass
class AnalysisState:
    """What the researcher page can show for one source and run without computing: the stored
    analysis (None when none was ever computed), whether it matches the current data, and when
    it was computed."""

    analysis: Analysis | None
    fresh: bool
    version: str
    computed_at: Any = None
    queued: bool = False


def stored_analysis(
    context: RatingsContext,
    *,
    source: str,
    run: ModelRun | None,
    version: str | None = None,
    for_page: bool = False,
) -> AnalysisState:
    """The stored analysis of a source and model run and whether it is fresh (its data version
    is the current one). Never computes; ratings.services.analysis_refresh_request asks for a
    computation when it is missing or stale. ``version``: ``data_version(context, run)`` when
    the caller has just read it (the page does: each reading is several aggregates over the
    project's items and item stages). ``for_page``: its slim copy, without the tables in
    ``PAGE_LEFT_OUT`` (the whole one when no slim copy was stored)."""
    if version is None:
        version = data_version(context, run)
    # The row without its content (megabytes at a million ratings): the content is read and
    # unpickled once per stored computation and process, then kept here.
    row = (
        StoredAnalysis.objects.filter(
            project=context.project, source=source, run_key=run.pk if run else 0
        )
        .exclude(content=None)
        .defer("content")
        .first()
    )
    if row is None:
        return AnalysisState(analysis=None, fresh=False, version=version)
    memo_key = (row.pk, row.version, row.computed_at, for_page)
    result = _loaded_analyses.get(memo_key)
    if result is None:
        try:
            stored = StoredAnalysis.objects.filter(pk=row.pk)
            content = (
                stored.values_list(Coalesce("page", "content"), flat=True).first()
                if for_page
                else stored.values_list("content", flat=True).first()
            )
            result = pickle.loads(bytes(content or b""))
        except Exception:
            # Stored by an older version of the code whose classes no longer match: as good as
            # missing (the page asks for a new one).
            logger.warning("stored ratings analysis %s is unreadable; recomputing", row.pk)
            return AnalysisState(analysis=None, fresh=False, version=version)
        _loaded_analyses.put(memo_key, result)
    # A copy per request: the run is the request's own.
    result = copy.copy(result)
    result.run = run
    return AnalysisState(
        analysis=result,
        fresh=row.version == version,
        version=version,
        computed_at=row.computed_at,
        queued=row.queued_at is not None,
    )


def analysis(context: RatingsContext, *, source: str, run: ModelRun | None) -> Analysis:
    """The current analysis, for downloads: the stored one when it is fresh, else computed now
    (a download must match the data; the page itself never computes, see stored_analysis)."""
    state = stored_analysis(context, source=source, run=run)
    if state.fresh and state.analysis is not None:
        return state.analysis
    key = f"ratings:analysis:{context.project.pk}:{source}:{run.pk if run else 0}"
    cached = cache.get(key)
    if cached is not None and cached[0] == state.version:
        return cached[1]
    result = compute_analysis(context, source=source, run=run)
    cache.set(key, (state.version, result), CACHE_SECONDS)
    return result


def pair_sample(context: RatingsContext, limit: int = 5) -> list[dict[str, Any]]:
    """A few items of the project, rendered as raters see them (for the import page)."""
    rows = Item.objects.filter(project=context.project, purpose=Item.Purpose.REGULAR).order_by(
        "pk"
    )[:limit]
    return [{"key": item.external_id, "payload": item.payload} for item in rows]


#: The stage whose headline each source of the analysis gives on the Agreement page.
_STAGE_SOURCES = (
    ("rating_stage_id", "live", "of the ratings collected here"),
    ("historic_stage_id", "historic", "of the imported ratings"),
)


def stage_headlines(project: Project, stages) -> dict[int, Any]:
    """Headlines for the Agreement page's table of stages (agreement.headlines provider): the
    rating stage shows the "Collected here" analysis and the historic stage the "Imported"
    one, Krippendorff's α (ordinal) with its bootstrap interval, read from the same stored
    analysis as the ratings page (stored_analysis), so both pages show one figure. A missing or
    stale analysis is asked for (services.analysis_refresh_request) and shown as it stands."""
    from django.urls import reverse

    from agreement.headlines import Headline
    from ratings import services

    context = ratings_context(project)
    if context is None:
        return {}
    wanted = {stage.pk for stage in stages}
    dashboard = reverse("ratings:dashboard", args=[project.slug])
    headlines = {}
    for field_name, source, what in _STAGE_SOURCES:
        stage_id = getattr(context.setup, field_name)
        if stage_id is None or stage_id not in wanted:
            continue
        state = stored_analysis(context, source=source, run=None, for_page=True)
        if not state.fresh:
            services.analysis_refresh_request(project_id=project.pk, source=source)
        figure = state.analysis.report.figures.get("alpha_ordinal") if state.analysis else None
        headlines[stage_id] = Headline(
            metric="krippendorff_alpha_ordinal",
            value=figure.value if figure else None,
            ci_low=figure.low if figure else None,
            ci_high=figure.high if figure else None,
            computed_at=state.computed_at,
            url=f"{dashboard}?source={source}",
            note=what + ("" if state.fresh else " (updating…)"),
        )
    return headlines


def import_batches(project: Project, *, limit: int = 10) -> list[ImportBatch]:
    """The project's newest imports of pairs and historic ratings (the import page lists
    ``limit``)."""
    return list(project.import_batches.filter(options__ratings__in=["pairs", "historic"])[:limit])
