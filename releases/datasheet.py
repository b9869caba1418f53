"""The README.md dataset card of a release, rendered from plain data (no Django, no templates).

``render_datasheet(data)`` takes a dict (keys below; all but ``name`` and ``version`` optional)
and returns Markdown. Missing sections say "Not recorded." rather than disappearing, so a reader
can tell "none" from "unknown".

* ``name``, ``version``, ``description``, ``created_at`` (str or datetime), ``license`` (the
  project's SPDX identifier, chosen on its Setup page: studio/licences.py), ``homepage``
* ``citation``: BibTeX text, printed in a ``bibtex`` block (the project's own, typed on its Setup
  page, else one built from its name: releases/services/figures.py ``default_citation``)
* ``annotators_by_role``: ``{"annotator": 9, "reviewer": 3}`` — counts only. A datasheet never
  names people: any list, string or mapping in place of a count raises ``ValueError``, as does a
  top-level ``annotators``/``people``/``contributors`` key.
* ``stages``: a list of ``{"name", "task", "overlap", "items_in", "items_out", "agreement"}``
  where ``agreement`` is ``None`` or ``{"metric", "value", "ci_low", "ci_high", "ci_level",
  "n_items", "n_annotators", "computed_at", "scope"}`` (``computed_at``: when the figure was
  computed, printed as given, so pass it in UTC with its offset; ``scope``: which items it
  covers, e.g. "released items")
* ``fields``: ``[{"name", "type", "required", "description"}]`` (``RowSchema.describe()`` gives
  these)
* ``files``: ``[{"name", "rows", "bytes", "sha256"}]`` (``Manifest.to_dict()["files"]``)
* ``items``: the number of items in the release
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

METRIC_NAMES = {
    "fleiss_kappa": "Fleiss' κ",
    "cohen_kappa": "Cohen's κ",
    "krippendorff_alpha": "Krippendorff's α",
    "krippendorff_alpha_nominal": "Krippendorff's α (nominal)",
    "krippendorff_alpha_interval": "Krippendorff's α (interval)",
    "krippendorff_alpha_ordinal": "Krippendorff's α (ordinal)",
    "percent_agreement": "Percent agreement",
    "icc": "ICC",
}
IDENTITY_KEYS = ("annotators", "people", "contributors", "annotator_names", "reviewers")
NOT_RECORDED = "Not recorded."


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "—"
    text = str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines.extend("| " + " | ".join(_cell(value) for value in row) + " |" for row in rows)
    return "\n".join(lines)


def _number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return f"{float(value):.{digits}f}"


def _check_no_identities(data: Mapping[str, Any]) -> None:
    for key in IDENTITY_KEYS:
        if key in data:
            raise ValueError(
                f"datasheet data has {key!r}: a datasheet gives counts of annotators by role, "
                f"never identities; pass annotators_by_role instead"
            )
    for role, count in (data.get("annotators_by_role") or {}).items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(
                f"annotators_by_role[{role!r}] must be a count (a whole number), not "
                f"{type(count).__name__}: a datasheet never lists identities"
            )


def _created(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    return str(value) if value else "—"


def _annotators_section(data: Mapping[str, Any]) -> str:
    roles = data.get("annotators_by_role") or {}
    if not roles:
        return NOT_RECORDED
    rows = [[role, _number(count)] for role, count in sorted(roles.items())]
    rows.append(["**total**", _number(sum(roles.values()))])
    return "People who took part, counted by role. Identities are never published.\n\n" + _table(
        ["Role", "People"], rows
    )


def _stages_section(stages: list[Mapping[str, Any]]) -> str:
    if not stages:
        return NOT_RECORDED
    rows = []
    for stage in stages:
        items_in, items_out = stage.get("items_in"), stage.get("items_out")
        kept = (
            f"{100 * items_out / items_in:.1f} %"
            if isinstance(items_in, int) and isinstance(items_out, int) and items_in > 0
            else "—"
        )
        rows.append(
            [
                stage.get("name"),
                stage.get("task"),
                stage.get("overlap"),
                _number(items_in),
                _number(items_out),
                kept,
            ]
        )
    return _table(["Stage", "Task", "Annotators per item", "Items in", "Items out", "Kept"], rows)


def _agreement_section(stages: list[Mapping[str, Any]]) -> str:
    """Per stage the metric, value, CI and counts. When every figure was computed at one moment
    over the released items (a build), that moment is said once above the table; otherwise
    each row states its own time in a "Computed" column."""
    if not stages:
        return NOT_RECORDED
    figures: list[Mapping[str, Any]] = [
        stage["agreement"] for stage in stages if stage.get("agreement")
    ]
    moments = {figure.get("computed_at") for figure in figures}
    at_build = (
        bool(figures)
        and len(moments) == 1
        and None not in moments
        and all(figure.get("scope") == "released items" for figure in figures)
    )
    with_time = bool(figures) and not at_build and moments != {None}
    rows = []
    for stage in stages:
        agreement = stage.get("agreement")
        if not agreement:
            rows.append([stage.get("name"), NOT_RECORDED, "—", "—", "—", "—"] + ["—"] * with_time)
            continue
        metric = agreement.get("metric", "")
        low, high = agreement.get("ci_low"), agreement.get("ci_high")
        level = agreement.get("ci_level", 0.95)
        interval = (
            f"[{_number(low)}, {_number(high)}] ({round(level * 100)} %)"
            if low is not None and high is not None
            else "—"
        )
        row = [
            stage.get("name"),
            METRIC_NAMES.get(metric, metric),
            _number(agreement.get("value")),
            interval,
            _number(agreement.get("n_items")),
            _number(agreement.get("n_annotators")),
        ]
        rows.append(row + [agreement.get("computed_at") or "—"] * with_time)
    header = ["Stage", "Metric", "Value", "Confidence interval", "Items", "Annotators"]
    table = _table(header + ["Computed"] * with_time, rows)
    if at_build:
        return (
            f"Computed at {moments.pop()} (UTC), when this release was built, over the "
            f"annotations of exactly the items it holds (the last phase of each stage).\n\n" + table
        )
    return table


def _fields_section(fields: list[Mapping[str, Any]]) -> str:
    if not fields:
        return NOT_RECORDED
    rows = [
        [
            f"`{field['name']}`",
            field.get("type"),
            "yes" if field.get("required") else "no",
            field.get("description"),
        ]
        for field in fields
    ]
    return _table(["Field", "Type", "Required", "Description"], rows)


def _files_section(files: list[Mapping[str, Any]]) -> str:
    if not files:
        return NOT_RECORDED
    rows = [
        [
            f"`{entry['name']}`",
            _number(entry.get("rows")),
            _number(entry.get("bytes")),
            f"`{entry['sha256']}`",
        ]
        for entry in sorted(files, key=lambda entry: entry["name"])
    ]
    return (
        _table(["File", "Rows", "Bytes", "SHA-256"], rows)
        + "\n\nCheck with `sha256sum -c SHA256SUMS` (or compare with `manifest.json`)."
    )


def render_datasheet(data: Mapping[str, Any]) -> str:
    """Markdown dataset card for one release; see the module docstring for ``data``."""
    _check_no_identities(data)
    name = data["name"]
    version = data["version"]
    stages = list(data.get("stages") or [])
    summary_rows = [
        ["Version", version],
        ["Created", _created(data.get("created_at"))],
        ["License", data.get("license") or "—"],
        ["Items", _number(data.get("items"))],
    ]
    if data.get("homepage"):
        summary_rows.append(["Homepage", data["homepage"]])
    citation = (data.get("citation") or "").strip()
    parts = [
        f"# {name} — release {version}",
        (data.get("description") or "").strip() or NOT_RECORDED,
        _table(["Property", "Value"], summary_rows),
        "## Annotators",
        _annotators_section(data),
        "## Pipeline: items in and out of every stage",
        _stages_section(stages),
        "## Agreement per stage",
        _agreement_section(stages),
        "## Fields",
        _fields_section(list(data.get("fields") or [])),
        "## Files",
        _files_section(list(data.get("files") or [])),
        "## Citation",
        f"```bibtex\n{citation}\n```" if citation else NOT_RECORDED,
    ]
    return "\n\n".join(parts) + "\n"
