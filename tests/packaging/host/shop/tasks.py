import os

from celery import shared_task
from scheduling import handle_once


@shared_task(name="shop.send_order_email")
def send_order_email(event: dict) -> None:
    with handle_once(event) as row:
        if row is not None:
            # The effect, once per event: here a line in a file; in a shop, the email.
            with open(os.environ["SHOP_EFFECTS_FILE"], "a") as effects:
                effects.write(f"{event['id']}\n")
