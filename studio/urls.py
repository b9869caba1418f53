from django.urls import path

from studio import gold_views, item_views, team_views, views
from studio.data_manager import views as data_manager

app_name = "studio"

urlpatterns = [
    path("projects/new/", views.project_new, name="new"),
    path("projects/<slug:slug>/setup/", views.setup, name="setup"),
    path("projects/<slug:slug>/setup/stages/new/", views.stage_add, name="stage_add"),
    path("projects/<slug:slug>/setup/stages/<int:stage_id>/", views.stage_edit, name="stage_edit"),
    path(
        "projects/<slug:slug>/setup/stages/<int:stage_id>/move/",
        views.stage_move,
        name="stage_move",
    ),
    path(
        "projects/<slug:slug>/setup/stages/<int:stage_id>/remove/",
        views.stage_remove,
        name="stage_remove",
    ),
    path(
        "projects/<slug:slug>/setup/stages/<int:stage_id>/policy/",
        views.stage_policy,
        name="stage_policy",
    ),
    path(
        "projects/<slug:slug>/setup/guidelines/preview/",
        views.guidelines_preview,
        name="guidelines_preview",
    ),
    path("projects/<slug:slug>/setup/members/", views.member_add, name="member_add"),
    path("projects/<slug:slug>/setup/members/remove/", views.member_remove, name="member_remove"),
    path("projects/archived/", team_views.archived, name="archived"),
    path("projects/<slug:slug>/setup/members/role/", team_views.member_role, name="member_role"),
    path(
        "projects/<slug:slug>/setup/publication/",
        team_views.project_publication,
        name="publication",
    ),
    path("projects/<slug:slug>/setup/archive/", team_views.project_archive, name="archive"),
    path("projects/<slug:slug>/setup/clone/", team_views.project_clone, name="clone"),
    path("projects/<slug:slug>/setup/invites/", views.invite_create, name="invite_create"),
    path(
        "projects/<slug:slug>/setup/invites/<int:invite_id>/revoke/",
        views.invite_revoke,
        name="invite_revoke",
    ),
    path("projects/<slug:slug>/items/", data_manager.items, name="items"),
    path("projects/<slug:slug>/items/columns/", data_manager.items_columns, name="items_columns"),
    path("projects/<slug:slug>/items/bulk/", data_manager.items_bulk, name="items_bulk"),
    path("projects/<slug:slug>/items/export/", data_manager.items_export, name="items_export"),
    path("projects/<slug:slug>/items/<int:item_id>/", item_views.item_detail, name="item"),
    path("projects/<slug:slug>/items/<int:item_id>/act/", item_views.item_act, name="item_act"),
    path("join/<str:token>/", views.join, name="join"),
    # Silent gold (annotation/gold.py): a stage's gold items and promotion.
    path(
        "projects/<slug:slug>/setup/stages/<int:stage_id>/gold/",
        gold_views.stage_gold,
        name="stage_gold",
    ),
]
