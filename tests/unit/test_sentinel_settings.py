"""Settings for Redis behind Sentinel: REDIS_SENTINELS, REDIS_SENTINEL_MASTER, REDIS_URL's part."""

import json
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from project.env import env_hostports, sentinel_broker_url, sentinel_location
from tests.conftest import ROOT, start_django


def test_sentinels_are_read_as_host_port_pairs(monkeypatch):
    monkeypatch.setenv("REDIS_SENTINELS", " s1:26379, 10.0.0.2:26380 ,[::1]:26381")
    assert env_hostports("REDIS_SENTINELS") == [
        ("s1", 26379),
        ("10.0.0.2", 26380),
        ("::1", 26381),
    ]


def test_no_sentinels_when_unset_or_empty(monkeypatch):
    assert env_hostports("REDIS_SENTINELS") == []
    monkeypatch.setenv("REDIS_SENTINELS", "")
    assert env_hostports("REDIS_SENTINELS") == []


@pytest.mark.parametrize("raw", ["s1", "s1:", "s1:port", "s1:0", "s1:70000", "redis://s1:26379"])
def test_a_sentinel_without_a_valid_port_is_refused_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("REDIS_SENTINELS", raw)
    with pytest.raises(ImproperlyConfigured) as refused:
        env_hostports("REDIS_SENTINELS")
    assert f"REDIS_SENTINELS={raw!r} is not valid: expected host:port[,host:port...]" in str(
        refused.value
    )


def test_the_cache_location_names_the_master_and_keeps_database_and_password():
    assert sentinel_location("redis://:secret@ignored:6379/3", "main") == "redis://:secret@main/3"
    assert sentinel_location("redis://127.0.0.1:6379/0", "main") == "redis://main/0"


def test_the_broker_url_lists_every_sentinel_with_the_next_database():
    sentinels = [("s1", 26379), ("s2", 26380)]
    assert sentinel_broker_url("redis://:pw@ignored/0", sentinels, +1) == (
        "sentinel://:pw@s1:26379/1;sentinel://s2:26380/1"
    )
    assert sentinel_broker_url("redis://x/15", [("::1", 26379)], +1) == "sentinel://[::1]:26379/0"


def configured(**variables: str) -> dict:
    """CACHES, the broker URL and its transport options of a fresh process with `variables`."""
    script = (
        "import django, json; django.setup(); from django.conf import settings as s;"
        " print(json.dumps([s.CACHES['default'], s.CELERY_BROKER_URL,"
        " s.CELERY_BROKER_TRANSPORT_OPTIONS]))"
    )
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "project.settings", **variables}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    cache, broker, options = json.loads(done.stdout)
    return {"cache": cache, "broker": broker, "options": options}


def test_with_sentinels_the_cache_the_locks_and_the_broker_go_through_them():
    settings = configured(
        REDIS_URL="redis://:pw@127.0.0.1:6379/4",
        REDIS_SENTINELS="s1:26379,s2:26379,s3:26379",
        REDIS_SENTINEL_MASTER="main",
        REDIS_SENTINEL_PASSWORD="sentinel-pw",
    )
    cache, options = settings["cache"], settings["cache"]["OPTIONS"]
    assert cache["LOCATION"] == ["redis://:pw@main/4"]
    assert options["CLIENT_CLASS"] == "django_redis.client.SentinelClient"
    assert options["CONNECTION_FACTORY"] == "django_redis.pool.SentinelConnectionFactory"
    assert options["SENTINELS"] == [["s1", 26379], ["s2", 26379], ["s3", 26379]]
    assert options["SENTINEL_KWARGS"]["password"] == "sentinel-pw"
    assert settings["broker"] == (
        "sentinel://:pw@s1:26379/5;sentinel://s2:26379/5;sentinel://s3:26379/5"
    )
    assert settings["options"]["master_name"] == "main"
    assert settings["options"]["sentinel_kwargs"]["password"] == "sentinel-pw"


def test_without_sentinels_nothing_changes():
    settings = configured()
    assert settings["cache"]["LOCATION"] == "redis://127.0.0.1:6379/0"
    assert "CLIENT_CLASS" not in settings["cache"]["OPTIONS"]
    assert settings["broker"] == "redis://127.0.0.1:6379/1"
    assert "master_name" not in settings["options"]


def test_an_explicit_sentinel_broker_gets_the_master_name():
    settings = configured(
        CELERY_BROKER_URL="sentinel://b1:26379/2;sentinel://b2:26379/2",
        REDIS_SENTINEL_MASTER="broker",
    )
    assert settings["options"]["master_name"] == "broker"


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"REDIS_SENTINELS": "s1"}, "REDIS_SENTINELS='s1' is not valid"),
        (
            {"REDIS_SENTINELS": "s1:26379", "REDIS_URL": "unix:///run/redis.sock"},
            "REDIS_URL='unix:///run/redis.sock' is not valid: expected a URL of the form redis://",
        ),
    ],
)
def test_the_project_refuses_bad_sentinel_settings(variables, message):
    started = start_django(**variables)
    assert started.returncode != 0
    assert message in started.stderr
