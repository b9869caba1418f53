"""The annotator loop's two endpoints with a lean request path: ``POST /api/stages/<id>/next/`` and
``POST /api/assignments/<id>/submit/`` (api/urls.py), the same URLs, JSON and errors as
NextItemView and SubmitView (api/views/annotate.py), whose subclasses these are.

Why: on the hot path DRF's request machinery (the Request wrapper, content negotiation, its
authentication loop, the serializer's fields copied for every body, the Response's rendering)
cost about a tenth of the web process's CPU per request (benchmarks/profile_loop.py), for
requests that need none of its choices. The lean path serves the common request — a script's
``Authorization: Token <key>``, no session cookie, JSON asked for (or nothing said), and for a
submit a JSON body of the plain shape (``payload`` an object, ``seconds_spent`` a non-negative
number or null, ``next`` true or false, any ``client_info``) — and calls the very functions the
DRF views call (api.views.annotate.next_item and submitted), so the output (the blindness
allow-list of api.serializers.assignment_out), the idempotency of a retried submit and the
service errors are theirs. Each check is the DRF view's own: the token by
api.auth.TokenAuthentication, the view's permission and throttle classes, the body by the API's
JSON parser (api.parsers: the same limits), errors by api.errors.exception_handler and rendered
by DRF's JSONRenderer, with the Allow and Vary headers DRF adds.

The token is read in the same statement as what the request reads first (the stage as its
annotator reaches it for a next; on PostgreSQL the assignment for a submit, which the submit
service takes as its own read): two statements fewer per next + submit (6 → 4). What that
statement read beside the token is judged only where the DRF view would judge it, after the
permissions and throttles, by the same functions (annotation.access.stage_for_annotator_row,
annotation.services.leases.assignment_read_row).

Everything else — a session (and its CSRF check), another Accept or content type, a body of
another shape, a token refused, a permission refused — is handed, before anything is stored,
to the DRF view (``super().dispatch``), which answers exactly as before. ``lean = False`` on a
class turns its lean path off (benchmarks/levers.py measures it).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_header_parameters
from rest_framework import exceptions, status
from rest_framework.authtoken.models import Token
from rest_framework.renderers import JSONRenderer

from annotation import sql
from annotation.access import stage_for_annotator_row, stage_for_annotator_select
from annotation.models import Assignment, Project, Stage
from annotation.services.leases import assignment_read_row, assignment_read_select
from api.auth import TokenAuthentication, credentials_from_row, token_select, token_width
from api.errors import exception_handler
from api.models import KEY_PREFIX
from api.views import annotate
from api.views.annotate import next_item, submitted
from imports.core.readers import ImportFileError, read_json_document

#: DRF's JSON renderer (it keeps no state between renders).
_RENDERER = JSONRenderer()

#: Accept headers the lean path answers (DRF's negotiation picks its JSON renderer for these).
_JSON_ACCEPTED = {"", "*/*", "application/json"}


class _LeanPath:
    """The lean path of an APIView subclass: ``lean_handle(request, user, **kwargs)`` returns
    (data, status) or None to hand the request to DRF; see the module docstring."""

    lean = True

    def dispatch(self, request, *args, **kwargs):
        if self.lean and request.method == "POST":
            key = self._lean_key(request)
            if key is not None:
                response = self._lean_response(request, key, args, kwargs)
                if response is not None:
                    return response
        return super().dispatch(request, *args, **kwargs)

    def lean_body(self, request: HttpRequest) -> Any:
        """The request's body for lean_handle, or None to hand it to DRF (nothing stored)."""
        return ()

    def lean_handle(self, request: HttpRequest, user, body: Any, read: Any, **kwargs: Any):
        """(data, status) for the request; `read`: what lean_read read beside the token."""
        raise NotImplementedError

    def lean_read(self, key: str, kwargs: dict[str, Any]) -> tuple[Any, Any, Any] | None:
        """(user, token, what else was read with them) for the token `key`, or None to hand
        the request to DRF (a key refused: DRF answers 401 or 403, as its authenticator order
        says). Here the token alone (api.auth.TokenAuthentication); a view may read what it
        needs in the same statement (token_select), to be checked in lean_handle only, after
        the permissions and throttles, as the DRF view would."""
        try:
            user, token = TokenAuthentication().authenticate_credentials(key)
        except exceptions.APIException:
            return None
        return user, token, None

    def _lean_key(self, request: HttpRequest) -> str | None:
        """The token key of a plain token request (no session, no format asked, JSON accepted),
        or None when DRF must decide."""
        if request.COOKIES.get(settings.SESSION_COOKIE_NAME) or request.META.get("QUERY_STRING"):
            return None
        if request.META.get("HTTP_ACCEPT", "").strip() not in _JSON_ACCEPTED:
            return None
        parts = request.META.get("HTTP_AUTHORIZATION", "").split()
        if len(parts) != 2 or parts[0].lower() != "token":
            return None
        return parts[1]

    def _lean_response(self, request: HttpRequest, key: str, args, kwargs):
        body = self.lean_body(request)
        if body is None:
            return None
        signed_in = self.lean_read(key, kwargs)
        if signed_in is None:
            return None
        user, token, read = signed_in
        anonymous = request.user
        request.user, request.auth = user, token  # type: ignore[attr-defined]
        if not all(
            permission.has_permission(request, self)
            for permission in self.get_permissions()  # type: ignore[attr-defined]
        ):
            request.user = anonymous  # DRF signs the request in afresh (no session user seen)
            return None
        try:
            refusals = [
                throttle.wait()
                for throttle in self.get_throttles()  # type: ignore[attr-defined]
                if not throttle.allow_request(request, self)
            ]
            if refusals:
                waits = [wait for wait in refusals if wait is not None]
                raise exceptions.Throttled(max(waits, default=None))
            data, code = self.lean_handle(request, user, body, read, **kwargs)
        except Exception as error:
            context = {"view": self, "args": args, "kwargs": kwargs, "request": request}
            handled = exception_handler(error, context)
            if handled is None:
                raise
            response = self._render(handled.data, handled.status_code)
            for name, value in handled.items():
                if name.lower() != "content-type":
                    response[name] = value
            return response
        return self._render(data, code)

    def _render(self, data: Any, code: int) -> HttpResponse:
        """A response as DRF's JSONRenderer and finalize_response make it."""
        if data is None:
            response = HttpResponse(status=code)
            del response["Content-Type"]
        else:
            response = HttpResponse(
                _RENDERER.render(data), status=code, content_type="application/json"
            )
        for name, value in self._lean_headers():
            response[name] = value
        return response

    def _lean_headers(self) -> tuple[tuple[str, str], ...]:
        """The headers finalize_response adds (DRF's default_response_headers: Allow, and Vary
        when the view has several renderers) with Cookie added to Vary, as _render sets them:
        the same for every response of the class, so worked out once (by DRF's and Django's
        own functions, on a blank response) and kept on the class."""
        cls = type(self)
        found = cls.__dict__.get("_lean_headers_found")
        if found is None:
            blank = HttpResponse()
            headers = dict(self.default_response_headers)  # type: ignore[attr-defined]
            vary = headers.pop("Vary", None)
            if vary is not None:
                patch_vary_headers(blank, [part.strip() for part in vary.split(",")])
            # DRF's session authentication looks at the session (absent here), so the session
            # middleware adds Cookie to Vary: the answer would differ with a session cookie.
            patch_vary_headers(blank, ["Cookie"])
            found = (("Vary", blank["Vary"]), *headers.items())
            cls._lean_headers_found = found  # type: ignore[attr-defined]
        return found


