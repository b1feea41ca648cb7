"""What a sweep did, batch by batch and in sum."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class BatchResult:
    claimed: int = 0
    delivered: int = 0
    expired: int = 0
    failed: int = 0
    retrying: int = 0
    error: str = ""
    set_aside: list[int] = field(default_factory=list)  # failed or retrying rows


@dataclass
class SweepResult:
    model: str
    delivered: int = 0
    expired: int = 0
    failed: int = 0
    retrying: int = 0
    batches: int = 0
    locked_out: bool = False
    drained: bool = False  # the last batch was not full: nothing else was due
    requeued: int = 0  # published earlier, not handled within the handling timeout
    error: str = ""

    def add(self, batch: BatchResult) -> None:
        self.batches += 1
        self.delivered += batch.delivered
        self.expired += batch.expired
        self.failed += batch.failed
        self.retrying += batch.retrying
        self.error = batch.error
