"""crowd/prolific.py against a local fake of Prolific's API (a threaded http.server speaking the
endpoints the client uses, checking the token), and the sync that ends returned, timed-out and
rejected participants' sessions."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from annotation import services as engine
from annotation.models import Annotation, ItemStage
from crowd import tasks
from crowd.models import Participant
from crowd.prolific import OffHostURL, ProlificClient, ProlificError, retryable
from tests.crowd.test_services import answer, enter, next_item, ready
from tests.factories import make_crowd_study, prolific_ids

TOKEN = "test-token-123"
STUDY = "5" * 24


class FakeProlific(BaseHTTPRequestHandler):
    """Prolific's API as documented (docs.prolific.com/api-reference), for the calls we make."""

    submissions: list[dict] = []
    calls: list[tuple[str, str, object]] = []
    page_size = 2
    #: participant ids that took part (bonus set-up refuses others with 400); None: anyone
    participants: set[str] | None = None
    #: statuses the next set-up calls answer with before succeeding (503: Prolific is down)
    setup_failures: list[int] = []
    bulk: dict[str, dict] = {}
    paid: list[str] = []
    #: the first page's ``_links.next`` instead of the second page (a tampered answer)
    next_href: str | None = None
    #: path -> Location: answered 302 instead of the endpoint
    redirects: dict[str, str] = {}

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self, body) -> bool:
        self.calls.append((self.command, self.path, body))
        if self.headers.get("Authorization") != f"Token {TOKEN}":
            self._send(401, {"error": {"detail": "Invalid token."}})
            return False
        return True

    def _redirected(self) -> bool:
        location = self.redirects.get(self.path)
        if location is None:
            return False
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def do_GET(self):
        if not self._authorised(None) or self._redirected():
            return
        path, _, query = self.path.partition("?")
        if path == f"/api/v1/studies/{STUDY}/submissions/":
            page = int(query.partition("page=")[2] or 1)
            start = (page - 1) * self.page_size
            rows = self.submissions[start : start + self.page_size]
            more = start + self.page_size < len(self.submissions)
            host = f"http://{self.headers['Host']}"
            links = {"next": {"href": f"{host}{path}?page={page + 1}" if more else None}}
            if page == 1 and self.next_href is not None:
                links = {"next": {"href": self.next_href}}
            return self._send(200, {"results": rows, "_links": links})
        self._send(404, {"error": {"detail": "Not found."}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        if not self._authorised(body) or self._redirected():
            return
        if self.path.endswith("/transition/"):
            if body.get("action") == "REJECT" and (
                len(body.get("message", "")) < 100 or not body.get("rejection_category")
            ):
                return self._send(400, {"error": {"detail": "message too short"}})
            status = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}[body["action"]]
            return self._send(200, {"id": self.path.split("/")[4], "status": status})
        if self.path == "/api/v1/submissions/bonus-payments/":
            if self.setup_failures:
                return self._send(self.setup_failures.pop(0), {"error": {"detail": "Try later."}})
            lines = [line.split(",") for line in body["csv_bonuses"].split("\n")]
            unknown = [pid for pid, _ in lines if self.participants is not None
                       and pid not in self.participants]  # fmt: skip
            if body.get("study_id") != STUDY or unknown:
                detail = f"Invalid participant ids: {', '.join(unknown)}" if unknown else "study"
                return self._send(400, {"error": {"detail": detail}})
            bulk_id = f"bulk-{len(self.bulk) + 1}"
            cents = round(sum(float(amount) for _, amount in lines) * 100)
            self.bulk[bulk_id] = {"id": bulk_id, "study": STUDY, "amount": cents,
                                  "total_amount": cents}  # fmt: skip
            return self._send(201, self.bulk[bulk_id])
        if self.path.startswith("/api/v1/bulk-bonus-payments/") and self.path.endswith("/pay/"):
            bulk_id = self.path.split("/")[4]
            if bulk_id not in self.bulk:
                return self._send(404, {"error": {"detail": "Not found."}})
            self.paid.append(bulk_id)  # not idempotent: a second call pays again
            return self._send(202, f"Bulk bonus payment with ID {bulk_id} is being processed.")
        self._send(404, {"error": {"detail": "Not found."}})


@pytest.fixture
def prolific(settings):
    FakeProlific.submissions = []
    FakeProlific.calls = []
    FakeProlific.participants = None
    FakeProlific.setup_failures = []
    FakeProlific.bulk = {}
    FakeProlific.paid = []
    FakeProlific.next_href = None
    FakeProlific.redirects = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeProlific)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.PROLIFIC_TOKEN = TOKEN
    settings.PROLIFIC_API_URL = f"http://127.0.0.1:{server.server_port}/api/v1/"
    yield FakeProlific
    server.shutdown()
    server.server_close()


