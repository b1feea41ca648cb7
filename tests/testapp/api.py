"""A host's own endpoint, mounted under the framework's API include by registering it."""

from rest_framework import serializers, viewsets
from rest_framework.permissions import IsAdminUser

from tests.testapp.models import Ping


class PingSerializer(serializers.ModelSerializer[Ping]):
    class Meta:
        model = Ping
        fields = ("id", "name")


class PingViewSet(viewsets.ReadOnlyModelViewSet[Ping]):
    queryset = Ping.objects.order_by("pk")
    serializer_class = PingSerializer
    permission_classes = (IsAdminUser,)
