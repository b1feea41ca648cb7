"""DATABASE_URL's multi-host form (libpq): parsed for Django, refused clearly when malformed."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.backends.postgresql.base import DatabaseWrapper

from project.databases import database_config
from tests.conftest import start_django
from tests.faults.conftest import free_port


def test_a_host_list_becomes_libpqs_host_and_port_lists():
    config = database_config(
        "DATABASE_URL", "postgres://app:secret@db1:5432,db2:6432,[::1]/shop?sslmode=require"
    )
    assert config["HOST"] == "db1,db2,::1"
    assert config["PORT"] == "5432,6432,5432"
    assert (config["USER"], config["PASSWORD"], config["NAME"]) == ("app", "secret", "shop")
    assert config["OPTIONS"] == {"sslmode": "require", "target_session_attrs": "read-write"}


def test_a_host_list_keeps_the_target_session_attrs_it_names():
    url = "postgres://app@db1,db2/shop?target_session_attrs=primary"
    assert database_config("DATABASE_URL", url)["OPTIONS"]["target_session_attrs"] == "primary"


def test_a_single_host_is_parsed_as_before():
    config = database_config("DATABASE_URL", "postgres://app@db1:5433/shop")
    assert (config["HOST"], config["PORT"], config.get("OPTIONS", {})) == ("db1", 5433, {})


@pytest.mark.parametrize(
    ("url", "entry"),
    [
        ("postgres://app:secret@db1:5432,db2:99999/shop", "'db2:99999'"),
        ("postgres://app:secret@db1:5432,,db2/shop", "''"),
        ("postgres://app:secret@db1:5432,db2:pg/shop", "'db2:pg'"),
    ],
)
def test_a_malformed_host_list_is_refused_naming_the_entry_and_the_form(url, entry):
    with pytest.raises(ImproperlyConfigured) as refused:
        database_config("DATABASE_URL", url)
    message = str(refused.value)
    assert message.startswith("DATABASE_URL='postgres://app:***@")
    assert f"({entry} is not host or host:port)" in message
    assert "expected postgres://user:password@host1:5432,host2:5432/name" in message
    assert "secret" not in message


def test_the_project_refuses_to_start_with_a_malformed_host_list():
    started = start_django(DATABASE_URL="postgres://app@db1:5432,db2:none/shop")
    assert started.returncode != 0
    assert "DATABASE_URL='postgres://app@db1:5432,db2:none/shop' is not valid" in started.stderr


@pytest.mark.django_db
def test_django_connects_to_the_first_host_of_the_list_that_accepts_writes():
    """Nobody listens on the first port: libpq goes on to the next host, the real server."""
    real = connection.settings_dict
    url = (
        f"postgres://{real['USER']}@127.0.0.1:{free_port()},{real['HOST']}:{real['PORT']}/postgres"
    )
    wrapper = DatabaseWrapper({**real, **database_config("DATABASE_URL", url)}, alias="multi")
    try:
        with wrapper.cursor() as cursor:
            cursor.execute("SELECT inet_server_port(), pg_is_in_recovery()")
            assert cursor.fetchone() == (int(real["PORT"]), False)
    finally:
        wrapper.close()
