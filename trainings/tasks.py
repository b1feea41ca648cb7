from scheduling import handler
from trainings.models import Player, ScheduledTrainingNotification
from trainings.reminders import recipients_of
from trainings.services import reminder_send


# One reminder is one effect, whether the message carries one event or a batch
# (ScheduledTrainingNotification.handler_batch_size): its row and its training locked, the
# training checked not cancelled and the reminder not expired, its pushes sent, the row marked
# handled, committed. So a training_cancel waits for one reminder's pushes at most, never for a
# batch's, and nothing is pushed once its cancel has committed. The recipients are read once a
# message, in a few queries, without locks. A reminder whose pushes failed (the service down)
# is recorded on its row alone and published again after a backoff, or after the service's
# Retry-After (PushRetryLater is a RetryLater); the push stays single across those tries (the
# HTTP backend, whose effect is outside the database, by its per-player results).
# "trainings.send_training_reminders" was the batch task's name.
@handler(
    ScheduledTrainingNotification,
    name="trainings.send_training_reminder",
    also=["trainings.send_training_reminders"],
    setup=recipients_of,
)
def send_training_reminder(
    row: ScheduledTrainingNotification, recipients: dict[int, list[Player]]
) -> str:
    sent = reminder_send(notification=row, event_id=row.event_id, players=recipients[row.pk])
    return f"sent {sent}"
