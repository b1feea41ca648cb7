"""The release bench's smoke run, small: `python -m bench release --quick` on the test's database
and Redis pair, with real workers, a sweeper and the fake SMTP provider, exits cleanly and
prints figures that add up. No speed is asserted: that is what the bench reports."""

import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

ROWS, NAIVE_ROWS = 500, 100
SIZES = {
    "BENCH_RELEASE_ROWS": str(ROWS),
    "BENCH_RELEASE_RATE": "200",
    "BENCH_RELEASE_OUTAGE": "3",
    "BENCH_RELEASE_NAIVE_ROWS": str(NAIVE_ROWS),
}
# "  release     emails sent (counted by the provider)      500 emails" (bench.common.record)
FIGURE = re.compile(r"^\s+release\s+(?P<name>.+?)\s+(?P<value>-?[\d,]+(?:\.\d+)?)\s+\S*\s*$")


def figures(output: str) -> dict[str, float]:
    found = (FIGURE.match(line) for line in output.splitlines())
    return {m["name"]: float(m["value"].replace(",", "")) for m in found if m}


def run_bench(env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "release", "--quick"],
        env={**env, **SIZES},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return figures(done.stdout)


def test_every_row_is_accounted_for_and_no_email_goes_twice(
    subprocess_env: dict[str, str],
) -> None:
    # The bench empties every other scheduled table on its database: tests.remoteapp's (on a
    # database of its own) is left out of its process.
    shown = run_bench({**subprocess_env, "TEST_ONE_DATABASE": "1"})

    sent = shown["emails sent (counted by the provider)"]
    failed = shown["rows left for a person (failed)"]
    pending = shown["rows still pending"]
    assert sent + failed + pending == ROWS
    assert shown["sent + failed + pending"] == ROWS
    assert shown["duplicates (a download link twice)"] == 0
    assert shown["rows published, not handled, at the end"] == 0
    assert shown["provider away (connections refused)"] >= 3
    assert shown["published a second, max"] > 0
    assert shown["naive: emails sent"] == NAIVE_ROWS
