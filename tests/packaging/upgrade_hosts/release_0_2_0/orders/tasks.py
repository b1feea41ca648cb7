import os

from celery import shared_task
from scheduling.handling import handle_once
from scheduling.tasks import EventHandlerTask


@shared_task(base=EventHandlerTask, name="orders.send_order_email")
def send_order_email(event: dict) -> None:
    with handle_once(event) as row:
        if row is not None:
            # The effect, once per event: a line in a file, where a shop sends the email.
            with open(os.environ["SHOP_EFFECTS_FILE"], "a") as effects:
                effects.write(f"{event['id']}\n")
