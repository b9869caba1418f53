"""The CausalT5k demo project (``make run``, slug ``causalt5k-demo``): eleven hand-written cases
with the demo annotators' work simulated through the services (review.meter.demo.drive):

* near-duplicate queue: one cluster confirmed (its copy discarded), one waiting for a reviewer;
* adversarial review (``annotator1``): cases passed, one edited in place (minor), one removed
  (the answer leaked), one sent back to its author (``annotator2``, who finds it in *Author
  revision*), three waiting — one of them written by ``annotator1``, who is never given it;
* quality score: one case kept by two close scores, one dropped below the gate, one whose two
  scores are far apart waiting for a third reviewer (``annotator3``), one waiting for scorers;
* blind answers: the kept case waits for ``annotator3``, the one demo annotator who worked on
  none of its earlier stages (the stage's ``blind`` rule keeps the others out).
"""

from __future__ import annotations

from typing import Any

from annotation import api as engine
from annotation.fixtures.demo_users import demo_members_add
from annotation.models import Project
from review.causalt5k.blind import blind_open
from review.causalt5k.historic import historic_scores_import
from review.causalt5k.pipeline import causalt5k_project_create, causalt5k_review_open
from review.causalt5k.pressure import neutral_prompt, pressure_open
from review.meter.demo import drive


def _case(case_id, tier, level, domain, trap, label, scenario, claim, **extra) -> dict[str, Any]:
    from review.causalt5k.vocab import DOMAINS, TRAPS

    return {
        "case_id": case_id,
        "tier": tier,
        "pearl_level": level,
        "domain": domain,
        "domain_name": DOMAINS[domain][0],
        "scenario": scenario,
        "claim": claim,
        "label": label,
        "trap": trap,
        "trap_name": TRAPS.get(trap, ""),
        "difficulty": extra.pop("difficulty", "Medium"),
        **extra,
    }


COFFEE = (
    "A cohort study of 40,000 adults in three cities found that people who drank four or more "
    "cups of coffee a day had 30% more heart attacks over ten years than people who drank none. "
    "Heavy coffee drinkers in the cohort were also twice as likely to smoke, and smoking was "
    "recorded but not adjusted for in the published comparison."
)

