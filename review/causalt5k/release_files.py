"""Reading CausalT5k's release folder into raw records, with every file's fate reported.

Django-free. ``read_release`` walks the folder: each ``.json`` file is one JSON document (a list
of records, ``{metadata, cases}``, an object keyed by case, records wrapped in
``{case_id, responses}``) read by the import core's JSON reader, each ``.jsonl`` file JSON Lines
read by the import core's record reader. A file that is not valid in its form is a
``FileResult`` with where and why, and nothing is taken from it. What the records mean is review.causalt5k.normalise's concern."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imports.core.readers import ImportFileError, RecordReader, read_json_document

#: Source kinds, in the order their values win a merge (review.causalt5k.normalise.build_cases).
SOURCE_KINDS = ("final", "clean", "unlabelled", "review_round2", "review_round1", "raw")


@dataclass
class FileResult:
    path: str
    kind: str
    status: str  # "ok" | "invalid"
    records: int = 0
    error: str = ""
    detail: str = ""


@dataclass
class RawRecord:
    file: str
    index: str  # position in the file: "12", "cases[3]", "[4].responses.response1[0]", a key
    kind: str
    data: dict


def _source_kind(rel: str) -> str | None:
    if rel.startswith("final_dataset/clean/"):
        return "clean"
    if rel.startswith("final_dataset/unlabelled/"):
        return "unlabelled"
    if re.match(r"final_dataset/D\d+/D\d+_L[123]\.json$", rel):
        return "final"
    for kind in ("review_round1", "review_round2", "raw_submissions"):
        if rel.startswith(kind + "/"):
            return "raw" if kind == "raw_submissions" else kind
    return None


def describe_json_error(text: str, error: json.JSONDecodeError) -> str:
    """Why a file is not one JSON document, in words a person can act on."""
    where = f"line {error.lineno}, column {error.colno}"
    if error.msg.startswith("Invalid \\escape"):
        snippet = text[max(0, error.pos - 20) : error.pos + 6].replace("\n", " ")
        return f'invalid backslash escape at {where} (…{snippet}…): JSON allows only \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX'
    if error.msg.startswith("Extra data"):
        values, pos, decoder = 0, 0, json.JSONDecoder()
        valid = True
        while pos < len(text):
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            try:
                _, pos = decoder.raw_decode(text, pos)
                values += 1
            except json.JSONDecodeError:
                valid = False
                break
        tail = "" if valid else "; the text after them is not JSON either"
        return (
            f"a second JSON value starts at {where}: {values} JSON values one after another "
            f"(JSON Lines or concatenated documents), not one document{tail}"
        )
    return f"{error.msg} at {where}"


def _expand(data: Any, kind: str, file: str) -> tuple[list[RawRecord], str]:
    """The records of one parsed JSON document and a note on its shape."""
    note = ""
    if isinstance(data, dict):
        lists = [k for k in ("cases", "questions") if isinstance(data.get(k), list)]
        if lists:
            key = lists[0]
            skipped = [k for k in data if k != key]
            note = f"records under '{key}'" + (
                f"; block {skipped} is file metadata" if skipped else ""
            )
            items = [(f"{key}[{i}]", r) for i, r in enumerate(data[key])]
        elif data and all(isinstance(v, dict) for v in data.values()):
            note = "an object keyed by case"
            items = [(k, {**v, "_key": k}) for k, v in data.items()]
        else:
            note = "one object"
            items = [("0", data)]
    elif isinstance(data, list):
        items = [(str(i), r) for i, r in enumerate(data)]
    else:
        items = [("0", data)]
    out, wrapped = _records(items, kind, file)
    return out, note or wrapped


def _records(items: Iterable[tuple[str, Any]], kind: str, file: str) -> tuple[list[RawRecord], str]:
    """(position, value) pairs as records, each ``{case_id, responses}`` wrapper opened into
    its responses; the note says when there was one."""
    out: list[RawRecord] = []
    note = ""
    for index, record in items:
        if isinstance(record, dict) and isinstance(record.get("responses"), dict):
            note = "records wrapped in {case_id, responses}"
            for name, inner in record["responses"].items():
                for j, sub in enumerate(inner if isinstance(inner, list) else [inner]):
                    out.append(RawRecord(file, f"{index}.responses.{name}[{j}]", kind, sub))
            continue
        out.append(RawRecord(file, index, kind, record))
    return out, note


def _read_json_lines(path: Path, kind: str, rel: str) -> tuple[list[RawRecord], str]:
    """The records of a JSON Lines file, one per non-blank line, read by the import core's
    reader (``imports.core.readers.RecordReader``: UTF-8 with or without a byte-order mark,
    the values' limits of ``annotation.values``). A record's position is its line
    (``"line 12"``). Raises ``ValueError`` with the reader's message (its line and column) for
    the first line that is not a JSON value, or for a file that cannot be read at all: like a
    JSON file that is not valid, such a file gives nothing."""
    items: list[tuple[str, Any]] = []
    with path.open("rb") as handle:
        reader = RecordReader(handle, fmt="jsonl", filename=path.name)
        try:
            for raw in reader:
                if raw.error is not None:
                    raise ValueError(raw.error.message.rstrip("."))
                items.append((f"line {raw.line}", raw.data))
        except ImportFileError as error:
            raise ValueError(error.error.message.rstrip(".")) from None
    found, note = _records(items, kind, rel)
    return found, note or f"JSON Lines, {len(items)} lines"


def _read_json_file(path: Path) -> Any:
    """One ``.json`` file as one JSON document, read by the import core's JSON reader
    (``imports.core.readers.read_json_document``: UTF-8 with or without a byte-order mark, the
    first other byte named by line and column; nested at most ``annotation.values.MAX_DEPTH``
    levels; no NaN or Infinity; no value the database cannot store, named by its path). Raises
    ``ValueError`` with the reason: for JSON syntax, ``describe_json_error``'s, which names
    more for the release's two broken files (the escape and its context, the count of
    documents written one after another); otherwise the core's message."""
    data = path.read_bytes()
    try:
        return read_json_document(data, at_end="the file ends")
    except ImportFileError as refused:
        if refused.error.code == "json_syntax":
            text = data.decode("utf-8-sig")
            try:
                json.loads(text)
            except json.JSONDecodeError as error:
                raise ValueError(describe_json_error(text, error)) from None
        raise ValueError(refused.error.message.rstrip(".")) from None


