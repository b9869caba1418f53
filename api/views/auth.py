"""API tokens: a username and password exchanged for a token (throttled "auth")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.response import Response
from rest_framework.settings import api_settings

from api.auth import token_for
from api.throttles import ScopedThrottle


class TokenView(ObtainAuthToken):
    """Exchange a username and password for an API token (throttled)."""

    throttle_classes = [ScopedThrottle]
    throttle_scope = "auth"
    # ObtainAuthToken names DRF's own parsers; this endpoint reads bodies like every other.
    parser_classes = api_settings.DEFAULT_PARSER_CLASSES

    @extend_schema(tags=["auth"], summary="Get an API token", auth=[])
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token = token_for(serializer.validated_data["user"])
        return Response({"token": token.key})