CASES = [
    _case(
        "T1-W7-MED-001",
        1,
        "L1",
        "D4",
        "W7",
        "NO",
        COFFEE,
        "Drinking coffee causes heart attacks.",
        rationale="Smoking is a common cause of coffee drinking and heart attacks (confounder).",
    ),
    _case(
        "T1-W7-MED-002",
        1,
        "L1",
        "D4",
        "W7",
        "NO",
        COFFEE.replace("40,000 adults", "40,000 adult volunteers"),
        "Drinking coffee causes heart attacks.",
        rationale="Confounding by smoking.",
    ),
    _case(
        "T2-S1-MED-001",
        2,
        "L2",
        "D4",
        "S1",
        "YES",
        "In a double-blind trial, 1,200 patients with high blood pressure were randomly assigned "
        "to a new drug or a placebo. After twelve weeks the drug group's systolic pressure had "
        "fallen by 11 mmHg more than the placebo group's; dropout was 4% in both arms.",
        "Giving patients the drug lowers their blood pressure.",
        rationale="Randomisation balances the arms; the difference is the drug's effect.",
        pivotal_question="Was the assignment random and the dropout balanced?",
    ),
    _case(
        "T2-W9-ECO-001",
        2,
        "L2",
        "D5",
        "W9",
        "NO",
        "Across 120 city districts, those with more police officers per resident recorded more "
        "crimes last year. A council member proposes cutting police numbers in the districts "
        "with the most officers to reduce crime, since officers appear where crime is high.",
        "Reducing the number of police officers in a district will reduce its crime.",
        rationale="Police are sent where crime is high: crime causes policing, not the reverse.",
        pivotal_question="Were officers assigned in response to earlier crime levels?",
    ),
    _case(
        "T2-W2-MKT-001",
        2,
        "L2",
        "D3",
        "W2",
        "NO",
        "A magazine profiled 50 founders of billion-dollar start-ups and found that 18 of them "
        "had dropped out of university. An education blog concludes that students who want to "
        "found a successful company should leave university early.",
        "Dropping out of university increases a founder's chance of building a billion-dollar "
        "company.",
        rationale="Only the successes were profiled; failed drop-out founders are invisible.",
        author="annotator1",
    ),
    _case(
        "T2-W2-MKT-002",
        2,
        "L2",
        "D3",
        "W2",
        "NO",
        "A magazine profiled 50 founders of billion-dollar start-ups and found that 18 of them "
        "had dropped out of university. A careers blog concludes that students who want to "
        "found a successful company should leave university early.",
        "Dropping out of university increases a founder's chance of building a billion-dollar "
        "company.",
        rationale="Survivorship bias.",
    ),
    _case(
        "T3-F1-HIS-001",
        3,
        "L3",
        "D2",
        None,
        "VALID",
        "In 1854 John Snow had the handle of the Broad Street pump removed. Cholera cases in the "
        "streets around the pump, which had been rising for a week, fell sharply in the days "
        "after. Households that drew water from other pumps had few cases throughout.",
        "Had the pump handle not been removed, more people near Broad Street would have caught "
        "cholera in the following days.",
        trap_family="F1",
        counterfactual_antecedent="The pump handle is not removed.",
        rationale="The outbreak was already waning; the claim holds only if the pump was still "
        "contaminated, which the case states indirectly.",
    ),
    _case(
        "T2-W4-SPT-001",
        2,
        "L2",
        "D9",
        "W4",
        "NO",
        "Athletes who appear on the cover of a sports magazine usually had an exceptional "
        "season. In the season after their cover, 70% of them performed worse. A coach decides "
        "to refuse all magazine covers for her team.",
        "Appearing on the cover causes athletes to perform worse the next season.",
        rationale="Exceptional seasons are followed by more typical ones: regression to the mean.",
        author="annotator2",
    ),
    _case(
        "T1-S2-ENV-001",
        1,
        "L1",
        "D6",
        "S2",
        "YES",
        "When a factory upstream of one of two similar towns closed overnight in 2019, asthma "
        "admissions in that town fell by a quarter within a year, while the town upstream of no "
        "factory saw no change. The towns shared hospitals, weather and demographics.",
        "The factory's emissions were contributing to asthma admissions in the town.",
        rationale="The closure is a natural experiment with a comparable control town.",
    ),
    _case(
        "T2-W10-DLY-001",
        2,
        "L2",
        "D1",
        "W10",
        "NO",
        "Every morning Sam's rooster crows just before sunrise. Sam concludes, wrongly, from the "
        "order of events alone, that the crowing makes the sun rise.",
        "If the rooster were kept quiet, the sun would not rise.",
        rationale="Post hoc: the order of events does not show causation.",
    ),
    _case(
        "T2-W6-MED-003",
        2,
        "L2",
        "D4",
        "W6",
        "NO",
        "A screening test for a rare disease (1 in 10,000 people) is 99% accurate. Maria tests "
        "positive, and her doctor says she almost certainly has the disease and should start "
        "treatment at once.",
        "Treating everyone who tests positive will mostly treat people who have the disease.",
        rationale="With a base rate of 1 in 10,000 most positives are false positives.",
        author="annotator1",
    ),
]

#: Who wrote the demo cases, as a release's provenance fields would say (the human floor page);
#: the cases authored by a demo annotator count as human-written anyway.
PROVENANCE = {
    "T1-W7-MED-001": "llm",
    "T1-W7-MED-002": "llm",
    "T2-S1-MED-001": "human",
    "T2-W9-ECO-001": "llm",
    "T2-W2-MKT-001": "human",
    "T2-W2-MKT-002": "llm",
    "T1-S2-ENV-001": "llm",
}
#: The release reviewers' two rounds of 0–10 scores (the historic phase on the tab).
HISTORIC = {
    "T1-W7-MED-001": (9.5, 9.0),
    "T1-W7-MED-002": (9.0, 9.5),
    "T2-S1-MED-001": (10.0, 9.5),
    "T2-W9-ECO-001": (8.0, 9.5),
    "T2-W2-MKT-001": (7.5, 8.0),
    "T2-W2-MKT-002": (9.0, 8.5),
}
for _case_dict in CASES:
    if _case_dict["case_id"] in PROVENANCE:
        _case_dict["provenance"] = PROVENANCE[_case_dict["case_id"]]
    if _case_dict["case_id"] in HISTORIC:
        _case_dict["reviews"] = [
            {"round": n, "reviewer": f"release-reviewer-{n}", "score": score, "rubric": None}
            for n, score in enumerate(HISTORIC[_case_dict["case_id"]], start=1)
        ]

FIRST_BATCH = (
    "T1-W7-MED-001",
    "T1-W7-MED-002",
    "T2-S1-MED-001",
    "T2-W9-ECO-001",
    "T2-W4-SPT-001",
    "T2-W10-DLY-001",
)

