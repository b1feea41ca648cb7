from datetime import timedelta

import factory
from django.utils import timezone

from purchases.models import Account, Artist, Customer, Purchase, Release, ScheduledPurchase, Track


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account

    name = factory.Sequence(lambda n: f"Label {n}")


class ArtistFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Artist

    name = factory.Sequence(lambda n: f"Artist {n}")
    account = factory.SubFactory(AccountFactory)


class ReleaseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Release

    artist = factory.SubFactory(ArtistFactory)
    title = factory.Sequence(lambda n: f"Album {n}")
    release_date = factory.LazyFunction(lambda: timezone.now() + timedelta(days=30))


class TrackFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Track

    release = factory.SubFactory(ReleaseFactory)
    position = factory.Sequence(lambda n: n + 1)
    title = factory.Sequence(lambda n: f"Song {n}")
    release_date = None


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Customer

    email = factory.Sequence(lambda n: f"fan{n}@example.com")
    name = factory.Sequence(lambda n: f"Fan {n}")


class PurchaseFactory(factory.django.DjangoModelFactory):
    """A bare purchase with no scheduled rows; use services.purchase_create to schedule."""

    class Meta:
        model = Purchase

    customer = factory.SubFactory(CustomerFactory)
    release = factory.SubFactory(ReleaseFactory)


class ScheduledPurchaseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ScheduledPurchase

    purchase = factory.SubFactory(PurchaseFactory)
    due_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=30))
