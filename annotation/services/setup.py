"""Projects, people, stages and items: creating and changing what annotators work on.

Stage settings are checked in one place (stage_settings_clean) for the stage services and
the admin; people leave through user_remove / membership_remove, which release their leases."""

from __future__ import annotations

import json
import logging
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import EmptyResultSet
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from annotation import sql
from annotation.eligibility import validate_rules
from annotation.errors import ApplicationError, Conflict, NotFound
from annotation.gold import gold_every_clean
from annotation.inputs import check_storable, clean_text
from annotation.kinds import get_kind
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemRevision,
    ItemStage,
    Membership,
    Project,
    Role,
    Stage,
)
from annotation.phases import first_slots, validate_phases
from annotation.policies import PolicySettings, check_settings, get_policy, kind_policies
from annotation.routing import validate_routes
from annotation.services.leases import _release_assignments
from annotation.slots import EVERYONE

logger = logging.getLogger(__name__)

#: Item stage states in which work on an item is still going on.
UNCLOSED_STATES = (
    ItemStage.State.OPEN,
    ItemStage.State.RESOLVING,
    ItemStage.State.ADJUDICATION,
)


# --- Projects, members, stages, items ---------------------------------------------------------


@transaction.atomic
def project_create(
    *,
    slug: str,
    name: str,
    kind: str = "generic",
    description: str = "",
    guidelines: str = "",
    settings: Mapping[str, Any] | None = None,
) -> Project:
    if Project.objects.filter(slug=slug).exists():
        raise ApplicationError(f"A project with the slug {slug!r} already exists.", {"slug": slug})
    return Project.objects.create(
        slug=slug,
        name=name,
        kind=kind,
        description=description,
        guidelines=guidelines,
        settings=dict(settings or {}),
    )


def membership_add(*, project: Project, user: User, role: str) -> Membership:
    if role not in Role.values:
        raise ApplicationError(
            f"Unknown role {role!r}.", {"role": f"one of {', '.join(Role.values)}"}
        )
    membership, _ = Membership.objects.get_or_create(project=project, user=user, role=role)
    return membership


@transaction.atomic
def membership_set_paused(
    *, project: Project, user_id: int, paused: bool, reason: str = ""
) -> Membership:
    """Pause or resume an annotator of a project. A paused annotator gets no new items; their
    active leases are released so that the slots go to others. Unknown or non-annotator users
    are a NotFound; a reason longer than 300 characters is refused."""
    reason = clean_text(reason, field="reason", max_length=300)
    membership = (
        Membership.objects.select_for_update()
        .select_related("user")
        .filter(project=project, user_id=user_id, role=Role.ANNOTATOR)
        .first()
    )
    if membership is None:
        raise NotFound("This person is not an annotator of the project.")
    membership.is_paused = paused
    membership.paused_reason = (reason or "Paused by a researcher.") if paused else ""
    membership.save(update_fields=["is_paused", "paused_reason"])
    if paused:
        active = Assignment.objects.filter(
            stage__project=project, annotator_id=user_id, status=Assignment.Status.ACTIVE
        ).values_list("pk", flat=True)
        _release_assignments(list(active), status=Assignment.Status.REVOKED, reason="paused")
    return membership


@transaction.atomic
def membership_remove(*, project: Project, user_id: int, role: str = Role.ANNOTATOR) -> int:
    """Take a role away from a person; removing an annotator releases their active leases in
    the project so the slots go to others (their submitted work stays). Returns the number of
    memberships removed."""
    removed, _ = Membership.objects.filter(project=project, user_id=user_id, role=role).delete()
    if removed and role == Role.ANNOTATOR:
        active = Assignment.objects.filter(
            stage__project=project, annotator_id=user_id, status=Assignment.Status.ACTIVE
        ).values_list("pk", flat=True)
        _release_assignments(list(active), status=Assignment.Status.REVOKED, reason="removed")
    return removed


