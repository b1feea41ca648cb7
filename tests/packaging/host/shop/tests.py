import os
import tempfile
from datetime import timedelta
from pathlib import Path
from unittest import mock

from django.test import TestCase
from django.utils import timezone
from scheduling import assert_scheduled, run_due

from .models import Order, ScheduledOrderEmail

SECOND = timedelta(seconds=1)


class OrderEmailTests(TestCase):
    def setUp(self) -> None:
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.effects = Path(folder.name) / "effects.txt"
        self.enterContext(mock.patch.dict(os.environ, {"SHOP_EFFECTS_FILE": str(self.effects)}))
        self.order = Order(email="a@example.com")
        self.order.save()
        self.due = timezone.now() + timedelta(hours=24)
        ScheduledOrderEmail.objects.create(order=self.order, due_at=self.due)

    def test_the_email_goes_out_once_when_due(self) -> None:
        row = assert_scheduled(ScheduledOrderEmail, at=self.due, order=self.order)

        assert run_due(ScheduledOrderEmail, now=self.due - SECOND) == 0
        assert run_due(ScheduledOrderEmail, now=self.due + SECOND) == 1
        assert run_due(ScheduledOrderEmail, now=self.due + SECOND) == 0
        assert self.effects.read_text() == f"{row.event_id}\n"

    def test_a_failed_send_is_recorded_on_the_row(self) -> None:
        # The handler's open() raises, as a send does while the mail server is down.
        os.environ["SHOP_EFFECTS_FILE"] = str(self.effects.parent / "missing" / "effects.txt")

        assert run_due(ScheduledOrderEmail, now=self.due + SECOND) == 0

        row = ScheduledOrderEmail.objects.get(order=self.order)
        assert (row.status, row.attempts) == ("pending", 1)
        assert row.last_error.startswith("FileNotFoundError")
