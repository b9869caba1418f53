from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from .accounts import email_change, email_change_confirm
from .health import healthz

urlpatterns = [
    # The API first (tried in order; it takes most requests), its catch-all include last of the four.
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/projects/<slug:slug>/graphs/", include("graphs.api_urls")),
    path("api/", include("api.urls")),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    # Sign-in and the password pages (sso/account_urls.py: the provider's button beside the
    # password form; password pages 404 while local passwords are switched off).
    path("accounts/", include("sso.account_urls")),
    path("accounts/sso/", include("sso.urls")),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/email/", email_change, name="email_change"),
    path("accounts/email/confirm/<str:token>/", email_change_confirm, name="email_change_confirm"),
    path("accounts/tokens/", include("api.page_urls")),
    path("projects/<slug:slug>/ratings/", include("ratings.urls")),
    path("projects/<slug:slug>/meter/", include("review.meter.urls")),
    path("projects/<slug:slug>/causalt5k/", include("review.causalt5k.urls")),
    path("", include("crowd.urls")),
    path("", include("quality.urls")),
    path("projects/<slug:slug>/graphs/", include("graphs.urls")),
    path("projects/<slug:slug>/narratives/", include("narratives.urls")),
    path("", include("studio.urls")),
    path("", include("imports.urls")),
    path("", include("llm.evaluation.urls")),
    path("", include("releases.urls")),
    path("", include("agreement.urls")),
    path("", include("llm.urls")),
    path("", include("annotation.urls")),
    path("", include("webhooks.urls")),
    path("", include("interop.urls")),
]
