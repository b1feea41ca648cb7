"""The recurring app's settings, read through scheduling's SCHEDULING_* settings, and the
bounds a schedule's catch-up window keeps to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from scheduling.rows.conf import scheduling_settings

DEFAULT_CATCHUP_WINDOW = timedelta(days=1)
MAX_CATCHUP_WINDOW = timedelta(days=366)
CATCHUP_WINDOW_FORM = "a positive duration of at most 366 days, e.g. P1D or PT6H"


@dataclass(frozen=True)
class RecurringSettings:
    catch_up_chunk: int  # fire_all: missed fire times one chain step inserts, at most
    misfire_grace: float  # seconds late before a fire time counts as missed
    max_catchup_fires: int  # fire_all: occurrences one catch-up may publish, at most
    max_fires_per_hour: int  # fire times a schedule may have in an hour, at most


def recurring_settings() -> RecurringSettings:
    conf = scheduling_settings()
    return RecurringSettings(
        catch_up_chunk=conf.batch_size,
        misfire_grace=conf.recurring_misfire_grace,
        max_catchup_fires=conf.max_catchup_fires,
        max_fires_per_hour=conf.max_fires_per_hour,
    )