@transaction.atomic
def user_remove(*, user: User) -> User:
    """Remove a person from Rungwise without losing their work: their active leases are
    released (the slots go to others), their memberships and API tokens removed, and the
    account anonymised and locked. Annotations keep pointing at the account, so releases and
    agreement still count them as one (pseudonymous) annotator. Deleting the account row
    itself is refused by the database (PROTECT) once it has worked on anything."""
    active = Assignment.objects.filter(annotator=user, status=Assignment.Status.ACTIVE).values_list(
        "pk", flat=True
    )
    _release_assignments(list(active), status=Assignment.Status.REVOKED, reason="removed")
    Membership.objects.filter(user=user).delete()
    from rest_framework.authtoken.models import Token

    Token.objects.filter(user=user).delete()
    user.username = f"removed-{user.pk}"
    for field in ("email", "first_name", "last_name"):
        if hasattr(user, field):
            setattr(user, field, "")
    user.is_active = False
    user.is_staff = False
    user.is_superuser = False
    user.set_unusable_password()
    user.save()
    return user


@transaction.atomic
def assignments_release(
    *, annotator_id: int, project: Project, reason: str, stage_ids: Sequence[int] | None = None
) -> int:
    """Take back a person's active leases in a project (or in ``stage_ids`` of it) so that the
    slots go to others, as revoked (never submittable again); their submitted work stays.
    Returns the number of leases released. For plug-ins that end someone's session (a crowd
    participant who timed out or returned the study)."""
    active = Assignment.objects.filter(
        stage__project=project, annotator_id=annotator_id, status=Assignment.Status.ACTIVE
    )
    if stage_ids is not None:
        active = active.filter(stage_id__in=list(stage_ids))
    return _release_assignments(
        list(active.values_list("pk", flat=True)),
        status=Assignment.Status.REVOKED,
        reason=clean_text(reason, field="reason", max_length=300),
    )


@transaction.atomic
def annotations_withdraw(
    *, annotator_id: int, project: Project, reason: str, stage_ids: Sequence[int] | None = None
) -> tuple[int, int]:
    """Withdraw a person's work from a project (a participant who withdrew from a study): their
    active leases are released, and each annotation on an item stage that is still open in the
    round and phase it was made in is deleted, its slot reopened (``submitted_count`` − 1 under
    the item stage's row lock, so ``submitted + leased ≤ target`` holds) and its assignment
    revoked with the reason, so the person never gets that item again. Annotations of item
    stages already complete (resolving, decided, closed) or moved on to another round or phase
    are kept: a decision was made with them. Returns (withdrawn, kept).

    The one place where submitted work is deleted (CONTRIBUTING.md, "Models hold data and
    constraints"): a participant's withdrawal asks for exactly that."""
    reason = clean_text(reason, field="reason", max_length=300) or "withdrawn"
    assignments_release(
        annotator_id=annotator_id, project=project, reason=reason, stage_ids=stage_ids
    )
    annotations = Annotation.objects.filter(
        annotator_id=annotator_id, item_stage__stage__project=project, assignment__isnull=False
    )
    if stage_ids is not None:
        annotations = annotations.filter(item_stage__stage_id__in=list(stage_ids))
    rows = list(annotations.values_list("pk", "item_stage_id", "assignment_id", "round", "phase"))
    withdrawn = kept = 0
    for item_stage_id in sorted({row[1] for row in rows}):
        item_stage = ItemStage.objects.select_for_update().filter(pk=item_stage_id).first()
        for _, _, assignment_id, round_, phase in (row for row in rows if row[1] == item_stage_id):
            if (
                item_stage is None
                or item_stage.state != ItemStage.State.OPEN
                or (item_stage.round, item_stage.phase) != (round_, phase)
            ):
                kept += 1
                continue
            # Every version of the answer (a changed answer keeps its earlier ones).
            Annotation.all_versions.filter(assignment_id=assignment_id).delete()
            Assignment.objects.filter(pk=assignment_id).update(
                status=Assignment.Status.REVOKED, skip_reason=reason[:300]
            )
            ItemStage.objects.filter(pk=item_stage_id).update(
                submitted_count=F("submitted_count") - 1
            )
            withdrawn += 1
    return withdrawn, kept


