from django.urls import path

from crowd import views

app_name = "crowd"

urlpatterns = [
    path("s/<str:token>/", views.enter, name="enter"),
    path("s/<str:token>/consent/", views.consent, name="consent"),
    path("s/<str:token>/instructions/", views.instructions, name="instructions"),
    path("s/<str:token>/work/", views.work, name="work"),
    path("s/<str:token>/done/", views.done, name="done"),
    path("projects/<slug:slug>/crowd/", views.studies, name="studies"),
    path("projects/<slug:slug>/crowd/<int:study_id>/", views.study_detail, name="study"),
    path(
        "projects/<slug:slug>/crowd/<int:study_id>/participants.csv",
        views.study_csv,
        name="study_csv",
    ),
    path("projects/<slug:slug>/crowd/<int:study_id>/sync/", views.study_sync, name="study_sync"),
    path(
        "projects/<slug:slug>/crowd/<int:study_id>/decide/", views.study_decide, name="study_decide"
    ),
    path(
        "projects/<slug:slug>/crowd/<int:study_id>/bonuses/", views.study_bonus, name="study_bonus"
    ),
]
