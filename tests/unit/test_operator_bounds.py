"""Every operator number has an upper bound: past it a value only breaks arithmetic (dates past
year 9999, intervals PostgreSQL refuses) or burns CPU, so `check` refuses it in one line naming
the setting and the accepted range, and the backoff arithmetic clamps what slips past."""

from dataclasses import fields
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from project.env import LOG_LEVELS, env_class_path, env_float, env_log_level, env_port
from scheduling.delivery.checks import configuration_errors
from scheduling.rows.conf import MAX_SECONDS, SchedulingSettings, scheduling_settings
from scheduling.rows.policy import backoff_ceiling, validate_policy

BOUNDED = [each for each in fields(SchedulingSettings) if each.metadata["most"] is not None]


def setting_name(each):
    return f"SCHEDULING_{each.name.upper()}"


def test_every_number_the_framework_reads_has_an_upper_bound():
    numbers = [each.name for each in fields(SchedulingSettings) if each.type in (int, float)]

    assert numbers == [each.name for each in BOUNDED]


@pytest.mark.parametrize("each", BOUNDED, ids=lambda each: each.name)
def test_each_bound_itself_passes_and_one_past_it_is_refused_naming_the_range(each):
    most = each.metadata["most"]
    with override_settings(**{setting_name(each): most}):
        assert configuration_errors() == []
        assert getattr(scheduling_settings(), each.name) == most

    past = most + 1
    with override_settings(**{setting_name(each): past}):
        [error] = configuration_errors()

    assert error.id == "scheduling.E001"
    assert error.msg.startswith(f"{setting_name(each)}={past!r} is not valid: expected ")
    assert f"{most:,.0f}" in error.msg


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        (
            "SCHEDULING_HANDLING_TIMEOUT",
            1e18,
            "SCHEDULING_HANDLING_TIMEOUT=1e+18 is not valid: expected a number of seconds > 0 "
            "and <= 2,592,000 (30 days).",
        ),
        (
            "SCHEDULING_HANDLING_TIMEOUT",
            8e13,
            "SCHEDULING_HANDLING_TIMEOUT=80000000000000.0 is not valid: expected a number of "
            "seconds > 0 and <= 2,592,000 (30 days).",
        ),
        (
            "SCHEDULING_RETRY_BACKOFF",
            1e12,
            "SCHEDULING_RETRY_BACKOFF=1000000000000.0 is not valid: expected a number of seconds "
            "from 0 to 2,592,000 (30 days).",
        ),
        (
            "SCHEDULING_SWEEPER_SLOTS",
            10_000,
            "SCHEDULING_SWEEPER_SLOTS=10000 is not valid: expected an integer from 1 to 64.",
        ),
    ],
)
def test_the_absurd_values_of_the_report_are_one_line_each(name, value, expected):
    with override_settings(**{name: value}):
        assert [error.msg for error in configuration_errors()] == [expected]


def policy(**values):
    defaults = dict.fromkeys(
        ("max_attempts", "retry_backoff", "retry_backoff_max", "handling_timeout")
    )
    return type("Reminder", (), {**defaults, **values})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"max_attempts": 1001},
            "Reminder.max_attempts = 1001 is not valid: expected an integer "
            "from 1 to 1,000, or None for SCHEDULING_MAX_ATTEMPTS.",
        ),
        (
            {"retry_backoff": 1e12},
            "Reminder.retry_backoff = 1000000000000.0 is not valid: "
            "expected seconds from 0 to 2,592,000 (30 days), or None for SCHEDULING_RETRY_BACKOFF.",
        ),
        ({"handling_timeout": 1e18}, "Reminder.handling_timeout = 1e+18 is not valid"),
        ({"retry_backoff_max": 30 * 86_400 + 1}, "Reminder.retry_backoff_max = 2592001 is not"),
    ],
)
def test_a_models_own_policy_keeps_the_settings_bounds(values, message):
    with pytest.raises(ImproperlyConfigured) as refused:
        validate_policy(policy(**values))

    assert str(refused.value).startswith(message)