def item_stage_counters_repair(*, limit: int = 5000) -> int:
    """Recount the slot counters of open and resolving item stages from the rows and fix those
    that drifted (a lease deleted outside the services, say). ``submitted_count`` counts the
    annotations of the item stage's current round and phase, ``leased_count`` its active
    leases. Returns the number of item stages repaired; safe to run at any time (each fix
    runs under the item stage's row lock and is recomputed there)."""
    from django.db.models import Count, IntegerField, OuterRef, Subquery
    from django.db.models.functions import Coalesce

    def counted(model, **filters):
        rows = (
            model.objects.filter(
                item_stage=OuterRef("pk"),
                round=OuterRef("round"),
                phase=OuterRef("phase"),
                **filters,
            )
            .order_by()
            .values("item_stage")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return Coalesce(Subquery(rows, output_field=IntegerField()), 0)

    drifted = list(
        ItemStage.objects.filter(state__in=[ItemStage.State.OPEN, ItemStage.State.RESOLVING])
        .annotate(
            real_submitted=counted(Annotation),
            real_leased=counted(Assignment, status=Assignment.Status.ACTIVE),
        )
        .exclude(submitted_count=F("real_submitted"), leased_count=F("real_leased"))
        .values_list("pk", flat=True)[:limit]
    )
    repaired = 0
    for item_stage_id in drifted:
        with transaction.atomic():
            row = (
                ItemStage.objects.select_for_update()
                .filter(pk=item_stage_id)
                .annotate(
                    real_submitted=counted(Annotation),
                    real_leased=counted(Assignment, status=Assignment.Status.ACTIVE),
                )
                .first()
            )
            if row is None:
                continue
            submitted = row.real_submitted
            leased = min(row.real_leased, max(row.target_count - submitted, 0))
            if (row.submitted_count, row.leased_count) == (submitted, leased):
                continue
            logger.warning(
                "item stage %s: counters %s/%s recounted as %s/%s",
                row.pk, row.submitted_count, row.leased_count, submitted, leased,
            )  # fmt: skip
            ItemStage.objects.filter(pk=row.pk).update(
                submitted_count=submitted, leased_count=leased
            )
            repaired += 1
    return repaired


#: Stage fields checked together by stage_settings_clean (besides kind, slug and overlap).
STAGE_SETTINGS = (
    "config",
    "resolution_policy",
    "tie_policy",
    "tie_default",
    "policy_options",
    "routes",
    "phases",
    "eligibility",
)


def stage_settings_clean(
    *,
    project: Project,
    slug: str,
    kind: str,
    overlap: int,
    settings: Mapping[str, Any],
    position: int | None = None,
) -> dict[str, Any]:
    """Check a stage's settings together, as the engine will run them; returns them cleaned.

    The one check behind stage_create, stage_update and the admin's stage form: the kind
    exists and accepts the config (``validate_config``) and the policy; the policy accepts its
    settings; phases have forms in the kind; routes name outcomes the policy decides and stages
    of the project (a 'back' route only this stage or an earlier one); eligibility rules are
    known. ApplicationError names the setting otherwise."""
    task_kind = get_kind(kind)
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 1:
        raise ApplicationError("Overlap must be at least 1.", {"overlap": overlap})
    clean: dict[str, Any] = {}
    clean["config"] = task_kind.validate_config(settings.get("config") or {})
    policy_key = settings.get("resolution_policy") or task_kind.default_policy
    if policy_key not in kind_policies(task_kind):
        raise ApplicationError(
            f"The {kind} kind does not support the {policy_key!r} resolution policy.",
            {"resolution_policy": f"one of {', '.join(kind_policies(task_kind))}"},
        )
    clean["resolution_policy"] = policy_key
    clean["tie_policy"] = settings.get("tie_policy") or Stage.TiePolicy.ADJUDICATE
    clean["tie_default"] = settings.get("tie_default")
    clean["policy_options"] = dict(settings.get("policy_options") or {})
    clean["phases"] = validate_phases(
        settings.get("phases"), kind_phases=getattr(task_kind, "phase_names", None)
    )
    last_slots = clean["phases"][-1]["slots"] if clean["phases"] else overlap
    check_settings(
        policy_key,
        PolicySettings(
            tie_policy=clean["tie_policy"],
            tie_default=clean["tie_default"],
            required=last_slots,
            reject_values=task_kind.reject_values,
            options=clean["policy_options"],
        ),
    )
    ordered = list(
        project.stages.exclude(slug=slug).order_by("position").values_list("position", "slug")
    )
    own_position = position if position is not None else (ordered[-1][0] + 1 if ordered else 0)
    existing = Stage.objects.filter(project=project, slug=slug).values_list("position", flat=True)
    if position is None and existing:
        own_position = existing[0]
    slugs = [slug for _, slug in sorted([*ordered, (own_position, slug)])]
    clean["routes"] = validate_routes(
        settings.get("routes"),
        stage_slug=slug,
        stage_slugs=slugs,
        outcomes=get_policy(policy_key).outcomes,
    )
    clean["eligibility"] = validate_rules(settings.get("eligibility"), stage_slugs=slugs)
    return clean


@transaction.atomic
def stage_create(
    *,
    project: Project,
    slug: str,
    name: str,
    kind: str,
    overlap: int = 3,
    config: Mapping[str, Any] | None = None,
    position: int | None = None,
    **options: Any,
) -> Stage:
    """Add a stage to the end of a project's pipeline (or at `position`); every setting is
    checked by stage_settings_clean first, and every text by the database's rule
    (annotation.inputs.check_storable)."""
    check_storable({"slug": slug, "name": name, "config": config, **options}, field="stage")
    if "gold_every" in options:  # silent gold's rate (annotation/gold.py)
        options["gold_every"] = gold_every_clean(options["gold_every"])
    settings = {key: options.pop(key) for key in STAGE_SETTINGS if key in options}
    settings["config"] = config
    clean = stage_settings_clean(
        project=project,
        slug=slug,
        kind=kind,
        overlap=overlap,
        settings=settings,
        position=position,
    )
    if position is None:
        last = project.stages.order_by("-position").values_list("position", flat=True).first()
        position = 0 if last is None else last + 1
    return Stage.objects.create(
        project=project,
        slug=slug,
        name=name,
        kind=kind,
        overlap=overlap,
        position=position,
        seed=options.pop("seed", random.SystemRandom().randrange(1, 2**31)),
        **clean,
        **options,
    )


@transaction.atomic
def stage_update(*, stage: Stage, **changes: Any) -> Stage:
    """Change a stage's settings (e.g. routes to stages created after it); checked together
    with the settings it keeps (and every text by the database's rule,
    annotation.inputs.check_storable). Kind and slug changes are refused: items and annotations
    are already judged under them."""
    for fixed in ("kind", "slug", "project"):
        if fixed in changes and changes[fixed] != getattr(stage, fixed):
            raise ApplicationError(f"A stage's {fixed} cannot change.", {fixed: "fixed"})
    check_storable(changes, field="stage")
    if "gold_every" in changes:  # silent gold's rate (annotation/gold.py)
        changes["gold_every"] = gold_every_clean(changes["gold_every"])
    locked = Stage.objects.select_for_update().get(pk=stage.pk)
    settings = {key: changes.get(key, getattr(locked, key)) for key in STAGE_SETTINGS}
    overlap = changes.get("overlap", locked.overlap)
    clean = stage_settings_clean(
        project=locked.project,
        slug=locked.slug,
        kind=locked.kind,
        overlap=overlap,
        settings=settings,
    )
    simple = {
        key: value for key, value in changes.items() if key not in STAGE_SETTINGS and key != "kind"
    }
    for key, value in {**clean, **simple, "overlap": overlap}.items():
        setattr(locked, key, value)
    locked.save()
    return locked


@cache
def _open_sql(vendor: str, new_items: bool = False, ungrouped: bool = False) -> str:
    """The one statement that opens items in a stage (hand-written: the ORM has no INSERT …
    SELECT, and computing group ranks in Python meant loading every item of an import). Per
    group a random distinct rank and the group's size, so that an annotator's order can put one
    variant of every group before the second variant of any; items with no group are a group
    of one. Only the random key, the gold lookup and the list of ids are spelled per database
    (_OPEN_VENDOR). ``new_items``: the items are in no stage yet, so the statement leaves out
    ``ON CONFLICT`` and its look-up before each row (the unique constraint still refuses a row
    that is there). ``ungrouped``: no item has a group, so the statement computes no window (a
    sort of every item it opens); an item with a group breaks that promise loudly, its rank and
    size being NULL, which their NOT NULL columns refuse. Text built once per process."""
    spelling = _OPEN_VENDOR[vendor]
    into, i = sql.quoted(ItemStage), sql.quoted(Item, "i")
    gold = spelling["gold"].format(payload=i.payload, purpose=i.purpose)
    if ungrouped:  # NULL (refused) for an item with a group
        rank, size = f"CASE WHEN {i.group} = '' THEN 0 END", f"CASE WHEN {i.group} = '' THEN 1 END"
    else:
        rank = (
            f"CASE WHEN {i.group} = '' THEN 0 ELSE"
            f" row_number() OVER (PARTITION BY {i.group} ORDER BY random()) - 1 END"
        )
        size = f"CASE WHEN {i.group} = '' THEN 1 ELSE count(*) OVER (PARTITION BY {i.group}) END"
    return f"""
    INSERT INTO {sql.table(ItemStage)}
        ({into.item_id}, {into.stage_id}, {into.state}, {into.target_count},
         {into.submitted_count}, {into.leased_count}, {into.random_key}, {into.spread_rank},
         {into.group_size}, {into.phase}, {into.round}, {into.gold}, {into.opened_at})
    SELECT {i.id}, %(stage)s, %(open)s,
        CASE WHEN {i.purpose} = %(gold_purpose)s THEN %(everyone)s ELSE %(target)s END,
        0, 0, {spelling["random_key"]},
        {rank}, {size},
        0, 0, {gold}, %(now)s
    FROM {sql.table(Item)} i
    WHERE {i.id} IN ({spelling["ids"]})
    {"" if new_items else f"ON CONFLICT ({into.item_id}, {into.stage_id}) DO NOTHING"}
    """


_OPEN_VENDOR = {
    "postgresql": {
        "random_key": "floor(random() * 2147483648)::bigint",
        "gold": "CASE WHEN jsonb_typeof({payload} -> 'gold' -> %(slug)s) NOT IN ('null')"
        " THEN {payload} -> 'gold' -> %(slug)s"
        " WHEN {purpose} = %(gold_purpose)s AND jsonb_typeof({payload} -> 'gold')"
        " NOT IN ('null', 'object') THEN {payload} -> 'gold' END",
        "ids": "SELECT unnest(%(ids)s::bigint[])",
    },
    "sqlite": {
        "random_key": "abs(random() %% 2147483648)",
        "gold": "CASE WHEN json_type({payload}, %(gold_path)s) NOT IN ('null')"
        " THEN {payload} -> %(gold_path)s"
        " WHEN {purpose} = %(gold_purpose)s AND json_type({payload}, '$.gold')"
        " NOT IN ('null', 'object') THEN {payload} -> '$.gold' END",
        "ids": "SELECT value FROM json_each(%(ids)s)",
    },
}


_NAMED_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _positional(
    vendor: str,
    named: Mapping[str, Any],
    ids: QuerySet[Any],
    new_items: bool = False,
    ungrouped: bool = False,
) -> tuple[str, list[Any]]:
    """``_open_sql(vendor, new_items, ungrouped)`` with its id list replaced by the SQL of ``ids`` (a one-column
    queryset) and every placeholder made positional, as the ORM's SQL spells them; the
    parameters in their order. Raises ``EmptyResultSet`` when ``ids`` cannot match."""
    subquery, subquery_params = ids.query.sql_with_params()
    statement = _open_sql(vendor, new_items, ungrouped).replace(
        _OPEN_VENDOR[vendor]["ids"], "%(ids)s"
    )
    params: list[Any] = []

    def placeholder(match: re.Match[str]) -> str:
        if match.group(1) == "ids":
            params.extend(subquery_params)
            return subquery
        params.append(named[match.group(1)])
        return "%s"

    return _NAMED_PLACEHOLDER.sub(placeholder, statement), params


def item_stages_open(
    *,
    items: Iterable[Item | int] | QuerySet[Item],
    stage: Stage,
    new_items: bool = False,
    ungrouped: bool = False,
) -> int:
    """Put items into a stage: the one way items enter a stage (imports, item creation,
    routes). ``items``: a queryset of items (its SQL read by the statement itself) or items /
    item ids, opened by one INSERT … SELECT whatever their number. Each new item stage gets a
    fixed random key, its group rank and size, the first phase's slots as its target and its
    gold answer (``payload["gold"][stage.slug]``); a silent gold item (``Item.Purpose.GOLD``,
    annotation/gold.py) gets every annotator's slots (``EVERYONE``) and may give its answer as
    a plain ``payload["gold"]`` (for whichever stage it opens in).
    Items already in the stage are left as they are; ``new_items=True`` promises that none is
    in it (items created by the caller's transaction, as an import's): a broken promise is an
    IntegrityError, never a second row. ``ungrouped=True`` promises that no item has a group
    (an import that read none): no group ranks are computed, and a broken promise is an
    IntegrityError, never a wrong rank. Returns how many were opened."""
    vendor = "postgresql" if connection.vendor == "postgresql" else "sqlite"
    params: dict[str, Any] = {
        "stage": stage.pk,
        "open": ItemStage.State.OPEN.value,
        "target": first_slots(stage),
        "now": connection.ops.adapt_datetimefield_value(timezone.now()),
        "slug": stage.slug,
        "gold_path": f'$.gold."{stage.slug}"',
        # Silent gold items (annotation/gold.py) are open to every annotator and never fill.
        "gold_purpose": Item.Purpose.GOLD.value,
        "everyone": EVERYONE,
    }
    if isinstance(items, QuerySet):
        # The queryset's own SQL as the statement's id list: no id passes through Python, so
        # opening a million imported items takes no more memory than opening ten.
        try:
            statement, positional = _positional(
                vendor, params, items.values("pk"), new_items, ungrouped
            )
        except EmptyResultSet:  # e.g. ``.none()``
            return 0
        with connection.cursor() as cursor:
            cursor.execute(statement, positional)
            return cursor.rowcount
    ids = [item if isinstance(item, int) else item.pk for item in items]
    if not ids:
        return 0
    params["ids"] = ids if vendor == "postgresql" else json.dumps(ids)
    statement = _open_sql(vendor, new_items, ungrouped)
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount


#: External ids looked up per statement when items_create checks for ones already stored
#: (a whole release in one IN list would pass SQLite's limit of bound parameters).
_IDS_PER_LOOKUP = 5000


@transaction.atomic
def items_create(
    *,
    project: Project,
    rows: Iterable[Mapping[str, Any]],
    import_batch: Any = None,
    open_first_stage: bool = True,
) -> list[Item]:
    """Create items from rows of {"external_id", "payload", "source"?, "group"?, "purpose"?} and
    open them in the project's first stage. Duplicate external ids are an error naming them."""
    items = [
        Item(
            project=project,
            external_id=str(row["external_id"]),
            payload=dict(row.get("payload") or {}),
            source=row.get("source", "") or "",
            group=row.get("group", "") or "",
            purpose=row.get("purpose", Item.Purpose.REGULAR) or Item.Purpose.REGULAR,
            import_batch=import_batch,
        )
        for row in rows
    ]
    ids = [item.external_id for item in items]
    duplicates = sorted(external_id for external_id, n in Counter(ids).items() if n > 1)
    if duplicates:
        raise ApplicationError(
            f"{len(duplicates)} external ids appear more than once: {', '.join(duplicates[:10])}.",
            {"external_id": duplicates[:100]},
        )
    existing: list[str] = []
    for start in range(0, len(ids), _IDS_PER_LOOKUP):  # a bounded list per statement
        existing += Item.objects.filter(
            project=project, external_id__in=ids[start : start + _IDS_PER_LOOKUP]
        ).values_list("external_id", flat=True)[: 100 - len(existing)]
        if len(existing) >= 100:
            break
    if existing:
        raise ApplicationError(
            f"Items with these external ids already exist in {project.name}: "
            f"{', '.join(existing[:10])}.",
            {"external_id": existing},
        )
    created = Item.objects.bulk_create(items, batch_size=2000)
    if open_first_stage:
        first = project.stages.filter(is_active=True).order_by("position").first()
        if first is not None:
            item_stages_open(items=created, stage=first)
    return created


def items_with_open_work(item_ids: Sequence[int]) -> dict[int, list[str]]:
    """{item id: names of the stages where it has work on its current version} for the items
    that item_revise would refuse to change (a lease out, or unresolved annotations)."""
    busy: dict[int, list[str]] = {}
    rows = (
        ItemStage.objects.filter(item_id__in=list(item_ids), state__in=UNCLOSED_STATES)
        .filter(Q(leased_count__gt=0) | Q(submitted_count__gt=0))
        .order_by("item_id", "stage__position")
        .values_list("item_id", "stage__name")
    )
    for item_id, name in rows:
        busy.setdefault(item_id, []).append(name)
    return busy


@transaction.atomic
def item_revise(
    *,
    item: Item,
    payload: Mapping[str, Any],
    author: User | None,
    reason: str,
    stage: Stage | None = None,
) -> ItemRevision:
    """Change an item's content, keeping the previous version and a field-level diff.

    Refused (Conflict naming the stages) while the item has work on its current version in a
    stage that is not closed: a lease out, or annotations of the current round not yet
    resolved. Reopening instead would mix judgements of two versions in one vote; every
    annotation records the version it judged (``Annotation.item_version``). ``stage``: the
    stage whose resolution revises the item (a route's "revise"), whose own work is done.
    The item's unclosed item stages stay locked until the change commits, so no annotator is
    shown the old version after it."""
    locked = Item.objects.select_for_update().get(pk=item.pk)
    busy = [
        item_stage.stage.name
        for item_stage in ItemStage.objects.select_for_update(of=("self",))
        .select_related("stage")
        .filter(item=locked, state__in=UNCLOSED_STATES)
        .exclude(stage=stage)
        .order_by("stage__position")
        if item_stage.leased_count or item_stage.submitted_count
    ]
    if busy:
        raise Conflict(
            f"{locked.external_id} is being annotated in {', '.join(busy)}: change it when that "
            f"work is resolved, so that no vote mixes judgements of two versions.",
            {"open_work": busy},
        )
    old, new = locked.payload, dict(payload)
    diff = {
        key: {"old": old.get(key), "new": new.get(key)}
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    }
    if not diff:
        raise ApplicationError("The revision changes nothing.", {"payload": "identical"})
    if not locked.revisions.exists():
        # Keep the original content as revision 1 so that every version can be shown.
        ItemRevision.objects.create(item=locked, number=1, payload=old, reason="original")
    locked.version += 1
    locked.payload = new
    locked.save(update_fields=["payload", "version"])
    item.payload, item.version = locked.payload, locked.version
    return ItemRevision.objects.create(
        item=locked,
        number=locked.version,
        payload=new,
        diff=diff,
        reason=reason,
        author=author,
        stage=stage,
    )
