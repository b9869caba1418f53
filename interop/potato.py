"""A Potato annotation output folder read into a :class:`interop.sources.SourceExport`.

What is read (Potato's own files, as ``potato start`` writes them):

* ``annotation_output/<user>/user_state.json`` (Potato 2.x): ``instance_id_to_label_to_value``
  maps an instance id to ``[[{"schema", "name"}, value], …]`` — a radio, likert or checkbox
  answer is the option's ``name`` with value ``"on"`` / ``"true"``; a text box, slider or
  number keeps the answer in ``value``;
* or ``annotation_output/<user>/annotated_instances.jsonl`` (Potato 1.x): one instance a line,
  ``{"id", "label_annotations": {schema: {name: value}}, "span_annotations": [...]}``;
* the config (``*.yaml``: ``annotation_schemes`` with each scheme's ``name`` and
  ``annotation_type``, ``item_properties.id_key``, ``data_files``) and its data files (JSON
  Lines, JSON arrays, CSV / TSV), which hold the instances' text. Without a config, every
  ``.jsonl`` / ``.json`` / ``.csv`` / ``.tsv`` file outside the users' folders is data, ``id``
  the id key, and a scheme whose answers are all ticked options is a choice (a likert scale when
  every option is a number).

The user is the folder's name (stored only as a pseudonym: ``interop.pseudonyms``). Span
answers are counted in ``skipped`` (no value kind holds a span).
"""

from __future__ import annotations

import csv
import io
import json
import posixpath
from collections.abc import Mapping
from typing import Any

import yaml

from interop.sources import Problems, SourceAnswer, SourceExport, SourceTask

TOOL = "potato"
STATE_FILE = "user_state.json"
INSTANCES_FILE = "annotated_instances.jsonl"
DATA_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv")
TICKED = frozenset({"on", "true", "True", True})
#: Potato's scheme types → the types ``interop.mapping`` knows.
SCHEME_TYPES = {
    "radio": "radio",
    "select": "select",
    "likert": "likert",
    "multiselect": "multiselect",
    "checkbox": "multiselect",
    "text": "text",
    "textbox": "text",
    "number": "number",
    "slider": "slider",
}


def _text(content: bytes, path: str, problems: Problems) -> str | None:
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError:
        problems.add(path, None, "", "is not UTF-8 text")
        return None


def _config(files: Mapping[str, bytes], problems: Problems) -> tuple[str, dict[str, Any]] | None:
    candidates = sorted(
        (path for path in files if path.endswith((".yaml", ".yml"))),
        key=lambda path: (path.count("/"), path),
    )
    for path in candidates:
        text = _text(files[path], path, problems)
        try:
            config = yaml.safe_load(text or "")
        except yaml.YAMLError as error:
            problems.add(path, None, "", f"is not YAML ({error})")
            continue
        if isinstance(config, dict) and "annotation_schemes" in config:
            return path, config
    return None


def _rows(path: str, content: bytes, problems: Problems) -> list[dict[str, Any]]:
    text = _text(content, path, problems)
    if text is None:
        return []
    if path.endswith((".csv", ".tsv")):
        delimiter = "\t" if path.endswith(".tsv") else ","
        return [dict(row) for row in csv.DictReader(io.StringIO(text), delimiter=delimiter)]
    try:
        if path.endswith(".json"):
            rows = json.loads(text)
            rows = rows if isinstance(rows, list) else [rows]
        else:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        problems.add(path, None, f"line {error.lineno}", f"is not JSON ({error.msg})")
        return []
    good = [row for row in rows if isinstance(row, dict)]
    if len(good) != len(rows):
        problems.add(path, None, "", "holds lines that are not objects")
    return good


def _entries_2x(state: Any) -> dict[str, dict[str, list[tuple[str, Any]]]] | None:
    """{instance id: {schema: [(name, value)]}} of a user_state.json (None: not one)."""
    if not isinstance(state, dict) or not isinstance(
        state.get("instance_id_to_label_to_value"), dict
    ):
        return None
    found: dict[str, dict[str, list[tuple[str, Any]]]] = {}
    for instance, pairs in state["instance_id_to_label_to_value"].items():
        for pair in pairs if isinstance(pairs, list) else []:
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], dict):
                label, value = pair
                schemas = found.setdefault(str(instance), {})
                schemas.setdefault(str(label.get("schema")), []).append(
                    (str(label.get("name")), value)
                )
    return found


