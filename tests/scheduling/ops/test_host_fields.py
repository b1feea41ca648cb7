"""The host's own plain fields in the generic API and the default admin, and GET's refusal of
unknown filters."""

from datetime import timedelta

import pytest
from django.contrib import admin
from django.utils import timezone
from django_filters.rest_framework import DjangoFilterBackend  # type: ignore[import-untyped]
from rest_framework.filters import OrderingFilter, SearchFilter
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from scheduling.ops.admin.defaults import default_admin_for
from scheduling.ops.api.generic import viewset_for
from tests.factories import PingFactory
from tests.testapp.models import ScheduledNotice
from tests.trainings.factories import TeamFactory
from trainings.models import ScheduledTrainingNotification
from trainings.services import training_create

pytestmark = pytest.mark.django_db

NOTICES = "/api/events/testapp/schedulednotice/"
TRAININGS = "/api/events/trainings/scheduledtrainingnotification/"


def notices() -> dict[str, ScheduledNotice]:
    due = timezone.now() + timedelta(hours=1)
    return {
        queue: ScheduledNotice.objects.create(
            ping=PingFactory.create(), due_at=due, target_queue=queue
        )
        for queue in ("billing", "notices")
    }


def test_a_plain_field_is_in_the_json_and_filters_the_list(api):
    rows = notices()

    listed = api.get(NOTICES, {"target_queue": "billing"})

    assert listed.status_code == 200, listed.content
    (row,) = listed.json()["results"]
    assert (row["id"], row["target_queue"]) == (rows["billing"].pk, "billing")


def test_a_choices_field_filters_by_its_values_and_refuses_others(api):
    start = timezone.now() + timedelta(days=7)
    training_create(team=TeamFactory(), start_at=start, end_at=start + timedelta(hours=2))
    kinds = set(ScheduledTrainingNotification.objects.values_list("kind", flat=True))
    assert len(kinds) > 1

    listed = api.get(TRAININGS, {"kind": "post_questionnaire"})
    refused = api.get(TRAININGS, {"kind": "survey"})

    assert listed.status_code == 200, listed.content
    assert {row["kind"] for row in listed.json()["results"]} == {"post_questionnaire"}
    assert refused.status_code == 400
    assert "kind" in refused.json()


def test_a_plain_field_is_read_only_for_a_bulk_action_as_for_the_list(api):
    rows = notices()

    cancelled = api.post(
        f"{NOTICES}cancel/", {"filter": {"target_queue": "billing"}, "reason": "x"}, format="json"
    )

    assert cancelled.json() == {"count": 1}
    rows["billing"].refresh_from_db()
    assert rows["billing"].target_queue == "billing"


def test_an_unknown_get_filter_is_a_400_naming_the_accepted_ones(api):
    notices()

    response = api.get(NOTICES, {"kind": "survey", "limit": 5})

    assert response.status_code == 400
    message = response.json()["kind"][0]
    assert message.startswith("Unknown filter kind; accepted: ")
    for name in ("status", "lifecycle", "due_after", "ping", "target_queue", "limit", "offset"):
        assert name in message


@pytest.mark.parametrize("query", [{"limit": 1, "offset": 1}, {"format": "json"}])
def test_pagination_and_format_stay_accepted(api, query):
    notices()

    response = api.get(NOTICES, query)

    assert response.status_code == 200, response.content


def test_a_subclass_backends_parameters_are_accepted():
    class OrderedNotices(viewset_for(ScheduledNotice)):
        filter_backends = [DjangoFilterBackend, OrderingFilter, SearchFilter]

    view = OrderedNotices(action="list", request=Request(APIRequestFactory().get(NOTICES)))

    assert {"ordering", "search", "target_queue", "limit", "format"} <= set(
        view.accepted_query_parameters()
    )


def test_the_default_admin_lists_plain_fields_and_filters_fixed_ones(admin_client):
    rows = notices()
    opts = ScheduledNotice._meta
    changelist = f"/admin/{opts.app_label}/{opts.model_name}/"

    page = admin_client.get(changelist, {"target_queue": "billing"})

    assert "target_queue" in admin.site.get_model_admin(ScheduledNotice).list_display
    assert [row.pk for row in page.context["cl"].result_list] == [rows["billing"].pk]
    assert "column-target_queue" in page.content.decode()


def test_the_default_admin_filters_choices_and_booleans_in_its_sidebar():
    training_admin = default_admin_for(ScheduledTrainingNotification)

    assert {"kind", "offset"} <= set(training_admin.list_display)
    assert "kind" in training_admin.list_filter
    assert "offset" not in training_admin.list_filter
