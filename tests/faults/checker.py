"""Compares what fell due with what was published and what was consumed.

Event ids are the framework's stable ids ("<app_label>.<model_name>:<pk>:v<version>"), which
are also the Celery task ids, so the three sides can be compared as plain strings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    due: int
    published: int  # messages, duplicates included
    consumed: int | None  # effects, duplicates included; None when nothing consumed them
    lost: frozenset[str]  # due, but never published (or, when consumed, never handled)
    duplicated: dict[str, int]  # published more than once: id -> times
    duplicated_effects: dict[str, int]  # an effect that happened more than once
    unexpected: frozenset[str]  # published or consumed, but not due

    @property
    def complete(self) -> bool:
        """Every due event got out (and was handled, when consumed); nothing else did."""
        return not (self.lost or self.unexpected)

    @property
    def clean(self) -> bool:
        """Nothing lost, nothing unexpected, every event published and handled at most once."""
        return not (self.lost or self.unexpected or self.duplicated or self.duplicated_effects)

    def summary(self) -> str:
        consumed = "-" if self.consumed is None else str(self.consumed)
        return (
            f"due={self.due} published={self.published} consumed={consumed} "
            f"lost={len(self.lost)} duplicated={len(self.duplicated)} "
            f"duplicated_effects={len(self.duplicated_effects)} unexpected={len(self.unexpected)}"
        )


def check(
    due: Iterable[str], published: Iterable[str], consumed: Iterable[str] | None = None
) -> Verdict:
    due_ids = frozenset(due)
    sent = Counter(published)
    effects = Counter(consumed) if consumed is not None else None
    lost = due_ids - sent.keys()
    if effects is not None:
        lost |= due_ids - effects.keys()
    seen = sent.keys() | (effects.keys() if effects is not None else set())
    return Verdict(
        due=len(due_ids),
        published=sum(sent.values()),
        consumed=None if effects is None else sum(effects.values()),
        lost=frozenset(lost),
        duplicated=_repeated(sent),
        duplicated_effects=_repeated(effects or Counter()),
        unexpected=frozenset(seen - due_ids),
    )


def _repeated(counts: Counter[str]) -> dict[str, int]:
    return {event_id: times for event_id, times in counts.items() if times > 1}
