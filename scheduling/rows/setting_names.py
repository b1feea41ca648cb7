"""SCHEDULING_* names the framework does not read: a misspelt setting would otherwise be
ignored without a word. The system check warns (scheduling.W006); workers, beat and
`sweep --loop` log the same lines at start."""

from __future__ import annotations

import difflib
import logging
from dataclasses import fields

from django.conf import settings

from scheduling.rows.conf import SchedulingSettings

log = logging.getLogger("scheduling")

PREFIX = "SCHEDULING_"
# Read outside SchedulingSettings: scheduling.rows.routers and scheduling.rows.replicas.
OTHER_NAMES = ("SCHEDULING_DATABASES", "SCHEDULING_READ_REPLICAS")


def known_names() -> list[str]:
    own = [f"{PREFIX}{each.name.upper()}" for each in fields(SchedulingSettings)]
    return sorted([*own, *OTHER_NAMES])


def unknown_setting_lines() -> list[str]:
    """One line per SCHEDULING_* setting the framework does not know, naming the closest."""
    known = known_names()
    names = [name for name in dir(settings) if name.startswith(PREFIX) and name not in known]
    return [unknown_line(name, known) for name in sorted(names)]


def unknown_line(name: str, known: list[str]) -> str:
    # Compared without the prefix every name shares, which would make any two look alike.
    suffixes = {each.removeprefix(PREFIX): each for each in known}
    close = difflib.get_close_matches(name.removeprefix(PREFIX), list(suffixes), n=1)
    hint = (
        f"did you mean {suffixes[close[0]]}?" if close else f"the known names: {', '.join(known)}."
    )
    return f"{name} is not a setting of the scheduling framework and is ignored: {hint}"


def log_unknown_settings() -> None:
    for line in unknown_setting_lines():
        log.warning(line)
