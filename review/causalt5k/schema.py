"""CausalT5k's import schemas: the columns of one case (review/README.md, "CausalT5k").
Django-free.

* ``CAUSALT5K_SCHEMA`` reads a case as a submission spells it: its ``trap_type`` is free text
  (groups wrote "COUNTERFACTUAL", "SCALING", …), normalised and reported later by the release
  import (``review.causalt5k.normalise``), never refused here.
* ``CASES_SCHEMA`` is the same columns with ``trap_type`` held to the paper's vocabulary
  (``trap_type_problem``): declared for project kind ``causalt5k`` by
  ``review.causalt5k.apps.CausalT5kConfig``, so every importer of rows into a project
  (``imports.core.schema_for_kind``: the Imports page, ``manage.py import_items``, the API)
  refuses a trap type the review screens cannot offer, naming the allowed codes."""

from __future__ import annotations

from dataclasses import replace

from imports.core.schema import FieldSpec, RowSchema
from review.causalt5k.vocab import FAMILIES, TRAPS, is_no_trap, trap_code

#: Every code a ``trap_type`` may name (review/causalt5k/vocab.py): traps, designs, L3 families.
TRAP_TYPE_CODES = (*TRAPS, *FAMILIES)


def trap_type_problem(value: object) -> str | None:
    """Why ``value`` is no trap type: it must be a code of ``TRAP_TYPE_CODES``, a name the
    vocabulary recognises (``vocab.trap_code``: "Confounding", "W7 Confounding", an older
    T-code) or "none"; the message lists the allowed codes."""
    if is_no_trap(value):
        return None
    trap, family = trap_code(value)
    if trap is not None or family is not None:
        return None
    return (
        f'Field "trap_type": {str(value)[:80]!r} is not a trap type; allowed: '
        f"{', '.join(TRAP_TYPE_CODES)} (or their names, or none)."
    )


CAUSALT5K_DOMAINS_HELP = (
    "Domain as submitted (D1 Daily Life … D10 Social Science, or a free-text name such as "
    "'Medicine'); normalised later."
)

CAUSALT5K_SCHEMA = RowSchema(
    name="causalt5k",
    description=(
        "CausalT5k-style cases: a self-contained scenario and claim at one Pearl level, with a "
        "gold label and the trap (Wolf) or design (Sheep) type."
    ),
    external_id_field="id",
    extra_fields="keep",
    fields=(
        FieldSpec(
            "id",
            "str",
            required=True,
            aliases=("case_id",),
            max_length=200,
            help="Case identifier, e.g. T2-W7-MED-042 (tier, trap, domain, sequence).",
            example="T2-W7-MED",
        ),
        FieldSpec(
            "pearl_level",
            "choice",
            required=True,
            choices=("L1", "L2", "L3"),
            aliases=("tier", "rung"),
            help="Pearl rung: L1 association, L2 intervention, L3 counterfactual.",
            example="L2",
        ),
        FieldSpec("domain", "str", max_length=200, help=CAUSALT5K_DOMAINS_HELP, example="Medicine"),
        FieldSpec(
            "subdomain",
            "str",
            max_length=200,
            help="Finer topic within the domain.",
            example="Cardiology",
        ),
        FieldSpec(
            "scenario",
            "str",
            required=True,
            max_length=20_000,
            help="The case text the model reads (150–300 words in the paper).",
            example=(
                "Patients who chose to take a daily statin had fewer heart attacks over ten "
                "years than those who did not; statin users also exercised more and smoked less.",
                "Towns that opened more libraries saw crime fall over the decade; the same towns "
                "also hired more police officers and their unemployment fell.",
            ),
        ),
        FieldSpec(
            "claim",
            "str",
            max_length=5_000,
            help="The causal claim to judge.",
            example=(
                "Prescribing statins to everyone would prevent heart attacks at this rate.",
                "Opening a library in a town lowers its crime rate.",
            ),
        ),
        FieldSpec(
            "label",
            "choice",
            required=True,
            choices=("YES", "NO", "AMBIGUOUS", "VALID", "INVALID", "CONDITIONAL"),
            aliases=("ground_truth",),
            help="Gold answer: YES/NO (L1, L2), VALID/INVALID/CONDITIONAL (L3), or AMBIGUOUS.",
            example="NO",
        ),
        FieldSpec(
            "is_ambiguous",
            "bool",
            help="True when the case is deliberately ambiguous.",
            example=False,
        ),
        FieldSpec(
            "trap_type",
            "str",
            aliases=("trap.type",),
            max_length=100,
            help="Trap (W1–W10), design (S1–S8) or L3 family (F1–F8) code or name.",
            example="W7",
        ),
        FieldSpec(
            "difficulty",
            "choice",
            choices=("Easy", "Medium", "Hard"),
            help="Author's difficulty rating.",
            example="Medium",
        ),
        FieldSpec(
            "variables",
            "json",
            help="The causal variables X, Y, Z as submitted.",
            example={"X": "statin use", "Y": "heart attacks", "Z": "healthy lifestyle"},
        ),
        FieldSpec(
            "gold_rationale",
            "str",
            aliases=("rationale",),
            max_length=20_000,
            help="Why the gold label is right.",
            example="Healthier people chose statins: the lifestyle, not only the drug, differs.",
        ),
        FieldSpec(
            "wise_refusal",
            "str",
            max_length=20_000,
            help="The ideal refusal (L2).",
            example="The users differ in more than the drug; a trial would tell.",
        ),
        FieldSpec(
            "final_score",
            "float",
            min=0,
            max=10,
            help="Reviewer's composite quality score (0–10; ≥ 9 kept).",
            example=9.5,
        ),
    ),
)


#: The rows of a CausalT5k project's Imports page (module docstring).
CASES_SCHEMA = replace(
    CAUSALT5K_SCHEMA,
    fields=tuple(
        replace(spec, check=trap_type_problem, allowed=TRAP_TYPE_CODES)
        if spec.name == "trap_type"
        else spec
        for spec in CAUSALT5K_SCHEMA.fields
    ),
)
