"""Values out of CausalT5k's submitted records: keys in snake case, Python reprs parsed with
``ast.literal_eval`` (never ``eval``), nested records flattened, texts, variables and scores read
in the spellings the release uses. Django-free, pure functions; review.causalt5k.normalise maps
the values to the canonical vocabulary."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

#: Spellings of "no value" in the release.
NULLS = {"", "none", "null", "n/a", "na", "nan", "-"}


def snake(key: str) -> str:
    """'pearlLevel' → 'pearl_level', 'Case ID' → 'case_id', 'variables, X' → 'variables_x'."""
    key = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(key))
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def parse_value(value: Any) -> Any:
    """Strings holding JSON or a Python literal become the value; 'None'/'N/A'/'' become None."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in NULLS:
            return None
        if text in ("True", "true"):
            return True
        if text in ("False", "false"):
            return False
        if text[:1] in "{[" and text[-1:] in "}]":
            try:
                return json.loads(text)
            except ValueError:
                pass
            try:
                return ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return value
        return value
    return value


def flatten(record: dict) -> dict[str, Any]:
    """Keys in snake case, reprs parsed; an ``annotations``/``annotation`` object's keys are
    fallbacks (the record's own keys win)."""
    flat: dict[str, Any] = {}
    nested: dict[str, Any] = {}
    for key, value in record.items():
        name = snake(key)
        value = parse_value(value)
        if name in ("annotations", "annotation") and isinstance(value, dict):
            for k, v in value.items():
                nested.setdefault(snake(k), parse_value(v))
            flat.setdefault("annotation_meta", value)
            continue
        flat[name] = value
    for key, value in nested.items():
        if flat.get(key) is None:
            flat[key] = value
    return flat


def first(flat: dict, *names: str) -> Any:
    for name in names:
        value = flat.get(name)
        if value is not None and value != "" and value != [] and value != {}:
            return value
    return None


def text_of(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return "\n".join(str(v) for v in value if v is not None) or None
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    text = str(value).strip()
    return text or None


def variable(value: Any) -> dict | None:
    """'Exercise' or {'name', 'role'} or 'X = Exercise' → {'name', 'role'}."""
    if value is None:
        return None
    if isinstance(value, dict):
        name = text_of(value.get("name") or value.get("variable") or value.get("description"))
        if name is None:
            return None
        return {"name": name, "role": text_of(value.get("role"))}
    text = str(value).strip()
    text = re.sub(r"^[XYZ]\d?\s*[=:]\s*", "", text)
    return {"name": text, "role": None} if text else None


def variables_of(flat: dict) -> dict:
    raw = flat.get("variables")
    xs: dict[str, Any] = {"X": None, "Y": None, "Z": []}
    if isinstance(raw, list):  # ["X = …", "Y = …", "Z = …"]
        as_dict: dict[str, Any] = {}
        for entry in raw:
            match = re.match(r"^\s*([XYZ])\d?\s*[=:]", str(entry))
            if match:
                as_dict.setdefault(match.group(1), []).append(entry)
        raw = {k: (v[0] if k != "Z" else v) for k, v in as_dict.items()}
    if isinstance(raw, dict):
        lower = {str(k).upper(): v for k, v in raw.items()}
        xs["X"] = variable(lower.get("X"))
        xs["Y"] = variable(lower.get("Y"))
        zs = lower.get("Z")
        zs = zs if isinstance(zs, list) else [zs] if zs is not None else []
        for k in sorted(lower):
            if re.match(r"^Z\d$", k):
                zs.append(lower[k])
        xs["Z"] = [v for v in (variable(z) for z in zs) if v]
    xs["X"] = xs["X"] or variable(first(flat, "var_x", "variables_x", "x"))
    xs["Y"] = xs["Y"] or variable(first(flat, "var_y", "variables_y", "y"))
    if not xs["Z"]:
        zs = [first(flat, f"var_z{i}") for i in (1, 2, 3)] + [first(flat, "variables_z", "z")]
        xs["Z"] = [v for v in (variable(z) for z in zs) if v]
    return xs


def score_of(value: Any) -> float | None | str:
    """A 0–10 score, None when absent, or the text itself when it is not a score (reported)."""
    if value is None:
        return None
    try:
        score = float(str(value).strip().split("/")[0])
    except ValueError:
        return str(value)
    if not 0 <= score <= 10:
        return str(value)
    return score
