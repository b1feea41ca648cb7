"""The lifecycle where operators see it: the admin's lifecycle filter, the "needs attention"
page, and the REST `lifecycle` filter and bulk retry."""

from datetime import timedelta
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import URLPattern, path
from django.utils import timezone
from rest_framework.test import APIClient

from purchases.models import ScheduledPurchase
from purchases.services import purchase_create
from scheduling.ops.admin.base import LifecycleFilter
from scheduling.ops.admin.defaults import default_admin_for
from scheduling.ops.admin.views import ATTENTION_ROWS, ERROR_CHARS, add_attention_url
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.states import LIFECYCLE_STATES, Status
from tests.factories import ScheduledPingFactory, make_due_pings
from tests.purchases.factories import CustomerFactory, ReleaseFactory
from tests.testapp.models import ScheduledPing
from tests.trainings.factories import TeamFactory
from trainings.models import ScheduledTrainingNotification
from trainings.services import training_create

pytestmark = pytest.mark.django_db

ATTENTION = "/admin/scheduling/attention/"
PINGS = "/admin/testapp/scheduledping/"
SCHEDULED_PURCHASES = "/api/scheduled-purchases/"
SCHEDULED_NOTIFICATIONS = "/api/scheduled-training-notifications/"


def rows_in_every_state() -> dict[str, ScheduledPing]:
    now = timezone.now()
    fields: dict[str, dict[str, Any]] = {
        "pending": {},
        "awaiting_handling": {"status": Status.DELIVERED, "delivered_at": now},
        "in_flight": {"status": Status.DELIVERED, "delivered_at": now, "effect_started_at": now},
        "handled": {"status": Status.DELIVERED, "delivered_at": now, "handled_at": now},
        "failed": {"status": Status.FAILED, "attempts": 10, "last_error": "RuntimeError: down"},
        "expired": {"status": Status.EXPIRED},
        "cancelled": {"status": Status.CANCELLED, "cancelled_at": now},
    }
    return {state: ScheduledPingFactory.create(**values) for state, values in fields.items()}


def listed_pks(response) -> set[int]:
    assert response.status_code == 200
    return {row.pk for row in response.context["cl"].result_list}


