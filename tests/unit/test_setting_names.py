"""A SCHEDULING_* name the framework does not know is a Warning naming the closest known one,
and a worker, beat or `sweep --loop` logs it at start."""

import logging

import pytest
from django.core.management import call_command
from django.test import override_settings

from scheduling.delivery.celery import warn_unknown_settings
from scheduling.delivery.checks import check_setting_names
from scheduling.rows.setting_names import known_names


def test_a_misspelt_setting_is_a_warning_naming_the_closest_one():
    with override_settings(SCHEDULING_MAX_ATTEMPT=3):
        (warning,) = check_setting_names()

    assert warning.id == "scheduling.W006"
    assert warning.msg.startswith("SCHEDULING_MAX_ATTEMPT is not a setting")
    assert warning.msg.endswith("did you mean SCHEDULING_MAX_ATTEMPTS?")


def test_check_reports_it(capsys: pytest.CaptureFixture[str]):
    with override_settings(SCHEDULING_BATCHSIZE=10):
        call_command("check")

    assert "did you mean SCHEDULING_BATCH_SIZE?" in capsys.readouterr().err


def test_a_name_like_none_lists_the_known_ones():
    with override_settings(SCHEDULING_ZZZQQQ=1):
        (warning,) = check_setting_names()

    assert "the known names: SCHEDULING_ADMIN_AUTOREGISTER" in warning.msg


def test_every_known_name_passes():
    with override_settings(SCHEDULING_READ_REPLICAS={}, SCHEDULING_MAX_ATTEMPTS=3):
        assert check_setting_names() == []
    assert "SCHEDULING_DATABASES" in known_names()


def test_a_worker_or_beat_logs_it_at_start(caplog: pytest.LogCaptureFixture):
    with override_settings(SCHEDULING_MAX_ATTEMPT=3), caplog.at_level(logging.WARNING):
        warn_unknown_settings()

    assert "did you mean SCHEDULING_MAX_ATTEMPTS?" in caplog.text
