"""How a clean import row becomes an item: the schema rows are checked against, the item mappers.

* ``import_schema(project, layout)`` — the schema of the project kind (``imports.core.schema``),
  the release layout's, or the generic one requiring one of the fields the stages show.
* ``register_item_mapper(kind, mapper)`` — how a clean row becomes an item: ``mapper(clean,
  schema, options) -> ItemFields``. The default puts every field but the external id into the
  payload, and takes the item's group / purpose / source from the columns named by the batch
  options ``group_field`` / ``purpose_field`` / ``source_field`` when given; with
  ``gold_field``, a row with a value in that column is a silent gold item (annotation/gold.py):
  purpose ``gold``, the value its known answer (``payload["gold"]``, which no annotator is shown),
  the column left out of the payload.
* ``checked_schema`` — the schema plus the mapper, so that pass 1 reports the rows a mapper
  refuses before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from annotation.api import GOLD_FIELD
from annotation.models import Item, Project
from imports.core import FieldSpec, RowError, RowSchema, schema_for_kind
from imports.core.fast_rows import FastRowCheck, fast_row_check
from imports.core.schema import cell_text, field_cell_text


@dataclass(frozen=True, slots=True)
class ItemFields:
    """What an import row contributes to an Item."""

    payload: dict[str, Any]
    group: str = ""
    purpose: str = Item.Purpose.REGULAR
    source: str = ""


ItemMapper = Callable[[dict[str, Any], RowSchema, Mapping[str, Any]], ItemFields]
ITEM_MAPPERS: dict[str, ItemMapper] = {}


def register_item_mapper(kind: str, mapper: ItemMapper) -> None:
    """Declare how a project kind turns a clean import row into item fields (see module doc)."""
    ITEM_MAPPERS[kind] = mapper


def _text_option(clean: Mapping[str, Any], name: str | None) -> str:
    if not name:
        return ""
    value = clean.get(name)
    return "" if value is None else str(value)


def default_item_mapper(
    clean: dict[str, Any], schema: RowSchema, options: Mapping[str, Any]
) -> ItemFields:
    payload = {key: value for key, value in clean.items() if key != schema.external_id_field}
    purpose = _text_option(clean, options.get("purpose_field")) or Item.Purpose.REGULAR
    gold_column = options.get("gold_field")
    if gold_column:
        known = payload.pop(gold_column, None)
        if known not in (None, ""):
            payload[GOLD_FIELD] = known
            purpose = Item.Purpose.GOLD
    return ItemFields(
        payload=payload,
        group=_text_option(clean, options.get("group_field"))[:200],
        purpose=purpose,
        source=_text_option(clean, options.get("source_field"))[:200]
        or str(options.get("source") or "")[:200],
    )


#: The batch options that make ``default_item_mapper`` read a row's columns (beyond its payload).
_COLUMN_OPTIONS = ("purpose_field", "gold_field", "group_field", "source_field")


def _plain_default_mapper(
    schema: RowSchema, options: Mapping[str, Any]
) -> Callable[[dict[str, Any]], ItemFields] | None:
    """``default_item_mapper`` with ``schema`` and ``options`` worked out once, for batches
    whose options name no column (``_COLUMN_OPTIONS``): every row then gives the same group,
    purpose and source, and its payload is the clean row without its id. Returns a function of
    the clean row giving exactly what ``default_item_mapper`` gives (its purpose is always
    valid and its payload a dict, the two things ``map_row`` checks), or None when an option
    names a column (the mapper then runs as it is)."""
    if any(options.get(name) for name in _COLUMN_OPTIONS):
        return None
    id_field = schema.external_id_field
    source = str(options.get("source") or "")[:200]
    regular = Item.Purpose.REGULAR

    def mapped(clean: dict[str, Any]) -> ItemFields:
        payload = clean.copy()  # in the row's order, as the mapper's comprehension keeps it
        if id_field is not None:
            payload.pop(id_field, None)
        return ItemFields(payload, "", regular, source)

    return mapped


class _ReleaseRowSchema(RowSchema):
    """A release line: item content is an object under "payload"."""

    def validate_row(self, raw, line, *, index=None, column=None, text_values=False):
        clean, errors = super().validate_row(
            raw, line, index=index, column=column, text_values=text_values
        )
        if clean is not None and not isinstance(clean.get("payload"), dict):
            where = {"line": line, "index": index, "column": column}
            return None, [
                RowError(
                    **where,
                    field="payload",
                    code="wrong_type",
                    expected="an object ({...}) holding the item's fields",
                    found=repr(clean.get("payload"))[:80],
                    message='Field "payload" must be a JSON object holding the item\'s fields.',
                )
            ]
        return clean, errors


RELEASE_ROW_SCHEMA = _ReleaseRowSchema(
    name="rungwise-release",
    description="The items.jsonl of a Rungwise release: item content under payload.",
    external_id_field="external_id",
    extra_fields="ignore",
    fields=(
        FieldSpec("external_id", "str", required=True, max_length=200),
        FieldSpec("payload", "json", required=True, help="The item's content."),
        FieldSpec("group", "str", max_length=200),
        FieldSpec(
            "purpose", "choice", choices=tuple(Item.Purpose.values), default=Item.Purpose.REGULAR
        ),
        FieldSpec("source", "str", max_length=200),
    ),
)


def _release_item_mapper(
    clean: dict[str, Any], schema: RowSchema, options: Mapping[str, Any]
) -> ItemFields:
    return ItemFields(
        payload=dict(clean["payload"]),
        group=clean.get("group") or "",
        purpose=clean.get("purpose") or Item.Purpose.REGULAR,
        source=clean.get("source") or "",
    )


@dataclass(frozen=True)
class _ShownFieldsSchema(RowSchema):
    """The generic schema of a project whose stages show annotators only some payload fields:
    a row must hold at least one of them (``shown``), or annotators would see an empty item."""

    shown: tuple[str, ...] = ()

    def validate_row(self, raw, line, *, index=None, column=None, text_values=False):
        clean, errors = super().validate_row(
            raw, line, index=index, column=column, text_values=text_values
        )
        if clean is not None and not any(clean.get(name) not in (None, "") for name in self.shown):
            return None, [
                RowError(
                    line=line,
                    index=index,
                    column=column,
                    field=None,
                    code="nothing_shown",
                    expected="one of: " + ", ".join(self.shown),
                    message="The row has none of the fields this project's stages show "
                    f"annotators ({', '.join(self.shown)}): they would see an empty item.",
                )
            ]
        return clean, errors


def _shown_fast_check(schema: _ShownFieldsSchema) -> FastRowCheck | None:
    """``fast_row_check`` (imports/core/fast_rows.py) for ``_ShownFieldsSchema``: the base
    schema's compiled check, declining a record that shows none of ``shown`` (its error is
    ``validate_row``'s to word). Which of ``shown`` a record's keys give is worked out once per
    key sequence, with the rest of its plan, not asked of every record field by field."""
    return fast_row_check(
        RowSchema(
            name=schema.name, fields=schema.fields, external_id_field=schema.external_id_field,
            extra_fields=schema.extra_fields, description=schema.description,
        ),
        shown=schema.shown,
    )  # fmt: skip


def schema_fast_check(schema: RowSchema) -> FastRowCheck | None:
    """The compiled check of ``schema``'s simplest records (imports/core/fast_rows.py), for the
    schemas ``import_schema`` gives; None when there is none."""
    if type(schema) is _ShownFieldsSchema:
        return _shown_fast_check(schema)
    return fast_row_check(schema)


def shown_fields(project: Project) -> tuple[str, ...]:
    """The payload fields the project's active stages show annotators (their kinds'
    allow-lists), in pipeline order; empty when the project has no stages yet."""
    from annotation.kinds import KindContext, get_kind

    names: list[str] = []
    for stage in project.stages.filter(is_active=True).order_by("position"):
        for name in get_kind(stage.kind).visible_fields(KindContext(stage=stage)):
            if name not in names:
                names.append(name)
    return tuple(names)


def import_schema(project: Project, layout: str) -> RowSchema:
    """The schema rows of ``project`` are checked against: the release layout's, the project
    kind's, or — for kinds without their own — the generic one requiring one of the fields the
    stages show (``shown_fields``)."""
    if layout == "release":
        return RELEASE_ROW_SCHEMA
    schema = schema_for_kind(project.kind)
    shown = shown_fields(project) if schema.name == "generic" else ()
    if not shown:
        return schema
    return _ShownFieldsSchema(
        name=schema.name,
        fields=schema.fields,
        external_id_field=schema.external_id_field,
        extra_fields=schema.extra_fields,
        description=schema.description,
        shown=shown,
    )


def sample_rows(project: Project) -> tuple[list[str], list[list[str]]]:
    """A sample file's columns and two rows for ``project``'s import (the import page offers it
    as a download), as CSV cells (``cell_text``): the kind's schema's rows
    (``RowSchema.sample_rows``: every declared field's example, so the file passes the checks
    it documents), or — for the generic schema — the id and the fields the stages show."""
    schema = schema_for_kind(project.kind)
    rows = schema.sample_rows(2)
    specs = {spec.name: spec for spec in schema.fields if spec.name in rows[0]}
    columns = list(specs)
    if schema.name == "generic":
        shown = [name for name in shown_fields(project) if name != "options"][:2] or ["text"]
        for number, row in enumerate(rows, start=1):
            for name in shown:
                row[name] = f"Example {name.replace('_', ' ')} {number}."
        columns += shown
    return columns, [
        [
            field_cell_text(specs[name], row[name]) if name in specs else cell_text(row[name])
            for name in columns
        ]
        for row in rows
    ]


def item_mapper(project: Project, layout: str) -> ItemMapper:
    """The mapper rows of ``project`` go through: the release layout's, the kind's, or the
    default one."""
    if layout == "release":
        return _release_item_mapper
    return ITEM_MAPPERS.get(project.kind, default_item_mapper)


#: The item purposes a mapper may give (``Item.Purpose.values`` builds a new list on each call).
_PURPOSES = frozenset(Item.Purpose.values)


def map_row(
    clean: dict[str, Any], schema: RowSchema, mapper: ItemMapper, options: Mapping[str, Any]
) -> ItemFields:
    """Run a mapper and check what it gives; ValueError carries a message for the row."""
    fields = mapper(clean, schema, options)
    if fields.purpose not in _PURPOSES:
        raise ValueError(
            f"The purpose {fields.purpose!r} is not one of {', '.join(Item.Purpose.values)}."
        )
    if not isinstance(fields.payload, dict):
        raise ValueError("The item content must be an object.")
    return fields


class MappedSchema:
    """The import schema plus the kind's item mapper, so that pass 1 also catches rows the
    mapper refuses (``ValueError``): every problem is reported before anything is written.

    ``mapped`` holds the ``ItemFields`` of the row ``validate_row`` last accepted, so that the
    one-pass staging import (``imports.services.staged``) maps each row once.

    The simplest records (flat values, the same keys on every line) are checked by the
    schema's compiled check (``schema_fast_check``), which gives the same clean row as
    ``validate_row`` several times faster; every other record, and every record that has an
    error, goes through ``validate_row``."""

    def __init__(self, schema: RowSchema, mapper: ItemMapper, options: Mapping[str, Any]):
        self._schema, self._mapper, self._options = schema, mapper, options
        self._fast = schema_fast_check(schema)
        # The default mapper with its options worked out once (most imports): its rows need
        # no ``map_row`` check, their purpose and payload being right by construction.
        self._plain = (
            _plain_default_mapper(schema, options) if mapper is default_item_mapper else None
        )
        self.mapped: ItemFields | None = None

    def as_row_schema(self) -> RowSchema:
        """This object typed as the schema it stands for (the readers and the pipeline only
        call ``validate_row`` and read attributes)."""
        return cast(RowSchema, self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._schema, name)

    def validate_row(self, raw, line, *, index=None, column=None, text_values=False):
        clean = None if self._fast is None else self._fast(raw)
        errors: list[RowError] = []
        if clean is None:
            clean, errors = self._schema.validate_row(
                raw, line, index=index, column=column, text_values=text_values
            )
        if clean is None:
            return clean, errors
        if self._plain is not None:
            self.mapped = self._plain(clean)
            return clean, errors
        try:
            self.mapped = map_row(clean, self._schema, self._mapper, self._options)
        except ValueError as problem:
            return None, [
                RowError(
                    line=line,
                    index=index,
                    column=column,
                    code="wrong_type",
                    expected="a row the project kind accepts",
                    found=repr(raw)[:80],
                    message=str(problem),
                )
            ]
        return clean, errors


def checked_schema(schema: RowSchema, mapper: ItemMapper, options: Mapping[str, Any]) -> RowSchema:
    """``schema`` whose row check also runs ``mapper`` (pass 1 then reports the rows the mapper
    refuses; see ``MappedSchema``). Typed as the schema it stands for: the readers and the
    pipeline only call ``validate_row`` and read its attributes."""
    return MappedSchema(schema, mapper, options).as_row_schema()
