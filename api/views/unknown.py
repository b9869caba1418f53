"""Every URL under /api/ that matches no endpoint answers in the API's error format."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from annotation.errors import NotFound


@extend_schema(exclude=True)
class UnknownEndpointView(APIView):
    """Every URL under /api/ that matches no endpoint: a 404 in the API's error format."""

    permission_classes: list = []
    authentication_classes: list = []

    def dispatch(self, request, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        self.request = self.initialize_request(request, *args, **kwargs)
        self.headers = self.default_response_headers
        response = self.handle_exception(
            NotFound(f"There is no API endpoint at {request.path}; see /api/docs/.")
        )
        self.response = self.finalize_response(self.request, response, *args, **kwargs)
        return self.response
