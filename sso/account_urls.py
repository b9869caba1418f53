"""Sign-in and password pages, under accounts/ (names without a namespace, as Django's auth
views expect: "login", "password_reset" …)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from sso import views

urlpatterns = [
    path("login/", views.SignInView.as_view(), name="login"),
    path(
        "password/",
        views.local_passwords_only(auth_views.PasswordChangeView.as_view()),
        name="password_change",
    ),
    path(
        "password/done/",
        views.local_passwords_only(auth_views.PasswordChangeDoneView.as_view()),
        name="password_change_done",
    ),
    path(
        "password/reset/",
        views.local_passwords_only(auth_views.PasswordResetView.as_view()),
        name="password_reset",
    ),
    path(
        "password/reset/sent/",
        views.local_passwords_only(auth_views.PasswordResetDoneView.as_view()),
        name="password_reset_done",
    ),
    path(
        "password/reset/<uidb64>/<token>/",
        views.local_passwords_only(auth_views.PasswordResetConfirmView.as_view()),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/done/",
        views.local_passwords_only(auth_views.PasswordResetCompleteView.as_view()),
        name="password_reset_complete",
    ),
]
