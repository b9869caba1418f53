"""Model answers: a model's ratings of a project's items, stored as a model run beside the
people's (models.ModelRun), replaced or deleted as a whole."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.errors import ApplicationError
from annotation.models import Project
from ratings import importing
from ratings.connectives import (
    connective_set_from_json,
)
from ratings.importing import ImportRejected
from ratings.kinds import scale_bounds
from ratings.models import ModelRun, RatingsSetup, SentencePair
from ratings.project_setup import (
    _as_user,
    _rating_stage,
    _regular_item_ids,
    _rejected,
    _setup,
    _sha256,
)

# --- Model answers ----------------------------------------------------------------------------


def model_run_import(
    *,
    project: Project,
    name: str,
    content: bytes | str | IO[bytes],
    filename: str,
    user: AbstractBaseUser | None = None,
    replace: bool = False,
) -> ModelRun:
    """Store a model's answers (CSV/TSV/JSONL/JSON array: ratings per item, or a chosen
    connective per ordered pair; -1 or empty = no answer) for comparison with the human labels.
    ``content`` may be bytes, text or a binary file object (hashed, rewound, then streamed)."""
    setup = _setup(project)
    sha256 = _sha256(content)  # before reading: hashing a file object rewinds it
    try:
        rows = importing.Rows(content, filename)
    except ImportRejected as error:
        raise _rejected(error) from None
    return model_run_create(
        project=project,
        name=name,
        rows=rows,
        filename=filename,
        sha256=sha256,
        user=user,
        replace=replace,
        setup=setup,
    )


@transaction.atomic
def model_run_create(
    *,
    project: Project,
    name: str,
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    filename: str = "",
    sha256: str = "",
    user: AbstractBaseUser | None = None,
    replace: bool = False,
    setup: RatingsSetup | None = None,
) -> ModelRun:
    setup = setup or _setup(project)
    name = " ".join((name or "").split())
    if not name:
        raise ApplicationError("Give the model run a name.", {"name": "required"})
    if len(name) > 200:
        raise ApplicationError("The name is too long (200 characters at most).", {"name": name})
    existing = ModelRun.objects.filter(project=project, name=name)
    if existing.exists():
        if not replace:
            raise ApplicationError(
                f"There is already a model run named {name!r}; choose another name.",
                {"name": name},
            )
        existing.delete()
    connective_set = connective_set_from_json(setup.connective_set)
    try:
        parsed = importing.parse_model_answers(
            rows,
            connective_set,
            scale=scale_bounds(_rating_stage(setup).config),
            known_items=set(_regular_item_ids(project)),
            known_pairs=set(
                SentencePair.objects.filter(project=project).values_list("pair_id", flat=True)
            ),
        )
    except ImportRejected as error:
        raise _rejected(error) from None
    return ModelRun.objects.create(
        project=project,
        name=name,
        answer_kind=parsed.answer_kind,
        answers=parsed.answers,
        n_answers=len(parsed.answers),
        n_no_answer=parsed.n_no_answer,
        filename=filename[:255],
        sha256=sha256,
        uploaded_by=_as_user(user),
    )


@transaction.atomic
def model_run_delete(*, project: Project, run_id: int) -> None:
    deleted, _ = ModelRun.objects.filter(project=project, pk=run_id).delete()
    if not deleted:
        raise ApplicationError("There is no such model run.", {"run": run_id}, status=404)