def test_the_client_lists_every_page_of_submissions(prolific):
    prolific.submissions = [
        {"id": f"s{n}", "participant_id": f"p{n}", "status": "ACTIVE"} for n in range(5)
    ]
    rows = ProlificClient().study_submissions(STUDY)
    assert [row["id"] for row in rows] == ["s0", "s1", "s2", "s3", "s4"]
    assert all(call[0] == "GET" for call in prolific.calls) and len(prolific.calls) == 3


def test_approve_reject_and_bonuses_send_prolifics_shapes(prolific):
    client = ProlificClient()
    assert client.approve("sub1")["status"] == "APPROVED"
    message = "Your answers to the attention checks did not match the instructions. " * 2
    assert client.reject("sub2", message=message, category="FAILED_CHECK")["status"] == "REJECTED"
    bulk = client.bonus_create(STUDY, [("p1", "1.5"), ("p2", 0.25)])
    assert bulk == "bulk-1"
    client.bonus_pay(bulk)
    posts = [(path, body) for method, path, body in prolific.calls if method == "POST"]
    assert posts[0] == ("/api/v1/submissions/sub1/transition/", {"action": "APPROVE"})
    assert posts[1][1] == {
        "action": "REJECT",
        "message": message.strip(),
        "rejection_category": "FAILED_CHECK",
    }
    assert posts[2] == (
        "/api/v1/submissions/bonus-payments/",
        {"study_id": STUDY, "csv_bonuses": "p1,1.50\np2,0.25"},
    )
    assert posts[3][0] == "/api/v1/bulk-bonus-payments/bulk-1/pay/"


def test_the_client_refuses_bad_requests_before_sending_them(prolific):
    client = ProlificClient()
    with pytest.raises(ProlificError, match="100"):
        client.reject("sub1", message="too short", category="FAILED_CHECK")
    with pytest.raises(ProlificError, match="category"):
        client.reject("sub1", message="x" * 120, category="BORED")
    with pytest.raises(ProlificError):
        client.bonus_create(STUDY, [("p1", "-1")])
    with pytest.raises(ProlificError):
        client.approve("../studies")
    assert prolific.calls == []


def test_a_wrong_token_is_an_error_with_prolifics_answer(prolific):
    with pytest.raises(ProlificError) as error:
        ProlificClient(token="wrong").approve("sub1")
    assert error.value.extra["status"] == 401 and "Invalid token" in error.value.message


def test_no_token_no_client(settings):
    settings.PROLIFIC_TOKEN = ""
    with pytest.raises(ProlificError, match="PROLIFIC_TOKEN"):
        ProlificClient()


def test_an_unreachable_api_is_an_error(settings):
    settings.PROLIFIC_TOKEN = TOKEN
    with pytest.raises(ProlificError, match="could not be reached"):
        ProlificClient(base_url="http://127.0.0.1:9/api/v1/", timeout=2).approve("sub1")


