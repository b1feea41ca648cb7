"""A fair sweep's turns: its model's due rows ranked by fairness_key once, and claimed batch after
batch from that ranking, instead of ranking them again for every batch.

Ranking reads and sorts every due row (1 to 3 s at a million, docs/benchmarks.md); one claim
from the ranking costs what a claim in due order does. The sweep ranks again when the ranking is
used up, or older than RANKING_MAX_AGE (or RANKING_AGE_FACTOR times what ranking took, when
that is longer): rows that fell due since, and keys new among them, wait that long at most for
their turn. Whatever the ranking's age, the claim checks each row again (pending, due, the
due_at it was ranked with) and locks it FOR UPDATE SKIP LOCKED: a stale ranking can delay a row,
never claim one twice or early.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduling.delivery.sweep.sql import FAIR_CANDIDATES, claim_candidates, rank_due
from scheduling.rows.models import ScheduledEvent

RANKING_BATCHES = 50  # batches' worth of rows one ranking holds
RANKING_MAX_AGE = 1.0  # seconds
RANKING_AGE_FACTOR = 10  # a ranking that took 1.5 s is used for up to 15 s
CLAIMS_A_BATCH = 3  # claims a batch may make when the ranking's rows were taken meanwhile


@dataclass
class Turns:
    """Shared by the connections of one sweep; `guard` keeps their hands apart."""

    model: type[ScheduledEvent]
    batch_size: int
    ranked: list[tuple[Any, datetime]] = field(default_factory=list)  # (pk, due_at), in turns
    start: int = 0  # ranked[:start] are claimed, or gone
    done: set[Any] = field(default_factory=set)  # claimed or gone further on
    ranked_at: float = -math.inf
    took: float = 0.0
    guard: threading.Lock = field(default_factory=threading.Lock)

    def claim(
        self, columns: list[str], *, cutoff: datetime, limit: int, skip: Collection[Any]
    ) -> list[tuple[Any, ...]]:
        """Up to `limit` due rows' `columns`, locked, lowest turns first."""
        pk_at = columns.index(self.model._meta.pk.attname)
        claimed: list[tuple[Any, ...]] = []
        skip = set(skip)
        for _ in range(CLAIMS_A_BATCH):
            candidates = self.candidates(cutoff, (limit - len(claimed)) * FAIR_CANDIDATES, skip)
            if not candidates:
                break
            rows = claim_candidates(
                self.model, columns, candidates, cutoff=cutoff, limit=limit - len(claimed)
            )
            mine = {row[pk_at] for row in rows}
            self.taken(candidates, mine)
            # Our own locks do not make a row skipped: ranked again, it would be claimed twice.
            skip |= mine
            claimed += rows
            if len(claimed) >= limit:
                break
        return claimed

    def candidates(
        self, cutoff: datetime, count: int, skip: Collection[Any]
    ) -> list[tuple[Any, datetime]]:
        with self.guard:
            self.done.update(skip)
            self.skip_done()
            if self.stale():
                self.rank(cutoff, skip)
            ahead = (pair for pair in self.ranked[self.start :] if pair[0] not in self.done)
            return [pair for pair, _ in zip(ahead, range(count), strict=False)]

    def taken(self, candidates: list[tuple[Any, datetime]], claimed: set[Any]) -> None:
        """The candidates up to the last one claimed are done: claimed here, or no longer
        claimable, or locked by the sweep's other connection (which claims them)."""
        last = max((n for n, (pk, _) in enumerate(candidates) if pk in claimed), default=None)
        passed = candidates if last is None else candidates[: last + 1]
        with self.guard:
            self.done.update(pk for pk, _ in passed)

    def skip_done(self) -> None:
        while self.start < len(self.ranked) and self.ranked[self.start][0] in self.done:
            self.done.discard(self.ranked[self.start][0])
            self.start += 1

    def stale(self) -> bool:
        age = time.monotonic() - self.ranked_at
        used_up = self.start >= len(self.ranked)
        return used_up or age > max(RANKING_MAX_AGE, RANKING_AGE_FACTOR * self.took)

    def rank(self, cutoff: datetime, skip: Collection[Any]) -> None:
        started = time.monotonic()
        count = self.batch_size * RANKING_BATCHES
        self.ranked = rank_due(self.model, cutoff=cutoff, skip=skip, count=count)
        self.start, self.done = 0, set(skip)
        self.ranked_at, self.took = started, time.monotonic() - started
