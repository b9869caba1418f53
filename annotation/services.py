"""Writes of the annotation engine. Each public service owns its transaction (CONTRIBUTING.md, "Services own the transaction").

Hot paths (assignment_next, annotation_submit) are written for a fixed, small number of queries:
four each, so that next + submit stays within the eight-query budget of the annotator loop.
"""

from __future__ import annotations

import logging
import math
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from functools import cache
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation import sql
from annotation.access import FOREIGN_ASSIGNMENT
from annotation.eligibility import conditions as eligibility_conditions
from annotation.eligibility import validate_rules
from annotation.errors import ApplicationError, Conflict, NotFound, PermissionDenied
from annotation.inputs import check_payload, clean_client_info, clean_text
from annotation.kinds import KindContext, get_kind
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemRevision,
    ItemStage,
    Membership,
    Project,
    Resolution,
    Role,
    Stage,
)
from annotation.phases import first_slots, is_last, stage_phases, validate_phases
from annotation.policies import Ballot, PolicySettings, check_settings, get_policy
from annotation.resolution import Decision
from annotation.routing import route_for, validate_routes

logger = logging.getLogger(__name__)

# --- Enqueueing side effects ------------------------------------------------------------------


def enqueue_on_commit(task: Any, *args: Any) -> None:
    """Send a Celery task after the current transaction commits.

    A broker outage must delay results, never fail a submission that has already been stored:
    publishing errors are logged and the beat sweeps (annotation.tasks) repair what was missed.
    """

    def send() -> None:
        try:
            task.delay(*args)
        except Exception:  # broker down, connection refused, eager task failure
            logger.exception("could not run or enqueue %s%r; the sweep will retry", task.name, args)

    transaction.on_commit(send)


def planner_statistics_refresh(*models: Any) -> None:
    """ANALYZE the tables of `models` after a bulk load (PostgreSQL only).

    Autovacuum analyses a table only some time after a large COPY; until then the planner may
    still believe it holds the few rows it had, and choose nested loops that take minutes over
    tens of thousands of rows. Bulk imports call this before their reads."""
    if connection.vendor != "postgresql":
        return
    tables = ", ".join(connection.ops.quote_name(model._meta.db_table) for model in models)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")


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


def membership_add(*, project: Project, user: AbstractBaseUser, role: str) -> Membership:
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
        _release_assignments(list(active), status=Assignment.Status.EXPIRED)
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
        _release_assignments(list(active), status=Assignment.Status.EXPIRED, reason="removed")
    return removed


