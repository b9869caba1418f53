"""Django admin for every engine model: filters and search for support work.

Annotations, resolutions' history (agreement snapshots) and published releases are records of
what happened: they are read-only here. Workflow changes (pausing annotators, adjudicating,
importing, releasing) go through the services and their pages, not through admin edits.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import models
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html

from annotation.errors import ApplicationError
from annotation.inputs import StorableJSONDecoder
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemEvent,
    ItemRevision,
    ItemSearch,
    ItemSearchPending,
    ItemStage,
    Membership,
    Project,
    Resolution,
    Stage,
    StoredPipelineCounts,
)
from annotation.services import (
    STAGE_SETTINGS,
    assignments_delete,
    stage_settings_clean,
    user_remove,
)

admin.site.site_header = "Rungwise administration"
admin.site.site_title = "Rungwise admin"
admin.site.index_title = "Projects, people and data"


class EngineAdmin(admin.ModelAdmin):
    """The base of every admin page of the project: JSON typed into a form is read by the one
    parser, within its nesting limit and only with values the database can store
    (``annotation.inputs.StorableJSONDecoder``), so bad JSON is a form error, never a 500."""

    formfield_overrides = {models.JSONField: {"decoder": StorableJSONDecoder}}


class ReadOnlyAdmin(EngineAdmin):
    """Records that must not change after the fact: viewable, never editable or deletable here."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# --- Projects and people -------------------------------------------------------------------


class StageInline(admin.TabularInline):
    model = Stage
    extra = 0
    fields = [
        "position",
        "slug",
        "name",
        "kind",
        "overlap",
        "resolution_policy",
        "on_accept",
        "on_reject",
        "is_active",
    ]
    show_change_link = True
    ordering = ["position"]


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ["user", "role", "is_paused", "paused_reason"]
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(EngineAdmin):
    list_display = [
        "name",
        "slug",
        "kind",
        "is_active",
        "stage_count",
        "member_count",
        "created_at",
    ]
    list_filter = ["kind", "is_active", "license"]
    search_fields = ["name", "slug", "description"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["created_at"]
    inlines = [StageInline, MembershipInline]
    fieldsets = [
        (None, {"fields": ["name", "slug", "kind", "is_active", "description"]}),
        ("For annotators", {"fields": ["guidelines"]}),
        ("Release metadata", {"fields": ["license", "citation"], "classes": ["collapse"]}),
        ("Settings", {"fields": ["settings", "created_at"], "classes": ["collapse"]}),
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                stage_total=Count("stages", distinct=True),
                member_total=Count("memberships__user", distinct=True),
            )
        )

    @admin.display(description="stages", ordering="stage_total")
    def stage_count(self, obj):
        return obj.stage_total

    @admin.display(description="members", ordering="member_total")
    def member_count(self, obj):
        return obj.member_total


@admin.register(Membership)
class MembershipAdmin(EngineAdmin):
    list_display = ["user", "project", "role", "is_paused", "created_at"]
    list_filter = ["role", "is_paused", "project"]
    search_fields = ["user__username", "user__email", "project__name", "project__slug"]
    autocomplete_fields = ["user", "project"]
    list_select_related = ["user", "project"]
    readonly_fields = ["created_at"]


@admin.register(Stage)
class StageAdmin(EngineAdmin):
    list_display = [
        "name",
        "project",
        "position",
        "kind",
        "overlap",
        "resolution_policy",
        "is_active",
    ]
    list_filter = ["kind", "is_active", "resolution_policy", "order_policy", "project"]
    search_fields = ["name", "slug", "project__name", "project__slug"]
    autocomplete_fields = ["project"]
    list_select_related = ["project"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "project",
                    "position",
                    "slug",
                    "name",
                    "kind",
                    "config",
                    "instructions",
                    "is_active",
                ]
            },
        ),
        (
            "Assignment",
            {
                "fields": [
                    "overlap",
                    "lease_seconds",
                    "order_policy",
                    "seed",
                ]
            },
        ),
        (
            "Resolution",
            {
                "fields": [
                    "resolution_policy",
                    "tie_policy",
                    "tie_default",
                    "max_overlap",
                    "policy_options",
                    "on_accept",
                    "on_reject",
                    "routes",
                ]
            },
        ),
        ("Phases and eligibility", {"fields": ["phases", "eligibility"]}),
    ]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)

        class CheckedStageForm(form):
            """The stage service's checks (annotation.services.stage_settings_clean), so an
            edit here can never store a stage the engine cannot run."""

            def clean(self):
                data = super().clean()
                project = data.get("project") or getattr(self.instance, "project", None)
                if project is None or self.errors:
                    return data
                try:
                    data.update(
                        stage_settings_clean(
                            project=project,
                            slug=data.get("slug") or self.instance.slug,
                            kind=data.get("kind", ""),
                            overlap=data.get("overlap") or 1,
                            settings={
                                key: data.get(key)
                                for key in STAGE_SETTINGS
                                if key in data and data.get(key) is not None
                            },
                        )
                    )
                except ApplicationError as error:
                    raise forms.ValidationError(error.message) from None
                return data

        return CheckedStageForm


