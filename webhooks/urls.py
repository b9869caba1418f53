from django.urls import path

from webhooks import views

app_name = "webhooks"

urlpatterns = [
    path("projects/<slug:slug>/webhooks/", views.hooks, name="hooks"),
    path("projects/<slug:slug>/webhooks/<int:webhook_id>/", views.hook, name="hook"),
    path("projects/<slug:slug>/webhooks/<int:webhook_id>/test/", views.hook_test, name="test"),
    path(
        "projects/<slug:slug>/webhooks/<int:webhook_id>/enable/", views.hook_enable, name="enable"
    ),
    path(
        "projects/<slug:slug>/webhooks/<int:webhook_id>/disable/",
        views.hook_disable,
        name="disable",
    ),
    path(
        "projects/<slug:slug>/webhooks/<int:webhook_id>/delete/", views.hook_delete, name="delete"
    ),
]