class Bystander(BaseHTTPRequestHandler):
    """Another server, which a tampered answer of Prolific's points at: records every request it
    gets (with its headers) and answers like a page of submissions."""

    seen: list[dict[str, str]] = []

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        self.seen.append({"path": self.path, **self.headers})
        data = json.dumps({"results": [{"id": "x"}], "_links": {"next": {"href": None}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_GET


@pytest.fixture
def bystander():
    """The port of a second local server (not the configured API)."""
    Bystander.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Bystander)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_port
    server.shutdown()
    server.server_close()


def test_a_next_link_to_another_server_is_refused_without_sending_the_token(
    prolific, bystander, caplog
):
    prolific.submissions = [{"id": f"s{n}", "participant_id": f"p{n}"} for n in range(3)]
    prolific.next_href = f"http://127.0.0.1:{bystander}/api/v1/studies/{STUDY}/submissions/"
    with pytest.raises(OffHostURL) as error:
        ProlificClient().study_submissions(STUDY)
    assert Bystander.seen == []  # nothing at all reached the other server
    assert len(prolific.calls) == 1 and not retryable(error.value)
    assert "PROLIFIC_API_URL" in error.value.message
    refusals = [r for r in caplog.records if r.name == "crowd.prolific" and r.levelname == "ERROR"]
    assert len(refusals) == 1 and str(bystander) in refusals[0].getMessage()
    assert TOKEN not in caplog.text


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_redirect_to_another_host_is_refused_without_sending_the_token(
    prolific, bystander, caplog, method
):
    path = (
        f"/api/v1/studies/{STUDY}/submissions/"
        if method == "GET"
        else "/api/v1/submissions/sub1/transition/"
    )
    prolific.redirects = {path: f"http://localhost:{bystander}/steal"}
    client = ProlificClient()
    with pytest.raises(OffHostURL, match="302 redirect"):
        client.study_submissions(STUDY) if method == "GET" else client.approve("sub1")
    assert Bystander.seen == []
    assert [call[1] for call in prolific.calls] == [path]
    assert any(r.levelname == "ERROR" and "localhost" in r.getMessage() for r in caplog.records)


def test_a_redirect_within_the_api_is_followed_with_the_token(prolific):
    prolific.submissions = [{"id": "s0", "participant_id": "p0"}]
    path = f"/api/v1/studies/{STUDY}/submissions/"
    prolific.redirects = {path: f"{path}?page=1"}
    assert [row["id"] for row in ProlificClient().study_submissions(STUDY)] == ["s0"]
    # the fake answers 401 to a request without the token: both carried it
    assert [call[1] for call in prolific.calls] == [path, f"{path}?page=1"]


def test_file_urls_are_refused(prolific, tmp_path, settings):
    page = tmp_path / "page.json"
    page.write_text(json.dumps({"results": [{"id": "from-a-file"}], "_links": {}}))
    prolific.submissions = [{"id": f"s{n}", "participant_id": f"p{n}"} for n in range(3)]
    prolific.next_href = page.as_uri()
    with pytest.raises(OffHostURL):
        ProlificClient().study_submissions(STUDY)
    prolific.next_href = None
    prolific.redirects = {f"/api/v1/studies/{STUDY}/submissions/": page.as_uri()}
    with pytest.raises(OffHostURL):
        ProlificClient().study_submissions(STUDY)
    settings.PROLIFIC_API_URL = tmp_path.as_uri()
    with pytest.raises(ProlificError, match="PROLIFIC_API_URL must be an http"):
        ProlificClient()


@pytest.mark.django_db
@pytest.mark.parametrize("on_return", ["keep", "withdraw"])
def test_the_sync_ends_returned_timed_out_and_rejected_sessions(prolific, on_return):
    study = make_crowd_study(
        regular=8, practice=0, checks=0, quota=3, places=5, platform_study_id=STUDY,
        on_return=on_return, overlap=10,  # no item completes: every annotation can be withdrawn
    )  # fmt: skip
    people = [ready(enter(study, number)) for number in range(1, 5)]
    for person in people:
        answer(person, next_item(person))
        next_item(person)  # each holds a lease too
    statuses = ["RETURNED", "TIMED-OUT", "REJECTED", "ACTIVE"]
    prolific.submissions = [
        {"id": f"s{n}", "participant_id": prolific_ids(n + 1)["PROLIFIC_PID"], "status": status}
        for n, status in enumerate(statuses)
    ] + [{"id": "s9", "participant_id": "f" * 24, "status": "ACTIVE"}]
    counts = tasks.sync_prolific_study(study.pk)
    assert counts == {"seen": 4, "left": 3, "unknown": 1}
    by_pid = {p.platform_id: p for p in Participant.objects.filter(study=study)}
    got = [by_pid[prolific_ids(n)["PROLIFIC_PID"]] for n in range(1, 5)]
    assert [p.status for p in got] == ["returned", "timed_out", "rejected", "active"]
    assert [p.platform_status for p in got] == statuses
    for person in got[:3]:
        assert not person.user.assignments.filter(status="active").exists()
        kept = Annotation.objects.filter(annotator=person.user).count()
        assert kept == (1 if on_return == "keep" else 0)
    assert Annotation.objects.filter(annotator=got[3].user).count() == 1
    assert engine.item_stage_counters_repair() == 0
    total = sum(
        ItemStage.objects.filter(stage=study.stage).values_list("submitted_count", flat=True)
    )
    assert total == Annotation.objects.filter(item_stage__stage=study.stage).count()
    # a second sync changes nothing
    assert tasks.sync_prolific_study(study.pk)["left"] == 0
    study.refresh_from_db()
    assert study.synced_at is not None


@pytest.mark.django_db
def test_the_beat_sync_skips_without_a_token(settings):
    settings.PROLIFIC_TOKEN = ""
    make_crowd_study(platform_study_id=STUDY)
    assert tasks.sync_prolific_studies() == 0


@pytest.mark.django_db
def test_the_beat_sync_visits_open_prolific_studies(prolific):
    make_crowd_study(platform_study_id=STUDY)
    make_crowd_study(platform_study_id=STUDY, is_open="0")
    make_crowd_study(platform="link")
    assert tasks.sync_prolific_studies() == 1
    assert [call[1] for call in prolific.calls] == [f"/api/v1/studies/{STUDY}/submissions/"]


@pytest.mark.django_db
def test_the_study_page_sends_its_suggestions_to_prolific_once(prolific, client):
    from django.urls import reverse

    from annotation.models import Role
    from tests.factories import make_member, took_seconds

    study = make_crowd_study(
        regular=2, practice=0, checks=1, quota=3, places=5, max_check_failures=0, overlap=5,
    )  # fmt: skip
    careful, fast, careless = (ready(enter(study, n)) for n in (1, 2, 3))
    for person, value in ((careful, "causal"), (fast, "causal"), (careless, "temporal")):
        while person.status == "active":
            person = answer(person, next_item(person), value)
    took_seconds(Annotation.objects.filter(item_stage__stage=study.stage), 5)
    took_seconds(Annotation.objects.filter(annotator=fast.user), 0.5)
    admin = make_member(study.project, Role.ADMIN)
    client.force_login(admin)
    url = reverse("crowd:study_decide", args=[study.project.slug, study.pk])
    response = client.post(url)
    assert response.status_code == 302
    posts = {path: body for method, path, body in prolific.calls if method == "POST"}
    session = {n: prolific_ids(n)["SESSION_ID"] for n in (1, 2, 3)}
    assert posts[f"/api/v1/submissions/{session[1]}/transition/"] == {"action": "APPROVE"}
    fast_body = posts[f"/api/v1/submissions/{session[2]}/transition/"]
    assert (fast_body["action"], fast_body["rejection_category"]) == ("REJECT", "TOO_QUICKLY")
    assert len(fast_body["message"]) >= 100
    careless_body = posts[f"/api/v1/submissions/{session[3]}/transition/"]
    assert careless_body["rejection_category"] == "FAILED_CHECK"
    statuses = dict(Participant.objects.values_list("platform_id", "platform_status"))
    assert statuses[prolific_ids(1)["PROLIFIC_PID"]] == "APPROVED"
    assert Participant.objects.get(pk=fast.pk).status == "rejected"
    calls = len(prolific.calls)
    client.post(url)
    assert len(prolific.calls) == calls  # decided once


@pytest.mark.django_db
def test_a_prolific_error_while_deciding_is_shown_and_stops(prolific, client, settings):
    from django.urls import reverse

    from annotation.models import Role
    from tests.factories import make_member

    study = make_crowd_study(regular=2, practice=0, checks=0, quota=1)
    person = ready(enter(study, 1))
    answer(person, next_item(person))
    settings.PROLIFIC_TOKEN = "wrong"
    client.force_login(make_member(study.project, Role.ADMIN))
    response = client.post(reverse("crowd:study_decide", args=[study.project.slug, study.pk]))
    assert response.status_code == 502 and "Invalid token" in response.content.decode()
    assert Participant.objects.get().platform_status == ""


@pytest.mark.django_db
def test_the_study_pages_sync_button_asks_for_the_sync_after_commit(
    prolific, client, django_capture_on_commit_callbacks
):
    from django.urls import reverse

    from annotation.models import Role
    from tests.factories import make_member

    study = make_crowd_study(platform_study_id=STUDY)
    admin = make_member(study.project, Role.ADMIN)
    client.force_login(admin)
    url = reverse("crowd:study_sync", args=[study.project.slug, study.pk])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(url)
    assert response.status_code == 302 and len(callbacks) == 1
    assert prolific.calls == []  # nothing sent before the commit
    callbacks[0]()  # the commit: the task runs (in-process here)
    assert [call[1] for call in prolific.calls] == [f"/api/v1/studies/{STUDY}/submissions/"]
    assert client.get(url).status_code == 405
