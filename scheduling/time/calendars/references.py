"""Who uses a calendar, so that deleting or renaming it is refused while something names it.

The core knows its own users (calendars that compose it); an optional app or a host adds a
finder from its AppConfig.ready(), as the recurring app does for its schedules:

    calendar_users.add(lambda name: [f"schedule {s}" for s in schedules_naming(name)])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

# Given a calendar's name, what uses it, each described for a person ("schedule daily-report").
UsersFinder = Callable[[str], list[str]]


class Viewer(Protocol):
    def has_perm(self, perm: str) -> bool: ...


@dataclass(frozen=True)
class Finder:
    find: UsersFinder
    # The permission a person needs to be told which ones (else only how many), and their kind.
    permission: str | None = None
    noun: str = ""


@dataclass
class CalendarUsers:
    finders: list[Finder] = field(default_factory=list)

    def add(self, finder: UsersFinder, *, permission: str | None = None, noun: str = "") -> None:
        """Registering the same finder twice is a no-op (ready() may run more than once)."""
        if all(known.find is not finder for known in self.finders):
            self.finders.append(Finder(finder, permission, noun))

    def of(self, name: str, viewer: Viewer | None = None) -> list[str]:
        """What uses the calendar; for a `viewer`, named only where they may view that kind
        (one rule: an error names another object only to who may see it), else counted."""
        return [user for finder in self.finders for user in _told(finder, name, viewer)]


def _told(finder: Finder, name: str, viewer: Viewer | None) -> list[str]:
    found = finder.find(name)
    if not found or viewer is None or finder.permission is None:
        return found
    if viewer.has_perm(finder.permission):
        return found
    return [f"{len(found)} {finder.noun}{'s' if len(found) > 1 else ''} you cannot view"]


calendar_users = CalendarUsers()
