"""The release scenario's sizes (bench/release.py reads them from the environment), shared by
the run and its report (bench/release_report.py)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    rows: int
    rate: int  # messages a second: the provider's budget and the model's limit
    outage: float  # seconds the provider refuses connections, once half the emails are in
    naive_rows: int  # rows of the naive leg (no limit, no budget); 0: no such leg
    concurrency: int  # pool processes of each worker
    progress_every: float  # seconds between two progress lines
    lead: float  # seconds from the rows' creation to the release: the processes start meanwhile

    @property
    def ideal(self) -> float:
        return self.rows / self.rate
