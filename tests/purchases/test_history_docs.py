"""The support question's SQL in docs/history.md runs, and answers it."""

import re

import pytest
from django.db import connection
from django.utils import timezone

from purchases.models import Customer, ScheduledPurchase
from scheduling.rows.history.models import EventHistory, Kind
from tests.conftest import ROOT
from tests.purchases.factories import CustomerFactory, PurchaseFactory

pytestmark = pytest.mark.django_db

MARKER = "<!-- tests/purchases/test_history_docs.py runs this query -->"


def documented_query() -> str:
    text = (ROOT / "docs" / "history.md").read_text()
    found = re.search(re.escape(MARKER) + r"\n```sql\n(.*?)```", text, re.DOTALL)
    assert found, "docs/history.md lost its SQL example"
    return found.group(1)


def scheduled_for(customer: Customer, *entries: Kind) -> int:
    purchase = PurchaseFactory.create(customer=customer)
    row = ScheduledPurchase.objects.create(purchase=purchase, due_at=timezone.now())
    for kind in entries:
        EventHistory.objects.create(
            model="purchases.scheduledpurchase", row_id=row.pk, kind=kind, actor="admin:alice"
        )
    return row.pk


def test_the_documented_query_lists_a_customers_rows_with_their_entries():
    ada = CustomerFactory(email="ada@example.com")
    troubled = scheduled_for(ada, Kind.FAILED, Kind.RETRIED)
    smooth = scheduled_for(ada)  # the happy path: its columns tell it, no entry
    scheduled_for(CustomerFactory(email="bob@example.com"), Kind.CANCELLED)

    with connection.cursor() as cursor:
        cursor.execute(documented_query())
        rows = [(row[0], row[9], row[11]) for row in cursor.fetchall()]

    assert rows == [
        (troubled, "failed", "admin:alice"),
        (troubled, "retried", "admin:alice"),
        (smooth, None, None),
    ]
