"""The llm app's part of cloning a project's setup (``Plugin.clone``, called by
``annotation.plugins.plugins_clone`` inside studio's ``project_clone``).

Copied into the new project:

* every prompt template, with every version as it is (number, system and user texts,
  checksum, author), so a rater of the copy asks with the very text the source's did;
* every active model rater, on the copy of its stage, with the same endpoint, the copy of its
  prompt version, samples, temperature and whether it fills a person's slot. Each gets its own
  annotator identity through ``llm.services.rater_add``, the one way a rater is made.

Not copied: runs, calls, answers, calibrations, evaluations (data, not setup), and nothing of an
endpoint: endpoints belong to the site, not to a project, and hold no key (only the name of an
environment variable), so the copy uses the same ones and no secret is ever read or written.

An extra rater (``fills_human_slot`` False) holds a slot of its stage (``rater_add`` raises the
overlap by one and adds the ``model_slots`` rule). The copied stage arrives with the source's
overlap and rules, reserved slots included, so those slots are handed back first and
``rater_add`` reserves them again, one per rater: the copy ends with the source's overlap and
rules exactly.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import User

from annotation.api import stage_slots_add, stage_update
from annotation.models import Project, Stage
from llm.models import ModelRater, PromptTemplate, PromptVersion
from llm.services import rater_add


def project_setup_clone(
    *, source: Project, copy: Project, stages: Mapping[int, Stage], by: User | None = None
) -> str | None:
    """Copy ``source``'s prompts and model raters into ``copy`` (module docstring); ``stages``
    maps each stage id of ``source`` to its copy. Runs inside the clone's transaction. Returns
    what was copied in words ("2 prompts, 1 model rater"), None when there was nothing."""
    versions = _prompts_clone(source, copy)
    raters = (
        ModelRater.objects.filter(stage__project=source, active=True)
        .select_related("endpoint", "prompt")
        .order_by("stage__position", "pk")
    )
    extra: dict[int, int] = {}
    for rater in raters:
        if not rater.fills_human_slot:
            extra[rater.stage_id] = extra.get(rater.stage_id, 0) + 1
    for stage_id, count in extra.items():
        _slots_hand_back(stages[stage_id], count)
    made = 0
    for rater in raters:
        rater_add(
            stage=stages[rater.stage_id],
            endpoint=rater.endpoint,
            prompt=versions[rater.prompt_id],
            samples=rater.samples,
            temperature=rater.temperature,
            fills_human_slot=rater.fills_human_slot,
        )
        made += 1
    templates = len({version.template_id for version in versions.values()})
    said = [_count(templates, "prompt"), _count(made, "model rater")]
    return ", ".join(words for words in said if words) or None


def _prompts_clone(source: Project, copy: Project) -> dict[int, PromptVersion]:
    """Every template of ``source`` with its versions, copied into ``copy``: source version id →
    its copy."""
    copies: dict[int, PromptVersion] = {}
    for template in PromptTemplate.objects.filter(project=source).order_by("name"):
        twin = PromptTemplate.objects.create(
            project=copy, name=template.name, kind=template.kind, purpose=template.purpose
        )
        for version in template.versions.order_by("number"):
            copies[version.pk] = PromptVersion.objects.create(
                template=twin,
                number=version.number,
                system=version.system,
                user=version.user,
                checksum=version.checksum,
                created_by=version.created_by,
            )
    return copies


def _slots_hand_back(stage: Stage, count: int) -> None:
    """Give back the ``count`` slots the source's extra raters held on the copied ``stage`` (it
    has no items yet) and drop the rule that kept them: ``rater_add`` reserves them again."""
    stage_slots_add(stage=stage, delta=-count)
    stage.refresh_from_db()
    rules = [dict(rule) for rule in (stage.eligibility or [])]
    stage_update(stage=stage, eligibility=[r for r in rules if r.get("rule") != "model_slots"])


def _count(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}" if number else ""
