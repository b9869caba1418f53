"""The Webhooks tab: only the project's admins reach it (every URL as every role); a new hook's
secret is shown once; a refused URL is named at the top of the form; the test button sends a
ping; a disabled hook says why and is re-enabled with a button."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Role
from tests.factories import PASSWORD, make_member, make_project
from webhooks.models import Webhook, WebhookDelivery
from webhooks.signing import secret_new

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "non_member", "annotator", "reviewer", "researcher", "admin", "superuser"]


@pytest.fixture
def world(django_capture_on_commit_callbacks):
    project = make_project(slug="hooks")
    users = {
        "non_member": make_member(make_project(slug="elsewhere"), Role.ADMIN),
        "annotator": make_member(project, Role.ANNOTATOR),
        "reviewer": make_member(project, Role.REVIEWER),
        "researcher": make_member(project, Role.RESEARCHER),
        "admin": make_member(project, Role.ADMIN),
        "superuser": get_user_model().objects.create_superuser("root", password=PASSWORD),
    }
    hook = Webhook.objects.create(
        project=project,
        name="Lab",
        url="https://93.184.215.14/hook",
        secret=secret_new(),
        events=["import.finished"],
        is_active=False,
        disabled_reason="Disabled after 10 failed attempts in a row; the last: 500.",
    )
    return {"project": project, "users": users, "hook": hook}


def sign_in(client, world, role):
    if role != "anonymous":
        client.login(username=world["users"][role].username, password=PASSWORD)
    return client


def _urls(world):
    slug, hook_id = world["project"].slug, world["hook"].pk
    return {
        "hooks": ("get", reverse("webhooks:hooks", args=[slug])),
        "hook": ("get", reverse("webhooks:hook", args=[slug, hook_id])),
        "test": ("post", reverse("webhooks:test", args=[slug, hook_id])),
        "enable": ("post", reverse("webhooks:enable", args=[slug, hook_id])),
        "disable": ("post", reverse("webhooks:disable", args=[slug, hook_id])),
        "delete": ("post", reverse("webhooks:delete", args=[slug, hook_id])),
    }


#: Per role, in ROLES order: anonymous → sign-in, outsiders → 404, other roles → 403, the
#: project's admins and superusers (every role) → the page (GET 200) or the action's redirect.
EXPECTED = {
    "get": [302, 404, 403, 403, 403, 200, 200],
    "post": [302, 404, 403, 403, 403, 302, 302],
}


@pytest.mark.parametrize("name", ["hooks", "hook", "test", "enable", "disable", "delete"])
@pytest.mark.parametrize("role", ROLES)
def test_permission_matrix(client, world, settings, name, role):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ()
    method, url = _urls(world)[name]
    response = getattr(sign_in(client, world, role), method)(url)
    expected = EXPECTED[method][ROLES.index(role)]
    assert response.status_code == expected, (name, role, response.status_code)
    if role == "anonymous":
        assert response["Location"].startswith(reverse("login"))


def test_the_matrix_covers_every_webhooks_url():
    from django.urls import get_resolver

    namespace = get_resolver().namespace_dict["webhooks"][1]
    names = {name for name in namespace.reverse_dict if isinstance(name, str)}
    assert names == {"hooks", "hook", "test", "enable", "disable", "delete"}


def test_adding_a_hook_shows_its_secret_once(client, world, receiver):
    sign_in(client, world, "admin")
    url = reverse("webhooks:hooks", args=[world["project"].slug])
    response = client.post(
        url,
        {
            "name": "Pipeline",
            "url": receiver.url,
            "events": ["item_stage.decided", "stage.completed"],
            "batch_size": "50",
            "requests_per_minute": "30",
        },
        follow=True,
    )
    hook = Webhook.objects.get(name="Pipeline")
    assert (hook.events, hook.batch_size, hook.requests_per_minute) == (
        ["item_stage.decided", "stage.completed"],
        50,
        30,
    )
    assert hook.secret in response.content.decode()
    again = client.get(reverse("webhooks:hook", args=[world["project"].slug, hook.pk]))
    assert again.status_code == 200 and hook.secret not in again.content.decode()
    listing = client.get(url).content.decode()
    assert "Pipeline" in listing and hook.secret not in listing


def test_a_private_address_is_refused_at_the_top_of_the_form(client, world, settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ()
    sign_in(client, world, "admin")
    response = client.post(
        reverse("webhooks:hooks", args=[world["project"].slug]),
        {
            "name": "Metadata",
            "url": "http://169.254.169.254/latest/",
            "events": ["import.finished"],
            "batch_size": "100",
            "requests_per_minute": "60",
        },
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "The webhook was not added" in page and "169.254.169.254" in page
    assert 'id="url"' in page and "aria-invalid" in page
    assert not Webhook.objects.filter(name="Metadata").exists()


def test_no_event_chosen_is_named(client, world):
    sign_in(client, world, "admin")
    response = client.post(
        reverse("webhooks:hooks", args=[world["project"].slug]),
        {
            "name": "x",
            "url": "https://93.184.215.14/",
            "batch_size": "1",
            "requests_per_minute": "1",
        },
    )
    assert response.status_code == 400
    assert "Choose at least one event" in response.content.decode()


def test_the_test_button_sends_a_ping_and_logs_it(
    client, world, receiver, django_capture_on_commit_callbacks
):
    hook = world["hook"]
    Webhook.objects.filter(pk=hook.pk).update(url=receiver.url)
    sign_in(client, world, "admin")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("webhooks:test", args=[world["project"].slug, hook.pk]))
    response = client.get(reverse("webhooks:hook", args=[world["project"].slug, hook.pk]))
    assert response.status_code == 200
    (request,) = receiver.requests
    assert request.document["events"][0]["type"] == "ping"
    logged = WebhookDelivery.objects.get(hook=hook)
    assert logged.is_test and logged.status_code == 200
    assert 'data-testid="deliveries"' in response.content.decode()


def test_a_disabled_hook_says_why_and_is_re_enabled(client, world, receiver):
    hook = world["hook"]
    sign_in(client, world, "admin")
    page = client.get(reverse("webhooks:hook", args=[world["project"].slug, hook.pk]))
    text = page.content.decode()
    assert "This webhook is off" in text and "10 failed attempts" in text and "Re-enable" in text
    client.post(reverse("webhooks:enable", args=[world["project"].slug, hook.pk]))
    hook.refresh_from_db()
    assert hook.is_active and hook.consecutive_failures == 0 and hook.disabled_reason == ""
    text = client.get(reverse("webhooks:hook", args=[world["project"].slug, hook.pk])).content
    assert b"This webhook is off" not in text


def test_the_tab_is_offered_to_admins_only(client, world):
    project_url = reverse("annotation:project", args=[world["project"].slug])
    tab = reverse("webhooks:hooks", args=[world["project"].slug])
    sign_in(client, world, "admin")
    assert tab in client.get(project_url).content.decode()
    client.logout()
    sign_in(client, world, "researcher")
    assert tab not in client.get(project_url).content.decode()
