"""The data manager: the project's Items tab as a table of chosen columns, filtered, sorted,
paged by keyset, acted on in bulk and exported (CSV, JSONL) as filtered.

* ``columns.py``: the columns a project offers (item fields, per-stage state, answers count,
  decision and agreement, import batch, tags, payload fields) and how a row spells them;
* ``forms.py``: the query string parsed into a typed ``ItemQuery`` (filters, sort, cursor);
* ``selectors.py``: the filtered queryset, one keyset page, the rows of a page or an export;
* ``services.py``: bulk tags and the remembered columns (writes);
* ``views.py``: the tab, its column chooser, bulk actions and exports.
"""
