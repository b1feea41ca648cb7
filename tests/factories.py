from datetime import timedelta
from typing import Any

import factory
from django.db.models import F
from django.db.models.functions import Least, Now
from django.utils import timezone

from tests.testapp.models import (
    Ping,
    PingModel,
    ScheduledNotice,
    ScheduledPing,
    ScheduledPingPartitioned,
)


class PingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Ping

    name = factory.Sequence(lambda n: f"ping-{n}")
    group = "a"


class ScheduledPingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ScheduledPing
        skip_postgeneration_save = True

    ping = factory.SubFactory(PingFactory)
    due_at = factory.LazyFunction(lambda: timezone.now() - timedelta(minutes=1))

    @factory.post_generation
    def scheduled_ahead(obj: Any, create: bool, extracted: object, **kwargs: object) -> None:
        """A row scheduled an hour before it falls due, as applications schedule: a row created
        already due is late only from its creation (its lateness would read 0 here)."""
        if create:
            obj.created_at = min(obj.due_at, timezone.now()) - timedelta(hours=1)
            type(obj).objects.filter(pk=obj.pk).update(created_at=obj.created_at)


class ScheduledPingPartitionedFactory(ScheduledPingFactory):
    class Meta:
        model = ScheduledPingPartitioned


def factory_for(model: PingModel) -> type[ScheduledPingFactory]:
    """The factory of ScheduledPing's rows, or of its partitioned twin's."""
    return (
        ScheduledPingPartitionedFactory
        if model is ScheduledPingPartitioned
        else ScheduledPingFactory
    )


def make_due_pings(
    count: int,
    *,
    group: str = "a",
    ago: timedelta = timedelta(minutes=5),
    model: PingModel = ScheduledPing,
) -> list[int]:
    """Bulk-creates `count` past-due rows (distinct due times, one entity each); returns pks."""
    now = timezone.now()
    pings = Ping.objects.bulk_create(Ping(name=f"p{i}", group=group) for i in range(count))
    rows = model.objects.bulk_create(
        model(ping=ping, due_at=now - ago + timedelta(microseconds=i))
        for i, ping in enumerate(pings)
    )
    back_date(model, [row.pk for row in rows])
    return [row.pk for row in rows]


def make_due_notices(count: int, *, group: str = "notices") -> list[int]:
    """`count` past-due plain-JSON rows (ScheduledNotice, on the "notices" queue); their pks."""
    pings = Ping.objects.bulk_create(Ping(name=f"n{i}", group=group) for i in range(count))
    due = timezone.now() - timedelta(minutes=1)
    rows = ScheduledNotice.objects.bulk_create(ScheduledNotice(ping=p, due_at=due) for p in pings)
    return [row.pk for row in rows]


def back_date(model: PingModel, pks: list[int]) -> None:
    """created_at an hour before due_at (or now, if sooner): the rows were scheduled ahead."""
    model.objects.filter(pk__in=pks).update(
        created_at=Least(F("due_at"), Now()) - timedelta(hours=1)
    )