def staff_with(*perms: str) -> Client:
    """A staff user with these permissions ("app_label.codename"), logged in."""
    user = User.objects.create_user(f"staff-{User.objects.count()}", password="pw", is_staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    client.force_login(user)
    return client


def api_user(*codenames: str) -> APIClient:
    user = User.objects.create_user(f"api-{User.objects.count()}", password="pw")
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = APIClient()
    client.force_authenticate(user)
    return client


def failed_purchase_row() -> ScheduledPurchase:
    purchase = purchase_create(customer=CustomerFactory.create(), release=ReleaseFactory.create())
    row = purchase.scheduled.get(track=None)
    ScheduledPurchase.objects.filter(pk=row.pk).update(
        status=Status.FAILED, attempts=10, last_error="SMTPServerDisconnected: gone"
    )
    row.refresh_from_db()
    return row


def notification_rows() -> list[ScheduledTrainingNotification]:
    start_at = timezone.now() + timedelta(days=7)
    training = training_create(
        team=TeamFactory.create(), start_at=start_at, end_at=start_at + timedelta(hours=2)
    )
    return list(training.scheduled.order_by("due_at", "pk"))


# --- the admin's lifecycle filter ---------------------------------------------------------------


@pytest.mark.parametrize("state", LIFECYCLE_STATES)
def test_the_lifecycle_filter_lists_the_rows_in_that_state(admin_client, state):
    rows = rows_in_every_state()

    response = admin_client.get(PINGS, {"lifecycle": state})

    assert listed_pks(response) == {rows[state].pk}


def test_the_changelist_offers_every_lifecycle_state_and_shows_attempts_and_last_error(
    admin_client,
):
    rows_in_every_state()

    page = admin_client.get(PINGS).content.decode()

    assert "By lifecycle" in page
    for state in LIFECYCLE_STATES:
        assert f"?lifecycle={state}" in page
    assert "RuntimeError: down" in page
    assert "column-attempts" in page


def test_an_unknown_lifecycle_state_is_refused_not_ignored(admin_client):
    rows_in_every_state()

    response = admin_client.get(PINGS, {"lifecycle": "stuck"})

    assert response.status_code == 302
    assert response["Location"].endswith("?e=1")


def test_every_scheduled_models_admin_filters_by_lifecycle_and_shows_attempts_and_errors(rf):
    request = rf.get("/")
    request.user = User(is_superuser=True, is_active=True)  # an admin request has its user
    scheduled = [
        (model, model_admin)
        for model, model_admin in admin.site._registry.items()
        if issubclass(model, ScheduledEvent)
    ]

    assert len(scheduled) >= 5
    for model, model_admin in scheduled:
        assert LifecycleFilter in model_admin.get_list_filter(request), model
        assert {"state", "attempts", "error"} <= set(model_admin.get_list_display(request)), model


def test_every_scheduled_changelist_links_to_the_attention_page(admin_client):
    failed_purchase_row()
    for url in (PINGS, "/admin/purchases/scheduledpurchase/"):
        page = admin_client.get(url).content.decode()
        assert f'href="{ATTENTION}"' in page, url


def test_the_retry_action_brings_the_filtered_failed_rows_back(admin_client):
    rows = rows_in_every_state()

    # Every row ticked, "select all" across the filtered list: the filter decides.
    every = [row.pk for row in rows.values()]
    admin_client.post(
        f"{PINGS}?lifecycle=failed",
        {"action": "retry_rows", "select_across": "1", "index": 0, "_selected_action": every},
    )

    rows["failed"].refresh_from_db()
    assert (rows["failed"].status, rows["failed"].version) == (Status.PENDING, 2)
    rows["expired"].refresh_from_db()
    assert rows["expired"].status == Status.EXPIRED  # not selected by the filter


# --- the "needs attention" page -----------------------------------------------------------------


def test_the_attention_page_lists_failed_rows_of_every_model_with_working_links(admin_client):
    pings = rows_in_every_state()
    purchase_row = failed_purchase_row()
    notification = notification_rows()[0]
    ScheduledTrainingNotification.objects.filter(pk=notification.pk).update(
        status=Status.FAILED, last_error="PushError: token revoked"
    )

    response = admin_client.get(ATTENTION)

    assert response.status_code == 200
    page = response.content.decode()
    for text in ("RuntimeError: down", "SMTPServerDisconnected: gone", "PushError: token revoked"):
        assert text in page
    groups = {group.model: group for group in response.context["groups"]}
    failing = {group.model for group in response.context["failing"]}
    assert failing == {
        "testapp.scheduledping",
        "purchases.scheduledpurchase",
        "trainings.scheduledtrainingnotification",
    }
    assert groups["testapp.scheduledping"].failed == 1
    assert groups["testapp.scheduledping"].awaiting == 1
    expected = {
        "testapp.scheduledping": pings["failed"],
        "purchases.scheduledpurchase": purchase_row,
        "trainings.scheduledtrainingnotification": notification,
    }
    for model, row in expected.items():
        [shown] = groups[model].rows
        assert shown.event_id == row.event_id
        assert f'href="{shown.url}"' in page
        change = admin_client.get(shown.url)
        assert change.status_code == 200
        assert change.context["original"].pk == row.pk
        assert f'href="{groups[model].failed_url}"' in page
        assert listed_pks(admin_client.get(groups[model].failed_url)) == {row.pk}


def test_the_attention_page_shows_the_newest_rows_and_truncates_errors(admin_client):
    pks = make_due_pings(ATTENTION_ROWS + 1)
    ScheduledPing.objects.filter(pk__in=pks).update(status=Status.FAILED, last_error="x" * 2000)
    ScheduledPing.objects.filter(pk=pks[0]).update(updated_at=timezone.now() - timedelta(days=1))

    response = admin_client.get(ATTENTION)

    [group] = [g for g in response.context["groups"] if g.model == "testapp.scheduledping"]
    assert group.failed == ATTENTION_ROWS + 1
    assert len(group.rows) == ATTENTION_ROWS
    assert f"testapp.scheduledping:{pks[0]}:v1" not in {row.event_id for row in group.rows}
    assert all(len(row.last_error) <= ERROR_CHARS for row in group.rows)
    assert f"The newest {ATTENTION_ROWS} shown" in response.content.decode()


def test_the_attention_page_hides_models_the_user_may_not_view():
    ScheduledPingFactory(status=Status.FAILED, last_error="RuntimeError: down")
    purchase_row = failed_purchase_row()
    client = staff_with("testapp.view_scheduledping")

    response = client.get(ATTENTION)

    assert response.status_code == 200
    assert {group.model for group in response.context["groups"]} == {"testapp.scheduledping"}
    page = response.content.decode()
    assert "RuntimeError: down" in page
    assert purchase_row.event_id not in page
    assert "SMTPServerDisconnected" not in page


def test_a_staff_user_who_may_view_no_scheduled_model_sees_none():
    failed_purchase_row()

    response = staff_with().get(ATTENTION)

    assert response.status_code == 200
    assert response.context["groups"] == []
    assert "SMTPServerDisconnected" not in response.content.decode()


@pytest.mark.parametrize("who", ["anonymous", "not staff"])
def test_the_attention_page_sends_anyone_but_staff_to_the_login(who):
    client = Client()
    if who == "not staff":
        user = User.objects.create_user("clerk", password="pw")
        user.user_permissions.set(Permission.objects.filter(codename="view_scheduledping"))
        client.force_login(user)

    response = client.get(ATTENTION)

    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next={ATTENTION}"


# A host's own admin sites: "ops" got the page, "bare" did not.
ops_site = admin.AdminSite(name="ops")
bare_site = admin.AdminSite(name="bare")
for site in (ops_site, bare_site):
    site.register(ScheduledPing, default_admin_for(ScheduledPing))
add_attention_url(ops_site)
add_attention_url(ops_site)
urlpatterns = [path("ops/", ops_site.urls), path("bare/", bare_site.urls)]


@pytest.mark.urls(__name__)
def test_a_host_adds_the_page_to_its_own_admin_site_once(admin_client):
    ScheduledPingFactory(status=Status.FAILED, last_error="RuntimeError: down")
    names = [p.name for p in ops_site.get_urls() if isinstance(p, URLPattern)]

    page = admin_client.get("/ops/scheduling/attention/")

    assert names.count("scheduling_attention") == 1
    assert page.status_code == 200
    assert "RuntimeError: down" in page.content.decode()
    assert 'href="/ops/testapp/scheduledping/?lifecycle=failed"' in page.content.decode()
    listed = admin_client.get("/ops/testapp/scheduledping/").content.decode()
    assert 'href="/ops/scheduling/attention/"' in listed


@pytest.mark.urls(__name__)
def test_a_changelist_on_a_site_without_the_page_has_no_link(admin_client):
    response = admin_client.get("/bare/testapp/scheduledping/")

    assert response.status_code == 200
    assert "Needs attention" not in response.content.decode()
    assert admin_client.get("/bare/scheduling/attention/").status_code == 404


# --- REST: the lifecycle filter and bulk retry --------------------------------------------------


def purchase_rows_in_states() -> dict[str, ScheduledPurchase]:
    """One whole-release row per purchase, put in each of these states."""
    now = timezone.now()
    changes: dict[str, dict[str, Any]] = {
        "pending": {},
        "awaiting_handling": {"status": Status.DELIVERED, "delivered_at": now},
        "in_flight": {"status": Status.DELIVERED, "delivered_at": now, "effect_started_at": now},
        "handled": {"status": Status.DELIVERED, "delivered_at": now, "handled_at": now},
        "failed": {"status": Status.FAILED, "attempts": 10, "last_error": "boom"},
        "expired": {"status": Status.EXPIRED},
    }
    rows = {}
    for state, values in changes.items():
        purchase = purchase_create(
            customer=CustomerFactory.create(), release=ReleaseFactory.create()
        )
        row = purchase.scheduled.get(track=None)
        ScheduledPurchase.objects.filter(pk=row.pk).update(**values)
        row.refresh_from_db()
        rows[state] = row
    return rows


@pytest.mark.parametrize("state", ["awaiting_handling", "handled", "failed", "pending"])
def test_the_api_lists_rows_by_lifecycle_state(state):
    rows = purchase_rows_in_states()

    response = api_user("view_scheduledpurchase").get(SCHEDULED_PURCHASES, {"lifecycle": state})

    assert response.status_code == 200, response.content
    assert [row["id"] for row in response.json()["results"]] == [rows[state].pk]


def test_an_unknown_lifecycle_state_is_a_400_naming_the_filter():
    response = api_user("view_scheduledpurchase").get(SCHEDULED_PURCHASES, {"lifecycle": "stuck"})

    assert response.status_code == 400
    assert "lifecycle" in response.json()


def test_bulk_retry_brings_failed_and_expired_rows_back_under_a_new_version(settings):
    settings.SCHEDULING_BULK_THROTTLE_RATE = "1000/min"
    rows = purchase_rows_in_states()
    client = api_user("view_scheduledpurchase", "change_scheduledpurchase")

    response = client.post(
        SCHEDULED_PURCHASES + "retry/", {"filter": {}, "all": True}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json() == {"count": 2}
    for state in ("failed", "expired"):
        row = ScheduledPurchase.objects.get(pk=rows[state].pk)
        assert (row.status, row.version, row.attempts, row.last_error) == (
            Status.PENDING,
            rows[state].version + 1,
            0,
            "",
        )
    for state in ("pending", "awaiting_handling", "handled"):
        row = ScheduledPurchase.objects.get(pk=rows[state].pk)
        assert (row.status, row.version) == (rows[state].status, rows[state].version)


def test_bulk_retry_acts_on_the_filtered_rows_only():
    rows = purchase_rows_in_states()
    client = api_user("view_scheduledpurchase", "change_scheduledpurchase")

    response = client.post(
        SCHEDULED_PURCHASES + "retry/", {"filter": {"lifecycle": "failed"}}, format="json"
    )

    assert response.json() == {"count": 1}
    assert ScheduledPurchase.objects.get(pk=rows["failed"].pk).status == Status.PENDING
    assert ScheduledPurchase.objects.get(pk=rows["expired"].pk).status == Status.EXPIRED


def test_bulk_retry_refuses_an_empty_filter_without_all():
    client = api_user("view_scheduledpurchase", "change_scheduledpurchase")

    response = client.post(SCHEDULED_PURCHASES + "retry/", {"filter": {}}, format="json")

    assert response.status_code == 400
    assert "filter" in response.json()


def test_bulk_retry_needs_the_change_permission():
    rows = purchase_rows_in_states()

    response = api_user("view_scheduledpurchase").post(
        SCHEDULED_PURCHASES + "retry/", {"filter": {"lifecycle": "failed"}}, format="json"
    )

    assert response.status_code == 403
    assert ScheduledPurchase.objects.get(pk=rows["failed"].pk).status == Status.FAILED


def test_bulk_retry_of_training_notifications_over_a_domain_filter():
    first, second, *_ = notification_rows()
    other = notification_rows()[0]
    failed = [first.pk, second.pk, other.pk]
    ScheduledTrainingNotification.objects.filter(pk__in=failed).update(status=Status.FAILED)
    client = api_user("view_scheduledtrainingnotification", "change_scheduledtrainingnotification")

    response = client.post(
        SCHEDULED_NOTIFICATIONS + "retry/",
        {"filter": {"training": first.training_id, "lifecycle": "failed"}},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert response.json() == {"count": 2}
    after = {row.pk: row for row in ScheduledTrainingNotification.objects.filter(pk__in=failed)}
    assert [(after[pk].status, after[pk].version) for pk in (first.pk, second.pk)] == [
        (Status.PENDING, first.version + 1),
        (Status.PENDING, second.version + 1),
    ]
    assert after[other.pk].status == Status.FAILED


def test_bulk_retry_of_training_notifications_needs_the_change_permission():
    row = notification_rows()[0]
    ScheduledTrainingNotification.objects.filter(pk=row.pk).update(status=Status.FAILED)

    response = api_user("view_scheduledtrainingnotification").post(
        SCHEDULED_NOTIFICATIONS + "retry/", {"filter": {}, "all": True}, format="json"
    )

    assert response.status_code == 403
    assert ScheduledTrainingNotification.objects.get(pk=row.pk).status == Status.FAILED
