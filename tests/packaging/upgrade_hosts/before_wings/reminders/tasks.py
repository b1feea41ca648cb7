import os

from celery import shared_task
from scheduling.handling import handle_once


@shared_task(name="reminders.send_reminder")
def send_reminder(event: dict) -> None:
    with handle_once(event) as row:
        if row is not None:
            # The effect, once per event: a line in a file, where a clinic sends the reminder.
            with open(os.environ["SHOP_EFFECTS_FILE"], "a") as effects:
                effects.write(f"{event['id']}\n")
