"""scheduling.rows.routers.AppDatabaseRouter and the checks of SCHEDULING_DATABASES (E011) and of the
history table's place (E009)."""

from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from scheduling.delivery.checks import check_databases, configuration_errors
from scheduling.rows import routers
from scheduling.rows.history.models import EventHistory
from tests.remoteapp.models import Account, ScheduledReminder
from tests.testapp.models import Ping, ScheduledPing

ROUTER = routers.AppDatabaseRouter()


def test_it_routes_the_named_apps_reads_writes_and_migrations_to_their_alias():
    assert ROUTER.db_for_write(ScheduledReminder) == "second"
    assert ROUTER.db_for_read(Account) == "second"
    assert ROUTER.db_for_write(ScheduledPing) is None  # left to the next router: default
    assert ROUTER.allow_migrate("second", "remoteapp") is True
    assert ROUTER.allow_migrate("default", "remoteapp") is False


def test_the_history_table_goes_to_every_named_alias_and_nothing_else_does():
    assert ROUTER.allow_migrate("second", "scheduling", model_name="eventhistory") is True
    assert ROUTER.allow_migrate("default", "scheduling") is None  # Django's default: yes
    assert ROUTER.allow_migrate("second", "testapp") is False
    assert ROUTER.allow_migrate("second", "auth") is False
    assert ROUTER.allow_migrate("default", "testapp") is None


def test_relations_within_one_database_are_allowed_and_across_refused():
    account, ping = Account(name="a"), Ping(name="p")
    assert ROUTER.allow_relation(account, ScheduledReminder(account=account)) is True
    assert ROUTER.allow_relation(account, ping) is False
    assert ROUTER.allow_relation(ping, ScheduledPing(ping=ping)) is None


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"remoteapp": "nowhere"}, "SCHEDULING_DATABASES['remoteapp']='nowhere' names no database"),
        ({"billing": "second"}, "SCHEDULING_DATABASES names the app 'billing', which is not"),
        ("second", "SCHEDULING_DATABASES='second' is not valid: expected a dict of app label"),
        ({"remoteapp": 2}, "SCHEDULING_DATABASES['remoteapp']=2 is not valid: expected a dict"),
    ],
)
def test_a_bad_setting_is_an_error_naming_it_and_the_accepted_form(value: Any, named: str):
    with override_settings(SCHEDULING_DATABASES=value):
        errors = [error for error in configuration_errors() if error.id == "scheduling.E011"]
    assert len(errors) == 1
    assert named in errors[0].msg
    assert "expected" in errors[0].msg


def test_an_unknown_alias_lists_the_databases_there_are():
    with override_settings(SCHEDULING_DATABASES={"remoteapp": "nowhere"}):
        (error,) = [e for e in configuration_errors() if e.id == "scheduling.E011"]
    assert "one of: default, replica, second" in error.msg  # every alias of DATABASES


class HistoryLeftBehind:
    """A host's own router that moves remoteapp but forgets the history table."""

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return "second" if model._meta.app_label == "remoteapp" else None

    db_for_read = db_for_write

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        if app_label == "remoteapp":
            return db == "second"
        return db == "default"


def test_a_scheduled_model_on_a_database_without_the_history_table_is_an_error():
    router_path = f"{__name__}.HistoryLeftBehind"
    with override_settings(DATABASE_ROUTERS=[router_path], SCHEDULING_DATABASES={}):
        errors = check_databases()
        with pytest.raises(SystemCheckError, match=r"scheduling\.E009"):
            call_command("check")
    (error,) = errors
    assert error.obj is ScheduledReminder
    assert "database 'second'" in error.msg
    assert EventHistory._meta.db_table in error.msg


def test_the_test_settings_pass_both_checks():
    assert check_databases() == []
    assert not [error for error in configuration_errors() if error.id == "scheduling.E011"]
