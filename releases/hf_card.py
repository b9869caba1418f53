"""The dataset card of a release's Hugging Face folder: ``hf_dataset/README.md``, YAML metadata the
Hub reads (``configs`` with their ``data_files``, ``dataset_info`` with each configuration's
features and splits, ``license``, ``size_categories``, ``task_categories`` when the workflow
declares them, ``pretty_name``) followed by the release's datasheet (``releases.datasheet``) and
its citation. Django-free."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml

from releases.hf_dataset import FOLDER, DatasetFolder
from releases.writers import FileEntry, sha256_of_file

#: The project's licence (an SPDX identifier, studio/licences.py) as the Hub names it; any other
#: licence is ``other`` with its name.
HUB_LICENSES = {
    "CC-BY-4.0": "cc-by-4.0",
    "CC-BY-SA-4.0": "cc-by-sa-4.0",
    "CC-BY-NC-4.0": "cc-by-nc-4.0",
    "CC-BY-NC-SA-4.0": "cc-by-nc-sa-4.0",
    "CC-BY-ND-4.0": "cc-by-nd-4.0",
    "CC0-1.0": "cc0-1.0",
    "ODC-By-1.0": "odc-by",
    "ODbL-1.0": "odbl",
    "PDDL-1.0": "pddl",
    "CDLA-Permissive-2.0": "cdla-permissive-2.0",
    "CDLA-Sharing-1.0": "cdla-sharing-1.0",
    "MIT": "mit",
    "Apache-2.0": "apache-2.0",
}
_DTYPES = {
    pa.string(): "string",
    pa.large_string(): "large_string",
    pa.int64(): "int64",
    pa.int32(): "int32",
    pa.float64(): "float64",
    pa.bool_(): "bool",
    pa.null(): "null",
}


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` value for a row count."""
    bounds = [
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
        (100_000_000, "10M<n<100M"),
        (1_000_000_000, "100M<n<1B"),
    ]
    return next((label for bound, label in bounds if rows < bound), "n>1T")


def feature(arrow_type: pa.DataType) -> Any:
    """An Arrow type as the card's ``features`` spell it (what ``datasets.Features`` writes):
    a dtype name, ``{"list": …}`` or ``{"struct": [fields]}``."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return {"list": feature(arrow_type.value_type)}
    if pa.types.is_struct(arrow_type):
        return {"struct": [_feature_of(arrow_type.field(i)) for i in range(arrow_type.num_fields)]}
    dtype = _DTYPES.get(arrow_type)
    if dtype is None:
        raise ValueError(f"no dataset feature for Arrow type {arrow_type}")
    return dtype


def _feature_of(arrow_field: pa.Field) -> dict[str, Any]:
    spelled = feature(arrow_field.type)
    if isinstance(spelled, str):
        return {"name": arrow_field.name, "dtype": spelled}
    return {"name": arrow_field.name, **spelled}


def card_metadata(dataset: DatasetFolder, sheet: Mapping[str, Any]) -> dict[str, Any]:
    """The card's YAML metadata (see the module docstring); ``sheet`` is what the release's
    datasheet was rendered from (``name``, ``license``)."""
    licence = str(sheet.get("license") or "")
    metadata: dict[str, Any] = {"pretty_name": str(sheet["name"])}
    if licence in HUB_LICENSES:
        metadata["license"] = HUB_LICENSES[licence]
    elif licence:
        metadata["license"] = "other"
        metadata["license_name"] = licence.lower()
    rows = sum(split.rows for config in dataset.configs for split in config.splits)
    metadata["size_categories"] = [size_category(rows)]
    if dataset.task_categories:
        metadata["task_categories"] = list(dataset.task_categories)
    metadata["configs"] = [
        {
            "config_name": config.name,
            **({"default": True} if index == 0 else {}),
            "data_files": [
                {"split": split.name, "path": f"data/{config.name}/{split.name}-*.parquet"}
                for split in config.splits
            ],
        }
        for index, config in enumerate(dataset.configs)
    ]
    metadata["dataset_info"] = [
        {
            "config_name": config.name,
            "features": [_feature_of(arrow_field) for arrow_field in config.schema],
            "splits": [
                {"name": split.name, "num_bytes": split.bytes, "num_examples": split.rows}
                for split in config.splits
            ],
            "download_size": sum(split.bytes for split in config.splits),
        }
        for config in dataset.configs
    ]
    return metadata


def render_dataset_card(dataset: DatasetFolder, sheet: Mapping[str, Any], datasheet: str) -> str:
    """The card: YAML front matter, a short guide to the configurations, then the datasheet."""
    front = yaml.safe_dump(
        card_metadata(dataset, sheet), sort_keys=False, allow_unicode=True, width=1000
    )
    lines = [
        f"---\n{front}---\n",
        "## Loading this dataset\n",
        "```python\nfrom datasets import load_dataset\n",
    ]
    for config in dataset.configs:
        lines.append(f'{config.name} = load_dataset("<this repository>", "{config.name}")')
    lines.append("```\n")
    lines.append("| Configuration | Splits (rows) | What it holds |")
    lines.append("|---|---|---|")
    for config in dataset.configs:
        splits = ", ".join(f"{split.name} ({split.rows:,})" for split in config.splits)
        lines.append(f"| {config.name} | {splits} | {config.description or '—'} |")
    lines.append(
        "\nColumns whose values differ in shape from row to row hold compact JSON text "
        '(their Parquet field metadata says `{"encoding": "json"}`).\n'
    )
    body = datasheet.lstrip()
    if body.startswith("# "):  # the datasheet's title stays the card's title
        title, _, rest = body.partition("\n")
        return f"{lines[0]}\n{title}\n\n" + "\n".join(lines[1:]) + "\n" + rest.lstrip("\n")
    return "\n".join(lines) + "\n" + body


def write_dataset_card(
    release_folder: str | Path, dataset: DatasetFolder, sheet: Mapping[str, Any], datasheet: str
) -> FileEntry:
    """Write ``hf_dataset/README.md`` and return its manifest entry."""
    path = Path(release_folder) / FOLDER / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_dataset_card(dataset, sheet, datasheet), encoding="utf-8")
    digest, size = sha256_of_file(path)
    return FileEntry(f"{FOLDER}/README.md", digest, size)