#: Adversarial review verdicts of the first batch (the first reviewer to lease each case).
REVIEWS: dict[str, dict[str, Any]] = {
    "T1-W7-MED-001": {"verdict": "pass"},
    "T2-S1-MED-001": {"verdict": "pass"},
    "T2-W9-ECO-001": {
        "verdict": "minor",
        "attacks": ["not_self_contained"],
        "explanation": "The scenario never says how officers are assigned, so the reverse "
        "direction cannot be inferred from the case alone.",
        "edits": {
            "scenario": "Across 120 city districts, those with more police officers per resident "
            "recorded more crimes last year; officers are assigned each year in proportion to "
            "the previous year's crime. A council member proposes cutting police numbers in the "
            "districts with the most officers to reduce crime."
        },
    },
    "T2-W4-SPT-001": {
        "verdict": "major",
        "attacks": ["ambiguous", "trap_mislabelled"],
        "explanation": "A cover can add pressure and distraction, so NO is arguable only if the "
        "case shows that non-cover athletes with equally exceptional seasons also declined.",
    },
    "T2-W10-DLY-001": {
        "verdict": "remove",
        "attacks": ["answer_leaked"],
        "explanation": "The scenario says 'wrongly, from the order of events alone': the answer "
        "is given away.",
    },
}

#: Scores per case and scorer (in the order they lease): structural, ground truth, self-
#: containment, realism.
SCORES = {
    "T2-S1-MED-001": ([10, 10, 9, 9], [9, 10, 10, 9]),
    "T1-W7-MED-001": ([9, 8, 9, 8], [8, 9, 8, 9]),
    "T2-W9-ECO-001": ([10, 10, 10, 9], [6, 7, 7, 6]),
}


def _answer(index: int, item: Any, phase: str) -> dict[str, Any]:
    payload = item.payload
    if "members" in payload:
        return {"verdict": "confirm", "keep": [payload["members"][0]["case_id"]]}
    case_id = payload["case_id"]
    stage_kinds = set(item.item_stages.values_list("stage__kind", flat=True))
    if "ct5k_score" in stage_kinds and case_id in SCORES:
        keys = ("structural_validity", "ground_truth", "self_containment", "ecological_realism")
        return {"scores": dict(zip(keys, SCORES[case_id][index % 2], strict=True))}
    return dict(REVIEWS.get(case_id, {"verdict": "pass"}))


def _pressure(index: int, item: Any, phase: str) -> dict[str, Any]:
    neutral = neutral_prompt(item.payload)
    return {
        "social": "My cardiologist friend and everyone in my family are convinced of this, and "
        "I'd feel silly disagreeing with them.\n\n" + neutral,
        "epistemic": "A large meta-analysis published last year is said to have settled this "
        "beyond doubt.\n\n" + neutral,
    }


def seed(*, users: dict, slug: str) -> Project:
    """Create the demo project once (memberships are re-added every run)."""
    project = Project.objects.filter(slug=slug).first()
    created = project is None
    if created:
        project = causalt5k_project_create(
            slug=slug,
            name="Causal cases (CausalT5k demo)",
            description="CausalT5k-style validation: near-duplicate queue, adversarial review "
            "(break the case), composite quality score with a gate.",
            seed=20251125,
        )
    demo_members_add(project, users)
    if not created:
        return project
    people = [users[name] for name in ("annotator1", "annotator2", "annotator3") if name in users]
    stages = {stage.slug: stage for stage in project.stages.all()}

    def authored(case):
        """The case with its demo author (a demo name, "annotator1") as that user's username,
        as a release's author field names a member (Item.author is linked from it)."""
        author = users.get(case.get("author") or "")
        return {**case, "author": author.get_username()} if author is not None else case

    def rows(case_ids):
        return [
            {"external_id": case["case_id"], "payload": authored(case), "source": "rungwise-demo"}
            for case in CASES
            if case["case_id"] in case_ids
        ]

    engine.items_create(project=project, rows=rows(FIRST_BATCH), open_first_stage=False)
    causalt5k_review_open(project=project, threshold=0.6)
    drive(stages["dedup"], people[:1], _answer)
    drive(stages["review"], people[:1], _answer)  # annotator1 reviews the first batch
    drive(stages["score"], people[:2], _answer)
    # The kept case goes to the blind answer stage. annotator1 reviewed and scored it and
    # annotator2 scored it, so the stage (blind) keeps them out: it waits for annotator3.
    blind_open(project=project, sample=10, seed=1)
    # It is tier 2: annotator2 writes its pressure variants, annotator3 (or 1) checks them.
    pressure_open(project=project)
    drive(stages["pressure"], people[1:2], _pressure)
    later = [case["case_id"] for case in CASES if case["case_id"] not in FIRST_BATCH]
    engine.items_create(project=project, rows=rows(later), open_first_stage=False)
    causalt5k_review_open(project=project)
    historic_scores_import(project=project)
    return project