class NextItemView(_LeanPath, annotate.NextItemView):
    """api.views.annotate.NextItemView with the lean path (named as it is: the same endpoint).
    Its body is never read, as DRF's view never reads it."""

    def lean_read(self, key, kwargs):
        """The token and the stage as its annotator reaches it, in one statement
        (_next_read_sql; a named token's key, and a stage id beyond the column, as before)."""
        stage_id = kwargs["stage_id"]
        if key.startswith(KEY_PREFIX) or not sql.in_range(Stage, stage_id):
            return super().lean_read(key, kwargs)
        row = sql.fetchone(_next_read_sql(connection.vendor), {"key": key, "stage": stage_id})
        try:
            user, token = credentials_from_row(row)
        except exceptions.APIException:
            return None
        return user, token, row

    def lean_handle(self, request, user, body, read, **kwargs):
        reached = None if read is None else stage_for_annotator_row(read, token_width(), user)
        answer = next_item(user, kwargs["stage_id"], reached)
        return (
            (None, status.HTTP_204_NO_CONTENT) if answer is None else (answer, status.HTTP_200_OK)
        )


class SubmitView(_LeanPath, annotate.SubmitView):
    """api.views.annotate.SubmitView with the lean path (named as it is: the same endpoint), for
    a body of the plain shape (module docstring)."""

    def lean_body(self, request):
        content_type, _ = parse_header_parameters(request.META.get("CONTENT_TYPE", ""))
        if content_type != "application/json":
            return None
        try:
            data = read_json_document(request.body, at_end="the body ends")
        except (ImportFileError, RequestDataTooBig):
            return None  # DRF's parser says why, in the API's format
        return plain_submit_body(data)

    def lean_read(self, key, kwargs):
        """On PostgreSQL, the token and the assignment as the submit reads it, in one statement
        (_submit_read_sql); elsewhere (the submit reads in its own transaction there), and for
        a named token's key or an id beyond the column, the token alone."""
        assignment_id = kwargs["assignment_id"]
        if (
            connection.vendor != "postgresql"
            or key.startswith(KEY_PREFIX)
            or not sql.in_range(Assignment, assignment_id)
        ):
            return super().lean_read(key, kwargs)
        row = sql.fetchone(
            _submit_read_sql(connection.vendor), {"key": key, "assignment": assignment_id}
        )
        try:
            user, token = credentials_from_row(row)
        except exceptions.APIException:
            return None
        return user, token, row

    def lean_handle(self, request, user, body, read, **kwargs):
        if read is not None:
            read = assignment_read_row(read, token_width(), user)
        answer, created = submitted(user, kwargs["assignment_id"], body, read)
        return answer, status.HTTP_201_CREATED if created else status.HTTP_200_OK


