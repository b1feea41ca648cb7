from django.dispatch import receiver
from scheduling.signals import event_gave_up

from .models import ScheduledOrderEmail


@receiver(event_gave_up, sender=ScheduledOrderEmail)
def tell_someone(sender, row, error, **kwargs) -> None:
    print(f"order email {row.event_id} gave up: {error}")