# --- Items -----------------------------------------------------------------------------------


#: The columns of an inline that shows rows it never edits.
_REVISION_COLUMNS = ("number", "reason", "author", "stage", "diff", "created_at")


class ItemRevisionInline(admin.TabularInline):
    model = ItemRevision
    extra = 0
    fields = readonly_fields = _REVISION_COLUMNS
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


#: The columns of an inline that shows rows it never edits.
_ITEM_STAGE_COLUMNS = (
    "stage",
    "state",
    "target_count",
    "submitted_count",
    "leased_count",
    "resolved_at",
)


class ItemStageInline(admin.TabularInline):
    model = ItemStage
    extra = 0
    fields = readonly_fields = _ITEM_STAGE_COLUMNS
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Item)
class ItemAdmin(EngineAdmin):
    list_display = [
        "external_id",
        "project",
        "status",
        "purpose",
        "group",
        "version",
        "source",
        "created_at",
    ]
    list_filter = ["status", "purpose", "project", "source"]
    search_fields = ["external_id", "group", "source"]
    autocomplete_fields = ["project"]
    raw_id_fields = ["import_batch"]
    list_select_related = ["project"]
    # Content changes go through services.item_revise so that every version is kept.
    readonly_fields = ["payload", "version", "created_at"]
    inlines = [ItemStageInline, ItemRevisionInline]


@admin.register(ItemRevision)
class ItemRevisionAdmin(ReadOnlyAdmin):
    list_display = ["item", "number", "author", "stage", "reason", "created_at"]
    list_filter = ["item__project", "stage"]
    search_fields = ["item__external_id", "reason", "author__username"]
    list_select_related = ["item", "author", "stage__project"]


@admin.register(ItemEvent)
class ItemEventAdmin(ReadOnlyAdmin):
    """An admin's item actions (annotation/services/item_actions.py): history, never edited."""

    list_display = ["item", "action", "stage", "by", "status_before", "status_after", "created_at"]
    list_filter = ["action", "item__project", "stage"]
    search_fields = ["item__external_id", "reason", "by__username"]
    list_select_related = ["item", "by", "stage__project"]


# --- Work ------------------------------------------------------------------------------------


#: The columns of an inline that shows rows it never edits.
_ASSIGNMENT_COLUMNS = (
    "annotator",
    "status",
    "created_at",
    "expires_at",
    "finished_at",
    "skip_reason",
)


class AssignmentInline(admin.TabularInline):
    model = Assignment
    extra = 0
    fields = readonly_fields = _ASSIGNMENT_COLUMNS
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(ItemStage)
class ItemStageAdmin(EngineAdmin):
    list_display = [
        "id",
        "item",
        "stage",
        "state",
        "submitted_count",
        "leased_count",
        "target_count",
        "resolved_at",
    ]
    list_filter = ["state", "stage__project", "stage"]
    search_fields = ["item__external_id", "stage__slug"]
    raw_id_fields = ["item", "stage"]
    list_select_related = ["item", "stage__project"]
    # The counters are kept by the services under row locks; editing them here would break the
    # overlap invariant.
    readonly_fields = [
        "submitted_count",
        "leased_count",
        "random_key",
        "spread_rank",
        "group_size",
        "opened_at",
        "completed_at",
        "resolved_at",
    ]
    inlines = [AssignmentInline]


@admin.register(Assignment)
class AssignmentAdmin(EngineAdmin):
    list_display = ["id", "annotator", "item_link", "stage", "status", "created_at", "expires_at"]
    list_filter = ["status", "stage__project", "stage"]
    search_fields = ["annotator__username", "item_stage__item__external_id", "skip_reason"]
    raw_id_fields = ["item_stage", "stage", "annotator"]
    list_select_related = ["annotator", "stage__project", "item_stage__item"]
    date_hierarchy = "created_at"
    readonly_fields = [
        "item_stage",
        "stage",
        "annotator",
        "status",
        "created_at",
        "finished_at",
        "skip_reason",
    ]

    def has_add_permission(self, request):
        return False  # leases come from services.assignment_next

    # Deleting an active lease gives its slot back in the same transaction
    # (services.assignments_delete), on the delete page and in the bulk "delete selected"
    # action alike; a plain delete would leave leased_count counting it until the repair sweep.
    def delete_model(self, request, obj):
        assignments_delete(assignment_ids=[obj.pk])

    def delete_queryset(self, request, queryset):
        assignments_delete(assignment_ids=list(queryset.values_list("pk", flat=True)))

    @admin.display(description="item", ordering="item_stage__item__external_id")
    def item_link(self, obj):
        item = obj.item_stage.item
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:annotation_item_change", args=[item.pk]),
            item.external_id,
        )


