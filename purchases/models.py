"""Single Music's store: releases, pre-orders, and the fulfillment email scheduled for each.

The shape to copy for a new domain: entities, plus one ScheduledEvent subclass with a foreign
key to the entity it is about. Business facts (artist, account, customer) are reached by joins,
so reschedules and cancels select rows by any of them.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from purchases.headers import one_line
from scheduling import ScheduledEvent


class Account(models.Model):
    """A seller: a label's or an artist's store."""

    name = models.CharField(max_length=200)

    def __str__(self) -> str:
        return self.name


class Artist(models.Model):
    name = models.CharField(max_length=200, validators=[one_line])  # in email subjects
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="artists")

    def __str__(self) -> str:
        return self.name


class Release(models.Model):
    artist = models.ForeignKey(Artist, on_delete=models.CASCADE, related_name="releases")
    title = models.CharField(max_length=200, validators=[one_line])  # in email subjects
    release_date = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.artist.name} - {self.title}"


class Track(models.Model):
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="tracks")
    position = models.PositiveSmallIntegerField(default=1)
    title = models.CharField(max_length=200, validators=[one_line])  # in email subjects
    # Set for a staggered track, released (and emailed) on its own, earlier date.
    release_date = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("release", "position", "pk")

    def __str__(self) -> str:
        return self.title

    @property
    def file_name(self) -> str:
        return f"{self.position:02d} {self.title}.flac"


class Customer(models.Model):
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return self.email


class Purchase(models.Model):
    class Status(models.TextChoices):
        PAID = "paid", "Paid"
        REFUNDED = "refunded", "Refunded"

    # PROTECT: a sale is a financial record; it outlives neither its customer nor its release
    # by accident.
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="purchases")
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="purchases")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PAID)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-created_at", "-pk")

    def __str__(self) -> str:
        return f"#{self.pk} {self.release.title}"  # no email: who may see one is the admin's rule


class ScheduledPurchase(ScheduledEvent):
    """The fulfillment email of a purchase: the whole release (track is null), or one track."""

    # No index of its own: the unique constraint below leads with purchase and serves its
    # lookups, and every index costs each sweep's mark-delivered an extra insert per row.
    purchase = models.ForeignKey(
        Purchase, on_delete=models.CASCADE, related_name="scheduled", db_index=False
    )
    track = models.ForeignKey(
        Track, on_delete=models.CASCADE, null=True, blank=True, related_name="scheduled"
    )

    handler_task = "purchases.send_fulfillment_email"
    # Emails a handler sends over one SMTP connection (purchases.tasks).
    handler_batch_size = 100
    queue = "purchases"
    # The store's rule: a customer never receives the same email twice, even after a crash.
    at_most_once = True
    event_type = "purchases.fulfillment"
    # A big label's release day must not hold a small label's emails behind it: under a rate
    # limit the sweep takes each label's (account's) due emails in turn.
    fairness_key = "purchase__release__artist__account"
    # Every email of a customer is one admin search away: the start of their email or name, any
    # case, found through two indexes on the customers (migration 0010). Not "contains", nor the
    # release's title (the list has a release filter): either joins and scans every row.
    search_fields = ("^purchase__customer__email", "^purchase__customer__name")

    class Meta(ScheduledEvent.Meta):
        db_table = "scheduled_purchase"
        constraints = [
            # One email per purchase and file set, enforced by the database (nulls equal, so
            # also one whole-release row).
            models.UniqueConstraint(
                fields=["purchase", "track"],
                name="scheduled_purchase_once_per_track",
                nulls_distinct=False,
            ),
        ]

    def event_data(self) -> dict[str, Any]:
        return {"purchase": self.purchase_id, "track": self.track_id}
