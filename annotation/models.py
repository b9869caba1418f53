"""The annotation engine's data and constraints.

Workflows live in services.py; models only hold data, constraints and indexes (CONTRIBUTING.md, "Models hold data and constraints").
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Coalesce


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    REVIEWER = "reviewer", "Reviewer"
    RESEARCHER = "researcher", "Researcher"
    ADMIN = "admin", "Admin"


class Project(models.Model):
    """One benchmark campaign."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    kind = models.CharField(
        max_length=32,
        default="generic",
        help_text="A registered workflow (annotation.workflows): picks its import schema and "
        "release layout.",
    )
    description = models.TextField(blank=True)
    guidelines = models.TextField(blank=True, help_text="Shown to annotators beside every item.")
    settings = models.JSONField(default=dict, blank=True)
    license = models.CharField(max_length=100, blank=True, default="CC-BY-4.0")
    citation = models.TextField(blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in a project; a user may hold several roles in one project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    is_paused = models.BooleanField(
        default=False, help_text="A paused annotator gets no new items in this project."
    )
    paused_reason = models.CharField(max_length=300, blank=True)
    skills = models.CharField(
        max_length=300,
        blank=True,
        help_text="Space-separated skill tags (e.g. 'expert medicine'); stages may require one.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "user", "role"], name="membership_unique_role"
            )
        ]
        indexes = [models.Index(fields=["user", "project"])]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} · {self.project}"


class Item(models.Model):
    """One unit of data. Content changes only through ItemRevision (services.item_revise)."""

    class Purpose(models.TextChoices):
        REGULAR = "regular", "Regular"
        PRACTICE = "practice", "Practice"
        ATTENTION_CHECK = "attention_check", "Attention check"
        #: A silent gold item (annotation/gold.py): served among a stage's items at the stage's
        #: ``gold_every`` rate, never counted as work, left out of agreement and releases.
        GOLD = "gold", "Silent gold"

    # No index of its own: item_project_id_idx (project, id), below, and every other index of
    # the table start with the project (migrations 0020_import_write_lean, 0021_item_project_id_idx).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="items", db_index=False
    )
    external_id = models.CharField(max_length=200)
    payload = models.JSONField(default=dict)
    source = models.CharField(max_length=200, blank=True)
    group = models.CharField(
        max_length=200,
        blank=True,
        help_text="Items of one group (e.g. the 8 variants of a sentence pair) are spread apart "
        "in each annotator's order.",
    )
    purpose = models.CharField(max_length=20, choices=Purpose.choices, default=Purpose.REGULAR)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="authored_items",
        help_text="Who wrote the item, if a member did: stages can keep authors off their own items.",
    )
    # Provenance, kept without a database constraint (SET_NULL is Django's, in Python): the
    # constraint's check ran once per imported item (migration 0020_import_write_lean).
    import_batch = models.ForeignKey(
        "imports.ImportBatch",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="items",
        db_constraint=False,
    )

    class Status(models.TextChoices):
        ACTIVE = "active", "In the pipeline"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected (kept, flagged)"
        DISCARDED = "discarded", "Discarded"

    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="item_unique_external_id"
            )
        ]
        indexes = [
            models.Index(fields=["project", "group"]),
            models.Index(fields=["project", "status"]),
            # The data manager's keyset pages by status (studio/data_manager/selectors.py),
            # ties broken by id (benchmarks/data_manager.py measures it).
            models.Index(fields=["project", "status", "id"], name="item_project_status_id_idx"),
            # A project's items newest first (the data manager's first page and its sample of
            # payload paths): the primary key alone walked past every newer item of other
            # projects (benchmarks/README.md, "Pages at scale"). Replaces the foreign key's
            # own index on project, so an insert maintains no more indexes than before.
            models.Index(fields=["project", "id"], name="item_project_id_idx"),
        ]

    def __str__(self) -> str:
        return self.external_id


