"""The scheduled models' admin search is bounded (issue #40): the start of a customer's email or
name, or of a team's name, any case, each served by an index, instead of "contains" over every
joined row (20-27 s a search with 12 at once over 200,000 rows; bench/admin_search.py)."""

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test import RequestFactory

from purchases.models import ScheduledPurchase
from trainings.models import ScheduledTrainingNotification

pytestmark = pytest.mark.django_db


def searched(model: type, user: User, term: str) -> tuple[tuple[str, ...], str]:
    """The admin's search fields for `user`, and the plan of its search for `term` with
    sequential scans off: the indexes it can use, whatever the table's size."""
    model_admin = admin.site._registry[model]
    request = RequestFactory().get("/", {"q": term})
    request.user = user
    rows, _ = model_admin.get_search_results(request, model_admin.get_queryset(request), term)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = rows.explain()
    return tuple(model_admin.get_search_fields(request)), plan


def test_scheduled_purchases_are_searched_by_the_start_of_the_customers_email_or_name(
    admin_user: User,
) -> None:
    fields, plan = searched(ScheduledPurchase, admin_user, "Ann@Exa")

    assert fields == ("^purchase__customer__email", "^purchase__customer__name")
    assert "customer_email_prefix" in plan
    assert "customer_name_prefix" in plan


def test_training_reminders_are_searched_by_the_start_of_the_teams_name(admin_user: User) -> None:
    fields, plan = searched(ScheduledTrainingNotification, admin_user, "falc")

    assert fields == ("^training__team__name",)
    assert "team_name_prefix" in plan