@admin.register(Annotation)
class AnnotationAdmin(ReadOnlyAdmin):
    """Annotations are immutable: submitted once, never edited. A changed answer is a newer
    version (services.annotation_revise); every version is listed here."""

    list_display = [
        "id",
        "annotator_name",
        "item",
        "stage",
        "value",
        "version",
        "is_current",
        "seconds_spent",
        "created_at",
    ]
    list_filter = ["item_stage__stage__project", "item_stage__stage", "is_current", "created_at"]
    search_fields = ["annotator__username", "external_rater", "item_stage__item__external_id"]
    list_select_related = ["annotator", "item_stage__item", "item_stage__stage__project"]
    date_hierarchy = "created_at"

    def get_queryset(self, request):
        return Annotation.all_versions.get_queryset()

    @admin.display(description="annotator", ordering="annotator__username")
    def annotator_name(self, obj):
        return obj.annotator or obj.external_rater or "—"

    @admin.display(ordering="item_stage__item__external_id")
    def item(self, obj):
        return obj.item_stage.item

    @admin.display(ordering="item_stage__stage")
    def stage(self, obj):
        return obj.item_stage.stage

    @admin.display(description="value")
    def value(self, obj):
        payload = obj.payload or {}
        return payload.get("value", "—") if isinstance(payload, dict) else payload


@admin.register(Resolution)
class ResolutionAdmin(EngineAdmin):
    list_display = [
        "item_stage",
        "status",
        "outcome",
        "value",
        "n_annotations",
        "policy",
        "decided_by",
        "computed_at",
    ]
    list_filter = ["status", "outcome", "policy", "item_stage__stage__project", "item_stage__stage"]
    search_fields = ["item_stage__item__external_id", "reason", "decided_by__username"]
    raw_id_fields = ["item_stage", "decided_by"]
    list_select_related = ["item_stage", "decided_by"]
    # Decisions are written by the resolve task or by adjudication (services), with a reason.
    readonly_fields = [
        "item_stage",
        "value",
        "status",
        "outcome",
        "votes",
        "n_annotations",
        "policy",
        "decided_by",
        "reason",
        "computed_at",
    ]

    def has_add_permission(self, request):
        return False


# --- Derived tables (written by tasks and triggers; read-only here) -----------------------------


class PendingOfProjectFilter(admin.SimpleListFilter):
    """The queued items of one project (the queue's rows name only the item)."""

    title = "project"
    parameter_name = "project"

    def lookups(self, request, model_admin):
        return [(project.pk, project.name) for project in Project.objects.order_by("name")]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        return queryset.filter(
            item_id__in=Item.objects.filter(project_id=self.value()).values("pk")
        )


@admin.register(ItemSearch)
class ItemSearchAdmin(ReadOnlyAdmin):
    """The data manager's search rows (annotation/search.py), filled by the indexing task."""

    list_display = ["item_id", "project_id", "external_id"]
    list_filter = ["project_id"]
    search_fields = ["external_id"]


@admin.register(ItemSearchPending)
class ItemSearchPendingAdmin(ReadOnlyAdmin):
    """Items waiting for their search row (queued by the database's triggers)."""

    list_display = ["item_id"]
    list_filter = [PendingOfProjectFilter]


@admin.register(StoredPipelineCounts)
class StoredPipelineCountsAdmin(ReadOnlyAdmin):
    """A large project's pipeline counts as the task stored them (annotation/pipeline_counts.py)."""

    list_display = ["project", "total", "stored_at", "queued_at"]
    list_filter = ["project"]
    list_select_related = ["project"]


# --- People ----------------------------------------------------------------------------------


@admin.action(description="Remove the selected people (keep their work, release their leases)")
def remove_people(modeladmin, request, queryset):
    for user in queryset:
        user_remove(user=user)
    modeladmin.message_user(
        request, f"Removed {queryset.count()} people: accounts anonymised and locked, work kept."
    )


class PeopleAdmin(UserAdmin):
    """Django's user admin plus the engine's way of removing someone: deleting an account that
    has worked on items is refused by the database (their annotations are protected)."""

    actions = [remove_people]


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, PeopleAdmin)
