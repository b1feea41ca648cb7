"""What a sweep did, batch by batch and in sum."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Allowance:
    rows: int  # rows the batch may claim: the batch size, or what the rate limit granted
    cut: bool = False  # the rate limit granted fewer rows than a batch
    waited: bool = False  # the rate limit made the sweep wait for them

    def rate_limited(self, claimed: int) -> bool:
        """Did the rate limit hold these rows back: the sweep waited for its grant, or the grant
        cut a claim that would have taken more."""
        return self.waited or (self.cut and claimed >= self.rows)


@dataclass
class BatchResult:
    claimed: int = 0
    delivered: int = 0
    expired: int = 0
    failed: int = 0
    retrying: int = 0
    held: int = 0  # kept pending: their plain-JSON queue was full (sweep/backlog)
    error: str = ""
    set_aside: list[int] = field(default_factory=list)  # failed or retrying rows


@dataclass
class SweepResult:
    model: str
    delivered: int = 0
    expired: int = 0
    failed: int = 0
    retrying: int = 0
    held: int = 0
    batches: int = 0
    locked_out: bool = False
    paused: bool = False  # the model's delivery is paused: nothing was claimed (pauses/)
    drained: bool = False  # the last batch was not full: nothing else was due
    requeued: int = 0  # published earlier, not handled within the handling timeout
    rate_wait: float = 0.0  # seconds spent waiting for the model's rate limit
    error: str = ""

    def add(self, batch: BatchResult) -> None:
        self.batches += 1
        self.delivered += batch.delivered
        self.expired += batch.expired
        self.failed += batch.failed
        self.retrying += batch.retrying
        self.held += batch.held
        self.error = batch.error
