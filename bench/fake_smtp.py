"""A fake mail provider for the release bench, run in its own process:

    python -m bench.fake_smtp --port P --rate 500 --outage-at 500000 --outage 60 --stats FILE

An SMTP server (aiosmtpd) that accepts every message, at most --rate a second: over the
budget it answers slowly (a tarpit: the 250 to DATA waits until the budget allows; a message is
never refused for the rate). Once it has accepted --outage-at messages it closes its listening
socket for --outage seconds, so a connect() meanwhile is refused; connections already open
finish their message. --rate 0: no budget, every message is answered at once (what the workers
would offer the provider).

Its counts go to --stats (JSON, replaced atomically every half second and at exit): messages
accepted, duplicates (a download link accepted twice), messages held over the budget and for how
long in all, and messages offered (DATA received) and accepted per second of the Unix clock.
"""

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import re
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

# The pre-order email's download link: one per scheduled row, so a second one is a duplicate.
LINK = re.compile(rb"/downloads/([^/\s]+)/")
BURST_SECONDS = (
    0.1  # what the sweep's rate limit may send at once (scheduling/delivery/ratelimit.py)
)
STATS_EVERY = 0.5


@dataclass
class Tarpit:
    """A GCRA budget of `per_second` messages (bursts of a tenth of a second's worth): how long
    to hold each message so that the replies keep to it."""

    per_second: float
    arrival: float = 0.0  # the theoretical arrival time of the next message (monotonic)

    def delay(self, now: float) -> float:
        if self.per_second <= 0:
            return 0.0
        interval = 1.0 / self.per_second
        tolerance = max(1, math.floor(self.per_second * BURST_SECONDS)) * interval
        due = max(self.arrival, now)
        self.arrival = due + interval
        return max(0.0, due - tolerance - now)


@dataclass
class Counts:
    accepted: int = 0
    duplicates: int = 0
    without_link: int = 0
    held: int = 0
    held_seconds: float = 0.0
    first_accepted: float | None = None  # Unix time
    outage_began: float | None = None
    outage_ended: float | None = None
    offered_per_second: Counter[int] = field(default_factory=Counter)
    accepted_per_second: Counter[int] = field(default_factory=Counter)

    def as_json(self) -> dict[str, Any]:
        return {**self.__dict__}


class Provider:
    """The SMTP handler (aiosmtpd calls handle_DATA) and the listening socket it opens and
    closes."""

    def __init__(self, port: int, tarpit: Tarpit, outage_at: int, outage: float) -> None:
        self.port, self.tarpit = port, tarpit
        self.outage_at, self.outage = outage_at, outage
        self.counts = Counts()
        self.links: set[bytes] = set()
        self.server: asyncio.Server | None = None

    async def listen(self) -> None:
        loop = asyncio.get_running_loop()
        factory = partial(SMTP, self, hostname="provider.bench", loop=loop)
        self.server = await loop.create_server(factory, "127.0.0.1", self.port, backlog=1024)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.counts.offered_per_second[int(time.time())] += 1
        wait = self.tarpit.delay(time.monotonic())
        if wait > 0:
            self.counts.held += 1
            self.counts.held_seconds += wait
            await asyncio.sleep(wait)
        self.accept(envelope.original_content or b"")
        return "250 2.0.0 Ok: queued"

    def accept(self, content: bytes) -> None:
        counts = self.counts
        counts.accepted += 1
        counts.first_accepted = counts.first_accepted or time.time()
        counts.accepted_per_second[int(time.time())] += 1
        found = LINK.search(content)
        if found is None:
            counts.without_link += 1
        elif found.group(1) in self.links:
            counts.duplicates += 1
        else:
            self.links.add(found.group(1))
        if counts.accepted == self.outage_at and self.outage > 0:
            asyncio.get_running_loop().create_task(self.go_away())

    async def go_away(self) -> None:
        """Close the listening socket (connect() is refused) for the outage, then listen again."""
        assert self.server is not None
        self.server.close()
        self.counts.outage_began = time.time()
        await asyncio.sleep(self.outage)
        await self.listen()
        self.counts.outage_ended = time.time()


def write_stats(path: Path, counts: Counts) -> None:
    partial_path = path.with_suffix(".partial")
    partial_path.write_text(json.dumps(counts.as_json()))
    os.replace(partial_path, path)


async def serve(args: argparse.Namespace) -> None:
    provider = Provider(args.port, Tarpit(args.rate), args.outage_at, args.outage)
    await provider.listen()
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    while not stopping.is_set():
        write_stats(args.stats, provider.counts)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), STATS_EVERY)
    write_stats(args.stats, provider.counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rate", type=float, default=500, help="messages/s; 0: no budget")
    parser.add_argument("--outage-at", type=int, default=0, help="accepted messages before it")
    parser.add_argument("--outage", type=float, default=0.0, help="seconds; 0: none")
    parser.add_argument("--stats", type=Path, required=True)
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