@transaction.atomic
def user_remove(*, user: AbstractBaseUser) -> AbstractBaseUser:
    """Remove a person from Rungwise without losing their work: their active leases are
    released (the slots go to others), their memberships and API tokens removed, and the
    account anonymised and locked. Annotations keep pointing at the account, so releases and
    agreement still count them as one (pseudonymous) annotator. Deleting the account row
    itself is refused by the database (PROTECT) once it has worked on anything."""
    active = Assignment.objects.filter(annotator=user, status=Assignment.Status.ACTIVE).values_list(
        "pk", flat=True
    )
    _release_assignments(list(active), status=Assignment.Status.EXPIRED, reason="removed")
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
    if policy_key not in task_kind.policies:
        raise ApplicationError(
            f"The {kind} kind does not support the {policy_key!r} resolution policy.",
            {"resolution_policy": f"one of {', '.join(task_kind.policies)}"},
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
    checked by stage_settings_clean first."""
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
    with the settings it keeps. Kind and slug changes are refused: items and annotations are
    already judged under them."""
    for fixed in ("kind", "slug", "project"):
        if fixed in changes and changes[fixed] != getattr(stage, fixed):
            raise ApplicationError(f"A stage's {fixed} cannot change.", {fixed: "fixed"})
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


def _spread_ranks(items: Sequence[Item], rng: random.Random) -> dict[int, tuple[int, int]]:
    """Give each item of a group a distinct rank (and the group's size), in random order, so
    that an annotator's order can put one variant of every group before the second variant of
    any. Items with no group are their own group of one."""
    groups: dict[str, list[Item]] = defaultdict(list)
    ranks: dict[int, tuple[int, int]] = {}
    for item in items:
        if item.group:
            groups[item.group].append(item)
        else:
            ranks[item.pk] = (0, 1)
    for members in groups.values():
        order = list(range(len(members)))
        rng.shuffle(order)
        for rank, member in zip(order, members, strict=True):
            ranks[member.pk] = (rank, len(members))
    return ranks


def item_stages_open(
    *, items: Sequence[Item], stage: Stage, rng: random.Random | None = None
) -> list[ItemStage]:
    """Put items into a stage (bulk). Items already in the stage are left as they are."""
    rng = rng or random.Random()
    ranks = _spread_ranks(items, rng)
    rows = [
        ItemStage(
            item=item,
            stage=stage,
            target_count=first_slots(stage),
            random_key=rng.getrandbits(31),
            spread_rank=ranks[item.pk][0],
            group_size=ranks[item.pk][1],
            gold=(item.payload.get("gold") or {}).get(stage.slug)
            if isinstance(item.payload.get("gold"), dict)
            else None,
        )
        for item in items
    ]
    return ItemStage.objects.bulk_create(rows, ignore_conflicts=True, batch_size=2000)


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
    duplicates = sorted({external_id for external_id in ids if ids.count(external_id) > 1})
    if duplicates:
        raise ApplicationError(
            f"{len(duplicates)} external ids appear more than once: {', '.join(duplicates[:10])}.",
            {"external_id": duplicates[:100]},
        )
    existing = list(
        Item.objects.filter(project=project, external_id__in=ids).values_list(
            "external_id", flat=True
        )[:100]
    )
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


@transaction.atomic
def item_revise(
    *,
    item: Item,
    payload: Mapping[str, Any],
    author: AbstractBaseUser | None,
    reason: str,
    stage: Stage | None = None,
) -> ItemRevision:
    """Change an item's content, keeping the previous version and a field-level diff."""
    locked = Item.objects.select_for_update().get(pk=item.pk)
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


# --- Next item --------------------------------------------------------------------------------


def _annotator_salt(stage: Stage, annotator_id: int) -> int:
    """A per-(stage, annotator) multiplier in [1, prime-1], stable across requests."""
    return random.Random(f"{stage.seed}:{annotator_id}").randrange(1, sql.ORDER_PRIME - 1)


@cache
def _candidate_sql(order_policy: str, vendor: str, phases: str = "[]", rules: str = "[]") -> str:
    """The candidate search for the next item, as one statement (text built once per process
    for each backend, order policy, phase list and rule list — the last two as JSON text, so
    they can key the cache); named parameters: see _candidate_params.

    The searches are tried in turn until one yields a row:

    - RANDOM stages: every open item in the annotator's own seeded order, one variant of every
      group before the second variant of any (a sort over the stage's open items: O(open items)
      per request, fine for rating stages of thousands of items).
    - DEPTH_FIRST stages: (1) items already in progress, most complete first, then in the
      annotator's own order (a small set, by a partial index); (2) fresh items, in the stage's
      random order entered at a point fixed per annotator and wrapping round, so the search is
      an index range scan however many items the stage holds.

    Every search skips items the annotator already held in the item stage's current round and
    phase (submitted, skipped, expired), items without a free slot, items the phase's people
    rule keeps them from (annotation.phases: "new" — nobody from an earlier phase of the round;
    "same" — only those who submitted in one) and items a stage eligibility rule refuses
    (annotation.eligibility: one SQL condition each). On PostgreSQL each search is a CTE that
    locks its row (FOR UPDATE SKIP LOCKED, so concurrent annotators never take the same slot)
    and `UNION ALL … LIMIT 1` evaluates them lazily: a later search neither runs nor locks
    anything once an earlier one has found its row. The chosen row is then joined with its item.
    """
    import json

    item_stages, assignments = sql.table(ItemStage), sql.table(Assignment)
    open_state = ItemStage.State.OPEN.value
    lock = sql.lock(skip_locked=True)
    conditions = [
        f"NOT EXISTS (SELECT 1 FROM {assignments} a WHERE a.item_stage_id = c.id"
        " AND a.annotator_id = %(annotator)s AND a.round = c.round AND a.phase = c.phase)"
    ]
    for index, spec in enumerate(json.loads(phases)):
        people = spec.get("people", "any")
        if people == "any":
            continue
        earlier = (
            f"SELECT 1 FROM {assignments} p WHERE p.item_stage_id = c.id"
            " AND p.annotator_id = %(annotator)s AND p.round = c.round AND p.phase < c.phase"
        )
        if people == "new":
            conditions.append(
                f"(c.phase <> {index} OR NOT EXISTS ({earlier}"
                " AND p.status IN ('active', 'submitted')))"
            )
        else:  # same
            conditions.append(
                f"(c.phase <> {index} OR EXISTS ({earlier} AND p.status = 'submitted'))"
            )
    tables = {
        model.__name__: sql.table(model)
        for model in (Item, ItemStage, Assignment, Stage, Membership, Project)
    }
    conditions += [
        condition.sql for condition in eligibility_conditions(json.loads(rules), tables=tables)
    ]
    base = (
        f"SELECT c.id FROM {item_stages} c"
        f" WHERE c.stage_id = %(stage)s AND c.state = '{open_state}'"
        " AND c.submitted_count < c.target_count - c.leased_count AND " + " AND ".join(conditions)
    )
    personal = f"CAST(c.random_key AS BIGINT) * %(salt)s %% {sql.ORDER_PRIME}"
    if order_policy == Stage.OrderPolicy.RANDOM:
        searches = [
            f"{base} ORDER BY (c.spread_rank + %(spread)s) %% c.group_size, {personal}"
            f" LIMIT 1{lock}"
        ]
    else:
        fresh = f"{base} AND c.submitted_count = 0 AND c.leased_count = 0"
        searches = [
            f"{base} AND (c.submitted_count > 0 OR c.leased_count > 0)"
            f" ORDER BY c.submitted_count + c.leased_count DESC, {personal} LIMIT 1{lock}",
            f"{fresh} AND c.random_key >= %(entry)s ORDER BY c.random_key LIMIT 1{lock}",
            f"{fresh} AND c.random_key < %(entry)s ORDER BY c.random_key LIMIT 1{lock}",
        ]
    ctes = ", ".join(f"search_{index} AS ({search})" for index, search in enumerate(searches))
    chain = " UNION ALL ".join(f"SELECT id FROM search_{index}" for index in range(len(searches)))
    return (
        f"SELECT {sql.columns(ItemStage, 's')}, {sql.columns(Item, 'i')}"
        f" FROM {item_stages} s JOIN {sql.table(Item)} i ON i.id = s.item_id"
        f" WHERE s.id IN (WITH {ctes} {chain} LIMIT 1)"
    )


def _candidate_params(stage: Stage, annotator_id: int) -> dict[str, Any]:

    salt = _annotator_salt(stage, annotator_id)
    params: dict[str, Any] = {
        "stage": stage.pk,
        "annotator": annotator_id,
        "project": stage.project_id,
        "salt": salt,
    }
    if stage.order_policy == Stage.OrderPolicy.RANDOM:
        params["spread"] = salt % 997
    else:
        params["entry"] = salt % (2**31)
    tables = {
        name: "" for name in ("Item", "ItemStage", "Assignment", "Stage", "Membership", "Project")
    }
    for condition in eligibility_conditions(stage.eligibility or [], tables=tables):
        params.update(condition.params)
    return params


def _candidate_key(stage: Stage) -> tuple[str, str, str, str]:
    """The cache key of a stage's candidate statement."""
    import json

    return (
        stage.order_policy,
        connection.vendor,
        json.dumps(stage.phases or [], sort_keys=True),
        json.dumps(stage.eligibility or [], sort_keys=True),
    )


def assignment_next(*, annotator: AbstractBaseUser, stage: Stage) -> Assignment | None:
    """Lease the next item of `stage` to `annotator`, or return None when none is left.

    `stage` must come from access_stage_for_annotator (it carries the current lease id).
    Asking again while holding an unexpired lease returns the same assignment (renewed).

    Locking: the chosen ItemStage row is taken with SELECT … FOR UPDATE SKIP LOCKED inside one
    transaction, so concurrent annotators never take the same slot; the slot counters change
    under that lock and a CHECK constraint backs the overlap invariant. Two simultaneous requests
    of one annotator collide on the one-active-lease-per-stage constraint; the loser retries and
    gets the winner's lease.
    """
    for attempt in range(3):
        try:
            return _assignment_next(annotator, stage)
        except IntegrityError:
            if attempt == 2:
                raise
            stage.current_assignment_id = (
                Assignment.objects.filter(
                    stage=stage, annotator=annotator, status=Assignment.Status.ACTIVE
                )
                .values_list("pk", flat=True)
                .first()
            )
    return None  # pragma: no cover


@transaction.atomic
def _assignment_next(annotator: AbstractBaseUser, stage: Stage) -> Assignment | None:
    now = timezone.now()
    current_id = getattr(stage, "current_assignment_id", None)
    if current_id is not None:
        current = _renew(current_id, now, stage)
        if current is not None:
            return current
    item_stage = _take_candidate(stage, annotator.pk)
    if item_stage is None:
        if not leases_reclaim_expired(stage_id=stage.pk, now=now):
            return None
        item_stage = _take_candidate(stage, annotator.pk)
        if item_stage is None:
            return None
    assignment = Assignment(
        item_stage=item_stage,
        stage=stage,
        annotator=annotator,
        status=Assignment.Status.ACTIVE,
        created_at=now,
        expires_at=now + timedelta(seconds=stage.lease_seconds),
        round=item_stage.round,
        phase=item_stage.phase,
    )
    _insert_lease(assignment)
    item_stage.leased_count += 1
    assignment.item_stage = item_stage
    return assignment


def _insert_lease(assignment: Assignment) -> None:
    """Insert the assignment and take its slot (leased_count + 1): one statement on PostgreSQL
    (a data-modifying CTE), two elsewhere. The caller holds the item stage's row lock."""
    if connection.vendor != "postgresql":
        assignment.save(force_insert=True)
        ItemStage.objects.filter(pk=assignment.item_stage_id).update(
            leased_count=F("leased_count") + 1
        )
        return
    with sql.cursor() as cursor:
        cursor.execute(
            f"""
            WITH slot AS (
                UPDATE {ItemStage._meta.db_table} SET leased_count = leased_count + 1
                WHERE id = %s
            )
            INSERT INTO {Assignment._meta.db_table}
                (item_stage_id, stage_id, annotator_id, status, created_at, expires_at,
                 finished_at, skip_reason, round, phase)
            VALUES (%s, %s, %s, %s, %s, %s, NULL, '', %s, %s)
            RETURNING id
            """,
            [
                assignment.item_stage_id,
                assignment.item_stage_id,
                assignment.stage_id,
                assignment.annotator_id,
                assignment.status,
                assignment.created_at,
                assignment.expires_at,
                assignment.round,
                assignment.phase,
            ],
        )
        assignment.pk = cursor.fetchone()[0]
    assignment._state.adding = False


def _take_candidate(stage: Stage, annotator_id: int) -> ItemStage | None:
    """Lock and return the first candidate (with its item), skipping rows others hold: one
    statement (see _candidate_sql)."""
    row = sql.fetchone(
        _candidate_sql(*_candidate_key(stage)), _candidate_params(stage, annotator_id)
    )
    if row is None:
        return None
    item_stage = sql.load(ItemStage, row)
    item_stage.item = sql.load(Item, row, sql.width(ItemStage))
    return item_stage


def _renew(assignment_id: int, now: Any, stage: Stage) -> Assignment | None:
    """Renew the annotator's active lease (still counted in leased_count, so still theirs)."""
    assignment = (
        Assignment.objects.select_related("item_stage__item")
        .select_for_update(of=("self",))
        .filter(pk=assignment_id, status=Assignment.Status.ACTIVE)
        .first()
    )
    if assignment is None:
        return None
    assignment.expires_at = now + timedelta(seconds=stage.lease_seconds)
    assignment.save(update_fields=["expires_at"])
    assignment.stage = stage
    return assignment


def _release_assignments(assignment_ids: list[int], *, status: str, reason: str = "") -> int:
    """Mark active assignments `status` and give their slots back. Caller holds a transaction."""
    if not assignment_ids:
        return 0
    locked = list(
        Assignment.objects.select_for_update(skip_locked=True)
        .filter(pk__in=assignment_ids, status=Assignment.Status.ACTIVE)
        .values_list("pk", "item_stage_id")
    )
    if not locked:
        return 0
    Assignment.objects.filter(pk__in=[pk for pk, _ in locked]).update(
        status=status, finished_at=timezone.now(), skip_reason=reason
    )
    per_item_stage: dict[int, int] = defaultdict(int)
    for _, item_stage_id in locked:
        per_item_stage[item_stage_id] += 1
    for item_stage_id, count in per_item_stage.items():
        ItemStage.objects.filter(pk=item_stage_id).update(leased_count=F("leased_count") - count)
    return len(locked)


@transaction.atomic
def leases_reclaim_expired(
    *, stage_id: int | None = None, now: Any = None, limit: int = 5000
) -> int:
    """Expire leases past their time and free their slots. Safe to run concurrently: rows
    another transaction holds are skipped and picked up by the next run."""
    now = now or timezone.now()
    expired = Assignment.objects.filter(status=Assignment.Status.ACTIVE, expires_at__lt=now)
    if stage_id is not None:
        expired = expired.filter(stage_id=stage_id)
    ids = list(expired.order_by("expires_at").values_list("pk", flat=True)[:limit])
    return _release_assignments(ids, status=Assignment.Status.EXPIRED)


@cache
def _locked_assignment_sql(vendor: str) -> str:
    return (
        f"SELECT {sql.columns(Assignment, 'a')}, {sql.columns(ItemStage, 's')},"
        f" {sql.columns(Stage, 'st')}"
        f" FROM {sql.table(Assignment)} a"
        f" JOIN {sql.table(ItemStage)} s ON s.id = a.item_stage_id"
        f" JOIN {sql.table(Stage)} st ON st.id = a.stage_id"
        f" WHERE a.id = %s{sql.lock('a', 's')}"
    )


def _locked_assignment(*, assignment_id: int, user: AbstractBaseUser) -> Assignment:
    """The user's assignment with its item stage and stage; the assignment's and the item
    stage's rows locked (one statement). Foreign ids → 403, unknown ones → 404."""
    row = None
    if sql.in_range(Assignment, assignment_id):
        row = sql.fetchone(_locked_assignment_sql(connection.vendor), [assignment_id])
    if row is None:
        raise NotFound("There is no such assignment.")
    assignment = sql.load(Assignment, row)
    if assignment.annotator_id != user.pk:
        raise PermissionDenied(FOREIGN_ASSIGNMENT)
    offset = sql.width(Assignment)
    assignment.item_stage = sql.load(ItemStage, row, offset)
    assignment.stage = sql.load(Stage, row, offset + sql.width(ItemStage))
    return assignment


@transaction.atomic
def assignment_skip(*, assignment_id: int, annotator: AbstractBaseUser, reason: str) -> Assignment:
    """Give up an item (with a reason): the slot goes to others, and the annotator never gets the
    item again. Skipping twice is harmless."""
    reason = clean_text(reason, field="reason", max_length=300)
    if not reason:
        raise ApplicationError("Say why you skip this item.", {"reason": "required"})
    assignment = _locked_assignment(assignment_id=assignment_id, user=annotator)
    if assignment.status == Assignment.Status.SUBMITTED:
        raise Conflict("This item is already submitted; it cannot be skipped.")
    if assignment.status == Assignment.Status.SKIPPED:
        return assignment
    if assignment.status == Assignment.Status.ACTIVE:
        ItemStage.objects.filter(pk=assignment.item_stage_id).update(
            leased_count=F("leased_count") - 1
        )
    assignment.status = Assignment.Status.SKIPPED
    assignment.skip_reason = reason
    assignment.finished_at = timezone.now()
    assignment.save(update_fields=["status", "skip_reason", "finished_at"])
    return assignment


# --- Submit -----------------------------------------------------------------------------------


def annotation_submit(
    *,
    assignment_id: int,
    annotator: AbstractBaseUser,
    payload: Mapping[str, Any],
    seconds_spent: float | None = None,
    client_info: Mapping[str, Any] | None = None,
) -> tuple[Annotation, bool]:
    """Store an annotation for the annotator's lease; returns (annotation, created).

    Idempotent: a retried submit for the same assignment returns the stored annotation and
    `created=False`, whatever payload it carries. A lease that expired is still accepted while
    its slot is free; otherwise 409. When the item stage reaches its target, resolution is
    enqueued after commit (and the beat sweep repairs a lost message).
    """
    payload = check_payload(payload)
    client_info = clean_client_info(client_info)
    try:
        return _annotation_submit(assignment_id, annotator, payload, seconds_spent, client_info)
    except IntegrityError:
        # Two identical submits raced past the status check on different connections before
        # one committed; the unique assignment on Annotation stopped the second.
        stored = Annotation.objects.filter(assignment_id=assignment_id).first()
        if stored is None:
            raise
        return stored, False


@transaction.atomic
def _annotation_submit(
    assignment_id: int,
    annotator: AbstractBaseUser,
    payload: Mapping[str, Any],
    seconds_spent: float | None,
    client_info: Mapping[str, Any] | None,
) -> tuple[Annotation, bool]:
    assignment = _locked_assignment(assignment_id=assignment_id, user=annotator)
    if assignment.status == Assignment.Status.SUBMITTED:
        return Annotation.objects.get(assignment=assignment), False
    if assignment.status == Assignment.Status.SKIPPED:
        raise Conflict("You skipped this item, so it can no longer be submitted.")
    stage = assignment.stage
    clean = get_kind(stage.kind).validate(
        payload if isinstance(payload, Mapping) else {},
        KindContext(stage=stage, item_stage=assignment.item_stage, annotator_id=annotator.pk),
    )
    if seconds_spent is not None and not (0 <= seconds_spent < 7 * 24 * 3600):
        raise ApplicationError(
            "seconds_spent must be between 0 and a week.", {"seconds_spent": seconds_spent}
        )
    item_stage = assignment.item_stage
    holds_slot = assignment.status == Assignment.Status.ACTIVE
    if not holds_slot and (
        item_stage.state != ItemStage.State.OPEN
        or item_stage.submitted_count + item_stage.leased_count >= item_stage.target_count
    ):
        raise Conflict(
            f"Your lease on this item expired at {assignment.expires_at:%H:%M:%S} UTC and the "
            "item went to other annotators. Ask for the next item.",
            {"expires_at": assignment.expires_at.isoformat()},
        )
    now = timezone.now()
    annotation = Annotation(
        item_stage=item_stage,
        assignment=assignment,
        annotator=annotator,
        payload=clean,
        seconds_spent=seconds_spent,
        client_info=dict(client_info or {}),
        created_at=now,
        round=assignment.round,
        phase=assignment.phase,
    )
    assignment.status = Assignment.Status.SUBMITTED
    assignment.finished_at = now
    complete = item_stage.submitted_count + 1 >= item_stage.target_count
    _record_submission(annotation, holds_slot=holds_slot, complete=complete)
    if complete:
        from annotation.tasks import resolve_item_stage

        enqueue_on_commit(resolve_item_stage, item_stage.pk)
    return annotation, True


def _record_submission(annotation: Annotation, *, holds_slot: bool, complete: bool) -> None:
    """Store the annotation, mark its assignment submitted and move the slot from leased to
    submitted (closing the item stage when it reaches its target): one statement on PostgreSQL
    (data-modifying CTEs), three elsewhere. The caller holds both rows' locks."""
    assignment, now = annotation.assignment, annotation.created_at
    item_stage_id = assignment.item_stage_id
    if connection.vendor != "postgresql":
        annotation.save(force_insert=True)
        assignment.save(update_fields=["status", "finished_at"])
        changes: dict[str, Any] = {"submitted_count": F("submitted_count") + 1}
        if holds_slot:
            changes["leased_count"] = F("leased_count") - 1
        if complete:
            changes.update(state=ItemStage.State.RESOLVING, completed_at=now)
        ItemStage.objects.filter(pk=item_stage_id).update(**changes)
        return
    json_field = Annotation._meta.get_field("payload")
    with sql.cursor() as cursor:
        cursor.execute(
            f"""
            WITH done AS (
                UPDATE {Assignment._meta.db_table} SET status = %s, finished_at = %s
                WHERE id = %s
            ), slot AS (
                UPDATE {ItemStage._meta.db_table} SET
                    submitted_count = submitted_count + 1,
                    leased_count = leased_count - %s,
                    state = CASE WHEN %s THEN %s ELSE state END,
                    completed_at = CASE WHEN %s THEN %s ELSE completed_at END
                WHERE id = %s
            )
            INSERT INTO {Annotation._meta.db_table}
                (item_stage_id, assignment_id, annotator_id, external_rater, payload,
                 seconds_spent, client_info, created_at, round, phase)
            VALUES (%s, %s, %s, '', %s, %s, %s, %s, %s, %s)
            RETURNING id
            """,
            [
                assignment.status,
                now,
                assignment.pk,
                1 if holds_slot else 0,
                complete,
                ItemStage.State.RESOLVING,
                complete,
                now,
                item_stage_id,
                item_stage_id,
                assignment.pk,
                annotation.annotator_id,
                json_field.get_db_prep_save(annotation.payload, connection),
                annotation.seconds_spent,
                json_field.get_db_prep_save(annotation.client_info, connection),
                now,
                annotation.round,
                annotation.phase,
            ],
        )
        annotation.pk = cursor.fetchone()[0]
    annotation._state.adding = False


# --- Resolution -------------------------------------------------------------------------------


def _ballots(item_stage: ItemStage, kind: Any) -> list[Ballot]:
    """The annotations of the item stage's current round, as the policy sees them: votes,
    payloads and phases, annotators numbered 1, 2, … in the order they submitted."""
    rows = (
        Annotation.objects.filter(item_stage=item_stage, round=item_stage.round)
        .order_by("pk")
        .values_list("payload", "phase", "annotator_id", "external_rater")
    )
    numbers: dict[Any, int] = {}
    ballots = []
    for payload, phase, annotator_id, external in rows:
        who = annotator_id if annotator_id is not None else f"external:{external}"
        number = numbers.setdefault(who, len(numbers) + 1)
        ballots.append(Ballot(kind.vote(payload), payload, phase, number))
    return ballots


def _decision_for(item_stage: ItemStage, stage: Stage) -> Decision:
    kind = get_kind(stage.kind)
    phases = stage_phases(stage)
    settings = PolicySettings(
        tie_policy=stage.tie_policy,
        tie_default=stage.tie_default,
        required=phases[-1].slots,
        reject_values=kind.reject_values,
        options=stage.policy_options or {},
        last_phase=len(phases) - 1,
    )
    return get_policy(stage.resolution_policy).decide(_ballots(item_stage, kind), settings)


def _phase_advance(item_stage: ItemStage, stage: Stage) -> None:
    """Open the item stage's next phase: its slots, counters from zero, open for leasing."""
    item_stage.phase += 1
    item_stage.target_count = stage_phases(stage)[item_stage.phase].slots
    item_stage.submitted_count = 0
    item_stage.state = ItemStage.State.OPEN
    item_stage.completed_at = None
    item_stage.save(
        update_fields=["phase", "target_count", "submitted_count", "state", "completed_at"]
    )


def _follow_route(
    item_stage: ItemStage, stage: Stage, outcome: str, decision: Decision | None = None
) -> None:
    """Carry out the stage's route for `outcome` (annotation.routing): close this item stage
    and move the item on. The caller holds the item stage's row lock."""
    route = route_for(stage, outcome)
    item = item_stage.item
    now = timezone.now()
    if route["action"] == "revise":
        revision = decision.revision if decision is not None else None
        if revision is not None:
            try:
                item_revise(
                    item=item,
                    payload=revision,
                    author=None,
                    reason=f"{stage.name}: {decision.reason or outcome}"[:500],
                    stage=stage,
                )
            except ApplicationError:
                pass  # the chosen version is the current one: nothing to record
        route = route["then"]
    if route["action"] == "back":
        target = Stage.objects.get(project_id=stage.project_id, slug=route["stage"])
        existing = ItemStage.objects.filter(item=item, stage=target).first()
        rounds_done = existing.round if existing is not None else 0
        if rounds_done < route["max_loops"]:
            if target.pk != stage.pk:
                _close_item_stage(item_stage, ItemStage.State.RESOLVED, now)
            _item_stage_reopen(item, target, existing)
            Item.objects.filter(pk=item.pk).update(status=Item.Status.ACTIVE)
            return
        route = route["otherwise"]
    action = route["action"]
    if action == "escalate":
        item_stage.state = ItemStage.State.ADJUDICATION
        item_stage.save(update_fields=["state"])
        Item.objects.filter(pk=item.pk).update(status=Item.Status.ACTIVE)
        return
    next_stage = None
    if action == "next":
        next_stage = (
            Stage.objects.filter(
                project_id=stage.project_id, position__gt=stage.position, is_active=True
            )
            .order_by("position")
            .first()
        )
    elif action == "stage":
        next_stage = Stage.objects.get(project_id=stage.project_id, slug=route["stage"])
    if action in ("next", "stage", "finish"):
        _close_item_stage(item_stage, ItemStage.State.RESOLVED, now)
        if next_stage is not None:
            existing = ItemStage.objects.filter(item=item, stage=next_stage).first()
            _item_stage_reopen(item, next_stage, existing)
            item_status = Item.Status.ACTIVE
        else:
            item_status = Item.Status.ACCEPTED
    elif action == "keep":
        _close_item_stage(item_stage, ItemStage.State.RESOLVED, now)
        item_status = Item.Status.REJECTED
    else:  # discard
        _close_item_stage(item_stage, ItemStage.State.DISCARDED, now)
        item_status = Item.Status.DISCARDED
        if route.get("reason"):
            Resolution.objects.filter(item_stage=item_stage, reason="").update(
                reason=route["reason"]
            )
    Item.objects.filter(pk=item.pk).update(status=item_status)


def _close_item_stage(item_stage: ItemStage, state: str, now: Any) -> None:
    item_stage.state = state
    item_stage.resolved_at = now
    item_stage.save(update_fields=["state", "resolved_at"])


def _item_stage_reopen(item: Item, stage: Stage, existing: ItemStage | None) -> None:
    """Open the item in `stage`: a new item stage, or another round of the one it had (counters
    from zero, first phase; annotations of earlier rounds stay, and policies read the round's)."""
    if existing is None:
        item_stages_open(items=[item], stage=stage)
        return
    existing.round += 1
    existing.phase = 0
    existing.target_count = first_slots(stage)
    existing.submitted_count = 0
    existing.state = ItemStage.State.OPEN
    existing.completed_at = None
    existing.resolved_at = None
    existing.save(
        update_fields=[
            "round",
            "phase",
            "target_count",
            "submitted_count",
            "state",
            "completed_at",
            "resolved_at",
        ]
    )


@transaction.atomic
def item_stage_resolve(*, item_stage_id: int) -> Resolution | None:
    """Decide a completed item stage by its stage's policy and follow the outcome's route, or
    open its next phase. Idempotent and safe to run concurrently: the item stage row is locked
    and only a RESOLVING row is acted on."""
    item_stage = (
        ItemStage.objects.select_for_update(of=("self",))
        .select_related("stage", "item")
        .filter(pk=item_stage_id)
        .first()
    )
    if item_stage is None or item_stage.state != ItemStage.State.RESOLVING:
        return Resolution.objects.filter(item_stage_id=item_stage_id).first()
    stage = item_stage.stage
    if not is_last(stage, item_stage):
        _phase_advance(item_stage, stage)
        return None
    decision = _decision_for(item_stage, stage)
    resolution, _ = Resolution.objects.update_or_create(
        item_stage=item_stage,
        defaults={
            "value": decision.value,
            "status": decision.status,
            "outcome": decision.outcome,
            "votes": decision.votes,
            "n_annotations": sum(decision.votes.values())
            if decision.votes
            else item_stage.submitted_count,
            "policy": stage.resolution_policy,
            "decided_by": None,
            "reason": decision.reason,
        },
    )
    if decision.needs_more and item_stage.target_count < stage.effective_max_overlap:
        item_stage.target_count += 1
        item_stage.state = ItemStage.State.OPEN
        item_stage.completed_at = None
        item_stage.save(update_fields=["target_count", "state", "completed_at"])
    elif decision.outcome == "pending":
        item_stage.state = ItemStage.State.ADJUDICATION
        item_stage.save(update_fields=["state"])
    else:
        _follow_route(item_stage, stage, decision.outcome, decision)
    return resolution


@transaction.atomic
def item_stage_adjudicate(
    *, item_stage_id: int, reviewer: AbstractBaseUser, value: Any, reason: str
) -> Resolution:
    """A reviewer's decision on an item stage waiting for adjudication: one of the item
    stage's choices (the kind's), routed like the policy's own outcomes."""
    reason = clean_text(reason, field="reason", max_length=2000)
    if not reason:
        raise ApplicationError("Give a reason for the decision.", {"reason": "required"})
    item_stage = (
        ItemStage.objects.select_for_update(of=("self",))
        .select_related("stage", "item")
        .filter(pk=item_stage_id)
        .first()
    )
    if item_stage is None:
        raise NotFound(f"There is no item stage {item_stage_id}.")
    if item_stage.state != ItemStage.State.ADJUDICATION:
        raise Conflict("This item is not waiting for adjudication (someone may have decided it).")
    stage = item_stage.stage
    kind = get_kind(stage.kind)
    context = KindContext(stage=stage, item_stage=item_stage)
    categories = kind.choices(context)
    if categories is not None and value not in categories:
        raise ApplicationError(
            f"Decide one of: {', '.join(map(str, categories))} (got {value!r}).",
            {"value": [str(category) for category in categories]},
        )
    if categories is None:
        # An open (numeric) answer: the value a reviewer decides must be one an annotator could
        # have given — the kind's own validation, so NaN, infinities and values off the scale
        # are refused with the kind's message.
        if isinstance(value, float) and not math.isfinite(value):
            raise ApplicationError("The decision must be a finite number.", {"value": value})
        vote_field = kind.vote_field or "value"
        value = kind.validate({vote_field: value}, context).get(vote_field)
    outcome = "reject" if value in kind.reject_values else "accept"
    resolution, _ = Resolution.objects.update_or_create(
        item_stage=item_stage,
        defaults={
            "value": value,
            "status": Resolution.Status.ADJUDICATED,
            "outcome": outcome,
            "policy": stage.resolution_policy,
            "decided_by": reviewer,
            "reason": reason,
        },
    )
    route = route_for(stage, outcome)
    if route["action"] == "escalate":
        # The reviewer has decided; escalating again would loop. Rejected means discarded.
        _close_item_stage(item_stage, ItemStage.State.DISCARDED, timezone.now())
        Item.objects.filter(pk=item_stage.item_id).update(status=Item.Status.DISCARDED)
    else:
        _follow_route(item_stage, stage, outcome)
    return resolution


def item_stages_unresolved(*, older_than_seconds: float = 30, limit: int = 1000) -> list[int]:
    """Ids of item stages complete for a while but still unresolved (a lost message)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    return list(
        ItemStage.objects.filter(state=ItemStage.State.RESOLVING, completed_at__lte=cutoff)
        .order_by("completed_at")
        .values_list("pk", flat=True)[:limit]
    )