class Policy:
    """A model's policy as the backoff reads it, whatever its values."""

    def __init__(self, backoff, most):
        self.backoff, self.most = backoff, most

    def get_retry_backoff(self):
        return self.backoff

    def get_retry_backoff_max(self):
        return self.most


@pytest.mark.parametrize(
    ("backoff", "most", "attempts", "ceiling"),
    [
        (5, 600, 1, 5),
        (5, 600, 4, 40),
        (5, 600, 10**9, 600),
        (1e12, 1e12, 3, MAX_SECONDS),
        (1e308, 1e308, 64, MAX_SECONDS),
        (float("nan"), 600, 1, 600),
        (5, float("inf"), 100, MAX_SECONDS),
        (-5, 600, 1, 0),
    ],
)
def test_the_backoff_is_clamped_before_any_date_arithmetic(backoff, most, attempts, ceiling):
    seconds = backoff_ceiling(attempts, Policy(backoff, most))

    assert seconds == ceiling
    assert timedelta(seconds=seconds) <= timedelta(days=30)


def test_a_policy_that_cannot_be_read_waits_the_default_maximum():
    class Unreadable(Policy):
        def get_retry_backoff(self):
            raise ImproperlyConfigured("SCHEDULING_RETRY_BACKOFF='x' is not valid")

    assert backoff_ceiling(2, Unreadable(5, 600)) == SchedulingSettings.retry_backoff_max


@pytest.mark.parametrize("raw", ["0", "65536", "99999", "-1", "http", "8000.5"])
def test_a_port_is_1_to_65535(monkeypatch, raw):
    monkeypatch.setenv("X_PORT", raw)
    with pytest.raises(ImproperlyConfigured) as refused:
        env_port("X_PORT", 8000)

    assert str(refused.value) == (
        f"X_PORT={raw!r} is not valid: expected an integer from 1 to 65535."
    )


@pytest.mark.parametrize("raw", ["1", "8000", "65535"])
def test_ports_in_range_pass(monkeypatch, raw):
    monkeypatch.setenv("X_PORT", raw)
    assert env_port("X_PORT", 25) == int(raw)


@pytest.mark.parametrize("raw", ["1e18", "3601", "inf"])
def test_a_bounded_timeout_refuses_past_its_bound(monkeypatch, raw):
    monkeypatch.setenv("X_TIMEOUT", raw)
    with pytest.raises(ImproperlyConfigured, match=r"expected a number > 0.0 and <= 3600"):
        env_float("X_TIMEOUT", 30.0, maximum=3600)


def test_a_log_level_is_one_of_the_level_names_in_any_case(monkeypatch):
    monkeypatch.setenv("X_LEVEL", "warning")
    assert env_log_level("X_LEVEL", "INFO") == "WARNING"

    monkeypatch.setenv("X_LEVEL", "LOUD")
    with pytest.raises(ImproperlyConfigured) as refused:
        env_log_level("X_LEVEL", "INFO")
    assert str(refused.value) == (
        f"X_LEVEL='LOUD' is not valid: expected one of {', '.join(LOG_LEVELS)}."
    )


@pytest.mark.parametrize(
    "raw", ["os.system", "this.s", "this.S", "subprocess.Popen", "RecordingPushBackend", ""]
)
def test_a_class_path_is_judged_by_its_text_without_importing_it(monkeypatch, raw):
    monkeypatch.setenv("X_BACKEND", raw)
    with pytest.raises(ImproperlyConfigured) as refused:
        env_class_path("X_BACKEND", "trainings.push.RecordingPushBackend")

    assert str(refused.value).startswith(f"X_BACKEND={raw!r} is not valid: expected the dotted ")


@pytest.mark.parametrize(
    "raw", ["trainings.push.HttpPushBackend", "bench.history.FailingOncePushBackend"]
)
def test_a_class_path_of_the_project_passes(monkeypatch, raw):
    monkeypatch.setenv("X_BACKEND", raw)
    assert env_class_path("X_BACKEND", "a.B") == raw
