"""Label Studio's project export (the "JSON" export format: a list of tasks) read into a
:class:`interop.sources.SourceExport`.

The shape read (Label Studio's export formats, "JSON"): a list of tasks, each ``{"id",
"data": {...}, "meta"?, "annotations": [{"id", "completed_by", "result": [{"from_name",
"to_name", "type", "value": {...}}], "was_cancelled", "ground_truth"?, "lead_time",
"created_at"}], "predictions": [...]}``. ``completed_by`` is a user id (a number; older
versions write ``{"id", "email", …}``, of which only the id is read: e-mails are never kept).

What each result contributes: ``choices`` → its list of choices, ``rating`` → the number,
``number`` → the number, ``textarea`` → its list of texts; other types (``labels`` spans,
regions, ``taxonomy``, …) are read as their whole ``value`` so that the mapping can name them
when they are asked for. Cancelled (skipped) annotations and predictions are counted in
``skipped``, never imported: the engine keeps no model suggestions beside annotations.
"""

from __future__ import annotations

import json
from typing import Any

from interop.sources import Problems, SourceAnswer, SourceExport, SourceTask

TOOL = "label_studio"
#: The key of ``meta`` holding an item's external id in exports written by Rungwise
#: (``interop.selectors.label_studio_tasks``), so that a round trip keeps it.
META_EXTERNAL_ID = "rungwise_external_id"

#: Label Studio result type → the key of ``value`` that holds the answer.
VALUE_KEYS = {"choices": "choices", "rating": "rating", "number": "number", "textarea": "text"}


def _rater(completed_by: Any) -> str | None:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("id")
    if isinstance(completed_by, bool) or completed_by is None:
        return None
    if isinstance(completed_by, int | str) and str(completed_by).strip():
        return str(completed_by).strip()
    return None


def label_studio_read(content: bytes, *, filename: str) -> SourceExport:
    """The tasks of a Label Studio JSON export; ApplicationError naming every problem (file,
    task id, field) when the file is not one."""
    problems = Problems()
    try:
        tasks = json.loads(content.decode("utf-8-sig"))
    except UnicodeDecodeError:
        problems.add(filename, None, "", "is not UTF-8 text")
        problems.raise_any("The Label Studio export could not be read")
    except json.JSONDecodeError as error:
        problems.add(filename, None, "", f"is not JSON ({error.msg}, line {error.lineno})")
        problems.raise_any("The Label Studio export could not be read")
    if isinstance(tasks, dict):
        tasks = [tasks]
    if not isinstance(tasks, list):
        problems.add(filename, None, "", "is not a list of tasks (Label Studio's JSON export)")
        problems.raise_any("The Label Studio export could not be read")
    export = SourceExport(tool=TOOL, files=[filename], tasks=[])
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        read = _task(task, index, filename, problems, export)
        if read is None:
            continue
        if read.external_id in seen:
            problems.add(filename, read.source_id, "id", "appears more than once")
            continue
        seen.add(read.external_id)
        export.tasks.append(read)
    if not export.tasks and not problems:
        problems.add(filename, None, "", "holds no tasks")
    problems.raise_any("The Label Studio export could not be imported")
    return export


def _task(
    task: Any, index: int, filename: str, problems: Problems, export: SourceExport
) -> SourceTask | None:
    if not isinstance(task, dict):
        problems.add(filename, f"#{index + 1}", "", "is not a task (an object)")
        return None
    task_id = task.get("id")
    label = task_id if task_id is not None else f"#{index + 1}"
    if isinstance(task_id, bool) or not isinstance(task_id, int | str) or not str(task_id):
        problems.add(filename, label, "id", "is missing (every task of an export has one)")
        return None
    data = task.get("data")
    if not isinstance(data, dict) or not data:
        problems.add(filename, label, "data", "is missing or not an object")
        return None
    meta = task.get("meta")
    if not isinstance(meta, dict):
        meta = {}
    external_id = str(meta.get(META_EXTERNAL_ID) or task_id)
    read = SourceTask(source_id=str(task_id), external_id=external_id, data=dict(data))
    predictions = task.get("predictions") or []
    if isinstance(predictions, list) and predictions:
        export.skip("predictions", len(predictions))
    annotations = task.get("annotations") or []
    if not isinstance(annotations, list):
        problems.add(filename, label, "annotations", "is not a list")
        return None
    for number, annotation in enumerate(annotations):
        field = f"annotations[{number}]"
        if not isinstance(annotation, dict):
            problems.add(filename, label, field, "is not an object")
            continue
        if annotation.get("was_cancelled"):
            export.skip("cancelled annotations")
            continue
        rater = _rater(annotation.get("completed_by"))
        if rater is None:
            if annotation.get("ground_truth"):
                rater = ""  # a decision written without a person (e.g. Rungwise's own export)
            else:
                problems.add(filename, label, f"{field}.completed_by", "names no user")
                continue
        results = annotation.get("result")
        if not isinstance(results, list):
            problems.add(filename, label, f"{field}.result", "is not a list")
            continue
        if not results:
            export.skip("empty annotations")
            continue
        for place, result in enumerate(results):
            where = f"{field}.result[{place}]"
            if not isinstance(result, dict) or not isinstance(result.get("value"), dict):
                problems.add(filename, label, where, "has no value object")
                continue
            kind = str(result.get("type") or "")
            name = str(result.get("from_name") or "")
            if not kind or not name:
                problems.add(filename, label, where, "names no from_name or type")
                continue
            key = VALUE_KEYS.get(kind)
            value = result["value"].get(key) if key else result["value"]
            read.answers.append(
                SourceAnswer(
                    rater=rater,
                    field=name,
                    kind=kind,
                    value=value,
                    file=filename,
                    task=str(label),
                    place=where,
                )
            )
    return read
