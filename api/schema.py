"""OpenAPI generation: drf-spectacular's AutoSchema plus the one error format on every operation.

Every operation documents its error responses ({"message", "extra"}; see api_errors.py) for the
statuses the API can answer with, so clients (and schemathesis) can rely on the schema.
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers

ERROR_STATUSES = {
    "400": "The request is invalid; `message` says what to change, `extra` names the fields.",
    "401": "Not signed in: send `Authorization: Token <key>` or a session cookie.",
    "403": "Signed in, but your role in this project does not allow this.",
    "404": "No such object among yours (unknown ids and other people's ids look the same).",
    "409": "The request conflicts with the current state (e.g. a version already published).",
    "429": "Too many requests; `extra.retry_after` gives the seconds to wait.",
}


class ErrorSerializer(serializers.Serializer):
    """The one error format of the API."""

    message = serializers.CharField(help_text="A sentence a person can act on.")
    extra = serializers.DictField(help_text="Details: field names, line numbers, limits.")


class AutoSchema(SpectacularAutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, description in ERROR_STATUSES.items():
            if code not in responses:
                response = self._get_response_for_code(
                    ErrorSerializer, code, ["application/json"], direction
                )
                response["description"] = description
                responses[code] = response
        return responses
