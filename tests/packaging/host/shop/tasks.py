import os

from scheduling import handler

from .models import ScheduledOrderEmail


@handler(ScheduledOrderEmail, name="shop.send_order_email")
def send_order_email(row: ScheduledOrderEmail) -> None:
    # The effect, once per event: here a line in a file; in a shop, the email.
    with open(os.environ["SHOP_EFFECTS_FILE"], "a") as effects:
        effects.write(f"{row.event_id}\n")
