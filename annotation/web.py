"""Shared web helpers for every app's pages (CONTRIBUTING.md, "Thin views" and "Nothing leaked").

One place for what each page of every app does alike:

* ``page``: the decorator of every signed-in page — sign-in required (htmx requests are sent to
  the sign-in page as a whole page) and ``annotation.errors.ApplicationError`` rendered as the
  error page (or the error fragment for htmx) with its status; ``render_error`` renders one.
* the spreadsheet-safe cell rule, the one spelling of a cell in every CSV the project writes
  (downloads here, release files in ``releases/writers.py``): ``spreadsheet_safe`` (the
  formula-injection guard; ``spreadsheet_safe_sql`` its SQL spelling), ``csv_timestamp`` (ISO
  8601 in UTC with its offset), ``csv_cell``;
* ``csv_response``: a streamed CSV download (a BOM, the header, the rows, every cell made safe);
* ``page_of``: one page of a long list, numbered by the ``page`` query parameter.

Forms' own helpers (an invalid form as the one error type, the yes / no rule) are in
``annotation/forms.py``.

The cell rule is plain Python and this module imports nothing at its top that needs Django's
settings or app registry, so the Django-free release writers (``releases/writers.py``) import
it without setting Django up.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect

from annotation.errors import ApplicationError

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django_htmx.middleware import HtmxDetails

_T = TypeVar("_T")

# --- Pages ------------------------------------------------------------------------------------


class PageRequest(HttpRequest):
    """The request a view decorated with ``page`` receives (for type checking only): a
    signed-in ``user`` (``page`` sent everyone else to sign in) and the htmx details that
    ``django_htmx.middleware.HtmxMiddleware`` sets."""

    user: User
    htmx: HtmxDetails


def page(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Sign-in required (htmx requests are redirected as a whole page), and ApplicationErrors
    rendered as an error page, or as the error fragment for htmx, with their status."""

    @wraps(view)
    def wrapper(request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            # Imported here: django.contrib.auth.views needs the app registry, and this module
            # is imported by the Django-free release writers.
            from django.contrib.auth.views import redirect_to_login

            if request.htmx:
                login = redirect_to_login(
                    request.htmx.current_url_abs_path or request.get_full_path()
                )
                return HttpResponseClientRedirect(login.url)
            return redirect_to_login(request.get_full_path())
        try:
            return view(request, *args, **kwargs)
        except ApplicationError as error:
            return render_error(request, error)

    return wrapper


def render_error(request: Any, error: ApplicationError, **context: Any) -> HttpResponse:
    """The error page (``annotation/error.html``), or its fragment (``includes/error.html``) for
    htmx, with the error's status and any extra ``context``."""
    template = "includes/error.html" if request.htmx else "annotation/error.html"
    return render(request, template, {"error": error, **context}, status=error.status)


def page_of(request: HttpRequest, items: Sequence[_T] | Any, per_page: int) -> Page:
    """Page ``?page=`` of ``items`` (a queryset or a sequence), ``per_page`` a page: the first
    page for a missing or malformed number, the last for one past the end
    (``django.core.paginator.Paginator.get_page``)."""
    return Paginator(items, per_page).get_page(request.GET.get("page"))


# --- Spreadsheet-safe cells -------------------------------------------------------------------

#: First characters that make a spreadsheet read a cell as a formula (OWASP's list for CSV
#: injection: "=", "+", "-", "@", tab and carriage return).
FORMULA_STARTS = frozenset("=+-@\t\r")
#: A plain decimal number ("-0.25", "+3", "1e-5"): a spreadsheet reads it as a number, never a
#: formula, so it stays as it is. ``spreadsheet_safe_sql`` tests the same pattern in SQL.
PLAIN_NUMBER = r"[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?"
_plain_number = re.compile(PLAIN_NUMBER).fullmatch


def spreadsheet_safe(text: str) -> str:
    """A text cell made inert for spreadsheets: one that starts with ``=``, ``+``, ``-``, ``@``,
    a tab or a carriage return gets a leading single quote (OWASP's advice against CSV
    injection), unless the whole text is a plain decimal number. Callers pass text cells only:
    numbers (``-0.25`` from a float) are never prefixed."""
    if text and text[0] in FORMULA_STARTS and not _plain_number(text):
        return "'" + text
    return text


def spreadsheet_safe_sql(text: str) -> str:
    """SQL text of ``spreadsheet_safe`` applied to the SQL text expression ``text`` (a column
    reference: it is read up to four times), for files PostgreSQL writes itself (release
    files, ``releases/copy_export.py``; the disagreements CSV, ``agreement/disagreements_sql.py``).
    tests/releases/test_copy_export.py holds the two spellings together."""
    starts = ", ".join(f"chr({ord(character)})" for character in sorted(FORMULA_STARTS))
    return (
        f"CASE WHEN left({text}, 1) IN ({starts}) AND {text} !~ '^(?:{PLAIN_NUMBER})$' "
        f"THEN '''' || {text} ELSE {text} END"
    )


def csv_timestamp(value: datetime) -> str:
    """A timestamp as every CSV (and release row) of the project spells it: ISO 8601 in UTC with
    an explicit offset, ``2026-11-25T19:45:55.123456+00:00`` (PostgreSQL's ``to_json`` spelling
    under ``TimeZone=UTC``, which the COPY export uses). Naive datetimes are taken as UTC, as
    the database stores them (``USE_TZ``)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()


def csv_cell(value: Any) -> Any:
    """A download's cell: None as an empty cell; text made inert for spreadsheets
    (``spreadsheet_safe``); timestamps in ISO 8601, UTC, with the offset (``csv_timestamp``);
    numbers and booleans as they are (``csv.writer`` spells them)."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return csv_timestamp(value)
    if isinstance(value, str):
        return spreadsheet_safe(value)
    return value


# --- CSV downloads ----------------------------------------------------------------------------


def csv_text_sql(text: str) -> str:
    """SQL text of the CSV cell ``csv.writer`` (``csv_response``'s writer: minimal quoting)
    writes for the text expression ``text`` (a column reference: it is read several times):
    quoted, its quotes doubled, when it holds a comma, a double quote, CR or LF; bare
    otherwise; NULL as an empty cell, as ``csv_cell`` spells None. Apply the cell rule first
    (``spreadsheet_safe_sql``)."""
    return (
        f"CASE WHEN {text} IS NULL THEN '' "
        f"WHEN {text} ~ '[,\"\\r\\n]' THEN '\"' || replace({text}, '\"', '\"\"') || '\"' "
        f"ELSE {text} END"
    )


#: How ``csv_response``'s writer ends a line (``csv.writer``'s default); lines spelled in SQL
#: end the same way.
CSV_LINE_END = "\r\n"


class _Echo:
    """A file-like object whose ``write`` returns the line: ``csv.writer`` then yields text."""

    def write(self, value: str) -> str:
        return value


def csv_response(
    filename: str,
    header: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    lines: Iterable[str] | None = None,
) -> StreamingHttpResponse:
    """A streamed CSV download: a BOM (spreadsheet programs then read UTF-8), the header, then
    the rows, every cell spelled by ``csv_cell``. Rows are read one at a time, as the response
    is sent. ``lines``, when given, replaces ``rows``: blocks of whole lines already spelled
    (by PostgreSQL: each cell through ``spreadsheet_safe_sql`` then ``csv_text_sql``, lines
    ending in ``CSV_LINE_END``), sent as they come."""
    writer = csv.writer(_Echo())

    def body() -> Iterable[str]:
        yield "\ufeff" + writer.writerow(header)
        if lines is not None:
            yield from lines
            return
        for row in rows:
            yield writer.writerow([csv_cell(value) for value in row])

    response = StreamingHttpResponse(body(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
