"""Bonuses from the study page: amounts typed beside chosen participants and a CSV of
participant id,amount lines, validated (each refusal names the line or participant and writes
nothing), then set up and paid through the Prolific client by the task crowd.tasks.pay_bonus
(retried while Prolific is unavailable, paid once), against the local fake of Prolific's API."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest
from celery.exceptions import Retry
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from annotation.models import Role
from crowd import services, tasks
from crowd.models import BonusPayment
from tests.crowd.test_prolific import STUDY
from tests.crowd.test_services import enter, ready
from tests.factories import make_crowd_study, make_member, prolific_ids

pytestmark = pytest.mark.django_db


FUZZ = hypothesis_settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


def pid(number: int) -> str:
    return prolific_ids(number)["PROLIFIC_PID"]


@pytest.fixture
def study(prolific):
    study = make_crowd_study(platform_study_id=STUDY, places=5)
    people = [ready(enter(study, n)) for n in (1, 2, 3)]
    prolific.participants = {pid(n) for n in (1, 2, 3)}
    study.people = people
    return study


@pytest.fixture
def page_post(client, django_capture_on_commit_callbacks):
    def post(client, study, data):
        client.force_login(make_member(study.project, Role.ADMIN))
        url = reverse("crowd:study_bonus", args=[study.project.slug, study.pk])
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(url, data)

    return post


def test_the_study_page_pays_chosen_participants_and_a_csv_set_up_then_paid(
    page_post,
    client,
    study,
    prolific,
    caplog,
):
    first, second, third = study.people
    caplog.set_level(logging.INFO, logger="crowd.prolific")
    response = page_post(
        client,
        study,
        {
            f"bonus-{first.pk}": "1.50",
            f"bonus-{second.pk}": "",  # not chosen
            "bonus_csv": f"participant_id,amount\n{pid(3)},0.25\n",
        },
    )
    assert response.status_code == 302
    payment = BonusPayment.objects.get()
    assert payment.status == "paid" and payment.prolific_id == "bulk-1"
    assert payment.total == Decimal("1.75") and payment.paid_at is not None
    posts = [(path, body) for method, path, body in prolific.calls if method == "POST"]
    assert posts[0] == (
        "/api/v1/submissions/bonus-payments/",
        {"study_id": STUDY, "csv_bonuses": f"{pid(1)},1.50\n{pid(3)},0.25"},
    )
    assert posts[1][0] == "/api/v1/bulk-bonus-payments/bulk-1/pay/"
    assert prolific.paid == ["bulk-1"]
    logged = [record.getMessage() for record in caplog.records]
    assert any("bonus-payments/ -> 201" in line for line in logged)
    assert any("bulk-1/pay/ -> 202" in line for line in logged)
    assert not any("test-token" in line for line in logged)
    page = client.get(reverse("crowd:study", args=[study.project.slug, study.pk])).content.decode()
    assert "bulk-1" in page and "paid" in page


def test_an_uploaded_csv_is_accepted(page_post, client, study, prolific):
    upload = SimpleUploadedFile("bonus.csv", f"{pid(2)},2\n{pid(3)},0.5\n".encode())
    assert page_post(client, study, {"bonus_file": upload}).status_code == 302
    assert BonusPayment.objects.get().bonuses == [[pid(2), "2.00"], [pid(3), "0.50"]]


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"bonus_csv": f"{pid(1)},abc"}, "CSV line 1"),
        ({"bonus_csv": f"{pid(1)},-1"}, "more than 0"),
        ({"bonus_csv": f"{pid(1)},0"}, "more than 0"),
        ({"bonus_csv": f"{pid(1)},100.01"}, "at most 100"),
        ({"bonus_csv": f"{pid(1)},1.505"}, "two decimals"),
        ({"bonus_csv": f"{pid(1)},NaN"}, "not an amount"),
        ({"bonus_csv": f"{pid(1)},£1"}, "not an amount"),
        ({"bonus_csv": f"\n{pid(1)},1\n{'f' * 24},1"}, "CSV line 3"),
        ({"bonus_csv": f"{pid(1)},1\n{pid(1)},2"}, "already has a bonus"),
        ({"bonus_csv": f"{pid(1)},1,extra"}, "two columns"),
        ({"bonus_csv": "=HYPERLINK(1),1"}, "not a participant"),
        ({}, "at least one participant"),
        # a line over the CSV reader's 128 KiB cell limit (once a 500), quoted or not
        ({"bonus_csv": f"{pid(1)},1\n{pid(2)},{'1' * 140_000}"}, "CSV line 2: a cell is longer"),
        ({"bonus_csv": f'{pid(1)},1\n\n"{"x" * 140_000}",1'}, "CSV line 3: a cell is longer"),
        ({"bonus_csv": f'{pid(1)},"1\n{"2" * 140_000}\n"'}, "CSV line 1: a cell is longer"),
        ({"bonus_csv": f"{pid(1)},1\n{'f' * 140_000}"}, "CSV line 2: a cell is longer"),
        ({"bonus_csv": f"{pid(1)},1\n{pid(2)},2\r3"}, "CSV line 2: not readable as CSV"),
        ({"bonus_csv": f"{pid(1)},1.{'0' * 100_000}1"}, "0000…"),
        ({"bonus_csv": f"{pid(1)},{'x' * 100_000}"}, "xxxx…"),
        ({"bonus_csv": f"{'e' * 100_000},1"}, "eeee…"),
    ],
)
def test_bad_bonuses_are_refused_naming_where_and_nothing_is_sent(
    page_post,
    client,
    study,
    prolific,
    data,
    named,
):
    response = page_post(client, study, data)
    page = response.content.decode()
    assert response.status_code == 400 and named in page and "No bonus was paid" in page
    assert not BonusPayment.objects.exists()
    assert not [call for call in prolific.calls if call[0] == "POST"]


@FUZZ
@given(
    csv_text=st.lists(
        st.one_of(
            st.text(max_size=40),
            st.sampled_from([f"{pid(1)},1.50", "participant_id,amount", '"', "\r", "\x00"]),
            st.builds(lambda n: "9" * n, st.integers(131_000, 140_000)),
        ),
        max_size=6,
    ).map("\n".join)
)
def test_any_bonus_csv_is_rows_or_an_error_naming_where(study, csv_text):
    """Whatever the CSV holds: bonuses, or an ApplicationError (a 400 on the page), never csv.Error
    or another exception (a 500)."""
    try:
        rows = services.bonus_rows(study=study, amounts={}, csv_text=csv_text)
    except services.ApplicationError as error:
        assert error.message
    else:
        assert rows and all(pid_ in {pid(1), pid(2), pid(3)} for pid_, _ in rows)


def test_fields_the_bonus_form_does_not_have_change_nothing(page_post, client, study):
    """The bonus form reads its own fields only: a posted ``study`` or ``project`` cannot send
    a payment elsewhere."""
    other = make_crowd_study(platform_study_id=STUDY)
    data = {"bonus_csv": f"{pid(1)},1", "study": str(other.pk), "project": other.project.slug}
    assert page_post(client, study, data).status_code == 302
    assert BonusPayment.objects.get().study_id == study.pk


def test_a_typed_amount_and_the_csv_naming_the_same_participant_are_refused(
    page_post,
    client,
    study,
):
    first = study.people[0]
    response = page_post(client, study, {f"bonus-{first.pk}": "1", "bonus_csv": f"{pid(1)},2"})
    assert response.status_code == 400 and "already has a bonus" in response.content.decode()
    assert 'value="1"' in response.content.decode()  # what was typed stays in the form


def test_more_than_200_bonuses_are_refused(study):
    lines = "".join(f"{n:024x},1\n" for n in range(1, 203))
    with pytest.raises(services.ApplicationError, match="at most 200"):
        services.bonus_rows(study=study, amounts={}, csv_text=lines)


def test_bonuses_need_a_prolific_study_id(prolific):
    study = make_crowd_study(platform_study_id="")
    person = enter(study, 1)
    with pytest.raises(services.ApplicationError, match="STUDY_ID"):
        services.bonus_payment_create(
            study=study, requested_by=None, amounts={person.pk: "1"}, csv_text=""
        )


def test_a_set_up_prolific_cannot_take_now_is_retried_and_paid_once(study, prolific):
    prolific.setup_failures = [503, 429]
    payment = services.bonus_payment_create(
        study=study, requested_by=None, amounts={study.people[0].pk: "1.00"}
    )
    payment = BonusPayment.objects.get(pk=payment.pk)
    # eagerly, Celery raises Retry where a worker would schedule the task again; run it again
    # as the worker would, until it goes through (the whole chain on a real worker: below)
    for _ in range(2):
        with pytest.raises(Retry):
            tasks.pay_bonus.apply(args=[payment.pk])
        payment.refresh_from_db()
        assert payment.status == "pending" and "Try later" in payment.error
    assert tasks.pay_bonus.apply(args=[payment.pk]).get() == "paid"
    payment.refresh_from_db()
    assert payment.status == "paid" and payment.attempts == 3 and payment.error == ""
    setups = [c for c in prolific.calls if c[1] == "/api/v1/submissions/bonus-payments/"]
    assert len(setups) == 3 and prolific.paid == ["bulk-1"]
    # running the task again sends nothing: paid once
    calls = len(prolific.calls)
    assert tasks.pay_bonus.delay(payment.pk).get() == "paid"
    assert len(prolific.calls) == calls and prolific.paid == ["bulk-1"]


def test_a_set_up_prolific_refuses_fails_without_retrying_or_paying(study, prolific):
    prolific.participants = {pid(2)}  # participant 1 did not take part, says Prolific
    payment = services.bonus_payment_create(
        study=study, requested_by=None, amounts={study.people[0].pk: "1.00"}
    )
    assert tasks.pay_bonus.delay(payment.pk).get() == "failed"
    payment.refresh_from_db()
    assert payment.status == "failed" and "Invalid participant ids" in payment.error
    assert payment.attempts == 1 and prolific.paid == []


def test_a_failed_pay_call_is_never_sent_again(study, prolific, settings):
    payment = services.bonus_payment_create(
        study=study, requested_by=None, amounts={study.people[0].pk: "1.00"}
    )
    BonusPayment.objects.filter(pk=payment.pk).update(status="set_up", prolific_id="bulk-9")
    assert tasks.pay_bonus.delay(payment.pk).get() == "failed"  # the fake knows no bulk-9
    payment.refresh_from_db()
    assert payment.status == "failed" and "not sent again" in payment.error
    pays = [c for c in prolific.calls if c[1].endswith("/pay/")]
    assert tasks.pay_bonus.delay(payment.pk).get() == "failed"
    assert [c for c in prolific.calls if c[1].endswith("/pay/")] == pays


def test_the_bonus_form_shows_only_with_a_token_on_prolific_studies(
    page_post, client, study, settings
):
    client.force_login(make_member(study.project, Role.ADMIN))
    url = reverse("crowd:study", args=[study.project.slug, study.pk])
    assert 'data-testid="bonus-form"' in client.get(url).content.decode()
    settings.PROLIFIC_TOKEN = ""
    assert 'data-testid="bonus-form"' not in client.get(url).content.decode()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_retries_the_set_up_and_pays_once(postgres, prolific, settings):
    """The task on a real Celery worker (Redis broker) against the fake on loopback: two
    refused set-ups (503, 429) are retried after their delay, then the payment is paid once."""
    import os

    from tests.conftest import Workers, wait_for

    if not os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs Redis: run through `make test` (scripts/with-services.sh)")
    from rungwise.celery import app

    app.conf.task_always_eager = False  # to the worker (the autouse fixture restores it)
    app.control.purge()
    study = make_crowd_study(platform_study_id=STUDY)
    person = ready(enter(study, 1))
    prolific.participants = {pid(1)}
    prolific.setup_failures = [503, 429]
    pool = Workers(
        "bonus",
        PROLIFIC_TOKEN=settings.PROLIFIC_TOKEN,
        PROLIFIC_API_URL=settings.PROLIFIC_API_URL,
        CROWD_BONUS_RETRY_SECONDS="0.2",
    )
    try:
        pool.start()
        payment = services.bonus_payment_create(
            study=study, requested_by=None, amounts={person.pk: "2.5"}
        )
        wait_for(lambda: BonusPayment.objects.get(pk=payment.pk).status == "paid", timeout=60)
    finally:
        pool.stop_all()
    payment.refresh_from_db()
    assert payment.attempts == 3 and prolific.paid == ["bulk-1"]
