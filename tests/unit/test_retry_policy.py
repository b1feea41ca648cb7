"""A scheduled model's own retry policy is refused when it cannot mean anything."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from scheduling.rows.policy import validate_policy


def policy(**values):
    defaults = dict.fromkeys(
        ("max_attempts", "retry_backoff", "retry_backoff_max", "handling_timeout")
    )
    return type("Reminder", (), {**defaults, **values})


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"max_attempts": 1},
        {"retry_backoff": 0, "retry_backoff_max": 30.5},
        {"handling_timeout": 120},
    ],
)
def test_a_sensible_policy_or_none_passes(values):
    validate_policy(policy(**values))


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_attempts": 0}, "Reminder.max_attempts = 0 is not valid: expected an integer from 1"),
        ({"max_attempts": 2.5}, "Reminder.max_attempts = 2.5 is not valid"),
        ({"max_attempts": True}, "Reminder.max_attempts = True is not valid"),
        (
            {"retry_backoff": -1},
            "Reminder.retry_backoff = -1 is not valid: expected seconds from 0",
        ),
        ({"retry_backoff_max": float("inf")}, "Reminder.retry_backoff_max = inf is not valid"),
        ({"handling_timeout": "10"}, "or None for SCHEDULING_HANDLING_TIMEOUT"),
    ],
)
def test_a_bad_value_is_refused_naming_the_model_and_the_accepted_form(values, message):
    with pytest.raises(ImproperlyConfigured, match=message.replace(".", r"\.")):
        validate_policy(policy(**values))


@pytest.mark.parametrize("size", [0, 1, 100, 10_000])
def test_a_handler_batch_size_from_0_to_10000_passes(size):
    validate_policy(policy(handler_batch_size=size))


@pytest.mark.parametrize("size", [-1, 10_001, 2.5, True, "100", None])
def test_a_bad_handler_batch_size_is_refused_naming_the_accepted_form(size):
    with pytest.raises(ImproperlyConfigured) as refused:
        validate_policy(policy(handler_batch_size=size))

    assert f"Reminder.handler_batch_size = {size!r} is not valid" in str(refused.value)
    assert "an integer from 1 to 10000" in str(refused.value)
