"""The data manager's reads: every filter, every sort paged by keyset without losing or
repeating a row (ties broken by id), and decisions shown only once votes are final."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError, PermissionDenied
from annotation.models import Annotation, Item, Role
from studio.data_manager import selectors
from studio.data_manager.forms import SORTS, ItemQuery, item_query
from studio.data_manager.services import items_tag
from tests.factories import annotate_stage, make_items, make_member, make_project, pipeline

pytestmark = pytest.mark.django_db


def _walk(project, query, size):
    """Every page of ``query`` from the first, following the cursors."""
    seen, after, pages = [], None, 0
    while True:
        page, cursor = selectors.items_page(
            project,
            ItemQuery(**{**query.__dict__, "after": after}),
            viewer=None,
            named=True,
            size=size,
        )
        seen += page
        pages += 1
        if cursor is None:
            return seen, pages
        after = item_query({"after": cursor}).after


@pytest.mark.parametrize("sort", list(SORTS))
def test_keyset_pages_hold_every_row_once_in_the_sort_order_with_ties_broken_by_id(sort):
    project = make_project()
    make_items(project, 23)
    # Many ties: three statuses over 23 items.
    for index, item in enumerate(Item.objects.filter(project=project).order_by("pk")):
        item.status = [Item.Status.ACTIVE, Item.Status.ACCEPTED, Item.Status.DISCARDED][index % 3]
        item.save(update_fields=["status"])
    make_items(make_project(), 5)  # another project's items never show
    seen, pages = _walk(project, ItemQuery(sort=sort), size=5)
    field, descending = SORTS[sort]
    every = list(Item.objects.filter(project=project))
    key = (
        (lambda item: item.pk) if field == "pk" else (lambda item: (getattr(item, field), item.pk))
    )
    expected = sorted(every, key=key, reverse=descending)
    assert [item.pk for item in seen] == [item.pk for item in expected]
    assert len({item.pk for item in seen}) == 23 and pages == 5


def test_items_in_batches_reads_every_matching_item_once():
    project = make_project()
    make_items(project, 12)
    batches = list(
        selectors.items_in_batches(project, ItemQuery(sort="id"), viewer=None, named=True, size=5)
    )
    assert [len(batch) for batch in batches] == [5, 5, 2]
    ids = [item.external_id for batch in batches for item in batch]
    assert ids == sorted(ids) and len(set(ids)) == 12


def test_a_cursor_of_another_sort_is_refused():
    project = make_project()
    make_items(project, 3)
    with pytest.raises(ApplicationError):
        selectors.items_page(project, ItemQuery(sort="id", after=(5, 5)), viewer=None, named=True)
    with pytest.raises(ApplicationError):
        item_query({"after": "not-a-cursor"})


def _matching(project, viewer=None, named=True, **filters):
    return set(
        selectors.items_matching(
            project, ItemQuery(**filters), viewer=viewer, named=named
        ).values_list("external_id", flat=True)
    )


def test_stage_state_decision_disagreement_annotator_filters(django_capture_on_commit_callbacks):
    project, verify, label, people = pipeline(overlap=3, items=4, annotators=3)
    items = list(Item.objects.filter(project=project).order_by("pk"))
    split, rejected = items[0], items[1]

    def choose(person, item):
        if item.pk == rejected.pk:
            return "reject"
        if item.pk == split.pk and person == people[0]:
            return "reject"
        return "keep"

    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(verify, people, choose)
    ids = {item.pk: item.external_id for item in items}
    kept = {ids[item.pk] for item in items if item.pk != rejected.pk}
    assert _matching(project, stage="verify", decision="keep") == kept
    assert _matching(project, stage="verify", decision="reject") == {ids[rejected.pk]}
    assert _matching(project, disagreement=True) == {ids[split.pk]}
    assert _matching(project, stage="label", state="open") == kept
    assert _matching(project, stage="label", decision="keep") == set()
    assert _matching(project, status="discarded") == {ids[rejected.pk]}
    assert _matching(project, annotator=people[0].username) == set(ids.values())
    assert _matching(project, annotator="nobody") == set()
    with pytest.raises(PermissionDenied):
        _matching(project, named=False, annotator=people[0].username)
    with pytest.raises(ApplicationError):
        _matching(project, stage="no-such-stage")


def test_an_open_vote_is_neither_filtered_on_nor_shown(django_capture_on_commit_callbacks):
    project, verify, _, (alice, bob, carol) = pipeline(overlap=3, items=1, annotators=3)
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(verify, [alice], lambda person, item: "keep")
    item = Item.objects.get(project=project)
    # Alice's vote is open (two more asked): nobody else finds the item by her name.
    assert _matching(project, viewer=bob, annotator=alice.username) == set()
    assert _matching(project, viewer=alice, annotator=alice.username) == {item.external_id}
    assert _matching(project, stage="verify", decision="keep") == set()
    [(_, cells)] = selectors.item_rows(
        [item], ["stage:verify:answers", "stage:verify:decision", "stage:verify:agreement"]
    )
    assert cells == [1, None, None]


def test_text_batch_and_tag_filters():
    project = make_project()
    make_items(project, 6)
    services.items_create(
        project=project, rows=[{"external_id": "odd-one", "payload": {"text": "A Quokka."}}]
    )
    assert _matching(project, q="quokka") == {"odd-one"}
    assert _matching(project, q="ITEM-00003") == {"item-00003"}
    first_two = list(Item.objects.filter(project=project).order_by("pk")[:2])
    items_tag(project=project, item_ids=[item.pk for item in first_two], name="check", add=True)
    assert _matching(project, tag="check") == {item.external_id for item in first_two}
    assert _matching(project, tag="unknown") == set()
    assert _matching(project, batch=999999) == set()


def test_columns_offer_payload_paths_but_gold_only_to_those_who_see_it():
    project = make_project()
    services.items_create(
        project=project,
        rows=[
            {
                "external_id": "a",
                "payload": {"text": "T", "meta": {"lang": "en"}, "gold": "keep"},
            }
        ],
    )
    make_member(project, Role.REVIEWER)
    _, for_admins = selectors.project_columns(project, named=True)
    _, for_reviewers = selectors.project_columns(project, named=False)
    admin_keys = {column.key for column in for_admins}
    reviewer_keys = {column.key for column in for_reviewers}
    assert {"field:text", "field:meta.lang", "field:gold"} <= admin_keys
    assert "field:gold" not in reviewer_keys and "field:meta.lang" in reviewer_keys
    [(_, cells)] = selectors.item_rows(Item.objects.filter(project=project), ["field:meta.lang"])
    assert cells == ["en"]


def test_a_filtered_count_stops_at_its_limit_and_says_there_are_more(monkeypatch):
    project = make_project()
    make_items(project, 7)
    monkeypatch.setattr(selectors, "COUNT_LIMIT", 6)
    monkeypatch.setattr(selectors, "PROBED_COUNT_LIMIT", 4)
    # A search tests each row: it stops at the lower limit; an index counts a status.
    assert selectors.items_count(project, ItemQuery(q="item"), viewer=None, named=True) == (4, True)
    assert selectors.items_count(project, ItemQuery(q="00001"), viewer=None, named=True) == (
        1,
        False,
    )
    assert selectors.items_count(project, ItemQuery(status="active"), viewer=None, named=True) == (
        6,
        True,
    )
    # The unfiltered view is counted exactly.
    assert selectors.items_count(project, ItemQuery(), viewer=None, named=True) == (7, False)


def _counted(project, **filters):
    return selectors.items_count(project, ItemQuery(**filters), viewer=None, named=True)


def test_stage_state_decision_and_vote_counts_from_item_stages_equal_the_matching_items(
    django_capture_on_commit_callbacks, monkeypatch
):
    project, verify, label, people = pipeline(overlap=3, items=4, annotators=3)
    first = Item.objects.filter(project=project).order_by("pk").first()
    with django_capture_on_commit_callbacks(execute=True):
        # One verify vote split (not unanimous) on the first item.
        annotate_stage(
            verify,
            people,
            lambda person, item: "reject" if (person, item) == (people[0], first) else "keep",
        )
        annotate_stage(label, people, lambda person, item: "causal")
    make_items(project, 2, prefix="later")  # open in verify, not yet in label
    filters = [
        {"stage": "verify"},
        {"stage": "label"},
        {"stage": "verify", "state": "open"},
        {"stage": "label", "state": "resolved"},
        {"state": "resolved"},  # four items resolved in both stages: four, not eight
        {"state": "open"},
        {"stage": "verify", "decision": "keep"},
        {"stage": "label", "state": "resolved", "decision": "causal"},
        {"decision": "keep"},
        {"stage": "label", "decision": "keep"},  # a decision of another stage: none
        {"disagreement": True},
        {"stage": "verify", "disagreement": True},
    ]
    for limit in (100, 5, 3):
        monkeypatch.setattr(selectors, "COUNT_LIMIT", limit)
        monkeypatch.setattr(selectors, "PROBED_COUNT_LIMIT", limit)
        for each in filters:
            found = len(_matching(project, **each))
            with CaptureQueriesContext(connection) as statements:
                assert _counted(project, **each) == (min(found, limit), found > limit), each
            # Read from the item stages alone: no statement reads the items table.
            assert not any('FROM "annotation_item"' in q["sql"] for q in statements), each
    assert len(_matching(project, state="resolved")) == 4
    assert len(_matching(project, disagreement=True)) == 1
    assert len(_matching(project, decision="keep")) == 4


def test_a_first_page_holding_every_match_is_its_own_count():
    project = make_project()
    make_items(project, 7)

    def shown_and_counts(query, size):
        with CaptureQueriesContext(connection) as statements:
            shown = selectors.items_shown(project, query, viewer=None, named=True, size=size)
        return shown, [q["sql"] for q in statements if "COUNT(" in q["sql"].upper()]

    shown, counts = shown_and_counts(ItemQuery(status="active"), size=50)
    assert (len(shown.items), shown.matching, shown.more, shown.next_cursor) == (7, 7, False, None)
    assert counts == []
    shown, counts = shown_and_counts(ItemQuery(status="active"), size=5)
    assert (len(shown.items), shown.matching, shown.more) == (5, 7, False)
    assert shown.next_cursor and counts
    # The last page holds only the rest: the count still says every match.
    after = item_query({"status": "active", "after": shown.next_cursor})
    shown, _ = shown_and_counts(after, size=5)
    assert (len(shown.items), shown.matching, shown.next_cursor) == (2, 7, None)


def _answered_by(person, viewer, *, stage="", state="", decision="", disagreement=False):
    """The external ids an annotator filter should select, worked out row by row in Python:
    items with an item stage (in ``stage``, in ``state``, decided ``decision``, votes not
    unanimous) holding an answer of ``person`` that ``viewer`` may see (final, or their own)."""
    found = set()
    for annotation in Annotation.objects.filter(annotator=person, is_current=True).select_related(
        "item_stage__stage", "item_stage__item", "item_stage__resolution"
    ):
        item_stage = annotation.item_stage
        final = item_stage.state not in ("open", "resolving") or (
            annotation.round < item_stage.round
        )
        resolution = getattr(item_stage, "resolution", None)
        decided = resolution is not None and item_stage.state not in ("open", "resolving")
        if not (final or viewer == person):
            continue
        if stage and item_stage.stage.slug != stage or state and item_stage.state != state:
            continue
        if decision and not (decided and resolution.value == decision):
            continue
        if disagreement and not (decided and resolution.status != "unanimous"):
            continue
        found.add(item_stage.item.external_id)
    return found


@pytest.mark.parametrize("by_id", [True, False])
def test_the_annotator_filter_selects_the_items_of_the_answers_the_viewer_may_see(
    django_capture_on_commit_callbacks, monkeypatch, by_id
):
    # Named by id (the person's answers read first) or, beyond ANSWERS_BY_ID, tested item by
    # item: the same items, with every other stage-level filter on the same item stage.
    if not by_id:
        monkeypatch.setattr(selectors, "ANSWERS_BY_ID", 1)
    project, verify, label, people = pipeline(overlap=2, items=6, annotators=3)
    items = list(Item.objects.filter(project=project).order_by("pk"))

    def verdict(person, item):
        return (
            "reject"
            if item.pk == items[0].pk or (item, person) == (items[1], people[0])
            else "keep"
        )

    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(verify, people, verdict)
    with django_capture_on_commit_callbacks(execute=True):
        # One label answer each for the first two people given one: open votes, seen by
        # their author only.
        given = 0
        for person in people:
            stage = access_stage_for_annotator(user=person, stage_id=label.pk)
            assignment = services.assignment_next(annotator=person, stage=stage)
            if assignment is not None and given < 2:
                services.annotation_submit(
                    assignment_id=assignment.pk, annotator=person, payload={"value": "causal"}
                )
                given += 1
    assert given == 2
    filters = [
        {},
        {"stage": "verify"},
        {"stage": "label"},
        {"state": "resolved"},
        {"stage": "verify", "decision": "keep"},
        {"decision": "reject"},
        {"disagreement": True},
        {"stage": "label", "state": "open"},
    ]
    for person in people:
        for viewer in (people[0], None):
            for each in filters:
                expected = _answered_by(person, viewer, **each)
                found = _matching(project, viewer=viewer, annotator=person.username, **each)
                assert found == expected, (person.username, viewer, each)
    # With a filter on the items themselves: the rejected item, for one who rejected it.
    voter = Annotation.objects.filter(item_stage__item=items[0]).first().annotator
    assert _matching(project, annotator=voter.username, status="discarded") == {
        items[0].external_id
    }
    assert _matching(project, annotator="nobody", stage="verify") == set()


def test_an_annotators_items_are_counted_from_their_answers_without_a_count(
    django_capture_on_commit_callbacks,
):
    project, verify, _, people = pipeline(overlap=1, items=7, annotators=1)
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(verify, people, lambda person, item: "keep")
    query = ItemQuery(annotator=people[0].username)
    with CaptureQueriesContext(connection) as statements:
        shown = selectors.items_shown(project, query, viewer=None, named=True, size=3)
    assert (len(shown.items), shown.matching, shown.more) == (3, 7, False)
    assert not [q for q in statements if "COUNT(" in q["sql"].upper()]
    assert selectors.items_count(project, query, viewer=None, named=True) == (7, False)
    # A filter on the items themselves is counted (up to the probed limit).
    assert selectors.items_count(
        project, ItemQuery(annotator=people[0].username, q="item-0000"), viewer=None, named=True
    ) == (7, False)
