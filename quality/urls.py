from django.urls import path

from quality import views

app_name = "quality"

urlpatterns = [
    path("projects/<slug:slug>/quality/<slug:stage_slug>/", views.stage_quality, name="stage"),
    path("projects/<slug:slug>/quality/<slug:stage_slug>/rule/", views.rule_set, name="rule"),
    path("projects/<slug:slug>/quality/<slug:stage_slug>/pause/", views.action_take, name="take"),
    path("projects/<slug:slug>/quality/<slug:stage_slug>/undo/", views.action_undo, name="undo"),
    path(
        "projects/<slug:slug>/quality/<slug:stage_slug>/withdraw/",
        views.action_withdraw,
        name="withdraw",
    ),
]
