from datetime import timedelta

import factory
from django.utils import timezone

from tests.testapp.models import Ping, PingModel, ScheduledPing, ScheduledPingPartitioned


class PingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Ping

    name = factory.Sequence(lambda n: f"ping-{n}")
    group = "a"


class ScheduledPingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ScheduledPing

    ping = factory.SubFactory(PingFactory)
    due_at = factory.LazyFunction(lambda: timezone.now() - timedelta(minutes=1))


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
    return [row.pk for row in rows]
