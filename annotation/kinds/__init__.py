"""Pluggable task kinds.

A kind declares what an annotator does on a stage: the payload schema and its validation, the
template partial that renders its form, the value that votes/agreement read from a payload, and
which resolution policies apply. Apps register kinds in their AppConfig.ready(); the engine never
imports a concrete kind.
"""

from annotation.kinds.base import (
    KINDS,
    AgreementSpec,
    KindContext,
    TaskKind,
    get_kind,
    register_kind,
)

__all__ = ["KINDS", "AgreementSpec", "KindContext", "TaskKind", "get_kind", "register_kind"]
