"""Annotator gates: plug-ins that govern some annotators' work on every path — the item screen,
its htmx requests and the REST API — inside the transaction of each write.

A gate is registered in a plug-in's AppConfig.ready() (``register_annotator_gate``) and
declares, for the annotators it governs (the crowd app: a study's participants):

- ``governs(annotator=…, project=…)``: an SQL condition, over the SQL expressions given for the
  annotator's id and the project's id, true for the people it governs. The engine evaluates it
  inside statements it runs anyway (annotation.access.access_stage_for_annotator, the read of a
  submitted assignment), so people no gate governs pay no statement for gates.
- ``rules``: eligibility rules (annotation.eligibility) the candidate search applies to them in
  *every* stage of the project, whatever the stage's own list says and whenever, by whichever
  path, the stage was added.
- ``check(annotator_id=…, stage=…, action=…, answer=…)``: called by the services inside the
  write's transaction before anything is written (``NEXT``, ``SUBMIT``, ``SKIP``, ``CHANGE`` of
  ``answer``); returns a refusal (a sentence for the annotator) or None. A refused next item
  hands out nothing (as when nothing is left: the gate's own writes, e.g. a time-out, are
  kept); a refused submit, skip or change is raised as ``GateRefused`` (403) and the write's
  transaction is rolled back. Gates take their own row
  locks here, before the engine locks assignments or item stages (the lock order that keeps
  them apart from the gate's own writes, e.g. releasing leases).
- ``after_submit(annotator_id=…, stage=…)``: in the same transaction, after an answer was stored
  (a quota met, an attention check failed).
- ``sealed_before(annotator_id=…, project_id=…)``: answers given before this moment are never
  shown to the annotator again nor changed (a session resumed without proof of identity).

The pages' navigation (where to send someone instead of the item screen) is a separate hook,
annotation.navigation.register_work_gate; a plug-in answers both from one decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from annotation.errors import PermissionDenied

NEXT, SUBMIT, SKIP, CHANGE = "next", "submit", "skip", "change"


class GateRefused(PermissionDenied):
    """A gate refused a write: nothing was written (the transaction rolled back)."""


class AnnotatorGate:
    """Base class; see the module docstring for the contract of each member."""

    name: ClassVar[str] = ""
    rules: ClassVar[tuple[Mapping[str, Any], ...]] = ()

    def governs(self, *, annotator: str, project: str) -> str:
        raise NotImplementedError

    def check(
        self, *, annotator_id: int, stage: Any, action: str, answer: Any = None
    ) -> str | None:
        return None

    def after_submit(self, *, annotator_id: int, stage: Any) -> None:
        return None

    def sealed_before(self, *, annotator_id: int, project_id: int) -> datetime | None:
        return None


ANNOTATOR_GATES: list[AnnotatorGate] = []


def register_annotator_gate(gate: AnnotatorGate) -> AnnotatorGate:
    """Add a gate (replacing one of the same name)."""
    if not gate.name:
        raise ValueError("an annotator gate needs a name")
    ANNOTATOR_GATES[:] = [known for known in ANNOTATOR_GATES if known.name != gate.name]
    ANNOTATOR_GATES.append(gate)
    return gate


def governed_sql(*, annotator: str, project: str) -> str:
    """A 0/1 SQL expression: whether a registered gate governs the annotator in the project.
    Statements that embed it are built once per process: gates register in AppConfig.ready(),
    before the first request."""
    conditions = [gate.governs(annotator=annotator, project=project) for gate in ANNOTATOR_GATES]
    if not conditions:
        return "0"
    return f"CASE WHEN {' OR '.join(f'({c})' for c in conditions)} THEN 1 ELSE 0 END"


def governed(*, annotator_id: int, project_id: int) -> bool:
    """Whether a gate governs the annotator in the project (one statement; for callers that did
    not read the flag with the stage or the assignment)."""
    if not ANNOTATOR_GATES:
        return False
    from annotation import sql

    row = sql.fetchone(
        f"SELECT {governed_sql(annotator='%(annotator)s', project='%(project)s')}",
        {"annotator": annotator_id, "project": project_id},
    )
    return bool(row and row[0])


def search_rules(rules: Sequence[Mapping[str, Any]], *, governed: bool) -> list[dict[str, Any]]:
    """A stage's eligibility rules for one annotator: the stage's own, then, for someone a gate
    governs, every gate's rules the stage does not already list."""
    combined = [dict(rule) for rule in rules or []]
    if governed:
        for gate in ANNOTATOR_GATES:
            combined += [dict(rule) for rule in gate.rules if dict(rule) not in combined]
    return combined


def refusal(*, annotator_id: int, stage: Any, action: str, answer: Any = None) -> str | None:
    """The first gate's refusal, or None. Call it inside the write's transaction, before
    locking assignments or item stages. ``NEXT`` uses it: a refused search hands out nothing
    (None, as when nothing is left), and what the gates wrote meanwhile is kept."""
    for gate in ANNOTATOR_GATES:
        found = gate.check(annotator_id=annotator_id, stage=stage, action=action, answer=answer)
        if found:
            return found
    return None


def check(*, annotator_id: int, stage: Any, action: str, answer: Any = None) -> None:
    """Raise GateRefused with the first gate's refusal (the write's transaction then rolls
    back, nothing written); for ``SUBMIT``, ``SKIP`` and ``CHANGE``."""
    found = refusal(annotator_id=annotator_id, stage=stage, action=action, answer=answer)
    if found:
        raise GateRefused(found)


def after_submit(*, annotator_id: int, stage: Any) -> None:
    """Tell every gate an answer was stored (inside the submit's transaction)."""
    for gate in ANNOTATOR_GATES:
        gate.after_submit(annotator_id=annotator_id, stage=stage)


def sealed_before(*, annotator_id: int, project_id: int) -> datetime | None:
    """The latest moment before which a gate seals the annotator's answers, or None."""
    moments = [
        moment
        for gate in ANNOTATOR_GATES
        if (moment := gate.sealed_before(annotator_id=annotator_id, project_id=project_id))
    ]
    return max(moments) if moments else None