class ItemRevision(models.Model):
    """One change to an item's content: who, when, what changed and why."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    payload = models.JSONField()
    diff = models.JSONField(default=dict, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    stage = models.ForeignKey("Stage", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "number"]
        constraints = [
            models.UniqueConstraint(fields=["item", "number"], name="item_revision_unique_number")
        ]

    def __str__(self) -> str:
        return f"{self.item_id} r{self.number}"


class Stage(models.Model):
    """One step of a project's pipeline."""

    class OnAccept(models.TextChoices):
        ADVANCE = "advance", "Advance to the next stage"
        KEEP = "keep", "Keep (final)"

    class OnReject(models.TextChoices):
        DISCARD = "discard", "Discard"
        KEEP = "keep", "Keep (final, flagged)"
        ESCALATE = "escalate", "Escalate to a reviewer"

    class TiePolicy(models.TextChoices):
        ADJUDICATE = "adjudicate", "Send to a reviewer"
        EXTRA_ANNOTATION = "extra_annotation", "Ask one more annotator"
        DEFAULT = "default", "Use the stage default"

    class OrderPolicy(models.TextChoices):
        DEPTH_FIRST = "depth_first", "Finish items already in progress first"
        RANDOM = "random", "Each annotator's own seeded random order"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="stages")
    position = models.PositiveIntegerField()
    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=32, help_text="A registered task kind (annotation.kinds).")
    config = models.JSONField(default=dict, blank=True, help_text="Options of the task kind.")
    instructions = models.TextField(blank=True)
    overlap = models.PositiveIntegerField(default=3, help_text="Annotations needed per item (k).")
    lease_seconds = models.PositiveIntegerField(default=600)
    resolution_policy = models.CharField(max_length=32, default="majority")
    tie_policy = models.CharField(
        max_length=20, choices=TiePolicy.choices, default=TiePolicy.ADJUDICATE
    )
    tie_default = models.JSONField(null=True, blank=True)
    max_overlap = models.PositiveIntegerField(
        default=0, help_text="Upper bound when ties ask for more annotators (0 = overlap + 2)."
    )
    on_accept = models.CharField(max_length=16, choices=OnAccept.choices, default=OnAccept.ADVANCE)
    on_reject = models.CharField(max_length=16, choices=OnReject.choices, default=OnReject.DISCARD)
    order_policy = models.CharField(
        max_length=16, choices=OrderPolicy.choices, default=OrderPolicy.DEPTH_FIRST
    )
    seed = models.PositiveIntegerField(default=0, help_text="Seeds each annotator's item order.")
    policy_options = models.JSONField(
        default=dict,
        blank=True,
        help_text="Options of the resolution policy (annotation.policies), e.g. a score gate.",
    )
    routes = models.JSONField(
        default=dict,
        blank=True,
        help_text="Where a decided item goes, by outcome (annotation.routing); outcomes not "
        "listed follow on_accept / on_reject.",
    )
    phases = models.JSONField(
        default=list,
        blank=True,
        help_text="Phases run in order inside one item stage, each with its slots and form "
        "(annotation.phases); empty = one phase of `overlap` slots.",
    )
    eligibility = models.JSONField(
        default=list,
        blank=True,
        help_text="Who may take an item (annotation.eligibility), e.g. "
        '[{"rule": "not_author"}, {"rule": "not_in_stage", "stage": "verify"}].',
    )
    is_active = models.BooleanField(default=True)
    # Silent gold (annotation/gold.py).
    gold_every = models.PositiveIntegerField(
        default=0,
        help_text="Silent gold: at most one gold item in every n items an annotator gets, never "
        "the first (0 = no gold items are served).",
    )

    class Meta:
        ordering = ["project", "position"]
        constraints = [
            models.UniqueConstraint(fields=["project", "position"], name="stage_unique_position"),
            models.UniqueConstraint(fields=["project", "slug"], name="stage_unique_slug"),
        ]

    def __str__(self) -> str:
        return f"{self.project.slug}/{self.slug}"

    @property
    def effective_max_overlap(self) -> int:
        return self.max_overlap or self.overlap + 2


