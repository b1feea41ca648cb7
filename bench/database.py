import os

import django
import psycopg
from psycopg import sql


def prepare_database() -> None:
    """Create the bench database if needed, then set Django up and migrate it."""
    name = os.environ["DATABASE_URL"].rsplit("/", 1)[1]
    with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
