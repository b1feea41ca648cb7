import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from project.env import env_bool, env_float, env_int, env_url
from scheduling.rows.conf import scheduling_settings
from tests.conftest import ROOT, check_django, start_django


@pytest.mark.parametrize(
    ("raw", "reader", "message"),
    [
        (
            "ten",
            lambda: env_int("X_VALUE", 1, minimum=1),
            "X_VALUE='ten' is not valid: expected an integer >= 1",
        ),
        (
            "0",
            lambda: env_int("X_VALUE", 1, minimum=1),
            "X_VALUE='0' is not valid: expected an integer >= 1",
        ),
        (
            "-1",
            lambda: env_float("X_VALUE", 1.0),
            "X_VALUE='-1' is not valid: expected a number > 0.0",
        ),
        (
            "nan",
            lambda: env_float("X_VALUE", 1.0),
            "X_VALUE='nan' is not valid: expected a number > 0.0",
        ),
        (
            "inf",
            lambda: env_float("X_VALUE", 1.0),
            "X_VALUE='inf' is not valid: expected a number > 0.0",
        ),
        (
            "maybe",
            lambda: env_bool("X_VALUE", True),
            "X_VALUE='maybe' is not valid: expected one of 1/0",
        ),
        (
            "http://x",
            lambda: env_url("X_VALUE", "", schemes=("redis",)),
            "expected a URL of the form redis://",
        ),
    ],
)
def test_env_readers_refuse_bad_values_naming_the_variable(monkeypatch, raw, reader, message):
    monkeypatch.setenv("X_VALUE", raw)
    with pytest.raises(ImproperlyConfigured) as refused:
        reader()
    assert message in str(refused.value)


def test_env_readers_use_defaults_and_parse_good_values(monkeypatch):
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_BOOL", "off")
    assert env_int("X_INT", 1) == 42
    assert env_bool("X_BOOL", True) is False
    assert env_float("X_MISSING", 2.5) == 2.5


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("DATABASE_URL", "mysql://x/y", "DATABASE_URL='mysql://x/y' is not valid"),
        ("CELERY_BROKER_URL", "kafka://x", "CELERY_BROKER_URL='kafka://x' is not valid"),
        ("DEBUG", "perhaps", "DEBUG='perhaps' is not valid"),
        ("EMAIL_BACKEND", "django.core.mail.Pigeon", "EMAIL_BACKEND='django.core.mail.Pigeon'"),
    ],
)
def test_the_project_refuses_to_start_with_a_bad_setting(variable, value, message):
    started = start_django(**{variable: value})
    assert started.returncode != 0
    assert message in started.stderr


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("SCHEDULING_BATCH_SIZE", "lots", "SCHEDULING_BATCH_SIZE='lots' is not valid"),
        ("SCHEDULING_SWEEP_INTERVAL", "0", "SCHEDULING_SWEEP_INTERVAL=0 is not valid"),
        ("SCHEDULING_SWEEP_HOLD", "-1", "SCHEDULING_SWEEP_HOLD=-1 is not valid"),
    ],
)
def test_check_stops_at_a_bad_framework_setting_naming_it(variable, value, message):
    # The demo hands SCHEDULING_* values to the framework as given; its check judges them.
    checked = check_django(**{variable: value})

    assert checked.returncode != 0
    assert f"(scheduling.E001) {message}: expected " in checked.stderr


def test_the_project_refuses_a_mail_folder_it_cannot_write(tmp_path):
    not_a_folder = tmp_path / "mail"
    not_a_folder.write_text("")
    started = start_django(
        EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend",
        EMAIL_FILE_PATH=str(not_a_folder),
    )
    message = f"EMAIL_FILE_PATH={str(not_a_folder)!r} is not valid: expected a writable directory"
    assert started.returncode != 0
    assert message in started.stderr


@override_settings(EMAIL_BACKEND="tests.testapp.models.MisconfiguredEmailBackend")
def test_a_backends_own_set_up_error_is_reported_as_it_is():
    from purchases.apps import check_email_backend

    with pytest.raises(ImproperlyConfigured, match=r"^ACME_API_KEY is missing$"):
        check_email_backend()


def test_production_refuses_a_missing_secret_key():
    started = start_django(DEBUG="0")
    assert started.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in started.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [("SCHEDULING_BATCH_SIZE", 0), ("SCHEDULING_LOCK_TTL", float("nan"))],
)
def test_the_framework_refuses_bad_settings_from_any_project(name, value):
    with override_settings(**{name: value}), pytest.raises(ImproperlyConfigured) as refused:
        scheduling_settings()
    assert f"{name}={value!r} is not valid" in str(refused.value)


@pytest.mark.parametrize(
    ("cache", "broker"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/1"),
        ("redis://:secret@cache:6380/15", "redis://:secret@cache:6380/0"),
        ("redis://cache", "redis://cache/1"),
        ("unix:///run/redis.sock?db=2", "unix:///run/redis.sock?db=3"),
    ],
)
def test_the_default_broker_is_the_next_database_of_the_cache_redis(cache, broker):
    from project.env import redis_database

    assert redis_database(cache, +1) == broker


def test_the_broker_and_the_lock_store_never_share_a_redis_database():
    started = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings;"
            " print(settings.CACHES['default']['LOCATION'], settings.CELERY_BROKER_URL)",
        ],
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "project.settings"},
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert started.stdout.split() == ["redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/1"]
