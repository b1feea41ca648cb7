"""Who uses a calendar, so that deleting or renaming it is refused while something names it.

The core knows its own users (calendars that compose it); an optional app or a host adds a
finder from its AppConfig.ready(), as the recurring app does for its schedules:

    calendar_users.add(lambda name: [f"schedule {s}" for s in schedules_naming(name)])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

# Given a calendar's name, what uses it, each described for a person ("schedule daily-report").
UsersFinder = Callable[[str], list[str]]


@dataclass
class CalendarUsers:
    finders: list[UsersFinder] = field(default_factory=list)

    def add(self, finder: UsersFinder) -> None:
        """Registering the same finder twice is a no-op (ready() may run more than once)."""
        if finder not in self.finders:
            self.finders.append(finder)

    def of(self, name: str) -> list[str]:
        return [user for finder in self.finders for user in finder(name)]


calendar_users = CalendarUsers()
