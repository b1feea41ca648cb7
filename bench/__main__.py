"""python -m bench [drain] [--rows N] [--quick]: measure the sweep against the naive way.

Runs on its own database (scheduling_bench) and Redis database, never on development data.
"""

import argparse
import os
import sys


def configure() -> None:
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/scheduling_bench")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/10")
    os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/11")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("scenario", nargs="?", default="drain", choices=["drain"])
    parser.add_argument("--rows", type=int, default=None, help="due rows (default 100,000)")
    parser.add_argument("--quick", action="store_true", help="20,000 rows")
    args = parser.parse_args(argv)
    configure()
    from bench.database import prepare_database

    prepare_database()
    from bench.drain import run_drain

    run_drain(rows=args.rows or (20_000 if args.quick else 100_000))


if __name__ == "__main__":
    main(sys.argv[1:])
