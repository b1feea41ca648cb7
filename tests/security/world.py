"""One of everything the API serves, so fuzzed and matrix requests reach real rows."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.apps import apps
from django.core import signing

from purchases.models import Account, Artist, Customer, Release, ScheduledPurchase
from purchases.services import DOWNLOAD_SALT, purchase_create
from scheduling.delivery.pauses.services import delivery_pause
from scheduling.jobs.services import job_put
from scheduling.recurring.models import RecurringSchedule
from scheduling.time.calendars.models import Calendar
from tests.remoteapp.models import Account as RemoteAccount
from tests.remoteapp.models import ScheduledReminder
from tests.testapp.models import (
    Ping,
    ScheduledNotice,
    ScheduledOnce,
    ScheduledPing,
    ScheduledPingPartitioned,
)
from trainings.models import Invitation, Player, ScheduledTrainingNotification, Team
from trainings.services import training_create

FUTURE = datetime(2030, 6, 1, 18, 0, tzinfo=UTC)


@dataclass(frozen=True)
class World:
    """Path parameters that name existing rows, by the first segment after /api/ (by
    `events/<app>/<model>` for the scheduled rows of every registered model)."""

    ids: dict[str, str]
    download_token: str

    def path_value(self, resource: str) -> str | None:
        if resource.startswith("events/"):
            _, app_label, model_name = resource.split("/")
            row = apps.get_model(app_label, model_name).objects.order_by("pk").first()
            return None if row is None else str(row.pk)
        return self.ids.get(resource)


def build_world() -> World:
    account = Account.objects.create(name="Label")
    artist = Artist.objects.create(name="Artist", account=account)
    release = Release.objects.create(artist=artist, title="Album", release_date=FUTURE)
    customer = Customer.objects.create(email="fan@example.com", name="Fan")
    purchase = purchase_create(customer=customer, release=release)
    team = Team.objects.create(name="Falcons")
    Player.objects.create(team=team, name="Ann", push_token="device-token-ann")
    training = training_create(
        team=team, start_at=FUTURE, end_at=FUTURE + timedelta(hours=2), invitations_enabled=True
    )
    job, _ = job_put(
        key="nightly-report",
        schedules=[FUTURE],
        callback={"type": "queue", "queue": "reports"},
        payload={"report": "sales"},
        labels={"team": "a"},
    )
    calendar = office_calendar()
    test_only_rows()
    schedule = RecurringSchedule(
        name="daily",
        cron="0 3 * * *",
        timezone="Europe/Paris",
        queue="q",
        calendars=[calendar.name],
    )
    schedule.save()
    # A paused model the pauses' routes name; nothing in these tests sweeps it.
    pause = delivery_pause(model=ScheduledNotice, reason="world")
    ids = {
        "accounts": account.pk,
        "artists": artist.pk,
        "releases": release.pk,
        "customers": customer.pk,
        "purchases": purchase.pk,
        "scheduled-purchases": ScheduledPurchase.objects.filter(purchase=purchase)[0].pk,
        "teams": team.pk,
        "players": Player.objects.get(team=team).pk,
        "trainings": training.pk,
        "invitations": Invitation.objects.filter(training=training)[0].pk,
        "scheduled-training-notifications": ScheduledTrainingNotification.objects.filter(
            training=training
        )[0].pk,
        "jobs": job.key,
        "schedules": schedule.name,
        "calendars": calendar.name,
        "pauses": pause.model,
    }
    token = signing.dumps({"purchase": purchase.pk, "track": None}, salt=DOWNLOAD_SALT)
    return World(ids={k: str(v) for k, v in ids.items()}, download_token=token)


def office_calendar() -> Calendar:
    """A calendar using every kind of rule, composed with another, so its writes and spans
    meet each parser."""
    Calendar.objects.create(name="weekends", weekdays=["SAT", "SUN"])
    return Calendar.objects.create(
        name="office",
        timezone="Europe/Paris",
        holidays=["2030-12-25"],
        holiday_rules=["FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1"],
        daily_windows=["09:00-18:00"],
        composition=[{"op": "exclude", "calendar": "weekends"}],
    )


def test_only_rows() -> None:
    """A row of each test-only scheduled model (tests.testapp, and tests.remoteapp on its own
    database): their event routes too."""
    ping = Ping.objects.create(name="ping")
    for model in (ScheduledPing, ScheduledPingPartitioned, ScheduledOnce, ScheduledNotice):
        model.objects.create(ping=ping, due_at=FUTURE)
    remote = RemoteAccount.objects.create(name="remote")
    ScheduledReminder.objects.create(account=remote, due_at=FUTURE)
