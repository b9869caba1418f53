"""Admin for agreement snapshots: records of what was computed, read-only."""

from django.contrib import admin

from agreement.models import AgreementSnapshot
from annotation.admin import ReadOnlyAdmin


@admin.register(AgreementSnapshot)
class AgreementSnapshotAdmin(ReadOnlyAdmin):
    list_display = [
        "stage",
        "metric",
        "value",
        "ci_low",
        "ci_high",
        "n_items",
        "n_annotators",
        "computed_at",
    ]
    list_filter = ["metric", "stage__project", "stage"]
    search_fields = ["stage__name", "stage__project__name", "metric"]
    list_select_related = ["stage__project"]
    date_hierarchy = "computed_at"