def _answer(
    schema: str, scheme_type: str | None, entries: list[tuple[str, Any]]
) -> tuple[str, Any]:
    """(type, value) of one schema's entries."""
    ticked = [name for name, value in entries if value in TICKED]
    if scheme_type is None:
        if len(ticked) == len(entries):
            numeric = all(name.lstrip("-").isdigit() for name in ticked)
            scheme_type = "likert" if numeric and len(ticked) == 1 else "radio"
        else:
            scheme_type = "text"
    if scheme_type in ("radio", "select", "multiselect"):
        return scheme_type, ticked
    if scheme_type == "likert":
        return scheme_type, ticked[0] if len(ticked) == 1 else ticked
    values = [value for _, value in entries if value not in (None, "")]
    if scheme_type in ("number", "slider"):
        return "number", values[0] if len(values) == 1 else values
    return "text", values


def potato_read(files: Mapping[str, bytes], *, name: str) -> SourceExport:
    """The instances and answers of a Potato output folder (``files``: path within the folder
    or zip → content); ApplicationError naming every problem (file, instance id, field)."""
    problems = Problems()
    files = {path.replace("\\", "/").lstrip("/"): content for path, content in files.items()}
    found_config = _config(files, problems)
    schemes: dict[str, str] = {}
    id_key = "id"
    data_paths: list[str]
    users: dict[str, str] = {}  # file → user
    for path in sorted(files):
        base = posixpath.basename(path)
        if base in (STATE_FILE, INSTANCES_FILE):
            user = posixpath.basename(posixpath.dirname(path))
            if user:
                users[path] = user
    if found_config is not None:
        config_path, config = found_config
        for scheme in config.get("annotation_schemes") or []:
            if isinstance(scheme, dict) and scheme.get("name"):
                kind = str(scheme.get("annotation_type") or "")
                schemes[str(scheme["name"])] = SCHEME_TYPES.get(kind, kind)
        id_key = str((config.get("item_properties") or {}).get("id_key") or "id")
        folder = posixpath.dirname(config_path)
        data_paths = []
        for wanted in config.get("data_files") or []:
            joined = posixpath.normpath(posixpath.join(folder, str(wanted)))
            match = joined if joined in files else None
            if match is None:  # a folder zipped from elsewhere: match the file's name
                match = next(
                    (p for p in files if posixpath.basename(p) == posixpath.basename(joined)), None
                )
            if match is None:
                problems.add(config_path, None, "data_files", f"{wanted} is not in the upload")
            else:
                data_paths.append(match)
    else:
        data_paths = [
            path
            for path in sorted(files)
            if path.endswith(DATA_SUFFIXES)
            and path not in users
            and "annotation_output/" not in path
        ]
    if not users:
        problems.add(
            name,
            None,
            "",
            f"has no annotation_output/<user>/{STATE_FILE} (Potato 2) "
            f"or {INSTANCES_FILE} (Potato 1)",
        )
    export = SourceExport(tool=TOOL, files=sorted(users), tasks=[])
    tasks: dict[str, SourceTask] = {}
    for path in data_paths:
        for number, row in enumerate(_rows(path, files[path], problems), start=1):
            instance = row.get(id_key)
            if instance in (None, ""):
                problems.add(path, f"row {number}", id_key, "is missing")
                continue
            key = str(instance)
            if key in tasks:
                problems.add(path, key, id_key, "appears more than once")
                continue
            tasks[key] = SourceTask(source_id=key, external_id=key, data=dict(row))
    if not tasks and not problems:
        problems.add(name, None, "data_files", "no data file with the instances was found")
    for path, user in users.items():
        text = _text(files[path], path, problems)
        if text is None:
            continue
        if path.endswith(STATE_FILE):
            try:
                state = json.loads(text)
            except json.JSONDecodeError as error:
                problems.add(path, None, "", f"is not JSON ({error.msg}, line {error.lineno})")
                continue
            entries = _entries_2x(state)
            spans = state.get("instance_id_to_span_to_value") if entries is not None else None
            for found in (spans or {}).values():
                if found:
                    export.skip("span answers", len(found))
            if entries is None:
                problems.add(path, None, "instance_id_to_label_to_value", "is missing")
                continue
        else:
            entries = {}
            for line in _rows(path, files[path], problems):
                labels = line.get("label_annotations") or {}
                entries[str(line.get("id"))] = {
                    str(schema): list(values.items())
                    for schema, values in labels.items()
                    if isinstance(values, dict)
                }
                if line.get("span_annotations"):
                    export.skip("span answers", len(line["span_annotations"]))
        for instance, by_schema in entries.items():
            task = tasks.get(instance)
            if task is None:
                problems.add(path, instance, "id", "is not an instance of the data files")
                continue
            for schema, pairs in by_schema.items():
                kind, value = _answer(schema, schemes.get(schema), pairs)
                task.answers.append(
                    SourceAnswer(
                        rater=user,
                        field=schema,
                        kind=kind,
                        value=value,
                        file=path,
                        task=instance,
                        place=schema,
                    )
                )
    problems.raise_any("The Potato output could not be imported")
    export.tasks = list(tasks.values())
    return export
