"""Django-free import core: declared row schemas, streaming readers, a two-pass pipeline.

The Django side (ImportBatch model, Celery task, API) calls ``validate_stream`` and then
``iter_clean_batches``; see ``imports.core.pipeline`` for the contract.
"""

from imports.core.pipeline import (
    CleanRow,
    ImportRejected,
    iter_clean_batches,
    validate_stream,
)
from imports.core.readers import (
    ImportFileError,
    RawRecord,
    RecordReader,
    detect_format,
)
from imports.core.report import ImportReport, Normalisation, RowError
from imports.core.schema import (
    FieldSpec,
    RowSchema,
    generic_schema,
    register_schema,
    schema_for_kind,
)

__all__ = [
    "CleanRow",
    "FieldSpec",
    "ImportFileError",
    "ImportRejected",
    "ImportReport",
    "Normalisation",
    "RawRecord",
    "RecordReader",
    "RowError",
    "RowSchema",
    "detect_format",
    "generic_schema",
    "iter_clean_batches",
    "register_schema",
    "schema_for_kind",
    "validate_stream",
]