def plain_submit_body(data: Any) -> dict[str, Any] | None:
    """A submit body as SubmitNextInSerializer's validated_data would hold it, when it has the
    plain shape it always accepts (module docstring); None for any other, which the serializer
    then judges. Hand-written: the serializer's fields are copied for every body, the cost
    this path avoids."""
    if not isinstance(data, dict) or not isinstance(data.get("payload"), dict):
        return None
    seconds = data.get("seconds_spent")
    if seconds is not None:
        if type(seconds) not in (int, float):  # not a bool, a string or a container
            return None
        try:
            seconds = float(seconds)
        except OverflowError:
            return None
        if not math.isfinite(seconds) or seconds < 0:
            return None
    following = data.get("next", False)
    if type(following) is not bool:
        return None
    body = {"payload": data["payload"], "next": following}
    if "seconds_spent" in data:
        body["seconds_spent"] = seconds
    if "client_info" in data:
        body["client_info"] = data["client_info"]
    return body


@cache
def _next_read_sql(vendor: str) -> str:
    """The token, its user and the stage as that user reaches it as an annotator (the columns of
    annotation.access.stage_for_annotator_select), in one statement: no row for an unknown key,
    the stage's columns NULL for an unknown stage id. Saves a next its own statement for the
    token. Portable (LEFT JOIN and correlated subqueries)."""
    columns, joins, user = token_select(vendor)
    st, p = sql.quoted(Stage, "st"), sql.quoted(Project, "p")
    return (
        f"SELECT {columns}, {stage_for_annotator_select(vendor, user)} FROM {joins}"
        f" LEFT JOIN ({sql.table(Stage)} st JOIN {sql.table(Project)} p"
        f" ON {p.id} = {st.project_id}) ON {st.id} = %(stage)s"
        f" WHERE {sql.quoted(Token, 't').key} = %(key)s"
    )


@cache
def _submit_read_sql(vendor: str) -> str:
    """The token, its user and the assignment as a submit reads it, unlocked (the columns of
    annotation.services.leases.assignment_read_select), in one statement: no row for an unknown
    key, the assignment's columns NULL for an unknown id. Saves a submit its own statement for
    the token; annotation_submit's common case takes the read as its own (its ``read``)."""
    columns, joins, _user = token_select(vendor)
    select, assignment_joins = assignment_read_select(vendor)
    return (
        f"SELECT {columns}, {select} FROM {joins}"
        f" LEFT JOIN {assignment_joins} ON {sql.quoted(Assignment, 'a').id} = %(assignment)s"
        f" WHERE {sql.quoted(Token, 't').key} = %(key)s"
    )
