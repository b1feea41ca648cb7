"""Fail loud: a misconfiguration is an Error of the system checks (`check`, `runserver` and
`migrate` stop), naming the setting and the form it accepts."""

import re
from dataclasses import fields

import pytest
from celery import current_app
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError, SystemCheckError
from django.test import override_settings

from scheduling.delivery.checks import check_handler_tasks, configuration_errors
from scheduling.rows import conf
from scheduling.rows.conf import SchedulingSettings, scheduling_settings
from tests.testapp.models import ScheduledPing

# A value each kind of setting refuses.
REFUSED = {
    conf.a_count: 0,
    conf.a_duration: 0,
    conf.a_delay: -1,
    conf.a_name: "",
    conf.a_string: 3,
    conf.a_rate: "lots",
    conf.task_patterns: "billing.*",
    conf.a_trace_parent: "parent",
    conf.a_trace_url: "https://traces.example/",
    conf.a_flag: "no",
    conf.rate_limits: ["testapp.ScheduledPing=5/s"],
    conf.partition_intervals: "1d",
}


def test_a_bad_setting_stops_check_naming_it_and_the_accepted_form():
    with override_settings(SCHEDULING_BATCH_SIZE="lots"), pytest.raises(SystemCheckError) as stop:
        call_command("check")

    expected = "SCHEDULING_BATCH_SIZE='lots' is not valid: expected an integer from 1 to 100,000."
    assert f"(scheduling.E001) {expected}" in str(stop.value)


@pytest.mark.parametrize("each", fields(SchedulingSettings), ids=lambda each: each.name)
def test_every_setting_is_checked_by_the_rule_its_reading_applies(each):
    name, value = f"SCHEDULING_{each.name.upper()}", REFUSED[each.metadata["validate"]]

    with override_settings(**{name: value}):
        [error] = configuration_errors()
        with pytest.raises(ImproperlyConfigured) as refused:
            scheduling_settings()

    assert error.id == "scheduling.E001"
    assert error.is_serious()
    assert re.fullmatch(rf"{re.escape(f'{name}={value!r}')} is not valid: expected .+\.", error.msg)
    assert str(refused.value) == error.msg


def test_the_defaults_and_the_test_settings_pass():
    assert configuration_errors() == []
    assert scheduling_settings() == SchedulingSettings(**vars(scheduling_settings()))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SCHEDULING_SWEEP_HOLD", 0),
        ("SCHEDULING_RETRY_BACKOFF", 0.0),
        ("SCHEDULING_SWEEP_INTERVAL", 0.2),
        ("SCHEDULING_METRICS_TOKEN", ""),
        ("SCHEDULING_BULK_THROTTLE_RATE", " 10/s "),
        ("SCHEDULING_EXTERNAL_TASKS", ["billing.*"]),
    ],
)
def test_values_of_the_accepted_form_pass(name, value):
    with override_settings(**{name: value}):
        assert configuration_errors() == []


@override_settings(USE_TZ=False)
def test_use_tz_off_is_an_error():
    [error] = configuration_errors()

    assert error.id == "scheduling.E002"
    assert error.msg.startswith("USE_TZ=False is not valid: expected True")


def test_no_broker_url_is_an_error(monkeypatch):
    for variable in ("CELERY_BROKER_URL", "CELERY_BROKER_READ_URL", "CELERY_BROKER_WRITE_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setitem(current_app.conf, "broker_url", None)

    [error] = configuration_errors()

    assert error.id == "scheduling.E003"
    assert "CELERY_BROKER_URL" in error.msg


def test_an_unregistered_handler_task_is_an_error_unless_another_codebase_runs_it(monkeypatch):
    monkeypatch.setattr(ScheduledPing, "handler_task", "testapp.no_such_task")

    assert [error.id for error in check_handler_tasks()] == ["scheduling.E004"]
    with override_settings(SCHEDULING_EXTERNAL_TASKS=["testapp.no_*"]):
        assert check_handler_tasks() == []
    with override_settings(SCHEDULING_EXTERNAL_TASKS="testapp.*"):  # E001 says why
        assert [error.id for error in check_handler_tasks()] == ["scheduling.E004"]


@override_settings(SCHEDULING_LOCK_TTL=float("nan"))
def test_sweep_refuses_to_start_in_one_line():
    with pytest.raises(CommandError, match=r"^SCHEDULING_LOCK_TTL=nan is not valid: [^\n]+$"):
        call_command("sweep", "--loop")
