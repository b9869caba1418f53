"""A published release's archive, read by file name: what a workflow's scorer reads its
questions from (llm.evaluation.scoring). Every read opens the zip afresh and streams the member
(constant memory for JSON Lines and CSV files)."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


class ReleaseFiles:
    """The files of one release archive. ``opener`` returns a fresh binary handle on the zip
    (``release.archive.open("rb")``, or a path's ``open`` in tests). Names are the files' paths
    under the archive's top folder (``items.jsonl``, ``D1/D1_L1.json``)."""

    def __init__(self, opener: Callable[[], IO[bytes]]) -> None:
        self._opener = opener
        with self._zip() as archive:
            members = [name for name in archive.namelist() if not name.endswith("/")]
        prefix = _common_folder(members)
        self._members = {name[len(prefix) :]: name for name in members}

    @classmethod
    def of_path(cls, path: Path | str) -> ReleaseFiles:
        return cls(lambda: open(path, "rb"))  # noqa: SIM115 -- closed by _zip

    @contextmanager
    def _zip(self) -> Iterator[zipfile.ZipFile]:
        with self._opener() as raw, zipfile.ZipFile(raw) as archive:
            yield archive

    def names(self) -> list[str]:
        return sorted(self._members)

    def __contains__(self, name: str) -> bool:
        return name in self._members

    def text(self, name: str) -> str:
        """The whole text of a (small) file; KeyError naming it when the release has none."""
        with self._zip() as archive:
            return archive.read(self._member(name)).decode("utf-8")

    def lines(self, name: str) -> Iterator[str]:
        """The file's lines without their line ends, streamed."""
        with self._zip() as archive, archive.open(self._member(name)) as handle:
            for line in io.TextIOWrapper(handle, encoding="utf-8"):
                yield line.rstrip("\r\n")

    def jsonl(self, name: str) -> Iterator[dict[str, Any]]:
        for line in self.lines(name):
            if line.strip():
                yield json.loads(line)

    def json(self, name: str) -> Any:
        return json.loads(self.text(name))

    def csv(self, name: str) -> Iterator[dict[str, str]]:
        with self._zip() as archive, archive.open(self._member(name)) as handle:
            yield from csv.DictReader(io.TextIOWrapper(handle, encoding="utf-8", newline=""))

    def _member(self, name: str) -> str:
        try:
            return self._members[name]
        except KeyError:
            raise KeyError(f"the release has no {name}") from None


def _common_folder(names: list[str]) -> str:
    """The top folder every member shares (``carl-v1/``), or ""."""
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1 and all("/" in name for name in names):
        return f"{tops.pop()}/"
    return ""
