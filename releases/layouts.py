"""Plug-in point: a project kind's own release layout (the source benchmark's file format).

Every release holds ``items.jsonl``, ``items.csv``, ``annotations.jsonl``, ``annotations.csv``,
their Parquet copies ``items.parquet`` and ``annotations.parquet``, ``README.md`` (datasheet), ``manifest.json`` and ``SHA256SUMS``. A kind may add files in the layout
of the benchmark it reproduces — e.g. the ratings app writes an ExpliCa-like CSV (the four
connective means and the preferred connective per ordered pair). Register in the app's
``AppConfig.ready()``::

    from releases.layouts import register_layout

    def explica_layout(context: LayoutContext) -> list[Path | FileEntry]:
        path = context.out_dir / "explica.csv"
        write_csv(my_rows(context), path, columns=[...])   # stream: constant memory
        return [path]

    register_layout("ratings", explica_layout)

Contract of a layout function ``layout(context) -> list[Path | FileEntry]``:

* write files only inside ``context.out_dir`` (sub-folders allowed, e.g. CausalT5k's
  ``D1/D1_L1.json``: the file's name in the release is its path under ``out_dir``), names not
  clashing with the standard files above; return their paths (hashed by the caller) or
  ``FileEntry`` objects (``write_csv``/``write_jsonl`` return one, with the row count; a file in
  a sub-folder is returned as its path);
* stream: iterate ``context.items()`` / ``context.annotations()`` (each call starts a fresh pass,
  constant memory) or query the ORM with ``.iterator()`` — never load a whole project;
* no names: ``context.items()`` and ``context.annotations()`` give payloads with the kind's
  identity rule applied (``releases.identities``: the paths that name people, removed or
  pseudonymised as every file of the release has them); a payload read from the ORM instead
  goes through ``identity_rule(kind).apply(payload, salt_for(project))`` first;
* ``context.project`` is the Project; ``context.version`` the release number being built;
* raise ``ApplicationError`` to fail the build with a message the admin can act on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from releases.writers import FileEntry


@dataclass(frozen=True)
class LayoutContext:
    """What a layout function gets (see the module docstring)."""

    project: Any
    version: int
    out_dir: Path
    items: Callable[[], Iterator[dict[str, Any]]]
    annotations: Callable[[], Iterator[dict[str, Any]]]


Layout = Callable[[LayoutContext], list[Path | FileEntry]]
LAYOUTS: dict[str, Layout] = {}
#: Names every release already uses, in reading order; a layout must not write these.
STANDARD_FILES = (
    "items.jsonl",
    "items.csv",
    "annotations.jsonl",
    "annotations.csv",
    "items.parquet",
    "annotations.parquet",
    "README.md",
    "manifest.json",
    "SHA256SUMS",
)


def register_layout(kind: str, layout: Layout) -> None:
    """Declare the extra release files of a project kind (replaces an earlier registration)."""
    LAYOUTS[kind] = layout


def layout_for_kind(kind: str) -> Layout | None:
    return LAYOUTS.get(kind)
