from __future__ import annotations

from typing import Any

from django.core import signing
from django.db.models import ProtectedError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from purchases.api.filters import ScheduledPurchaseFilterSet
from purchases.api.serializers import (
    AccountSerializer,
    ArtistSerializer,
    CustomerSerializer,
    DownloadSerializer,
    PurchaseSerializer,
    RefundSerializer,
    ReleaseSerializer,
    ScheduledPurchaseSerializer,
)
from purchases.models import Account, Artist, Customer, Purchase, Release, ScheduledPurchase
from purchases.services import DOWNLOAD_SALT, purchase_refund
from scheduling.api import (
    ModelChangePermission,
    ModelViewPermission,
    RequestActor,
    ScheduledEventViewSet,
)


class ProtectedDestroyMixin:
    """Answer 409 instead of 500 when purchases still refer to what is being deleted."""

    def perform_destroy(self, instance: Any) -> None:
        try:
            instance.delete()
        except ProtectedError as exc:
            raise Conflict(f"{instance} still has purchases; it cannot be deleted.") from exc


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class PurchasesModelViewSet(RequestActor, ProtectedDestroyMixin, viewsets.ModelViewSet):
    permission_classes = [ModelViewPermission]


class AccountViewSet(PurchasesModelViewSet):
    queryset = Account.objects.order_by("pk")
    serializer_class = AccountSerializer
    filterset_fields = ("name",)


class ArtistViewSet(PurchasesModelViewSet):
    queryset = Artist.objects.order_by("pk")
    serializer_class = ArtistSerializer
    filterset_fields = ("account",)


class ReleaseViewSet(PurchasesModelViewSet):
    queryset = Release.objects.prefetch_related("tracks").order_by("release_date", "pk")
    serializer_class = ReleaseSerializer
    filterset_fields = ("artist", "artist__account")


class CustomerViewSet(PurchasesModelViewSet):
    queryset = Customer.objects.order_by("pk")
    serializer_class = CustomerSerializer
    filterset_fields = ("email",)


class PurchaseViewSet(
    RequestActor,
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Purchases are created (and scheduled) and refunded; they are never edited."""

    queryset = Purchase.objects.order_by("pk")
    serializer_class = PurchaseSerializer
    permission_classes = [ModelViewPermission]
    filterset_fields = ("customer", "release", "status")

    @extend_schema(request=None, responses={200: RefundSerializer})
    @action(detail=True, methods=["post"], permission_classes=[ModelChangePermission])
    def refund(self, request: Request, pk: str | None = None) -> Response:
        purchase = self.get_object()
        cancelled = purchase_refund(purchase=purchase)
        return Response({"cancelled": cancelled, "purchase": PurchaseSerializer(purchase).data})


class ScheduledPurchaseViewSet(ScheduledEventViewSet):
    queryset = ScheduledPurchase.objects.all()
    serializer_class = ScheduledPurchaseSerializer
    filterset_class = ScheduledPurchaseFilterSet


class DownloadView(APIView):
    """The page a fulfillment email links to; the signed token is the credential."""

    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(
        responses={
            200: DownloadSerializer,
            404: OpenApiResponse(description="The link is not valid."),
            410: OpenApiResponse(description="The purchase was refunded."),
        }
    )
    def get(self, request: Request, token: str) -> Response:
        try:
            signed = signing.loads(token, salt=DOWNLOAD_SALT)
            purchase = Purchase.objects.select_related("release__artist").get(pk=signed["purchase"])
        except (signing.BadSignature, Purchase.DoesNotExist):
            return Response({"detail": "This download link is not valid."}, status=404)
        if purchase.status == Purchase.Status.REFUNDED:
            return Response({"detail": "This purchase was refunded."}, status=410)
        return Response(download_listing(purchase, signed.get("track")))


def download_listing(purchase: Purchase, track_id: int | None) -> dict[str, Any]:
    release = purchase.release
    tracks = release.tracks.all() if track_id is None else release.tracks.filter(pk=track_id)
    files = [{"track": track.pk, "title": track.title, "file": track.file_name} for track in tracks]
    return {
        "purchase": purchase.pk,
        "release": release.title,
        "artist": release.artist.name,
        "files": files,
    }