def read_release(root: Path) -> tuple[list[FileResult], list[RawRecord]]:
    """Every JSON / JSON Lines file of the release, in path order. A ``.json`` file is one JSON
    document (``_read_json_file``); a ``.jsonl`` file is JSON Lines, one value per line, read by the import core's
    reader (``_read_json_lines``). A file that is not valid in its form is reported with where
    and why, and nothing is taken from it."""
    root = Path(root)
    files: list[FileResult] = []
    records: list[RawRecord] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if path.suffix not in (".json", ".jsonl"):
            continue
        kind = _source_kind(rel)
        if kind is None:
            files.append(FileResult(rel, "unknown", "invalid", error="not a folder of the release"))
            continue
        if path.suffix == ".jsonl":
            try:
                found, note = _read_json_lines(path, kind, rel)
            except ValueError as error:
                files.append(FileResult(rel, kind, "invalid", error=str(error)))
                continue
            files.append(FileResult(rel, kind, "ok", records=len(found), detail=note))
            records.extend(found)
            continue
        try:
            data = _read_json_file(path)
        except ValueError as error:
            files.append(FileResult(rel, kind, "invalid", error=str(error)))
            continue
        found, note = _expand(data, kind, rel)
        files.append(FileResult(rel, kind, "ok", records=len(found), detail=note))
        records.extend(found)
    return files, records
