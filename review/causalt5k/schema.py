"""CausalT5k's import schema: the columns of one case as a release or a submission spells them
(review/README.md, "CausalT5k"). Django-free; declared for project kind ``causalt5k`` by
``review.causalt5k.apps.CausalT5kConfig``, so every importer (``imports.core.schema_for_kind``:
uploads, ``manage.py import_items``, the API) finds it by the project's kind."""

from __future__ import annotations

from imports.core.schema import FieldSpec, RowSchema

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
        ),
        FieldSpec(
            "pearl_level",
            "choice",
            required=True,
            choices=("L1", "L2", "L3"),
            aliases=("tier", "rung"),
            help="Pearl rung: L1 association, L2 intervention, L3 counterfactual.",
        ),
        FieldSpec("domain", "str", max_length=200, help=CAUSALT5K_DOMAINS_HELP),
        FieldSpec("subdomain", "str", max_length=200, help="Finer topic within the domain."),
        FieldSpec(
            "scenario",
            "str",
            required=True,
            max_length=20_000,
            help="The case text the model reads (150–300 words in the paper).",
        ),
        FieldSpec("claim", "str", max_length=5_000, help="The causal claim to judge."),
        FieldSpec(
            "label",
            "choice",
            required=True,
            choices=("YES", "NO", "AMBIGUOUS", "VALID", "INVALID", "CONDITIONAL"),
            aliases=("ground_truth",),
            help="Gold answer: YES/NO (L1, L2), VALID/INVALID/CONDITIONAL (L3), or AMBIGUOUS.",
        ),
        FieldSpec("is_ambiguous", "bool", help="True when the case is deliberately ambiguous."),
        FieldSpec(
            "trap_type",
            "str",
            aliases=("trap.type",),
            max_length=100,
            help="Trap (W1–W10) or design (S1–S8) code as submitted.",
        ),
        FieldSpec(
            "difficulty",
            "choice",
            choices=("Easy", "Medium", "Hard"),
            help="Author's difficulty rating.",
        ),
        FieldSpec("variables", "json", help="The causal variables X, Y, Z as submitted."),
        FieldSpec(
            "gold_rationale",
            "str",
            aliases=("rationale",),
            max_length=20_000,
            help="Why the gold label is right.",
        ),
        FieldSpec("wise_refusal", "str", max_length=20_000, help="The ideal refusal (L2)."),
        FieldSpec(
            "final_score",
            "float",
            min=0,
            max=10,
            help="Reviewer's composite quality score (0–10; ≥ 9 kept).",
        ),
    ),
)
