"""Calendars a hostile user cannot make expensive: one RRULE a string, a composition whose
expanded size is bounded, and a rule stored before the check refused at read."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.time.calendars import models as store
from scheduling.time.calendars.models import Calendar
from scheduling.time.calendars.parsing import parse_rule
from scheduling.time.calendars.rules import CalendarError

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen_clock")]

URL = "/api/calendars/"


@pytest.mark.parametrize(
    "rule",
    [
        "FREQ=YEARLY;BYMONTHDAY=2\nRRULE:FREQ=MINUTELY",
        "FREQ=YEARLY;BYMONTHDAY=2\r\nRRULE:FREQ=SECONDLY",
        "FREQ=YEARLY;BYMONTHDAY=2 RRULE:FREQ=SECONDLY",
        "FREQ=YEARLY;BYMONTHDAY=2;RRULE:FREQ=SECONDLY",
    ],
)
def test_a_second_rule_in_one_string_is_refused_naming_the_field(api, rule):
    response = api.post(URL, {"name": "smuggled", "holiday_rules": [rule]}, format="json")

    assert response.status_code == 400, response.content
    assert list(response.json()) == ["holiday_rules"]
    assert "one RRULE" in str(response.json()["holiday_rules"])
    assert not Calendar.objects.exists()


def test_one_rule_with_its_prefix_is_still_accepted():
    assert parse_rule(" rrule:FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25 ") == (
        "FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25"
    )


def test_a_smuggled_rule_stored_before_the_check_is_refused_at_read(api):
    Calendar.objects.bulk_create(  # as a row written before the check: no save(), no clean()
        [Calendar(name="old", holiday_rules=["FREQ=YEARLY;BYMONTHDAY=2\nRRULE:FREQ=MINUTELY"])]
    )

    response = api.get(URL + "old/spans/?count=1")

    assert response.status_code == 400
    assert "one RRULE" in str(response.json()["calendar"])


def test_a_diamond_is_refused_past_the_bound_naming_composition(api):
    Calendar.objects.create(name="level-0", daily_windows=["22:00-07:00"])
    answers = []
    for level in range(1, 6):
        steps = [{"op": "include", "calendar": f"level-{level - 1}"}] * 10
        body = {"name": f"level-{level}", "composition": steps}
        answers.append(api.post(URL, body, format="json"))

    # Level 1 walks 11 calendars, level 2 would walk 111.
    assert [answer.status_code for answer in answers] == [201, 400, 400, 400, 400]
    assert all(list(answer.json()) == ["composition"] for answer in answers[1:])
    assert f"more than {store.MAX_EXPANDED} calendars" in str(answers[1].json()["composition"])


def test_each_included_calendar_is_built_once():
    Calendar.objects.create(name="base", daily_windows=["22:00-07:00"])
    Calendar.objects.create(name="twice", composition=[{"op": "include", "calendar": "base"}] * 2)
    included = [{"op": "include", "calendar": "twice"}] * 9
    Calendar.objects.create(name="top", composition=included)

    rules = store.named_calendar("top")

    assert len({id(other) for _, other in rules.steps}) == 1
    assert len({id(other) for _, other in rules.steps[0][1].steps}) == 1


def test_a_cycle_is_still_refused():
    Calendar.objects.create(name="a")
    Calendar.objects.create(name="b", composition=[{"op": "include", "calendar": "a"}])
    a = Calendar.objects.get(name="a")
    a.composition = [{"op": "include", "calendar": "b"}]

    with pytest.raises(Exception, match="a cycle: a -> b -> a"):
        a.save()
    with pytest.raises(CalendarError):
        store.calendar_rules(a)


def list_queries(admin_client, calendars: int) -> int:
    Calendar.objects.all().delete()
    Calendar.objects.create(name="base", daily_windows=["22:00-07:00"])
    for n in range(calendars):
        Calendar.objects.create(name=f"c{n}", composition=[{"op": "include", "calendar": "base"}])
    with CaptureQueriesContext(connection) as queries:
        assert admin_client.get("/admin/scheduling/calendar/").status_code == 200
    return len(queries)


def test_the_admin_list_reads_the_calendars_once_however_many(admin_client):
    assert list_queries(admin_client, 30) == list_queries(admin_client, 3)
