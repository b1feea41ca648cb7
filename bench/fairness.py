"""fairness: the claim of one batch over N due rows spread over K keys, in due order (the plain
claim) and round-robin across keys (a fairness_key), in the same run on the same rows: ranked
in the claim's own statement, and (what a sweep does) claimed batch after batch from one ranking.

The rows are trainings' reminders, K teams with N / K due rows each, the demo's key being the
team (`training__team`, one join). Each claim runs in the sweep's own transaction setup and is
rolled back, so every repeat claims from the same backlog; claims from one ranking move on past
the rows it handed out, as a draining sweep's do.
"""

import statistics
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from bench.common import make_notification_rows, record, timed
from scheduling.delivery.sweep.batch import begin_batch, claim_due
from scheduling.delivery.sweep.turns import Turns
from scheduling.rows.conf import scheduling_settings
from trainings.models import ScheduledTrainingNotification

MODEL = ScheduledTrainingNotification
KEY = "training__team"
REPEATS = 7
SWEEP_BATCHES = 20


@contextmanager
def fairness_key(key: str | None) -> Iterator[None]:
    declared = MODEL.fairness_key
    setattr(MODEL, "fairness_key", key)  # noqa: B010 (the model declares a str)
    try:
        yield
    finally:
        setattr(MODEL, "fairness_key", declared)  # noqa: B010


def claim_ms(batch: int, turns: Turns | None = None) -> tuple[float, int]:
    """One claim of up to `batch` rows, rolled back: its milliseconds and the keys it took."""
    conf = scheduling_settings()
    with transaction.atomic():
        with timed() as elapsed:
            cutoff = begin_batch(conf, None)
            rows = claim_due(MODEL, cutoff=cutoff, limit=batch, turns=turns)
        transaction.set_rollback(True)
    return elapsed[0] * 1000, len({row.training.team_id for row in rows})  # type: ignore[attr-defined]


def median_claim(batch: int) -> tuple[float, int]:
    claims = [claim_ms(batch) for _ in range(REPEATS)]
    return statistics.median(ms for ms, _ in claims), claims[0][1]


def run_fairness(rows: int, keys: int) -> None:
    batch = scheduling_settings().batch_size
    print(f"fairness: {rows:,} due rows over {keys:,} keys, batches of {batch}")
    make_notification_rows(teams=keys, rows_per_team=rows // keys, due_in="-1 hour")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM scheduled_training_notification")
        [(due,)] = cursor.fetchall()
    figures = {}
    for name, key in (("plain", None), ("fair", KEY)):
        with fairness_key(key):
            ms, taken = median_claim(batch)
        figures[name] = ms
        extra = {"rows": due, "keys": keys, "batch": batch, "keys_in_batch": taken}
        record("fairness", f"{name} claim of a batch ({taken:,} keys in it)", ms, "ms", **extra)
    record("fairness", "fair / plain", figures["fair"] / figures["plain"], "x", rows=due, keys=keys)
    with fairness_key(KEY):
        turns = Turns(MODEL, batch)
        claims = [claim_ms(batch, turns)[0] for _ in range(SWEEP_BATCHES)]
    extra = {"rows": due, "keys": keys, "batch": batch, "ranking_ms": turns.took * 1000}
    record(
        "fairness",
        f"a sweep's {SWEEP_BATCHES} fair claims, mean",
        statistics.mean(claims),
        "ms",
        **extra,
    )
    record("fairness", "  of which the first (ranks)", claims[0], "ms", **extra)
    record("fairness", "  the others, median", statistics.median(claims[1:]), "ms", **extra)
