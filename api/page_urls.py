"""The API token page (api/pages.py), mounted under accounts/tokens/ by rungwise/urls.py."""

from django.urls import path

from api import pages

app_name = "tokens"

urlpatterns = [
    path("", pages.tokens, name="tokens"),
    path("revoke/", pages.token_revoke, name="revoke"),
]
