from django.db import models
from scheduling.models import ScheduledEvent


class Order(models.Model):
    email = models.EmailField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"order {self.pk} for {self.email}"


class ScheduledOrderEmail(ScheduledEvent):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="scheduled_emails")

    handler_task = "orders.send_order_email"  # the Celery task that handles its events
    related_for_event = ("order",)  # fetched with the rows, for event_data()
    search_fields = ("order__email",)

    class Meta(ScheduledEvent.Meta):
        db_table = "scheduled_order_email"

    def event_data(self) -> dict:
        return {"order": self.order.pk, "email": self.order.email}