class ItemStage(models.Model):
    """An item's state in one stage, with counters so that "next item" is an indexed query.

    Invariant (kept by services under a row lock): submitted_count + leased_count <= target_count.
    """

    class State(models.TextChoices):
        OPEN = "open", "Open"
        RESOLVING = "resolving", "Waiting for resolution"
        ADJUDICATION = "adjudication", "Needs adjudication"
        RESOLVED = "resolved", "Resolved"
        DISCARDED = "discarded", "Discarded"

    # ``stage`` keeps its own index: without it the annotator loop's lease plans went from about
    # 3 to over 100 ms of PostgreSQL CPU per annotation (benchmarks/README.md, "Imports at
    # scale"). ``item`` has none of its own: ``item_stage_unique`` starts with it and serves
    # every look-up by item (migration 0025_item_import_lean).
    item = models.ForeignKey(
        Item, on_delete=models.CASCADE, related_name="item_stages", db_index=False
    )
    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="item_stages")
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    target_count = models.PositiveIntegerField()
    submitted_count = models.PositiveIntegerField(default=0)
    leased_count = models.PositiveIntegerField(default=0)
    random_key = models.PositiveIntegerField(help_text="Fixed random number; mixed per annotator.")
    spread_rank = models.PositiveIntegerField(default=0)
    group_size = models.PositiveIntegerField(default=1)
    # db_default too: bulk loaders that write rows with COPY or raw INSERTs (imports, ratings'
    # historic ratings) need not know these columns.
    phase = models.PositiveSmallIntegerField(
        default=0, db_default=0, help_text="Index of the current phase in the stage's phases."
    )
    round = models.PositiveSmallIntegerField(
        default=0,
        db_default=0,
        help_text="How many times a route sent the item back into this stage.",
    )
    gold = models.JSONField(null=True, blank=True, help_text="Known answer, for quality checks.")
    opened_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    # Live stopping (annotation/services/stages.py, item_stage_stop): when the item stage was
    # stopped early. While set, its target is closed: a lease that ends without an answer
    # (expiry, skip, release) takes its slot away with it instead of freeing it.
    stopped_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was stopped early (its target closed)."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "stage"], name="item_stage_unique"),
            # The overlap invariant, enforced by the database as the last line of defence.
            models.CheckConstraint(
                condition=Q(submitted_count__lte=F("target_count") - F("leased_count")),
                name="item_stage_slots_within_target",
            ),
        ]
        indexes = [
            # The two candidate pools of assignment_next (depth-first stages).
            models.Index(
                fields=["stage"],
                name="item_stage_in_progress_idx",
                condition=Q(state="open") & (Q(submitted_count__gt=0) | Q(leased_count__gt=0)),
            ),
            models.Index(
                fields=["stage", "random_key"],
                name="item_stage_fresh_idx",
                condition=Q(state="open", submitted_count=0, leased_count=0),
            ),
            models.Index(fields=["stage", "state"]),
            # assignment_next's SWEEP order (machine raters): open items by id.
            models.Index(
                fields=["stage", "id"], name="item_stage_open_idx", condition=Q(state="open")
            ),
            # annotation/stranding.py: the most answers an open item stage of a stage may need.
            models.Index(
                fields=["stage", "target_count"],
                name="item_stage_open_target_idx",
                condition=Q(state="open"),
            ),
            # The disagreement list's and disagreements.csv's keyset order (agreement/selectors.py,
            # disagreement_items): a stage's item stages, newest decision first (its rows still
            # collecting votes are passed over by the walk; a partial index would need the
            # query to repeat its predicate word for word).
            models.Index(
                F("stage"),
                Coalesce("resolved_at", "completed_at", "opened_at").desc(),
                F("id").desc(),
                name="item_stage_decided_idx",
            ),
            # The adjudication queue's keyset order (agreement/selectors.py, adjudication_queue):
            # items waiting for a reviewer, longest-waiting first.
            models.Index(
                Coalesce("completed_at", "opened_at"),
                F("id"),
                name="item_stage_adjudication_idx",
                condition=Q(state="adjudication"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item_id}@{self.stage_id} ({self.state})"


class Assignment(models.Model):
    """A lease of one ItemStage to one annotator; at most one per (item stage, annotator)."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUBMITTED = "submitted", "Submitted"
        SKIPPED = "skipped", "Skipped"
        EXPIRED = "expired", "Expired"
        #: Taken back because the annotator was paused or removed: never submittable again.
        REVOKED = "revoked", "Revoked"

    item_stage = models.ForeignKey(ItemStage, on_delete=models.CASCADE, related_name="assignments")
    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="assignments")
    # PROTECT: a person's work is never deleted with their account; annotation.services.
    # user_remove releases their leases and anonymises them instead.
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    skip_reason = models.CharField(max_length=300, blank=True)
    round = models.PositiveSmallIntegerField(default=0, db_default=0)
    phase = models.PositiveSmallIntegerField(default=0, db_default=0)
    item_version = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The item's version when it was leased: what the annotator was shown.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item_stage", "annotator", "round", "phase"],
                name="assignment_unique_per_annotator",
            ),
            models.UniqueConstraint(
                fields=["stage", "annotator"],
                condition=Q(status="active"),
                name="assignment_one_active_per_stage",
            ),
        ]
        indexes = [
            models.Index(fields=["annotator", "stage", "status"]),
            models.Index(
                fields=["expires_at"], condition=Q(status="active"), name="lease_expiry_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"


#: The order answers were first given in: a changed answer keeps its place (its lease's
#: submission time), imported ones (no lease) go by their own time. Ballots and the earlier
#: answers a phase shows are numbered in this order.
SUBMISSION_ORDER = (
    Coalesce("assignment__finished_at", "created_at").asc(),
    "assignment_id",
    "pk",
)


class CurrentAnnotations(models.Manager):
    """``Annotation.objects``: the current version of every answer, the only rows resolution,
    agreement, exports, releases, the API and dashboards read. Superseded versions (an answer an
    annotator changed, services.annotation_revise) are reached through
    ``Annotation.all_versions`` (history pages, the admin, withdrawals)."""

    def get_queryset(self):
        return super().get_queryset().filter(is_current=True)


class Annotation(models.Model):
    """One immutable submission. Live annotations belong to an assignment; imported historic
    annotations have none and name an external rater instead.

    Versions: an annotator may change their answer while its item stage is still undecided
    (annotation.services.annotation_revise). The new answer is a new row of the same assignment
    with ``supersedes`` pointing at the one it replaces and ``version`` one higher; the replaced
    row keeps its payload and only loses ``is_current``. One current row per assignment (a
    partial unique constraint), so counters, policies and exports count each annotator once.
    Readers that are not ``Annotation.objects`` (hand-written SQL, COPY) filter
    ``is_current`` themselves."""

    item_stage = models.ForeignKey(ItemStage, on_delete=models.CASCADE, related_name="annotations")
    # PROTECT twice: deleting an assignment or a person never deletes what they submitted.
    # Their indexes are partial (Meta.indexes): historic annotations have neither.
    assignment = models.ForeignKey(
        Assignment,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="annotations",
        db_index=False,
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="annotations",
        db_index=False,
    )
    external_rater = models.CharField(max_length=100, blank=True)
    payload = models.JSONField()
    seconds_spent = models.FloatField(null=True, blank=True)
    client_info = models.JSONField(default=dict, blank=True)
    round = models.PositiveSmallIntegerField(default=0, db_default=0)
    phase = models.PositiveSmallIntegerField(default=0, db_default=0)
    item_version = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The item's version this annotation judged (empty for annotations made "
        "before versions were recorded, and for imported ratings).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # db_default on the version columns: the submit statement and bulk loaders (COPY, raw
    # INSERTs) write first versions without naming them.
    supersedes = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        # RESTRICT: an earlier version is never deleted on its own, only together with the
        # answer (its item stage, a withdrawal of the whole assignment).
        on_delete=models.RESTRICT,
        related_name="superseded_by",
        help_text="The version of this answer that this one replaced.",
    )
    version = models.PositiveSmallIntegerField(default=1, db_default=1)
    is_current = models.BooleanField(
        default=True, db_default=True, help_text="False once a newer version replaced it."
    )

    objects = CurrentAnnotations()
    all_versions = models.Manager()  # noqa: DJ012 (a manager, which ruff takes for a field)

    class Meta:
        # The indexes on the assignment and the annotator leave out the rows without one (the
        # historic imports' annotations, up to millions): a bulk import writes four index
        # entries per row fewer. Every lookup by value (``= x``, ``IN (...)``, a join on the
        # column, the foreign keys' checks) implies ``IS NOT NULL`` and still uses them
        # (benchmarks/README.md, "Historic ratings import at a million ratings").
        indexes = [
            models.Index(
                fields=["assignment"],
                name="annotation_assignment_idx",
                condition=Q(assignment__isnull=False),
            ),
            models.Index(
                fields=["annotator"],
                name="annotation_annotator_idx",
                condition=Q(annotator__isnull=False),
            ),
            models.Index(
                fields=["annotator", "created_at"],
                name="annotation_annotator_time_idx",
                condition=Q(annotator__isnull=False),
            ),
        ]
        constraints = [
            # An imported rater (ratings' historic files) rates an item stage once (their
            # current answer); anonymous imported ratings (no rater) are guarded by the file
            # checksum instead.
            models.UniqueConstraint(
                fields=["item_stage", "external_rater"],
                condition=Q(assignment__isnull=True, is_current=True) & ~Q(external_rater=""),
                name="annotation_external_rater_once",
            ),
            # One current answer per lease: a retried submit or a concurrent change collides
            # here at the latest.
            models.UniqueConstraint(
                fields=["assignment"],
                condition=Q(is_current=True, assignment__isnull=False),
                name="annotation_one_current_per_assignment",
            ),
        ]

    def __str__(self) -> str:
        return f"annotation {self.pk}" + (f" v{self.version}" if self.version > 1 else "")


class Resolution(models.Model):
    """The outcome of an ItemStage. Written idempotently by the resolve task or by a reviewer."""

    class Status(models.TextChoices):
        UNANIMOUS = "unanimous", "Unanimous"
        MAJORITY = "majority", "Majority"
        TIE = "tie", "Tie"
        NEEDS_ADJUDICATION = "needs_adjudication", "Needs adjudication"
        INSUFFICIENT = "insufficient", "Insufficient"
        MEAN = "mean", "Mean"
        ADJUDICATED = "adjudicated", "Adjudicated"

    item_stage = models.OneToOneField(
        ItemStage, on_delete=models.CASCADE, related_name="resolution"
    )
    value = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=24, choices=Status.choices)
    outcome = models.CharField(max_length=12)  # accept | reject | pending
    votes = models.JSONField(default=dict, blank=True)
    n_annotations = models.PositiveIntegerField(default=0)
    policy = models.CharField(max_length=32)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    reason = models.TextField(blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # The disagreement list's sparse filters (agreement/selectors.py,
            # disagreement_candidates): the few item stages decided by a tie, sent to a
            # reviewer or decided by one, found without walking a stage's decided ones.
            models.Index(
                fields=["status", "item_stage"],
                name="resolution_rare_status_idx",
                condition=Q(status__in=["tie", "needs_adjudication", "adjudicated"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item_stage_id}: {self.status} {self.value!r}"


class ItemEvent(models.Model):
    """One admin action on an item (annotation/services/item_actions.py): who, when, which
    action, why, in which stage, and the item's status and the item stage's state before and
    after. Written in the action's transaction; never changed afterwards."""

    class Action(models.TextChoices):
        REOPEN = "reopen", "Reopened"
        RESOLVE = "resolve", "Resolved by hand"
        RELEASE_LEASE = "release_lease", "Lease released"
        SEND_BACK = "send_back", "Sent back"
        DISCARD = "discard", "Discarded"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="events")
    stage = models.ForeignKey(
        Stage, null=True, blank=True, on_delete=models.SET_NULL, related_name="item_events"
    )
    action = models.CharField(max_length=16, choices=Action.choices)
    reason = models.CharField(max_length=500, blank=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    status_before = models.CharField(max_length=12)
    status_after = models.CharField(max_length=12)
    state_before = models.CharField(max_length=16, blank=True)
    state_after = models.CharField(max_length=16, blank=True)
    detail = models.JSONField(
        default=dict, blank=True, help_text="What the action changed, e.g. the value decided."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "-created_at", "-pk"]
        indexes = [models.Index(fields=["item", "created_at"])]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.action}"


# --- The data manager's text search (annotation/search.py) ---------------------------------


class ItemSearch(models.Model):
    """An item's id and content as text, for the data manager's search: the trigram indexes
    that make ``icontains`` fast live here, off the items table's insert path. Filled after
    the items commit by ``annotation.search.item_search_index`` (a Celery task); an item is
    searched here only while it has no row in ``ItemSearchPending``. Plain integer columns,
    no foreign keys: the search joins back to the items, so the row of a deleted item is
    never shown (and is removed by the next indexing)."""

    item_id = models.BigIntegerField(primary_key=True)
    project_id = models.BigIntegerField()
    external_id = models.TextField()
    content = models.TextField()

    def __str__(self) -> str:
        return f"search row of item {self.item_id}"


class ItemSearchPending(models.Model):
    """Items whose ``ItemSearch`` row is missing or out of date: the search reads their own
    columns instead. Written by the database itself (triggers of the migration
    ``0015_item_search_table``) on every insert of an item and on every change of its
    ``external_id`` or ``payload``, whichever code path writes them; emptied by the
    indexing."""

    item_id = models.BigIntegerField(primary_key=True)

    def __str__(self) -> str:
        return f"item {self.item_id} waits for its search row"


# --- Stored pipeline counts (annotation/pipeline_counts.py) -------------------------------------


class StoredPipelineCounts(models.Model):
    """A large project's pipeline counts (the items resolved per stage and outcome that the
    project home's graph shows), stored by a Celery task and served with their age
    (annotation/pipeline_counts.py). One row per project; written by the task only (and its
    debounce mark, ``queued_at``, by ``rungwise/debounce.py``)."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="stored_pipeline"
    )
    #: [[stage slug, outcome, items], ...]
    counts = models.JSONField(default=list, blank=True)
    #: All the project's resolutions when counted (whether the project is large).
    total = models.PositiveIntegerField(default=0)
    stored_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"stored pipeline counts of project {self.project_id} ({self.stored_at})"
