"""A stock DRF create endpoint: ModelSerializer, CreateModelMixin, the project's defaults
(authentication, DjangoModelPermissions, parsers) as /api/purchases/ has them."""

from rest_framework import mixins, serializers, viewsets

from bench.plain_api.models import PlainPurchase


class PlainPurchaseSerializer(serializers.ModelSerializer):
    class Meta:
        model = PlainPurchase
        fields = ("id", "customer", "release", "status", "created_at")
        read_only_fields = ("status", "created_at")


class PlainPurchaseViewSet(mixins.CreateModelMixin, viewsets.GenericViewSet):
    queryset = PlainPurchase.objects.order_by("pk")
    serializer_class = PlainPurchaseSerializer
