from __future__ import annotations

from typing import Any

from django.db import transaction
from rest_framework import serializers

from purchases.models import Account, Artist, Customer, Purchase, Release, ScheduledPurchase, Track
from purchases.services import purchase_create, release_move
from scheduling.api import (
    ScheduledEventSerializer,
    StrictDateTimeField,
    column_range,
)


class AccountSerializer(serializers.ModelSerializer):
    class Meta:
        model = Account
        fields = ("id", "name")


class ArtistSerializer(serializers.ModelSerializer):
    class Meta:
        model = Artist
        fields = ("id", "name", "account")


class TrackSerializer(serializers.ModelSerializer):
    release_date = StrictDateTimeField(read_only=True)

    class Meta:
        model = Track
        fields = ("id", "position", "title", "release_date")


class ReleaseSerializer(serializers.ModelSerializer):
    release_date = StrictDateTimeField(
        help_text="Changing it moves the pending whole-release emails in the same transaction."
    )
    tracks = TrackSerializer(many=True, read_only=True)

    class Meta:
        model = Release
        fields = ("id", "artist", "title", "release_date", "tracks")

    @transaction.atomic
    def update(self, instance: Release, validated_data: dict[str, Any]) -> Release:
        # The date goes through the service, so the rows move with it; the rest is plain data.
        release_date = validated_data.pop("release_date", None)
        if release_date is not None and release_date != instance.release_date:
            release_move(release=instance, release_date=release_date)
        return super().update(instance, validated_data)


class CustomerSerializer(serializers.ModelSerializer):
    class Meta:
        model = Customer
        fields = ("id", "email", "name")


class UnreadIdField(serializers.PrimaryKeyRelatedField):
    """A row by id, not read here: purchase_create checks the customer and the release in its
    own statements, and an unknown id is answered in PurchaseSerializer.create. One query per
    sale instead of three."""

    def to_internal_value(self, data: Any) -> Any:
        digits = isinstance(data, str) and data.isascii() and data.isdigit()
        if isinstance(data, bool) or not (isinstance(data, int) or digits):
            self.fail("incorrect_type", data_type=type(data).__name__)
        model = self.queryset.model  # type: ignore[union-attr]  # always given here
        if not 1 <= int(data) <= column_range(model._meta.pk)[1]:  # no row has it
            self.fail("does_not_exist", pk_value=data)
        return model(pk=int(data))


class PurchaseSerializer(serializers.ModelSerializer):
    customer = UnreadIdField(queryset=Customer.objects.all())
    release = UnreadIdField(queryset=Release.objects.all())

    class Meta:
        model = Purchase
        fields = ("id", "customer", "release", "status", "created_at")
        read_only_fields = ("status", "created_at")

    def create(self, validated_data: dict[str, Any]) -> Purchase:
        customer, release = validated_data["customer"], validated_data["release"]
        try:
            return purchase_create(customer=customer, release=release)
        except Release.DoesNotExist:
            raise self.unknown("release", release.pk) from None
        except Customer.DoesNotExist:
            raise self.unknown("customer", customer.pk) from None

    def unknown(self, field: str, pk: int) -> serializers.ValidationError:
        message = self.fields[field].error_messages["does_not_exist"]
        return serializers.ValidationError({field: [message.format(pk_value=pk)]})


class ScheduledPurchaseSerializer(ScheduledEventSerializer):
    class Meta(ScheduledEventSerializer.Meta):
        model = ScheduledPurchase
        fields = (*ScheduledEventSerializer.Meta.fields, "purchase", "track")
        read_only_fields = fields


class RefundSerializer(serializers.Serializer):
    cancelled = serializers.IntegerField(read_only=True, help_text="Pending emails cancelled.")
    purchase = PurchaseSerializer(read_only=True)


class DownloadFileSerializer(serializers.Serializer):
    track = serializers.IntegerField(read_only=True)
    title = serializers.CharField()
    file = serializers.CharField()


class DownloadSerializer(serializers.Serializer):
    purchase = serializers.IntegerField(read_only=True)
    release = serializers.CharField()
    artist = serializers.CharField()
    files = DownloadFileSerializer(many=True)
