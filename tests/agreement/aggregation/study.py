"""A small label stage with planted spammers, built through the engine's services, for the tests
of the model policies, the fitting service and the page section (tests/agreement/aggregation/).

Five people label items whose true label is ``LABELS[index % 3]``: three careful ones (always
right) and two spammers who always answer "causal". On items two spammers share, the plurality
says "causal" whatever the truth; Dawid–Skene learns that the spammers' votes carry nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.models import Role
from tests.factories import annotate_stage, make_items, make_label_stage, make_member, make_project

LABELS = ("causal", "temporal", "none")
CAREFUL, SPAMMERS = 3, 2


@dataclass
class Study:
    project: Any
    stage: Any
    careful: list
    spammers: list
    researcher: Any


def truth(item) -> str:
    return LABELS[int(item.external_id.split("-")[1]) % 3]


def choose(study: Study):
    def answer(person, item) -> str:
        return "causal" if person in study.spammers else truth(item)

    return answer


def build(*, slug: str, policy: str = "dawid_skene", **stage_options: Any) -> Study:
    project = make_project(slug=slug)
    stage = make_label_stage(
        project, overlap=3, choices=LABELS, resolution_policy=policy, **stage_options
    )
    careful = [make_member(project, username=f"{slug}-careful-{n}") for n in range(CAREFUL)]
    spammers = [make_member(project, username=f"{slug}-spammer-{n}") for n in range(SPAMMERS)]
    researcher = make_member(project, Role.RESEARCHER, username=f"{slug}-researcher")
    return Study(project, stage, careful, spammers, researcher)


def annotate(study: Study, capture_on_commit, *, items: int, prefix: str = "item") -> int:
    """Add ``items`` items and have everyone annotate them (resolved on commit)."""
    make_items(study.project, items, prefix=prefix)
    with capture_on_commit(execute=True):
        return annotate_stage(study.stage, [*study.spammers, *study.careful], choose(study))
