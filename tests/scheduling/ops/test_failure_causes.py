"""The admin's "failed by cause" page: every failed row of one cause retried or cancelled in one
action, through the audited QuerySet methods."""

import pytest
from django.contrib.auth.models import Permission, User

from scheduling.rows.history.models import EventHistory
from scheduling.rows.models import ScheduledEvent
from tests.factories import ScheduledPingFactory
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
CAUSES = "/admin/testapp/scheduledping/causes/"
REFUSED = "ConnectionRefusedError: [Errno 111] Connection refused"
DROPPED = "at-most-once: the handler failed during the effect, which may have happened"


def failed_rows(error: str, count: int) -> list[int]:
    rows = [
        ScheduledPingFactory.create(status=Status.FAILED, last_error=error) for _ in range(count)
    ]
    return [row.pk for row in rows]


def statuses(pks: list[int]) -> set[str]:
    return set(ScheduledPing.objects.filter(pk__in=pks).values_list("status", flat=True))


def test_the_page_groups_failed_rows_by_the_first_line_of_their_error(admin_client):
    failed_rows(REFUSED, 3)
    failed_rows(f"{DROPPED}\nTraceback (most recent call last): ...", 1)
    ScheduledPingFactory(status=Status.PENDING, last_error=REFUSED)  # not failed: not counted

    page = admin_client.get(CAUSES)

    assert [(item["cause"], item["count"]) for item in page.context["causes"]] == [
        (REFUSED, 3),
        (DROPPED, 1),
    ]
    assert "Retry all with this cause" in page.content.decode()


def test_it_retries_every_failed_row_of_one_cause_and_records_the_user(admin_client):
    refused = failed_rows(REFUSED, 3)
    dropped = failed_rows(DROPPED, 2)
    same_first_line = failed_rows(f"{REFUSED}\nsecond line", 1)

    response = admin_client.post(CAUSES, {"cause": REFUSED, "do": "retry"})

    assert response.status_code == 302
    assert statuses(refused + same_first_line) == {Status.PENDING}
    assert statuses(dropped) == {Status.FAILED}
    actors = EventHistory.objects.filter(row_id__in=refused, kind="retried")
    assert set(actors.values_list("actor", flat=True)) == {"admin:admin"}


def test_it_cancels_every_failed_row_of_one_cause(admin_client):
    refused = failed_rows(REFUSED, 2)
    dropped = failed_rows(DROPPED, 2)

    admin_client.post(CAUSES, {"cause": DROPPED, "do": "cancel"})

    assert statuses(dropped) == {Status.CANCELLED}
    assert statuses(refused) == {Status.FAILED}
    reasons = ScheduledPing.objects.filter(pk__in=dropped).values_list("cancel_reason", flat=True)
    assert all(reason.startswith("cancelled in the admin by admin") for reason in reasons)


def test_a_viewer_sees_the_causes_but_cannot_act_on_them(client):
    refused = failed_rows(REFUSED, 1)
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_scheduledping"))
    client.force_login(viewer)

    assert client.get(CAUSES).status_code == 200
    assert client.post(CAUSES, {"cause": REFUSED, "do": "retry"}).status_code == 403
    assert statuses(refused) == {Status.FAILED}
