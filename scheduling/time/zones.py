"""IANA time zones by name: the one check behind every field that takes one (a calendar's, a
schedule's, a team's, quiet hours'); each caller words the refusal in its own error type."""

from __future__ import annotations

import zoneinfo
from functools import lru_cache

from django.core.exceptions import ValidationError


class UnknownTimeZone(ValueError):
    """Not a known IANA time zone name; the message names the value and the accepted form."""


# In the zone database but no place's time: the machine's own setting ("localtime", which moves
# with the host), tzdata's "Factory" (a placeholder whose abbreviation is an error message) and
# the POSIX default rules.
NOT_PLACES = frozenset({"localtime", "Factory", "posixrules"})


@lru_cache(maxsize=1)
def zone_names() -> frozenset[str]:
    names = zoneinfo.available_timezones() - NOT_PLACES
    return frozenset(name for name in names if not name.startswith(("posix/", "right/")))


def time_zone(name: object) -> zoneinfo.ZoneInfo:
    """The zone called `name`, else UnknownTimeZone."""
    if not isinstance(name, str) or name not in zone_names():
        raise UnknownTimeZone(
            f"{name!r} is not a known IANA time zone name; enter one such as Europe/Paris or UTC."
        )
    return zoneinfo.ZoneInfo(name)  # ZoneInfo keeps one instance per name


def validate_time_zone(name: object) -> None:
    """A model field validator: an IANA time zone name."""
    try:
        time_zone(name)
    except UnknownTimeZone as exc:
        raise ValidationError(str(exc), code="invalid_time_zone") from None


# Django writes a validator's path into migrations: the public one, which stays for good.
validate_time_zone.__module__ = "scheduling.quiet"
